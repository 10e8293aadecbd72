"""An A2A agent built with the official Python SDK (a2a-sdk 1.x, Starlette + uvicorn), JSON-RPC at "/"
and HTTP+JSON beside it, and gRPC (the SDK's GrpcHandler on grpc.aio) with --grpc PORT, for the
client, command-line and gateway tests. It behaves like
tests/cli/agent.py: "ask ..." asks for a name and greets the follow-up, "slow a b c" streams the
words 0.3 s apart (a cancel stops it), "fail" fails, anything else is echoed.
With --verify-sigv4 REGION SERVICE every request but the card's must carry an AWS Signature V4
that botocore recomputes from the test credentials (an agent on Bedrock AgentCore is called so);
mismatches get 403 and print "sigv4 mismatch", matches print "sigv4 ok".
Usage: python3 sdk_agent.py PORT [--grpc PORT] [--verify-sigv4 REGION SERVICE]"""
import argparse
import asyncio

import grpc
import uvicorn
from a2a.helpers.proto_helpers import new_task, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, GrpcHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes, create_rest_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import a2a_pb2 as pb
from a2a.types import a2a_pb2_grpc
from starlette.applications import Starlette


class Agent(AgentExecutor):
    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input().strip()
        follow_up = context.current_task is not None
        if not follow_up:
            await event_queue.enqueue_event(new_task(context.task_id, context.context_id, pb.TASK_STATE_SUBMITTED))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        agent_says = lambda t: new_text_message(t, context_id=context.context_id, task_id=context.task_id, role=pb.ROLE_AGENT)  # noqa: E731
        if follow_up:
            await updater.add_artifact([pb.Part(text=f"Hello, {text}!")], artifact_id="answer", last_chunk=True)
            return await updater.complete()
        if text.startswith("ask"):
            return await updater.requires_input(agent_says("What is your name?"))
        if text == "fail":
            return await updater.failed(agent_says("it went wrong on purpose"))
        await updater.start_work()
        if text.startswith("slow"):
            words = text.split()[1:]
            for i, word in enumerate(words):
                await asyncio.sleep(0.3)
                await updater.add_artifact(
                    [pb.Part(text=word + " ")], artifact_id="answer", append=i > 0, last_chunk=i == len(words) - 1
                )
            return await updater.complete()
        await updater.add_artifact([pb.Part(text=text)], artifact_id="answer", last_chunk=True)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()


def sigv4_ok(scope, headers, body, region, service):
    """Recomputes the request's signature with botocore; True when it matches what was sent."""
    import os

    from botocore.auth import SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials

    sent = headers.get("authorization", "")
    if not sent.startswith("AWS4-HMAC-SHA256 "):
        return False
    fields = dict(part.strip().split("=", 1) for part in sent[len("AWS4-HMAC-SHA256 "):].split(","))
    signed = fields["SignedHeaders"].split(";")
    query = scope.get("query_string", b"").decode()
    url = f"http://{headers['host']}{scope['path']}" + (f"?{query}" if query else "")
    request = AWSRequest(method=scope["method"], url=url, data=body, headers={n: headers[n] for n in signed if n in headers})
    creds = Credentials(os.environ["AWS_ACCESS_KEY_ID"], os.environ["AWS_SECRET_ACCESS_KEY"], os.environ.get("AWS_SESSION_TOKEN"))
    auth = SigV4Auth(creds, service, region)
    request.context["timestamp"] = headers["x-amz-date"]
    canonical = auth.canonical_request(request)
    return auth.signature(auth.string_to_sign(request, canonical), request) == fields["Signature"]


def verifying_sigv4(app, region, service):
    """ASGI middleware: every request but the card's must be SigV4-signed."""

    async def middleware(scope, receive, send):
        if scope["type"] != "http" or scope["path"].startswith("/.well-known/"):
            return await app(scope, receive, send)
        body, more = b"", True
        while more:
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False)
        headers = {k.decode().lower(): v.decode() for k, v in scope["headers"]}
        if not sigv4_ok(scope, headers, body, region, service):
            print("sigv4 mismatch", flush=True)
            await send({"type": "http.response.start", "status": 403, "headers": [(b"content-type", b"text/plain")]})
            return await send({"type": "http.response.body", "body": b"bad signature"})
        print("sigv4 ok", flush=True)
        replayed = False

        async def replay():
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        return await app(scope, replay, send)

    return middleware


async def main(port: int, grpc_port=None, sigv4=None) -> None:
    base = f"http://127.0.0.1:{port}"
    interfaces = [
        pb.AgentInterface(url=f"{base}/", protocol_binding="JSONRPC", protocol_version="1.0"),
        pb.AgentInterface(url=base, protocol_binding="HTTP+JSON", protocol_version="1.0"),
    ]
    if grpc_port:
        interfaces.append(pb.AgentInterface(url=f"127.0.0.1:{grpc_port}", protocol_binding="GRPC", protocol_version="1.0"))
    card = pb.AgentCard(
        name="SDK test agent",
        description="An agent built with the official a2a-sdk",
        version="1.0.0",
        capabilities=pb.AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        supported_interfaces=interfaces,
        skills=[pb.AgentSkill(id="echo", name="Echo", description="Echoes, asks, streams", tags=["test"])],
    )
    handler = DefaultRequestHandler(agent_executor=Agent(), task_store=InMemoryTaskStore(), agent_card=card)
    if grpc_port:
        server = grpc.aio.server()
        a2a_pb2_grpc.add_A2AServiceServicer_to_server(GrpcHandler(handler), server)
        server.add_insecure_port(f"127.0.0.1:{grpc_port}")
        await server.start()
    routes = create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/") + create_rest_routes(handler)
    app = Starlette(routes=routes)
    if sigv4:
        app = verifying_sigv4(app, *sigv4)
    config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning")
    print("listening", flush=True)
    await uvicorn.Server(config).serve()


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("port", type=int)
    parser.add_argument("--grpc", type=int)
    parser.add_argument("--verify-sigv4", nargs=2, metavar=("REGION", "SERVICE"))
    args = parser.parse_args()
    asyncio.run(main(args.port, args.grpc, args.verify_sigv4))
