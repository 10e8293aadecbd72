// Signed agent cards with the official A2A JavaScript SDK (@a2a-js/sdk, its jose-backed
// verifyAgentCardSignature and generateAgentCardSignature): the SDK verifies a2a-local's ES256,
// RS256 and EdDSA signatures with keys from the served JWKS; cards the SDK signs with each
// algorithm verify with `a2a card --verify`; a tampered card fails both ways. Needs $A2A_LOCAL_BIN
// and $A2A_BIN (scripts/test sets them).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { generateAgentCardSignature, verifyAgentCardSignature } from '@a2a-js/sdk';

import { startLocal } from './support.mjs';

const KEYS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'shared', 'tests', 'fixtures', 'signing');
const ALGS = { es256: 'ES256', rs256: 'RS256', eddsa: 'EdDSA' };
const CARD = {
  name: 'Signed agent', description: 'Signs its card', version: '2.0.0',
  defaultInputModes: ['text/plain'], defaultOutputModes: ['text/plain'],
  skills: [{ id: 'echo', name: 'Echo', description: 'Echoes', tags: ['test'] }],
};

let proc;
let base;
let files;
let filesBase;
const served = {};

before(async () => {
  assert.ok(process.env.A2A_BIN, 'A2A_BIN is not set (run through scripts/test)');
  const dir = mkdtempSync(join(tmpdir(), 'a2a-js-signing-'));
  writeFileSync(join(dir, 'card.json'), JSON.stringify(CARD));
  const keys = Object.keys(ALGS).map((name) => `${name}=${join(KEYS, `${name}.pem`)}`).join(',');
  ({ proc, base } = await startLocal(['--agent', 'echo', '--card', join(dir, 'card.json'), '--card-signing-key', keys],
    { backend: false }));
  files = createServer((req, res) => {
    const body = served[req.url];
    res.writeHead(body ? 200 : 404, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body ?? {}));
  });
  await new Promise((r) => files.listen(0, '127.0.0.1', r));
  filesBase = `http://127.0.0.1:${files.address().port}`;
});

after(() => {
  proc?.kill();
  files?.close();
});

/** `a2a ARGS` without blocking the event loop (the card is served from this process). */
function a2a(...args) {
  return new Promise((resolve) => {
    const child = spawn(process.env.A2A_BIN, args);
    let out = '';
    child.stdout.on('data', (d) => { out += d; });
    child.stderr.on('data', (d) => { out += d; });
    const timer = setTimeout(() => child.kill(), 60000); // bounded
    child.on('close', (status) => { clearTimeout(timer); resolve({ status, out }); });
  });
}

const jwksOf = async (url) => (await (await fetch(url)).json()).keys;

test('the SDK verifies a2a-local signatures of every algorithm', async () => {
  const card = await (await fetch(`${base}/.well-known/agent-card.json`, { headers: { 'A2A-Version': '1.0' } })).json();
  assert.equal(card.signatures.length, 3);
  const verify = verifyAgentCardSignature(async (kid, jku) => {
    const key = (await jwksOf(jku)).find((k) => k.kid === kid);
    assert.ok(key, `no key ${kid}`);
    return key;
  });
  for (const signature of card.signatures) {
    await verify({ ...card, signatures: [signature] }); // each alone
  }
  await assert.rejects(verify({ ...card, name: 'Evil agent' }));
});

for (const [name, alg] of Object.entries(ALGS)) {
  test(`cards the SDK signs with ${alg} verify with a2a card --verify`, async () => {
    const pem = readFileSync(join(KEYS, `${name}.pem`));
    const jwk = { ...createPublicKey(createPrivateKey(pem)).export({ format: 'jwk' }), kid: `js-${name}`, alg, use: 'sig' };
    const card = {
      ...CARD,
      supportedInterfaces: [{ url: filesBase, protocolBinding: 'JSONRPC', protocolVersion: '1.0' }],
      capabilities: { streaming: true },
    };
    const sign = generateAgentCardSignature(createPrivateKey(pem), {
      alg, kid: `js-${name}`, typ: 'JOSE', jku: `${filesBase}/.well-known/jwks.json`,
    });
    const signed = await sign(structuredClone(card));
    served['/.well-known/jwks.json'] = { keys: [jwk] };
    served['/.well-known/agent-card.json'] = JSON.parse(JSON.stringify(signed));
    let r = await a2a('card', filesBase, '--verify');
    assert.equal(r.status, 0, r.out);
    assert.match(r.out, new RegExp(`signature verified: kid js-${name} \\(${alg}\\)`));
    served['/.well-known/agent-card.json'] = { ...served['/.well-known/agent-card.json'], description: 'Tampered' };
    r = await a2a('card', filesBase, '--verify');
    assert.equal(r.status, 9, r.out);
  });
}
