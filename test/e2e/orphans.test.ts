/**
 * Issue 10, finding 10: a command must not outlive a crashed server. The real server as a
 * child process runs `echo started; sleep 30; echo done > f` (YOLO), is killed with SIGKILL
 * while the command sleeps, and is started again on the same store:
 * - without a sandbox (SHELL_SANDBOX=off) the command survives the crash (checked), and the
 *   recovery kills its recorded process group;
 * - in the bubblewrap sandbox it dies with the server (--die-with-parent), before any restart;
 * and either way the file is never written and the call/task are reported interrupted/failed
 * promptly: on the embedded store (PGlite) at boot, not a lease (30 s) later; on PostgreSQL
 * (shared by design) once the short test lease lapsed.
 */
import t from 'tap';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { createShellSandbox, SandboxUnavailableError } from '../../src/tools/shell/sandbox.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { freshDatabase, openStream, PG_SKIP, pgOnly, spawnServer } from '../support/process.js';
import type { ServerProcess } from '../support/process.js';
import { rpc } from '../support/sse.js';
import { until } from '../support/core.js';
import { dataOf, tempDir, URI, userMessage } from '../support/server.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** A sleep no other process runs (one per leg; the legs run side by side): found on the host by its command line. */
const newMarker = () => `30.${randomBytes(3).readUIntBE(0, 3)}`;

const scriptFor = (marker: string): ModelScript => ({
  ...TEST_SCRIPT,
  scripts: [
    {
      when: '^orphan (\\w+)',
      steps: [
        {
          chunks: [
            [{ functionCall: { name: 'run_shell_command', args: { command: `echo started; sleep ${marker}; echo done > written.txt` } } }],
          ],
        },
        { chunks: [[{ text: 'unreachable' }]] },
      ],
    },
    ...TEST_SCRIPT.scripts,
  ],
});

let bwrapSkip: string | false = false;
try {
  createShellSandbox('bwrap', { protectedPaths: [], network: false });
} catch (err) {
  if (!(err instanceof SandboxUnavailableError)) throw err;
  bwrapSkip = `bubblewrap unavailable: ${err.message}`;
}

