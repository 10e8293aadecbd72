// What the JavaScript interop tests share.
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/** A free TCP port on 127.0.0.1. */
export async function freePort() {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

/**
 * Starts $A2A_LOCAL_BIN on a free 127.0.0.1 port with `args` (plus $A2A_LOCAL_ARGS, which picks the
 * backend, unless `backend` is false) and waits (30 s at most) until it serves its card. Each start
 * gets its own table and queues ($TABLE_NAME plus a suffix): a stopped instance's SQS long poll
 * still in flight must not take the next one's jobs.
 * Returns { proc, base }; the caller kills proc.
 */
export async function startLocal(args, { backend = true } = {}) {
  const bin = process.env.A2A_LOCAL_BIN;
  if (!bin) throw new Error('A2A_LOCAL_BIN is not set (run through scripts/test)');
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const extra = backend ? (process.env.A2A_LOCAL_ARGS || '').split(' ').filter(Boolean) : [];
  const env = { ...process.env };
  if (env.TABLE_NAME) env.TABLE_NAME = `${env.TABLE_NAME}-${port}`;
  // A data directory of its own (the default store keeps one SQLite file per directory).
  const dataDir = [...args, ...extra].includes('--data-dir') ? [] : ['--data-dir', mkdtempSync(join(tmpdir(), 'a2a-data-'))];
  const proc = spawn(bin, ['--addr', `127.0.0.1:${port}`, ...args, ...extra, ...dataDir], { stdio: 'ignore', env });
  for (let i = 0; i < 300; i++) { // bounded: 30 s
    try {
      if ((await fetch(`${base}/.well-known/agent-card.json`)).ok) return { proc, base };
    } catch { /* not up yet */ }
    await new Promise((r) => setTimeout(r, 100));
  }
  proc.kill();
  throw new Error('a2a-local did not start in 30 s');
}
