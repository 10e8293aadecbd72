// The A2A playground: plain ES module, no dependencies. Every call goes through this host's relay
// (POST /playground/api/relay), which reaches the agent without CORS and without storing anything.
// Credentials live in this page's memory only.

// The page's API and the agent that serves it are found from where the page is, not from the root:
// behind a path prefix (an API Gateway REST API's stage) the page works as it does at /playground/.
const PAGE = new URL("./", location.href);
const api = (path) => new URL(`api/${path}`, PAGE).href;
const HOME = new URL("../", PAGE).href.replace(/\/$/, "");

const $ = (id) => document.getElementById(id);
const state = {
  base: "", card: null, report: null, token: "", rpcId: 0,
  task: null, contextId: null, lastEventId: null, stream: null, nextPageToken: "", catcher: null, watch: null,
};
const TERMINAL = new Set(["TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED", "TASK_STATE_REJECTED"]);
const INTERRUPTED = new Set(["TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"]);

// ---- elements ---------------------------------------------------------------------------------
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "class") node.className = v; else if (k === "text") node.textContent = v; else node.setAttribute(k, v);
  }
  for (const c of children) if (c != null) node.append(c);
  return node;
}
const pretty = (v) => JSON.stringify(v, null, 2);
const shortId = (id) => (id || "").slice(0, 8);

// ---- tabs (arrow keys move between them) --------------------------------------------------------
const tabs = [...document.querySelectorAll("[role=tab]")];
function select(tab) {
  for (const t of tabs) {
    const on = t === tab;
    t.setAttribute("aria-selected", String(on));
    t.tabIndex = on ? 0 : -1;
    $(t.getAttribute("aria-controls")).hidden = !on;
  }
}
tabs.forEach((t, i) => {
  t.addEventListener("click", () => select(t));
  t.addEventListener("keydown", (e) => {
    const step = { ArrowRight: 1, ArrowLeft: -1 }[e.key];
    if (!step) return;
    const next = tabs[(i + step + tabs.length) % tabs.length];
    select(next);
    next.focus();
  });
});

// ---- credentials --------------------------------------------------------------------------------
function credentialHeaders() {
  const h = {};
  const key = $("api-key").value;
  if (key) h[$("api-key-header").value || "X-API-Key"] = key;
  const bearer = $("bearer").value || state.token;
  if (bearer) h.Authorization = `Bearer ${bearer}`;
  return h;
}
function showCredentials() {
  const h = credentialHeaders();
  $("credentials-state").textContent = Object.keys(h).length ? `(${Object.keys(h).join(", ")})` : "(none)";
}
for (const id of ["api-key", "api-key-header", "bearer"]) $(id).addEventListener("input", showCredentials);
$("get-token").addEventListener("click", async () => {
  const form = new URLSearchParams({ grant_type: "client_credentials", client_id: $("client-id").value, client_secret: $("client-secret").value });
  if ($("scope").value) form.set("scope", $("scope").value);
  if ($("resource").value) form.set("resource", $("resource").value);
  $("token-state").textContent = "asking…";
  let answer;
  if (thisHost()) {
    // This host's own token URL: asked without credentials for this host (the page has none yet).
    const asked = await fetch(api("token"), {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ tokenUrl: $("token-url").value, form: form.toString() }),
    });
    answer = { ok: asked.ok, status: asked.status, json: () => asked.json() };
    logCall({ method: "POST", url: $("token-url").value, headers: {}, body: "(form with credentials, not shown)" }).status(asked.status);
  } else {
    answer = await relay("POST", $("token-url").value, { "Content-Type": "application/x-www-form-urlencoded" }, form.toString(), { secret: true });
  }
  const body = await answer.json().catch(() => ({}));
  if (answer.ok && body.access_token) {
    state.token = body.access_token;
    $("token-state").textContent = `token received (expires in ${body.expires_in ?? "?"} s)`;
  } else {
    $("token-state").textContent = `no token: HTTP ${answer.status} ${body.error || ""}`;
  }
  showCredentials();
});

