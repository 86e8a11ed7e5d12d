/**
 * Graceful shutdown of the real server process (issue 21 item 4), on the embedded store:
 * - SIGTERM while a stream follows a running command: readiness goes 503 and new work is
 *   refused (503, -32013) during the drain; the stream ends with a proper end of response and
 *   a last comment (never a destroyed socket); the command finishes within the grace period;
 *   the process exits 0, and the task is found completed after a restart;
 * - a second signal exits at once, non-zero;
 * - a command still running when SHUTDOWN_GRACE_MS passed is recorded FAILED `interrupted` by
 *   the shutdown itself (not by a later lease lapse) and its process is gone.
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { freshDatabase, spawnServer } from '../support/process.js';
import type { ServerProcess } from '../support/process.js';
import { parseSse, rpc } from '../support/sse.js';
import { confirmMessage, dataOf, tempDir, userMessage } from '../support/server.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const SCRIPT: ModelScript = {
  ...TEST_SCRIPT,
  scripts: [
    {
      when: '^brief',
      steps: [
        { chunks: [[{ functionCall: { name: 'run_shell_command', args: { command: 'sleep 2; echo slept' } } }]] },
        { chunks: [[{ text: 'Brief done.' }]] },
      ],
    },
    {
      when: '^endless',
      steps: [
        { chunks: [[{ functionCall: { name: 'run_shell_command', args: { command: 'echo $$ > cmd.pid; exec sleep 30' } } }]] },
        { chunks: [[{ text: 'unreachable' }]] },
      ],
    },
    ...TEST_SCRIPT.scripts,
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function poll<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, ms = 15_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await sleep(50);
  }
}

/**
 * Where a test's server keeps its tasks: a PostgreSQL database of its own when TEST_DATABASE_URL
 * is set (quick to start), else an embedded data directory (slow to create on a busy machine).
 */
async function storeFor(t: Test): Promise<Record<string, string>> {
  const db = await freshDatabase(t);
  return db ? { DATABASE_URL: db.url } : { DATA_DIR: tempDir('shutdown-data-') };
}

/** Starts a server whose shell runs unconfined (so the pid a command writes is the host's) and asks before each command. */
function start(t: Test, store: Record<string, string>, env: Record<string, string> = {}): Promise<ServerProcess> {
  return spawnServer(t, { script: SCRIPT, env: { ...store, SHELL_SANDBOX: 'off', ...env }, readyTimeoutMs: 120_000 });
}

/** Pauses `prompt` on its card, approves it, and returns a raw reader of the stream that runs it, once EXECUTING arrived. */
async function runApproved(srv: ServerProcess, prompt: string) {
  const paused = await rpc(srv.url, 'message/stream', { message: userMessage(prompt) });
  const results = (paused.events ?? []).map((e) => e.data.result);
  const task = results[0];
  const card = dataOf(results.find((r) => dataOf(r)?.status === 'PENDING'));
  if (!task?.id || !card) throw new Error(`"${prompt}" did not pause on a card: ${paused.raw}`);
  const res = await fetch(srv.url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'message/stream',
      params: { message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }) },
    }),
  });
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  let raw = '';
  /** Reads until `pred(raw)`; rejects if the response breaks (a destroyed socket). */
  const readUntil = async (pred: (raw: string) => boolean): Promise<string> => {
    while (!pred(raw)) {
      const { value, done } = await reader.read();
      if (done) break;
      raw += decoder.decode(value, { stream: true });
    }
    return raw;
  };
  await readUntil((r) => parseSse(r).some((e) => dataOf(e.data.result)?.status === 'EXECUTING'));
  /** Reads to the end: `{ ended: true }` on a proper end of response, else the error the read met. */
  const end = async (): Promise<{ ended: boolean; error?: string; raw: string }> => {
    try {
      await readUntil(() => false);
      return { ended: true, raw };
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause;
      return { ended: false, error: `${(err as Error).message} (${cause?.code ?? 'no code'})`, raw };
    }
  };
  return { task, card, end };
}

