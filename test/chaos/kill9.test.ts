/**
 * kill -9 under load: 30 concurrent clients play development-tool flows (confirmed writes,
 * confirmed shell commands that append to a file, auto-run reads, declined writes, mixed turns)
 * against a real server process; at a random moment (after a random number of SSE events seen
 * by the clients) the process gets SIGKILL; a new process starts on the same store and the
 * consistency checker (checker.ts) goes over every task of the round.
 *
 * Rounds on the embedded PGlite (DATA_DIR) and, when TEST_DATABASE_URL is set, on a fresh
 * PostgreSQL database: 1 round on one of them in `npm test`, 10 each with CHAOS_LONG=1
 * (`npm run chaos`). CHAOS_SEED
 * replays a run's kill moments (the seed is printed).
 */
import t from 'tap';
import { freshDatabase, pgOnly, PG_SKIP, spawnServer } from '../support/process.js';
import type { ServerProcess } from '../support/process.js';
import { tempDir } from '../support/server.js';
import { checkConsistency, describeFigures } from './checker.js';
import type { Figures } from './checker.js';
import { CHAOS_SCRIPT, FLOW_MIX, FLOWS, LEASE_MS, newFlow, playFlow, ROUNDS, sleep, STAGGER_MS, THINK_MS } from './flows.js';
import type { FlowRecord } from './flows.js';
import { eventsSeen, random, SEED } from './kill-moment.js';

/** A subtest's `t`. */
type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/**
 * Starts the flows on `srv` and kills it once the clients have seen `killAfter` events (or all
 * flows ended: then the kill finds an idle process). Returns when every client has stopped.
 */
async function loadAndKill(
  srv: ServerProcess,
  flows: FlowRecord[],
  killAfter: number,
): Promise<{ events: number; ms: number; ended: number }> {
  let killed = false;
  const started = Date.now();
  const playing = flows.map(async (f, i) => {
    await sleep(i * STAGGER_MS);
    if (!killed) await playFlow(f, () => srv.url);
  });
  let ended = 0;
  void Promise.all(playing).then(() => (ended = flows.length)); // cannot reject: playFlow catches everything
  while (!killed) {
    if (eventsSeen(flows) >= killAfter || ended === flows.length) killed = true;
    else await sleep(5);
  }
  const at = { events: eventsSeen(flows), ms: Date.now() - started, ended: flows.filter((f) => f.outcome === 'done').length };
  await srv.kill('SIGKILL');
  await Promise.all(playing);
  return at;
}

/** ROUNDS rounds of load, kill and check on one store. */
async function rounds(t: Test, storeEnv: Record<string, string>, sql?: Parameters<typeof checkConsistency>[1]['sql']): Promise<void> {
  const rand = random(SEED);
  const workspace = tempDir();
  const spawn = () =>
    spawnServer(t, { env: { ...storeEnv, LEASE_MS: String(LEASE_MS) }, workspace, script: CHAOS_SCRIPT, readyTimeoutMs: 180_000 });
  const firstBoot = Date.now();
  let srv = await spawn();
  t.comment(`first start ${Date.now() - firstBoot} ms`);
  const checked = new Set<string>();
  const total = { flows: 0, kills: 0, tasks: 0, paused: 0, answered: 0, executed: 0, shellStarts: 0, events: 0, problems: 0 };
  for (let round = 1; round <= ROUNDS; round++) {
    const flows = Array.from({ length: FLOWS }, (_, i) => newFlow(i, FLOW_MIX[i % FLOW_MIX.length], Math.floor(rand() * THINK_MS)));
    // Somewhere in the load: a 30-flow round shows its clients ~250 events.
    const killAfter = 5 + Math.floor(rand() * 200);
    const at = await loadAndKill(srv, flows, killAfter);
    const bootStart = Date.now();
    srv = await spawn();
    const checkStart = Date.now();
    const figures: Figures = await checkConsistency(t, { url: srv.url, flows, skip: checked, settleMs: LEASE_MS + 20_000, sql });
    for (const id of figures.ids) checked.add(id);
    t.comment(
      `round ${round}: SIGKILL after ${at.events} client events (${at.ms} ms; ${at.ended}/${FLOWS} flows had ended); ` +
        `restart ${checkStart - bootStart} ms, check ${Date.now() - checkStart} ms; ${describeFigures(figures)}`,
    );
    Object.assign(total, {
      flows: total.flows + FLOWS,
      kills: total.kills + 1,
      tasks: total.tasks + figures.tasks,
      paused: total.paused + figures.paused,
      answered: total.answered + figures.answered,
      executed: total.executed + figures.executed,
      shellStarts: total.shellStarts + figures.shellStarts,
      events: total.events + figures.clientEvents,
      problems: total.problems + figures.problems.length,
    });
  }
  t.comment(
    `total: ${ROUNDS} rounds, ${total.flows} flows, ${total.kills} kills, ${total.tasks} tasks checked, ${total.paused} paused tasks answered ` +
      `(${total.answered} cards), ${total.executed} executions (${total.shellStarts} shell side effects), ${total.events} client events compared, ` +
      `${total.problems} problems (seed ${SEED})`,
  );
}

t.comment(`seed ${SEED} (CHAOS_SEED=${SEED} replays the kill moments), ${ROUNDS} rounds per store`);

/**
 * The short form (`npm test`) runs one store, PostgreSQL where there is one (PGlite's kill -9
 * recovery is also test/e2e/restart.test.ts's), to keep CI short; the long form runs both.
 */
const PGLITE_LEG =
  process.env.CHAOS_LONG === '1' || !process.env.TEST_DATABASE_URL
    ? {}
    : { skip: 'the short form runs on PostgreSQL (TEST_DATABASE_URL); npm run chaos runs both stores' };

t.test('kill -9 under load: PGlite (DATA_DIR)', PGLITE_LEG, async (t) => {
  await rounds(t, { DATA_DIR: tempDir('devtool-data-') });
});

t.test('kill -9 under load: PostgreSQL (DATABASE_URL)', pgOnly(), async (t) => {
  const db = await freshDatabase(t);
  if (!db) throw new Error(PG_SKIP);
  await rounds(t, { DATABASE_URL: db.url }, db.sql);
});