// ---- the relay and the console ------------------------------------------------------------------
function logCall(entry) {
  const item = el("li", {},
    el("div", { class: "row" }, el("strong", { text: `${entry.method} ${entry.url}` }), el("span", { class: "state", text: "…" })),
  );
  if (entry.body) item.append(el("pre", { text: entry.body.length > 4000 ? entry.body.slice(0, 4000) + "…" : entry.body }));
  item.append(el("div", { class: "row" }, copyButton("Copy as curl", curl(entry)), entry.cli ? copyButton("Copy as a2a", entry.cli) : null));
  const answer = el("pre", { class: "answer" });
  item.append(answer);
  $("console").prepend(item);
  return {
    status(code) { item.querySelector(".state").textContent = String(code); item.querySelector(".state").classList.add(code < 400 ? "ok" : "bad"); },
    append(text) { if (answer.textContent.length < 20000) answer.textContent += text; },
  };
}
function copyButton(label, text) {
  const b = el("button", { type: "button", text: label, "data-copy": text });
  b.addEventListener("click", () => navigator.clipboard?.writeText(text));
  return b;
}
const quote = (s) => `'${String(s).replace(/'/g, "'\\''")}'`;
function curl(entry) {
  // Credentials are not copied: the line names them as shell variables.
  const parts = ["curl", "-sS", "-X", entry.method, quote(entry.url)];
  for (const [k, v] of Object.entries(entry.headers)) {
    const secret = /^authorization$/i.test(k) ? "Bearer $A2A_TOKEN" : k.toLowerCase() === ($("api-key-header").value || "x-api-key").toLowerCase() ? "$A2A_API_KEY" : null;
    parts.push("-H", secret ? `"${k}: ${secret}"` : quote(`${k}: ${v}`));
  }
  if (entry.body) parts.push("--data", quote(entry.body));
  return parts.join(" ");
}

async function relay(method, url, headers, body, opts = {}) {
  const entry = { method, url, headers, body: opts.secret ? "(form with credentials, not shown)" : body, cli: opts.cli };
  const log = logCall(entry);
  const answer = await fetch(api("relay"), {
    method: "POST",
    headers: { "Content-Type": "application/json", ...credentialHeadersForHost() },
    body: JSON.stringify({ url, method, headers, body: body ?? null }),
  });
  log.status(answer.status);
  if (opts.stream) return { answer, log };
  const text = await answer.text();
  log.append(text);
  return { ok: answer.ok, status: answer.status, relayed: answer.headers.get("x-playground-relay") !== "refused", text, json: async () => JSON.parse(text) };
}
// The relay itself is this host's API: it takes this host's credentials when the agent is this host.
function thisHost() {
  try { return new URL(state.base || HOME).origin === location.origin; } catch { return false; }
}
function credentialHeadersForHost() {
  return thisHost() ? credentialHeaders() : {};
}

// ---- A2A over the chosen binding ----------------------------------------------------------------
function endpoint(binding) {
  const wanted = binding === "rest" ? "HTTP+JSON" : "JSONRPC";
  const found = state.report?.interfaces?.find((i) => String(i.binding).toUpperCase() === wanted);
  return (found?.url || state.base).replace(/\/$/, "");
}
function headersFor(extra = {}) {
  return { "Content-Type": "application/json", "A2A-Version": "1.0", ...credentialHeaders(), ...extra };
}
const REST = {
  SendMessage: (p) => ["POST", "/message:send", p],
  SendStreamingMessage: (p) => ["POST", "/message:stream", p],
  GetTask: (p) => ["GET", `/tasks/${encodeURIComponent(p.id)}`],
  CancelTask: (p) => ["POST", `/tasks/${encodeURIComponent(p.id)}:cancel`, {}],
  SubscribeToTask: (p) => ["GET", `/tasks/${encodeURIComponent(p.id)}:subscribe`],
  ListTasks: (p) => ["GET", `/tasks?${new URLSearchParams(Object.entries(p).filter(([, v]) => v !== "" && v != null))}`],
  CreateTaskPushNotificationConfig: (p) => ["POST", `/tasks/${encodeURIComponent(p.taskId)}/pushNotificationConfigs`, p],
};
function request(method, params, extra = {}) {
  const binding = $("binding").value;
  if (binding === "rest") {
    const [verb, path, body] = REST[method](params);
    return { verb, url: endpoint("rest") + path, headers: headersFor(extra), body: body === undefined ? null : JSON.stringify(body), rpc: false };
  }
  const body = JSON.stringify({ jsonrpc: "2.0", id: ++state.rpcId, method, params });
  return { verb: "POST", url: endpoint("jsonrpc"), headers: headersFor(extra), body, rpc: true };
}
async function call(method, params, cli) {
  const r = request(method, params);
  const answer = await relay(r.verb, r.url, r.headers, r.body, { cli });
  let body;
  try { body = JSON.parse(answer.text); } catch { throw new Error(`HTTP ${answer.status}: ${answer.text.slice(0, 200)}`); }
  if (r.rpc) {
    if (body.error) throw new Error(`${body.error.code}: ${body.error.message}`);
    return body.result;
  }
  if (!answer.ok) throw new Error(`HTTP ${answer.status}: ${body.error?.message || answer.text.slice(0, 200)}`);
  return body;
}
// Streams `method`: onEvent(streamResponse, eventId) for each event; resolves when the stream ends.
async function stream(method, params, onEvent, extra = {}, cli) {
  const r = request(method, params, extra);
  r.headers.Accept = "text/event-stream";
  const { answer, log } = await relay(r.verb, r.url, r.headers, r.body, { stream: true, cli });
  if (!answer.ok || !(answer.headers.get("content-type") || "").includes("text/event-stream")) {
    const text = await answer.text();
    log.append(text);
    let why = text.slice(0, 300);
    try { const b = JSON.parse(text); why = b.error?.message || why; } catch {}
    throw new Error(`HTTP ${answer.status}: ${why}`);
  }
  const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
  state.stream = reader;
  let buffer = "";
  let id = null;
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    log.append(value);
    buffer += value;
    let nl;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl).replace(/\r$/, "");
      buffer = buffer.slice(nl + 1);
      if (line === "") {
        if (data.length) {
          const parsed = JSON.parse(data.join("\n"));
          if (r.rpc && parsed.error) throw new Error(`${parsed.error.code}: ${parsed.error.message}`);
          onEvent(r.rpc ? parsed.result : parsed, id);
        }
        data = [];
      } else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
      else if (line.startsWith("id:")) id = line.slice(3).trim();
    }
  }
  state.stream = null;
}

