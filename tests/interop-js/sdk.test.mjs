// Interop: the official A2A JavaScript SDK (@a2a-js/sdk) as a client of a2a-local, over JSON-RPC and
// HTTP+JSON in A2A 1.0, and in its 0.3 mode (the SDK's legacy transports, picked from the 0.3
// interfaces of the card): send, stream, get, cancel, resubscribe, push config CRUD, the extended
// card and a required extension. Needs $A2A_LOCAL_BIN (scripts/test sets it; $A2A_LOCAL_ARGS picks
// the backend). Run: npm test (node:test).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';

import { Role, TaskState } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';

import { startLocal } from './support.mjs';

const KEY = 'key-dana';
const EXT = 'urn:a2a-serverless:test:js-required';

let proc;
let base;

before(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'a2a-js-'));
  writeFileSync(join(dir, 'card.json'), JSON.stringify({
    name: 'JS interop agent',
    capabilities: { extensions: [{ uri: EXT, required: true, description: 'must be activated' }] },
  }));
  writeFileSync(join(dir, 'extended.json'), JSON.stringify({ name: 'JS interop agent (extended)' }));
  ({ proc, base } = await startLocal(['--agent', 'conformance', '--api-keys', `dana:${KEY}`,
    '--card', join(dir, 'card.json'), '--extended-card', join(dir, 'extended.json')]));
});

after(() => proc?.kill());

/** fetch with the API key and (unless `bare`) the required extension, in the header of `legacy`'s generation. */
function fetchWith({ legacy = false, bare = false } = {}) {
  return (url, init = {}) => {
    const headers = new Headers(init.headers);
    headers.set('X-API-Key', KEY);
    if (!bare) headers.set(legacy ? 'X-A2A-Extensions' : 'A2A-Extensions', EXT);
    return fetch(url, { ...init, headers });
  };
}

/** A client speaking `binding` in protocol generation `version` ("1.0" or "0.3"). */
async function client(binding, version, opts = {}) {
  const legacy = version === '0.3';
  const fetchImpl = fetchWith({ legacy, ...opts });
  const resolver = new DefaultAgentCardResolver({ fetchImpl, legacyCompat: { enabled: true } });
  const card = await resolver.resolve(base);
  // Offer the SDK only the interfaces of one generation, so its choice is ours.
  const interfaces = card.supportedInterfaces.filter((i) => i.protocolVersion.startsWith(version));
  assert.ok(interfaces.length > 0, JSON.stringify(card.supportedInterfaces));
  const transport = binding === 'JSONRPC'
    ? new JsonRpcTransportFactory({ fetchImpl, legacyCompat: { enabled: true } })
    : new RestTransportFactory({ fetchImpl, legacyCompat: { enabled: true } });
  const factory = new ClientFactory(ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
    transports: [transport],
    preferredTransports: [binding],
  }));
  return factory.createFromAgentCard({ ...card, supportedInterfaces: interfaces });
}

