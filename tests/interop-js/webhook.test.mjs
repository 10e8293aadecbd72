// The documented TypeScript webhook receiver, run as written: the ```ts block of "Signed push
// notifications" is copied out of docs/signatures.md into a module (Node 22 strips its types; `jose` is the
// pinned dependency of this directory), with only `agentUrl` defined in front of it. a2a-local signs
// its notifications (ES256 and EdDSA keys; the first signs); the receiver accepts every POST, with
// its issuer, audience and body digest, and refuses a changed body, another audience, and another
// agent's issuer even when that agent publishes the same key. Runs on the backend $A2A_LOCAL_ARGS picks. Needs $A2A_LOCAL_BIN (scripts/test sets it).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { startLocal } from './support.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..', '..');
const KEYS = join(ROOT, 'shared', 'tests', 'fixtures', 'signing');

/** The documented TypeScript receiver block (the one that imports jose). */
function readmeReceiver() {
  const readme = readFileSync(join(ROOT, 'docs', 'signatures.md'), 'utf8');
  const blocks = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((m) => m[1]);
  const receivers = blocks.filter((b) => b.includes('from "jose"') && b.includes('a2a-notification-signature'));
  assert.equal(receivers.length, 1, 'docs/signatures.md has one TypeScript webhook receiver');
  return receivers[0];
}

/** The documented receiver as a module for the agent at `agentUrl`, imported. */
async function receiverFor(agentUrl) {
  // Beside a node_modules link, so that `import "jose"` resolves to this directory's.
  const dir = mkdtempSync(join(tmpdir(), 'a2a-js-receiver-'));
  symlinkSync(join(HERE, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const module = join(dir, 'receiver.ts');
  writeFileSync(module, `const agentUrl = ${JSON.stringify(agentUrl)};\n${readmeReceiver()}`);
  return import(pathToFileURL(module).href);
}

let proc;
let base;
let hook;
let hookUrl;
let verify;
const received = [];

before(async () => {
  assert.ok(process.features.typescript, `Node ${process.version} cannot import TypeScript; this test needs type `
    + 'stripping (Node >= 22.18: scripts/test runs it with the edge toolchain\'s Node 22)');
  const port = await new Promise((resolve) => {
    hook = createServer((req, res) => {
      const chunks = [];
      req.on('data', (c) => chunks.push(c));
      req.on('end', () => {
        received.push({ headers: new Headers(req.headers), body: Buffer.concat(chunks) });
        res.writeHead(200).end();
      });
    });
    hook.listen(0, '127.0.0.1', () => resolve(hook.address().port));
  });
  hookUrl = `http://127.0.0.1:${port}/hooks/a2a`;
  const card = join(mkdtempSync(join(tmpdir(), 'a2a-js-hooks-')), 'card.json');
  writeFileSync(card, JSON.stringify({ name: 'Signed notifications' }));
  ({ proc, base } = await startLocal(['--agent', 'echo', '--card', card, '--webhook-allow', '127.0.0.1/32',
    '--card-signing-key', `hooks=${join(KEYS, 'es256.pem')},${join(KEYS, 'eddsa.pem')}`]));
  ({ verify } = await receiverFor(base));
});

after(() => {
  proc?.kill();
  hook?.close();
});

test("the documented TypeScript receiver verifies a2a-local's signed notifications", async () => {
  const send = {
    jsonrpc: '2.0', id: 1, method: 'SendMessage', params: {
      message: { messageId: randomUUID(), role: 'ROLE_USER', parts: [{ text: 'signed for TypeScript' }] },
      configuration: { taskPushNotificationConfig: { url: hookUrl, id: 'ts-hook', token: 'tok' } },
    },
  };
  const answer = await (await fetch(`${base}/`, {
    method: 'POST', headers: { 'content-type': 'application/json', 'A2A-Version': '1.0' }, body: JSON.stringify(send),
  })).json();
  const task = answer.result.task;
  assert.ok(task?.id, JSON.stringify(answer));
  for (let i = 0; i < 100 && !received.some((r) => r.body.includes('TASK_STATE_COMPLETED')); i++) { // bounded: 10 s
    await new Promise((r) => setTimeout(r, 100));
  }
  assert.ok(received.length >= 1, 'no notification arrived');
  const jtis = new Set();
  for (const { headers, body } of received) {
    const claims = await verify(headers, body, hookUrl);
    assert.equal(claims.iss, base);
    assert.equal(claims.aud, hookUrl);
    assert.equal(claims.taskId, task.id);
    assert.equal(String(claims.seq), headers.get('a2a-event-id'));
    assert.equal(claims.jti, `${task.id}/ts-hook/${claims.seq}`);
    assert.equal(headers.get('a2a-notification-token'), 'tok', 'the existing header stays');
    jtis.add(claims.jti);
    const changed = Buffer.concat([body, Buffer.from(' ')]); // one byte more: still the same JSON
    await assert.rejects(verify(headers, changed, hookUrl), /body/);
    await assert.rejects(verify(headers, body, 'http://127.0.0.1:1/elsewhere'), /aud/);
  }
  assert.equal(jtis.size, received.length, 'one jti per event');
});

test('a receiver of another agent with the same key refuses the notification (iss)', async () => {
  // A second agent signing with the same key: its JWKS holds the key that signed, so only the
  // issuer binding tells the two apart.
  const card = join(mkdtempSync(join(tmpdir(), 'a2a-js-other-')), 'card.json');
  writeFileSync(card, JSON.stringify({ name: 'Another agent' }));
  const other = await startLocal(['--agent', 'echo', '--card', card,
    '--card-signing-key', `hooks=${join(KEYS, 'es256.pem')}`], { backend: false });
  try {
    const { verify: verifyOther } = await receiverFor(other.base);
    const { headers, body } = received[0];
    await assert.rejects(verifyOther(headers, body, hookUrl), /unexpected "iss" claim value/);
  } finally {
    other.proc.kill();
  }
});