// ---- the card -----------------------------------------------------------------------------------
function badge(node, text, cls) { node.textContent = text; node.className = cls; }
async function connect(url) {
  state.base = url.replace(/\/$/, "");
  $("card-state").textContent = "Reading the card…";
  $("card-report").hidden = true;
  const answer = await fetch(api("card"), {
    method: "POST", headers: { "Content-Type": "application/json", ...credentialHeadersForHost() }, body: JSON.stringify({ url: state.base }),
  });
  const report = await answer.json();
  if (answer.status === 401) {
    // This host asks its own credentials of the playground's calls: the same ones its agent takes.
    $("card-state").textContent = "This host requires credentials: enter them under Credentials, then Connect.";
    $("credentials").open = true;
    // Its card is public: the token URL of its client credentials flow, if it has one.
    const own = await fetch("/.well-known/agent-card.json", { headers: { "A2A-Version": "1.0" } }).then((r) => r.json()).catch(() => ({}));
    offerTokenUrl(Object.values(own.securitySchemes || {}));
    return;
  }
  if (!answer.ok) {
    $("card-state").textContent = `No card: ${report.error?.message || answer.status}`;
    return;
  }
  state.report = report;
  state.card = report.card;
  const card = report.card;
  $("card-state").textContent = `Card read from ${report.cardUrl}`;
  $("card-name").textContent = `${card.name || "(no name)"} ${card.version ? "v" + card.version : ""}`;
  $("card-description").textContent = card.description || "";
  badge($("card-written-for"), `written for A2A ${report.writtenFor}`, "");
  badge($("card-v1"), report.v1.ok ? "1.0: complete" : `1.0: ${report.v1.problems.length} problem(s)`, report.v1.ok ? "ok" : "bad");
  badge($("card-v03"), report.v03.ok ? "0.3: complete" : `0.3: ${report.v03.problems.length} problem(s)`, report.v03.ok ? "ok" : "warn");
  const sig = report.signature;
  const sigText = { verified: `signature verified (${sig.kid}, ${sig.alg})`, unsigned: "not signed", failed: `signature failed: ${sig.detail}` }[sig.status];
  badge($("card-signature"), sigText, { verified: "ok", unsigned: "warn", failed: "bad" }[sig.status]);
  const problems = [...report.v1.problems.map((p) => `1.0: ${p}`), ...report.v03.problems.map((p) => `0.3: ${p}`)];
  $("card-problems").replaceChildren(...problems.map((p) => el("li", { text: p })));
  $("card-interfaces").tBodies[0].replaceChildren(...report.interfaces.map((i) => el("tr", {}, el("td", { text: i.binding }), el("td", { text: i.version ?? "" }), el("td", { text: i.url }))));
  $("card-schemes").replaceChildren(...(report.securitySchemes.length ? report.securitySchemes.map((s) => el("li", { text: `${s.name}: ${s.kind}` })) : [el("li", { text: "none (no credentials needed)" })]));
  offerTokenUrl(report.securitySchemes.map((s) => s.scheme));
  $("card-skills").replaceChildren(...(card.skills || []).map((s) => el("li", {}, el("strong", { text: s.name || s.id }), ` — ${s.description || ""}`)));
  $("card-raw").textContent = pretty(card);
  $("card-report").hidden = false;
  $("binding").querySelector("[value=rest]").disabled = !report.interfaces.some((i) => String(i.binding).toUpperCase() === "HTTP+JSON");
}
function offerTokenUrl(schemes) {
  const url = schemes.map((s) => s?.oauth2SecurityScheme?.flows?.clientCredentials?.tokenUrl).find(Boolean);
  if (url && !$("token-url").value) $("token-url").value = url;
}
$("connect").addEventListener("submit", (e) => {
  e.preventDefault();
  select($("tab-card"));
  connect($("agent-url").value).catch((err) => ($("card-state").textContent = `Cannot read the card: ${err.message}`));
});