/** Host processes running the marked sleep, and the process group of each. */
function sleepers(marker: string): Array<{ pid: number; pgid: number }> {
  const found: Array<{ pid: number; pgid: number }> = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8') !== `sleep\0${marker}\0`) continue;
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      if (fields[0] !== 'Z') found.push({ pid: Number(entry), pgid: Number(fields[2]) });
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Live processes of group `pgid`. */
function groupMembers(pgid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const fields = readFileSync(`/proc/${entry}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
      if (fields[0] !== 'Z' && Number(fields[2]) === pgid) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

/** Starts the orphan-to-be in a workspace of its own and waits until it sleeps; its task id, workspace and group. */
async function startSleeper(t: Test, srv: ServerProcess, marker: string) {
  const workspace = tempDir();
  const stream = await openStream(srv.url, 'message/stream', {
    message: userMessage('orphan please', { metadata: { [URI]: { workspace_path: workspace, approval_mode: 'YOLO' } } }),
  });
  t.teardown(() => stream.close());
  // Once "started" is on the stream, the call's row (with its process group) is committed: writes go in order.
  const live = await stream.until((ev) => /started/.test(dataOf(ev.data.result)?.live_content ?? ''));
  t.ok(live, 'the command runs');
  const taskId = String(stream.events[0]?.data.result.id);
  const [sleeper] = await until('the sleep runs', () => sleepers(marker).length === 1 && sleepers(marker));
  return { taskId, workspace, marker, pgid: sleeper.pgid, stream };
}

/** After the restart: the task fails with the call interrupted, within `withinMs` of `since`; the command is gone and never wrote its file. */
async function reportedAndGone(
  t: Test,
  srv: ServerProcess,
  run: { taskId: string; workspace: string; marker: string; pgid: number },
  since: number,
  withinMs: number,
) {
  const task = await until(
    'the task is failed',
    async () => {
      const got = (await rpc(srv.url, 'tasks/get', { id: run.taskId })).json?.result;
      return got?.status?.state === 'failed' && got;
    },
    withinMs + 10_000,
  );
  const took = Date.now() - since;
  t.ok(took <= withinMs, `reported failed ${took} ms after the restart (at most ${withinMs})`);
  const replay = await rpc(srv.url, 'tasks/resubscribe', { id: run.taskId }, { headers: { 'Last-Event-ID': '0' } });
  const card = (replay.events ?? []).map((e) => dataOf(e.data.result)).filter((c) => c?.status === 'FAILED')[0];
  t.match(card, { tool_name: 'run_shell_command', error: { type: 'interrupted' } }, 'the call is FAILED interrupted');
  t.match(task.status.message?.parts?.[0]?.text, /^Interrupted: /);
  await until('no process of the command is left', () => sleepers(run.marker).length === 0 && groupMembers(run.pgid).length === 0);
  t.notOk(existsSync(path.join(run.workspace, 'written.txt')), 'the command never wrote its file');
  return card;
}

async function orphanCases(t: Test, storeEnv: Record<string, string>, promptMs: number, lease: Record<string, string> = {}) {
  // Without the sandbox YOLO runs the command only because the operator said so.
  const env = (sandbox: string) => ({
    ...storeEnv,
    ...lease,
    SHELL_SANDBOX: sandbox,
    SHELL_UNCONFINED_AUTO_APPROVE: String(sandbox === 'off'),
  });
  const marker = newMarker();
  const SCRIPT = scriptFor(marker);

  await t.test('off: the command outlives the crash; the recovery kills its group', async (t) => {
    const first = await spawnServer(t, { env: env('off'), script: SCRIPT, readyTimeoutMs: 90_000 });
    const run = await startSleeper(t, first, marker);
    await first.kill('SIGKILL');
    t.same(
      sleepers(marker).map((s) => s.pgid),
      [run.pgid],
      'the command still runs after the crash (what the recovery must stop)',
    );
    const second = await spawnServer(t, { env: env('off'), script: SCRIPT });
    const card = await reportedAndGone(t, second, run, Date.now(), promptMs);
    t.match(card?.error?.message, new RegExp(`killed \\(process group ${run.pgid}\\)`), 'the card says the group was killed');
    await second.kill('SIGTERM');
  });

  await t.test('bwrap: the sandbox dies with the server', { skip: bwrapSkip }, async (t) => {
    const first = await spawnServer(t, { env: env('bwrap'), script: SCRIPT, readyTimeoutMs: 90_000 });
    const run = await startSleeper(t, first, marker);
    await first.kill('SIGKILL');
    await until('the sandboxed command dies with its server, before any restart', () => sleepers(marker).length === 0);
    t.pass('gone without a restart');
    const second = await spawnServer(t, { env: env('bwrap'), script: SCRIPT });
    const card = await reportedAndGone(t, second, run, Date.now(), promptMs);
    t.notMatch(card?.error?.message, /were killed/, 'nothing was left to kill');
    await second.kill('SIGTERM');
  });
}

t.jobs = 2;

t.test('PGlite (DATA_DIR): recovery at boot, at once', { buffered: true }, async (t) => {
  // LEASE_MS stays at its default (30 s): the prompt report cannot come from a lapsed lease.
  await orphanCases(t, { DATA_DIR: tempDir('devtool-data-') }, 5_000);
});

t.test('PostgreSQL (DATABASE_URL): recovery once the lease lapsed', { buffered: true, ...pgOnly() }, async (t) => {
  const db = await freshDatabase(t);
  if (!db) throw new Error(PG_SKIP);
  await orphanCases(t, { DATABASE_URL: db.url }, 8_000, { LEASE_MS: '1500' });
});
