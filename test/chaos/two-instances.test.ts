/**
 * Two instances on one PostgreSQL database, one of them killed under load: 30 clients play
 * development-tool flows spread over instances A and B; after a random number of SSE events
 * seen by the clients, A gets SIGKILL. Its clients retry on B: a client that knows its task
 * resubscribes there with Last-Event-ID (the last id it saw) and answers the pauses it finds;
 * B's supervisor takes over A's tasks once their leases lapse (LEASE_MS 1500). Then the
 * consistency checker (checker.ts) goes over every task of the round on B, and a new A joins
 * for the next round.
 *
 * PostgreSQL only (the embedded PGlite is one process by construction). 1 round in `npm test`, 10 with
 * CHAOS_LONG=1; CHAOS_SEED replays a run's kill moments.
 */
import t from 'tap';
import { freshDatabase, pgOnly, PG_SKIP, spawnServer } from '../support/process.js';
import type { ServerProcess } from '../support/process.js';
import { tempDir } from '../support/server.js';
import { checkConsistency, describeFigures } from './checker.js';
import { CHAOS_SCRIPT, FLOW_MIX, FLOWS, LEASE_MS, newFlow, playFlow, ROUNDS, sleep, STAGGER_MS, THINK_MS } from './flows.js';
import type { FlowRecord } from './flows.js';
import { eventsSeen, random, SEED } from './kill-moment.js';

/** One client: plays its flow on its instance; when that instance was killed under it, goes on at the survivor (at most 3 tries). */
async function client(flow: FlowRecord, home: () => ServerProcess, survivor: ServerProcess, dead: () => boolean): Promise<boolean> {
  let url = home().url;
  await playFlow(flow, () => url);
  let moved = false;
  for (let tries = 0; tries < 3 && flow.outcome !== 'done' && dead(); tries++) {
    if (flow.taskId === undefined) return moved; // cut before it learned its task: nothing to go back to
    url = survivor.url;
    moved = true;
    await playFlow(flow, () => url, true);
  }
  return moved;
}

t.test('two instances on one PostgreSQL, one killed under load', pgOnly(), async (t) => {
  const db = await freshDatabase(t);
  if (!db) throw new Error(PG_SKIP);
  const rand = random(SEED);
  const env = { DATABASE_URL: db.url, LEASE_MS: String(LEASE_MS) };
  const spawn = () => spawnServer(t, { env, script: CHAOS_SCRIPT, workspace: tempDir(), readyTimeoutMs: 180_000 });
  const b = await spawn(); // first: migrates the new database
  const checked = new Set<string>();
  const total = { flows: 0, kills: 0, moved: 0, tasks: 0, paused: 0, executed: 0, late: 0, events: 0, problems: 0 };
  t.comment(`seed ${SEED} (CHAOS_SEED=${SEED} replays the kill moments), ${ROUNDS} rounds`);
  for (let round = 1; round <= ROUNDS; round++) {
    const a = await spawn();
    const flows = Array.from({ length: FLOWS }, (_, i) => newFlow(i, FLOW_MIX[i % FLOW_MIX.length], Math.floor(rand() * THINK_MS)));
    const killAfter = 5 + Math.floor(rand() * 200);
    let killed = false;
    const started = Date.now();
    const clients = flows.map(async (f, i) => {
      await sleep(i * STAGGER_MS);
      return client(
        f,
        () => (i % 2 === 0 && !killed ? a : b),
        b,
        () => killed,
      );
    });
    let allEnded = false;
    void Promise.all(clients).then(() => (allEnded = true)); // cannot reject: playFlow catches everything
    while (!killed && !allEnded && eventsSeen(flows) < killAfter) await sleep(5);
    const at = { events: eventsSeen(flows), ms: Date.now() - started };
    killed = true;
    await a.kill('SIGKILL');
    const moved = (await Promise.all(clients)).filter(Boolean).length;
    const checkStart = Date.now();
    const figures = await checkConsistency(t, { url: b.url, flows, skip: checked, settleMs: LEASE_MS + 20_000, sql: db.sql });
    for (const id of figures.ids) checked.add(id);
    t.comment(
      `round ${round}: A killed after ${at.events} client events (${at.ms} ms); ${moved} clients went on at B; ` +
        `check ${Date.now() - checkStart} ms; ${describeFigures(figures)}`,
    );
    total.flows += FLOWS;
    total.kills += 1;
    total.moved += moved;
    total.tasks += figures.tasks;
    total.paused += figures.paused;
    total.executed += figures.executed;
    total.late += figures.settledLate;
    total.events += figures.clientEvents;
    total.problems += figures.problems.length;
  }
  t.comment(
    `total: ${ROUNDS} rounds, ${total.flows} flows, ${total.kills} kills, ${total.moved} clients moved to the survivor, ` +
      `${total.tasks} tasks checked (${total.late} ended by the survivor after the check began), ${total.paused} paused tasks answered, ` +
      `${total.executed} executions, ${total.events} client events compared, ${total.problems} problems (seed ${SEED})`,
  );
});