// ---- chat ---------------------------------------------------------------------------------------
function bubble(cls, label) {
  const item = el("li", { class: cls }, el("div", { class: "row" }, el("strong", { text: label })));
  $("transcript").append(item);
  return item;
}
function partsNode(parts = []) {
  const box = el("div");
  for (const p of parts) box.append(partNode(p));
  return box;
}
function partNode(p) {
  if (p.text != null) return el("span", { class: "text", text: p.text });
  if (p.url || p.raw != null) {
    const name = p.filename || p.url || "file";
    if (p.url) return el("a", { href: p.url, rel: "noreferrer", target: "_blank", text: `📎 ${name} (${p.mediaType || "file"})` });
    return el("a", { href: `data:${p.mediaType || "application/octet-stream"};base64,${p.raw}`, download: name, text: `📎 ${name} (${p.mediaType || "file"})` });
  }
  if (p.data !== undefined) return el("pre", { text: pretty(p.data) });
  return el("pre", { text: pretty(p) });
}
let reply = null; // the agent's bubble of the running turn
function agentBubble() {
  if (!reply) {
    reply = bubble("agent", "agent");
    reply.append(el("div", { class: "row" }, el("span", { class: "state task-state", text: "…" })), el("div", { class: "artifacts" }), el("div", { class: "messages" }));
  }
  return reply;
}
function setTask(task) {
  state.task = task;
  if (task) {
    state.contextId = task.contextId || state.contextId;
    $("chat-task").textContent = `task ${task.id} · context ${state.contextId}`;
    $("push-task").value = task.id;
  }
}
function showState(s, message) {
  const b = agentBubble();
  const badgeNode = b.querySelector(".task-state");
  badgeNode.textContent = s.replace("TASK_STATE_", "").toLowerCase().replace("_", " ");
  badgeNode.className = "state task-state " + (s === "TASK_STATE_COMPLETED" ? "ok" : TERMINAL.has(s) ? "bad" : INTERRUPTED.has(s) ? "warn" : "");
  if (message?.parts?.length) {
    const m = partsNode(message.parts);
    if (INTERRUPTED.has(s)) m.classList.add("question");
    b.querySelector(".messages").append(m);
  }
  const running = !TERMINAL.has(s) && !INTERRUPTED.has(s);
  $("cancel-task").disabled = !running;
  if (INTERRUPTED.has(s)) $("message").placeholder = "The agent asks: answer here (Ctrl+Enter sends)";
}
function onEvent(ev, eventId) {
  if (eventId) {
    state.lastEventId = eventId;
    remember();
  }
  if (ev.task) {
    setTask(ev.task);
    for (const a of ev.task.artifacts || []) artifact(a, false);
    showState(ev.task.status.state, ev.task.status.message);
  } else if (ev.message) {
    agentBubble().querySelector(".messages").append(partsNode(ev.message.parts));
  } else if (ev.statusUpdate) {
    if (!state.task) setTask({ id: ev.statusUpdate.taskId, contextId: ev.statusUpdate.contextId });
    showState(ev.statusUpdate.status.state, ev.statusUpdate.status.message);
    if (TERMINAL.has(ev.statusUpdate.status.state) || INTERRUPTED.has(ev.statusUpdate.status.state)) state.task.status = ev.statusUpdate.status;
  } else if (ev.artifactUpdate) {
    artifact(ev.artifactUpdate.artifact, ev.artifactUpdate.append);
  }
}
function artifact(a, append) {
  const box = agentBubble().querySelector(".artifacts");
  let node = [...box.children].find((n) => n.dataset.id === a.artifactId);
  if (!node) {
    node = el("div", { class: "artifact" }, el("em", { text: a.name || a.artifactId }), el("div", { class: "artifact-parts" }));
    node.dataset.id = a.artifactId;
    box.append(node);
  }
  const parts = node.querySelector(".artifact-parts");
  if (!append) parts.replaceChildren();
  for (const p of a.parts || []) {
    const last = parts.lastElementChild;
    if (p.text != null && last?.classList.contains("text")) last.textContent += p.text;
    else parts.append(partNode(p));
  }
}
function remember() {
  if (state.task) sessionStorage.setItem("a2a-playground-stream", JSON.stringify({ base: state.base, task: state.task.id, lastEventId: state.lastEventId, binding: $("binding").value }));
}
async function send(text) {
  const continuing = state.task && INTERRUPTED.has(state.task.status?.state);
  const message = { messageId: crypto.randomUUID(), role: "ROLE_USER", parts: [{ text }] };
  if (continuing) message.taskId = state.task.id;
  if (state.contextId) message.contextId = state.contextId;
  bubble("user", "you").append(el("span", { text: text || "(empty)" }));
  reply = null;
  if (!continuing) state.task = null;
  const streaming = state.card?.capabilities?.streaming !== false;
  const cli = `a2a send ${state.base} ${quote(text)}${streaming ? " --stream" : ""}${continuing ? ` --task ${state.task.id}` : ""}`;
  try {
    if (streaming) await stream("SendStreamingMessage", { message }, onEvent, {}, cli);
    else onEvent({ task: await call("SendMessage", { message }, cli) });
  } catch (err) {
    agentBubble().querySelector(".messages").append(el("p", { class: "bad", text: err.message }));
  }
}
$("compose").addEventListener("submit", (e) => {
  e.preventDefault();
  const text = $("message").value;
  $("message").value = "";
  $("message").placeholder = "Type a message (Ctrl+Enter sends)";
  send(text);
});
$("message").addEventListener("keydown", (e) => {
  if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) $("compose").requestSubmit();
});
$("new-task").addEventListener("click", () => {
  state.task = null; state.contextId = null; reply = null;
  $("transcript").replaceChildren();
  $("chat-task").textContent = "";
});
$("cancel-task").addEventListener("click", async () => {
  if (!state.task) return;
  try {
    const task = await call("CancelTask", { id: state.task.id }, `a2a cancel ${state.base} ${state.task.id}`);
    showState(task.status.state, task.status.message);
  } catch (err) {
    agentBubble().querySelector(".messages").append(el("p", { class: "bad", text: `cancel: ${err.message}` }));
  }
});
// After a reload: the last stream, resumed after the last event seen (Last-Event-ID).
const saved = JSON.parse(sessionStorage.getItem("a2a-playground-stream") || "null");
if (saved) $("resubscribe").hidden = false;
$("resubscribe").addEventListener("click", async () => {
  $("resubscribe").hidden = true;
  $("binding").value = saved.binding;
  if (state.base !== saved.base) await connect(saved.base);
  setTask({ id: saved.task });
  reply = null;
  bubble("user", "resumed").append(el("span", { text: `stream of task ${saved.task} after event ${saved.lastEventId ?? "(start)"}` }));
  const extra = saved.lastEventId ? { "Last-Event-ID": saved.lastEventId } : {};
  try {
    await stream("SubscribeToTask", { id: saved.task }, onEvent, extra, `a2a subscribe ${saved.base} ${saved.task}`);
  } catch (err) {
    agentBubble().querySelector(".messages").append(el("p", { class: "bad", text: err.message }));
  }
});