t.test('SIGTERM with a stream open: 503 while draining, the stream ends cleanly, the command finishes, exit 0', async (t) => {
  const store = await storeFor(t);
  const srv = await start(t, store);
  const { task, end } = await runApproved(srv, 'brief please');
  const probes: number[] = [];
  let refusal: { status: number; body: any; retryAfter: string | null } | undefined;
  let probing = true;
  const prober = (async () => {
    while (probing) {
      try {
        const r = await fetch(new URL('/readyz', srv.url), { signal: AbortSignal.timeout(2000) });
        probes.push(r.status);
        await r.arrayBuffer();
        if (r.status === 503 && refusal === undefined) {
          const send = await fetch(srv.url, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'message/send', params: { message: userMessage('write late') } }),
          });
          refusal = { status: send.status, body: await send.json(), retryAfter: send.headers.get('retry-after') };
        }
      } catch {
        return; // no longer listening
      }
      await sleep(50);
    }
  })();
  process.kill(srv.pid, 'SIGTERM');
  const stream = await end();
  t.equal(stream.error, undefined, 'reading the stream met no error');
  t.equal(stream.ended, true, 'the stream ended with a proper end of the response');
  t.match(stream.raw, /\n: server shutting down; reconnect with Last-Event-ID to resume\n\n$/, 'its last frame says why, as a comment');
  const exit = await srv.exited;
  probing = false;
  await prober;
  t.same(exit, { code: 0, signal: null }, 'the process exited 0');
  t.ok(probes.includes(503), `/readyz answered 503 during the drain (${probes.join(' ')})`);
  t.equal(refusal?.status, 503, 'new work during the drain: HTTP 503');
  t.equal(refusal?.retryAfter, '1', 'with Retry-After');
  t.equal(refusal?.body?.error?.code, -32013, `JSON-RPC code UNAVAILABLE: ${JSON.stringify(refusal?.body)}`);

  const again = await start(t, store);
  const got = await rpc(again.url, 'tasks/get', { id: task.id });
  t.equal(got.json?.result?.status?.state, 'completed', 'the command finished within the grace period and the task completed');
});

t.test('a second signal exits at once, non-zero', async (t) => {
  const srv = await start(t, await storeFor(t), { SHUTDOWN_GRACE_MS: '120000' });
  const { end } = await runApproved(srv, 'endless please');
  process.kill(srv.pid, 'SIGTERM');
  await end(); // the drain began: streams end first
  process.kill(srv.pid, 'SIGTERM');
  const exit = await srv.exited;
  t.same(exit, { code: 143, signal: null }, 'exit code 128 + SIGTERM, before the 120 s grace period (the command sleeps 30 s)');
});

t.test('a command running past SHUTDOWN_GRACE_MS is recorded interrupted by the shutdown, and its process is gone', async (t) => {
  const store = await storeFor(t);
  const srv = await start(t, store, { SHUTDOWN_GRACE_MS: '300' });
  const { task, card, end } = await runApproved(srv, 'endless please');
  const pidFile = path.join(srv.workspace, 'cmd.pid');
  const pid = await poll('the command to write its pid', () => existsSync(pidFile) && Number(readFileSync(pidFile, 'utf8').trim()));
  t.ok(alive(pid), `the command runs (pid ${pid})`);
  process.kill(srv.pid, 'SIGTERM');
  await end();
  t.same(await srv.exited, { code: 0, signal: null }, 'the process exited 0');
  await poll(`pid ${pid} to be gone`, () => !alive(pid), 5_000).catch(() => undefined);
  t.notOk(alive(pid), `the command (pid ${pid}) is gone`);

  const again = await start(t, store);
  const log = await rpc(again.url, 'tasks/resubscribe', { id: task.id }, { headers: { 'Last-Event-ID': '0' } });
  const results = (log.events ?? []).map((e) => e.data.result);
  const failed = results.map(dataOf).find((d) => d?.tool_call_id === card.tool_call_id && d?.status === 'FAILED');
  t.equal(failed?.error?.type, 'interrupted', 'the call is FAILED interrupted');
  t.match(failed?.error?.message, /the server shut down; SHUTDOWN_GRACE_MS=300 passed/, 'recorded by the shutdown, not by a lease lapse');
  t.match(failed?.error?.message, /process group \d+/, 'its process group was killed');
  t.equal(results.at(-1)?.status?.state, 'failed', 'the task failed');
});

/** A live (not zombie) process. */
function alive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}