function message(prefix, text = 'hello', taskId = '') {
  return {
    messageId: `${prefix}-${randomUUID().slice(0, 8)}`,
    contextId: '',
    taskId,
    role: Role.ROLE_USER,
    parts: [{ content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: '' }],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
}

function request(msg, returnImmediately = false) {
  return {
    tenant: '',
    message: msg,
    configuration: { acceptedOutputModes: [], taskPushNotificationConfig: undefined, returnImmediately },
    metadata: undefined,
  };
}

const isTask = (r) => r && r.status !== undefined;
const textOf = (part) => part.content?.value;

for (const version of ['1.0', '0.3']) {
  for (const binding of ['JSONRPC', 'HTTP+JSON']) {
    describe(`${binding} ${version}`, () => {
      test('blocking send, get, direct message, rejection', async () => {
        const c = await client(binding, version);
        assert.equal(c.protocolVersion.startsWith(version), true, c.protocolVersion);
        const task = await c.sendMessage(request(message('echo', 'js hello')));
        assert.ok(isTask(task), JSON.stringify(task));
        assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
        assert.equal(textOf(task.artifacts[0].parts[0]), 'js hello');
        const got = await c.getTask({ tenant: '', id: task.id, historyLength: 1 });
        assert.equal(got.id, task.id);
        assert.equal(got.history.length, 1);
        const reply = await c.sendMessage(request(message('tck-message-response')));
        assert.ok(!isTask(reply));
        assert.equal(textOf(reply.parts[0]), 'Direct message response');
        const rejected = await c.sendMessage(request(message('tck-reject-task')));
        assert.equal(rejected.status.state, TaskState.TASK_STATE_REJECTED);
      });

      test('a file part with bytes comes back byte for byte', async () => {
        // Bytes that are neither UTF-8 nor base64 text: the 0.3 HTTP+JSON binding must write
        // ProtoJSON's base64, once (docs/adr/0001-v03-rest-file-bytes.md).
        const bytes = Buffer.from([0x00, 0x01, 0xfe, 0xff, ...Buffer.from(' known bytes\n')]);
        const msg = message('file-bytes', 'file');
        msg.parts.push({ content: { $case: 'raw', value: bytes }, metadata: undefined, filename: 'k.bin',
          mediaType: 'application/octet-stream' });
        const c = await client(binding, version);
        const task = await c.sendMessage(request(msg));
        assert.equal(task.status.state, TaskState.TASK_STATE_COMPLETED);
        const got = await c.getTask({ tenant: '', id: task.id, historyLength: 1 });
        const part = got.history[0].parts.find((p) => p.content?.$case === 'raw');
        assert.ok(part, JSON.stringify(got.history[0]));
        assert.deepEqual(Buffer.from(part.content.value), bytes);
        // The SDK's 0.3 proto conversions drop a file's name both ways (ToProto and FromProto
        // copy bytes and mimeType only).
        if (!(version === '0.3' && binding === 'HTTP+JSON')) assert.equal(part.filename, 'k.bin');
      });

      test('stream in order, chunked artifacts', async () => {
        const c = await client(binding, version);
        const events = [];
        for await (const e of c.sendMessageStream(request(message('tck-stream-ordering-001')))) events.push(e);
        assert.deepEqual(events.map((e) => e.payload.$case), ['task', 'statusUpdate', 'artifactUpdate', 'statusUpdate']);
        assert.equal(events.at(-1).payload.value.status.state, TaskState.TASK_STATE_COMPLETED);
        const chunks = [];
        for await (const e of c.sendMessageStream(request(message('tck-stream-artifact-chunked')))) {
          if (e.payload.$case === 'artifactUpdate') chunks.push(e.payload.value);
        }
        assert.deepEqual(chunks.map((u) => u.lastChunk), [false, true]);
        // The SDK's 0.3 proto reader drops `append` (its FromProto.taskArtifactUpdateEvent copies
        // lastChunk only); the wire carries it (tests/compat.rs checks the bytes).
        if (!(version === '0.3' && binding === 'HTTP+JSON')) {
          assert.deepEqual(chunks.map((u) => u.append), [false, true]);
        }
      });

      test('multi-turn, resubscribe, cancel', async () => {
        const c = await client(binding, version);
        const first = await c.sendMessage(request(message('tck-input-required')));
        assert.equal(first.status.state, TaskState.TASK_STATE_INPUT_REQUIRED);
        const done = await c.sendMessage(request(message('tck-complete-task', 'done', first.id)));
        assert.equal(done.status.state, TaskState.TASK_STATE_COMPLETED);
        assert.equal(done.contextId, first.contextId);

        const running = await c.sendMessage(request(message('test-resubscribe-message-id'), true));
        const events = [];
        for await (const e of c.resubscribeTask({ tenant: '', id: running.id })) events.push(e);
        assert.equal(events[0].payload.$case, 'task');
        assert.equal(events.at(-1).payload.value.status.state, TaskState.TASK_STATE_COMPLETED);

        const longOne = await c.sendMessage(request(message('test-resubscribe-message-id'), true));
        const canceled = await c.cancelTask({ tenant: '', id: longOne.id, metadata: undefined });
        assert.equal(canceled.status.state, TaskState.TASK_STATE_CANCELED);
        await assert.rejects(c.getTask({ tenant: '', id: 'no-such-task' }));
      });

      test('push config CRUD', async () => {
        const c = await client(binding, version);
        const task = await c.sendMessage(request(message('tck-input-required')));
        const created = await c.createTaskPushNotificationConfig({
          tenant: '', id: 'js-hook', taskId: task.id, url: 'https://93.184.216.34/js', token: 'tok',
          authentication: undefined,
        });
        assert.equal(created.url, 'https://93.184.216.34/js');
        assert.equal(created.id, 'js-hook');
        const got = await c.getTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'js-hook' });
        assert.equal(got.token, 'tok');
        const listed = await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
        assert.deepEqual(listed.configs.map((x) => x.id), ['js-hook']);
        await c.deleteTaskPushNotificationConfig({ tenant: '', taskId: task.id, id: 'js-hook' });
        const empty = await c.listTaskPushNotificationConfig({ tenant: '', taskId: task.id, pageSize: 0, pageToken: '' });
        assert.deepEqual(empty.configs, []);
      });

      test('extended card and required extension', async () => {
        const c = await client(binding, version);
        const card = await c.getAgentCard(); // the extended card, as the public one declares it
        assert.equal(card.name, 'JS interop agent (extended)');
        const bare = await client(binding, version, { bare: true });
        await assert.rejects(bare.sendMessage(request(message('echo'))), (err) => {
          assert.match(String(err?.message ?? err), /extension|-32008|400/i);
          return true;
        });
      });
    });
  }
}