// ---- tasks --------------------------------------------------------------------------------------
async function listTasks(pageToken = "") {
  const params = { contextId: $("filter-context").value, status: $("filter-status").value, pageSize: Number($("page-size").value) || 20, pageToken };
  const cli = `a2a list ${state.base}${params.contextId ? " --context " + params.contextId : ""}${params.status ? " --status " + params.status : ""} --page-size ${params.pageSize}`;
  const page = await call("ListTasks", Object.fromEntries(Object.entries(params).filter(([, v]) => v !== "")), cli);
  state.nextPageToken = page.nextPageToken || "";
  $("next-page").disabled = !state.nextPageToken;
  $("tasks").tBodies[0].replaceChildren(...(page.tasks || []).map((t) => {
    const row = el("tr", { tabindex: "0" }, el("td", { text: t.id }), el("td", { text: t.status.state.replace("TASK_STATE_", "") }), el("td", { text: t.status.timestamp || "" }), el("td", { text: t.contextId }));
    const open = () => showTask(t.id);
    row.addEventListener("click", open);
    row.addEventListener("keydown", (e) => e.key === "Enter" && open());
    return row;
  }));
}
async function showTask(id) {
  const task = await call("GetTask", { id }, `a2a get ${state.base} ${id}`);
  $("task-title").textContent = `${task.id} · ${task.status.state.replace("TASK_STATE_", "")}`;
  $("task-history").replaceChildren(...(task.history || []).map((m) => el("li", {}, el("strong", { text: m.role === "ROLE_USER" ? "user: " : "agent: " }), partsNode(m.parts))));
  $("task-artifacts").replaceChildren(...(task.artifacts || []).map((a) => el("div", { class: "artifact" }, el("em", { text: a.name || a.artifactId }), partsNode(a.parts))));
  $("task-raw").textContent = pretty(task);
  $("task-detail").hidden = false;
}
$("list-form").addEventListener("submit", (e) => {
  e.preventDefault();
  listTasks().catch((err) => ($("task-title").textContent = err.message, $("task-detail").hidden = false));
});
$("next-page").addEventListener("click", () => listTasks(state.nextPageToken));

