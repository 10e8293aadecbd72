// An A2A agent in TypeScript behind a2a-serverless (docs/agent-http.md), Node 22, no dependencies.
// Locally:  node agent.ts 9000   then   a2a-local --agent-url http://127.0.0.1:9000/
// On AWS:   the Lambda handler `handler` with response streaming behind a Function URL
//           (infra/template.yaml, AgentRuntime=typescript).
// It answers a message word by word as one artifact streamed in chunks, and asks back when sent nothing.
import { createServer } from "node:http";

type Event = Record<string, unknown>;
type Request = { kind: string; run: { id: string }; message: { parts: { text?: string }[] } };

const delay = Number(process.env.WORD_DELAY ?? "0.05") * 1000;
const cancelled = new Set<string>(); // run ids a cancel request named
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function turn(request: Request, emit: (event: Event) => void): Promise<void> {
  const text = request.message.parts.map((p) => p.text ?? "").join(" ").trim();
  if (!text) {
    const question = { role: "ROLE_AGENT", parts: [{ text: "What should I answer?" }] };
    return emit({ statusUpdate: { status: { state: "TASK_STATE_INPUT_REQUIRED", message: question } } });
  }
  emit({ statusUpdate: { status: { state: "TASK_STATE_WORKING" } } });
  emit({ artifactUpdate: { artifact: { artifactId: "answer", name: "answer", parts: [{ text: "You said:" }] } } });
  const words = text.split(/\s+/);
  for (const [i, word] of words.entries()) {
    await sleep(delay);
    if (cancelled.has(request.run.id)) return console.log(`cancelled ${request.run.id}`);
    const chunk = { artifactId: "answer", parts: [{ text: " " + word }] };
    emit({ artifactUpdate: { artifact: chunk, append: true, lastChunk: i === words.length - 1 } });
  }
  emit({ statusUpdate: { status: { state: "TASK_STATE_COMPLETED" } } });
}

const authorized = (auth: string | undefined) => !process.env.AGENT_TOKEN || auth === `Bearer ${process.env.AGENT_TOKEN}`;

if (process.argv[1]?.endsWith("agent.ts")) {
  createServer(async (req, res) => {
    let body = "";
    for await (const chunk of req) body += chunk;
    const request: Request = JSON.parse(body);
    if (!authorized(req.headers.authorization)) return res.writeHead(401).end();
    if (request.kind === "cancel") {
      cancelled.add(request.run.id);
      console.log(`cancel requested ${request.run.id}`);
      return res.writeHead(204).end();
    }
    res.writeHead(200, { "content-type": "application/x-ndjson" });
    res.on("close", () => res.writableFinished || cancelled.add(request.run.id)); // the host closed the run
    await turn(request, (event) => res.write(JSON.stringify(event) + "\n"));
    res.end();
  }).listen(Number(process.argv[2] ?? 9000), "127.0.0.1", () => console.log("agent listening"));
}

// AWS Lambda (Node.js runtime) with response streaming: events leave as they happen.
declare const awslambda: any;
export const handler = typeof awslambda === "undefined" ? undefined : awslambda.streamifyResponse(
  async (event: { body: string; isBase64Encoded?: boolean }, stream: any) => {
    const request: Request = JSON.parse(event.isBase64Encoded ? Buffer.from(event.body, "base64").toString() : event.body);
    if (request.kind === "cancel") return stream.end();
    stream = awslambda.HttpResponseStream.from(stream, { statusCode: 200, headers: { "content-type": "application/x-ndjson" } });
    await turn(request, (e) => stream.write(JSON.stringify(e) + "\n"));
    stream.end();
  });