// ---- push ---------------------------------------------------------------------------------------
$("new-catcher").addEventListener("click", async () => {
  const answer = await fetch(api("catchers"), {
    method: "POST", headers: { "Content-Type": "application/json", ...credentialHeadersForHost() }, body: JSON.stringify({ agent: state.base || HOME }),
  });
  const made = await answer.json();
  if (!answer.ok) return ($("push-state").textContent = made.error?.message || `HTTP ${answer.status}`);
  state.catcher = made;
  $("catcher-url").textContent = made.url;
  $("register").disabled = false;
  $("deliveries").replaceChildren();
  watch(made.id);
});
async function watch(id) {
  state.watch?.abort();
  state.watch = new AbortController();
  const answer = await fetch(api(`catchers/${id}/deliveries`), { headers: credentialHeadersForHost(), signal: state.watch.signal });
  const reader = answer.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const data = block.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trimStart()).join("\n");
      if (data) delivery(JSON.parse(data));
    }
  }
}
function delivery(d) {
  const sig = d.signature;
  const sigText = { verified: `signature verified (${sig.kid}): ${(sig.checks || []).join(", ")}`, unsigned: "unsigned", failed: `signature failed: ${sig.detail}` }[sig.status];
  const kind = Object.keys(d.body || {})[0] || "";
  const what = d.body?.statusUpdate?.status?.state || (d.body?.artifactUpdate ? "artifact" : kind);
  $("deliveries").append(el("li", { class: "delivery" },
    el("div", { class: "row" }, el("strong", { text: `#${d.n} event ${d.eventId ?? "?"} · ${what}` }), el("span", { class: `state signature ${{ verified: "ok", unsigned: "warn", failed: "bad" }[sig.status]}`, text: sigText })),
    el("div", { class: "hint", text: `${d.receivedAt} · token ${d.token ?? "(none)"} · ${d.bytes} bytes` }),
    el("details", {}, el("summary", { text: "headers and body" }), el("pre", { text: pretty({ headers: d.headers, body: d.body }) })),
  ));
}
$("register-form").addEventListener("submit", async (e) => {
  e.preventDefault();
  const taskId = $("push-task").value.trim();
  const config = { taskId, url: state.catcher.url };
  if ($("push-token").value) config.token = $("push-token").value;
  try {
    const saved = await call("CreateTaskPushNotificationConfig", config, `a2a push create ${state.base} ${taskId} ${state.catcher.url}`);
    $("push-state").textContent = `registered as ${saved.id} on task ${taskId}`;
  } catch (err) {
    $("push-state").textContent = `not registered: ${err.message}`;
  }
});
$("clear-console").addEventListener("click", () => $("console").replaceChildren());

// ---- start --------------------------------------------------------------------------------------
const start = new URLSearchParams(location.search).get("agent") || HOME;
$("agent-url").value = start;
showCredentials();
connect(start).catch((err) => ($("card-state").textContent = `Cannot read the card: ${err.message}`));
