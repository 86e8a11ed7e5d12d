/**
 * Exactly-once under load (issue 10, finding 6): one approval runs its command once, however
 * many answers race for it and wherever they land.
 *
 * Each trial pauses a task on a `run_shell_command` whose side effect is observable (it
 * appends a line to `ran.log` in the task's workspace), then sends 16 messages at once — 12
 * `proceed_once` answers to the call and 4 free-text messages, spread over the instances —
 * and, once the task completed, 2 late answers. Then:
 * - the command ran exactly once (one line in `ran.log`), with one `executed` audit row;
 * - exactly one answer won (an SSE stream that runs the call); every other answer got -32602
 *   "already answered" (or the task was busy: -32004);
 * - the task ends `completed`, nothing after its first `completed` re-prompts (no PENDING card,
 *   no `input-required`), and every stored call is closed (`done`);
 * - after the supervisors of every instance have swept past a whole lease, the task is still
 *   `completed` (no late `failed: interrupted`).
 *
 * With TEST_DATABASE_URL: two server processes on one fresh PostgreSQL database (the case
 * the finding was observed on). Without it, the single-instance variant on the embedded
 * PGlite (one process by construction): the same trials, every message to the one process.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { until } from '../support/core.js';
import { freshDatabase, openStream, spawnServer } from '../support/process.js';
import type { FreshDatabase, ServerProcess } from '../support/process.js';
import { rpc } from '../support/sse.js';
import type { PostResult, SseEvent } from '../support/sse.js';
import { confirmMessage, dataOf, tempDir, textOf, URI, userMessage } from '../support/server.js';

/** A subtest's `t`. */
type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const TRIALS = 10;
const ANSWERS = 12;
const FREE_TEXT = 4;
const LATE = 2;
const LEASE_MS = 1500;
/** The supervisor's default interval (a third of the lease, at least 250 ms); main.ts sets no other. */
const SWEEP_MS = Math.max(250, Math.floor(LEASE_MS / 3));

const call = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });

/**
 * TEST_SCRIPT plus:
 * - `stress`: a shell command that appends its pid to ran.log, runs a little (so answers and
 *   free text land while it executes) and appends again;
 * - `probe`: a command that runs until `release.flag` exists (bounded: 60 s), silently, so only
 *   the supervisor's lease renewals touch its row: each renewal marks the start of a pass.
 */
const SCRIPT: ModelScript = {
  ...TEST_SCRIPT,
  scripts: [
    {
      when: '^stress',
      steps: [
        { chunks: [[call('run_shell_command', { command: 'echo "start $$" >> ran.log; sleep 0.2; echo "end $$" >> ran.log' })]] },
        { chunks: [[{ text: 'Appended.' }]] },
      ],
    },
    {
      when: '^probe',
      steps: [
        { chunks: [[call('run_shell_command', { command: 'for i in $(seq 600); do [ -e release.flag ] && break; sleep 0.1; done' })]] },
        { chunks: [[{ text: 'Probe released.' }]] },
      ],
    },
    ...TEST_SCRIPT.scripts,
  ],
};

const results = (events: SseEvent[] | undefined) => (events ?? []).map((e) => e.data.result);
const stateOf = (r: any): string | undefined => (r?.kind === 'status-update' || r?.kind === 'task' ? r.status?.state : undefined);

/** Starts `prompt` on `srv` in `workspace` and reads its stream to the pause: the task and its PENDING card. */
async function pauseOn(srv: ServerProcess, workspace: string, prompt: string) {
  const res = await rpc(srv.url, 'message/stream', {
    message: userMessage(prompt, { metadata: { [URI]: { workspace_path: workspace } } }),
  });
  const ev = results(res.events);
  const card = dataOf(ev.find((r) => dataOf(r)?.status === 'PENDING'));
  if (ev.at(-1)?.status?.state !== 'input-required' || card?.tool_name !== 'run_shell_command') {
    throw new Error(`"${prompt}" did not pause on a shell call: ${res.raw.slice(0, 2000)}`);
  }
  return { task: ev[0], card };
}

const proceed = (task: any, card: any) =>
  confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' });
const freeText = (task: any, i: number) => userMessage(`what is going on? (${i})`, { taskId: task.id, contextId: task.contextId });

/** What one message got back. */
type Outcome = 'ran' | 'reprompted' | 'continued' | `refused ${number}` | 'other';

function outcomeOf(res: PostResult, cardId: string): Outcome {
  if (res.json?.error) return `refused ${res.json.error.code as number}`;
  const ev = results(res.events);
  if (ev.some((r) => dataOf(r)?.tool_call_id === cardId && dataOf(r)?.status === 'EXECUTING')) return 'ran';
  const last = stateOf(ev.at(-1));
  if (last === 'input-required') return 'reprompted';
  if (last === 'completed') return 'continued'; // free text after the task completed: a new model turn
  return 'other';
}

/**
 * The supervisor passes of one instance, made visible: a `probe` call runs there for the whole
 * test, and each pass begins by renewing its lease to (pass start + LEASE_MS).
 */
async function sweepProbe(srv: ServerProcess, db: FreshDatabase) {
  const workspace = tempDir();
  const { task, card } = await pauseOn(srv, workspace, 'probe (supervisor passes)');
  const stream = await openStream(srv.url, 'message/stream', { message: proceed(task, card) });
  if (!(await stream.until((ev) => dataOf(ev.data.result)?.status === 'EXECUTING'))) throw new Error('probe: its call did not start');
  const starts = new Set<number>();
  const leaseUntil = async (): Promise<number | undefined> => {
    const [row] = await db.sql`select lease_until from tool_calls where id = ${card.tool_call_id}`;
    return row?.lease_until ? new Date(row.lease_until).getTime() : undefined;
  };
  const initial = await leaseUntil(); // the claim's lease, not a pass's
  return {
    /** Waits until a pass of this instance that began after `after` (ms since the epoch) has ended. Bounded. */
    async passAfter(after: number): Promise<void> {
      await until(
        `a supervisor pass of ${srv.url} begun after ${new Date(after).toISOString()} to end`,
        async () => {
          const at = await leaseUntil();
          if (at !== undefined && at !== initial) starts.add(at - LEASE_MS);
          return [...starts].filter((s) => s > after).length > 1; // the next pass began: the first one ended
        },
        Math.max(0, after - Date.now()) + 4 * SWEEP_MS + 5_000,
      );
    },
    async release(): Promise<void> {
      writeFileSync(path.join(workspace, 'release.flag'), '');
      await stream.rest(20_000);
    },
  };
}

interface Trial {
  task: any;
  card: any;
  workspace: string;
  outcomes: Outcome[];
}

/** One trial: pause, 16 messages at once, wait for completion, 2 late answers. */
async function runTrial(t: Test, n: number, servers: ServerProcess[]): Promise<Trial> {
  const workspace = tempDir();
  const home = servers[n % servers.length];
  const { task, card } = await pauseOn(home, workspace, `stress trial ${n}`);
  const on = (i: number) => servers[i % servers.length]; // alternate the instances
  const messages = [
    ...Array.from({ length: ANSWERS }, (_, i) => ({ srv: on(i + n), message: proceed(task, card) })),
    ...Array.from({ length: FREE_TEXT }, (_, i) => ({ srv: on(i + n + 1), message: freeText(task, i) })),
  ];
  // Odd trials: all 16 at once, free text interleaved with the answers. Even trials: the free
  // text first, and once one re-prompt was answered (it is logged before any claim) the other 15
  // at once — so re-prompts racing the claim are exercised on every store, not only on a slow one.
  const rank = (i: number) => (n % 2 === 0 && i >= ANSWERS ? -1 : (i * 7 + n) % messages.length);
  const order = messages.map((_, i) => i).sort((a, b) => rank(a) - rank(b));
  const send = (i: number) => rpc(messages[i].srv.url, 'message/stream', { message: messages[i].message });
  const lead = n % 2 === 0 ? [await send(order[0])] : [];
  const answers = [...lead, ...(await Promise.all(order.slice(lead.length).map(send)))];
  const outcomes = answers.map((res) => outcomeOf(res, card.tool_call_id));
  // The winner's stream ends at `completed`; wait for it where the task is stored.
  try {
    await until(
      `trial ${n}: task completed`,
      async () => (await rpc(home.url, 'tasks/get', { id: task.id })).json?.result?.status?.state === 'completed',
      20_000,
    );
  } catch (err) {
    const seen = await Promise.all(servers.map(async (s) => (await rpc(s.url, 'tasks/get', { id: task.id })).json?.result?.status?.state));
    t.comment(
      `home ${servers.indexOf(home)}; tasks/get per instance: ${seen.join(', ')}; outcomes: ${order.map((i, k) => `${servers.indexOf(messages[i].srv)}:${outcomes[k]}`).join(', ')}`,
    );
    t.comment(describeLog((await rpc(home.url, 'tasks/resubscribe', { id: task.id }, { headers: { 'Last-Event-ID': '0' } })).events));
    throw err;
  }
  const late = await Promise.all(
    Array.from({ length: LATE }, (_, i) => rpc(on(i).url, 'message/stream', { message: proceed(task, card) })),
  );
  for (const res of late) {
    t.equal(res.json?.error?.code, -32602, `trial ${n}: a late answer is refused with -32602`);
    t.match(res.json?.error?.message, /already answered|not waiting/, `trial ${n}: …naming why (${res.json?.error?.message})`);
  }
  return { task, card, workspace, outcomes };
}

/** The log, one line per event, for a failure's diagnosis. */
function describeLog(events: SseEvent[] | undefined): string {
  return (events ?? [])
    .map((e) => {
      const r = e.data.result;
      const card = dataOf(r);
      return `${e.id ?? '-'} ${stateOf(r) ?? ''} ${card?.status ?? ''} ${card?.tool_call_id ?? ''} ${textOf(r).slice(0, 80)}`;
    })
    .join('\n');
}

/** Asserts one trial's end state from the log, the store and the workspace. */
async function checkTrial(t: Test, n: number, trial: Trial, srv: ServerProcess, db: FreshDatabase | undefined, again = '') {
  const { task, card, workspace } = trial;
  const lines = readFileSync(path.join(workspace, 'ran.log'), 'utf8').trim().split('\n');
  const pids = new Set(lines.map((l) => l.split(' ')[1]));
  t.equal(pids.size, 1, `trial ${n}${again}: the command ran exactly once (${lines.join(', ')})`);
  t.equal(lines.length, 2, `trial ${n}${again}: one start and one end line`);
  const audit = (await rpc(srv.url, 'tasks/resubscribe', { id: task.id }, { headers: { 'Last-Event-ID': '0' } })).events;
  const log = results(audit).slice(1);
  const executing = log.filter((r) => dataOf(r)?.tool_call_id === card.tool_call_id && dataOf(r)?.status === 'EXECUTING');
  if (!t.equal(executing.length, 1, `trial ${n}${again}: one EXECUTING card in the log`)) t.comment(describeLog(audit));
  const states = log.map(stateOf).filter((s) => s !== undefined);
  const firstDone = log.findIndex((r) => stateOf(r) === 'completed');
  t.ok(firstDone > 0, `trial ${n}${again}: the task completed`);
  t.equal(states.at(-1), 'completed', `trial ${n}${again}: …and ends completed (states: ${states.join(' ')})`);
  const after = log.slice(firstDone + 1);
  t.notOk(
    after.some((r) => stateOf(r) === 'input-required' || dataOf(r)?.status === 'PENDING' || dataOf(r)?.tool_call_id === card.tool_call_id),
    `trial ${n}${again}: nothing re-prompts or touches the call after completed`,
  );
  t.notOk(
    log.some((r) => stateOf(r) === 'failed'),
    `trial ${n}${again}: never failed (${log
      .filter((r) => stateOf(r) === 'failed')
      .map(textOf)
      .join('; ')})`,
  );
  const entries = (await rpc(srv.url, 'audit/list', { task_id: task.id })).json?.result?.entries ?? [];
  const decisions: string[] = entries.map((e: any) => e.decision as string);
  t.equal(decisions.filter((d) => d === 'executed').length, 1, `trial ${n}${again}: one executed audit row (${decisions.join(', ')})`);
  t.equal(decisions.filter((d) => d === 'authorized').length, 1, `trial ${n}${again}: one authorized audit row`);
  t.notOk(decisions.includes('interrupted'), `trial ${n}${again}: no interrupted audit row`);
  if (!db) return;
  const calls = await db.sql`select id, phase, answer from tool_calls where task_id = ${task.id}`;
  t.same(
    calls.map((c) => [c.id, c.phase, c.answer]),
    [[card.tool_call_id, 'done', 'proceed_once']],
    `trial ${n}${again}: the stored call is done, answered once`,
  );
  const [row] = await db.sql`select state from tasks where id = ${task.id}`;
  t.equal(row?.state, 'completed', `trial ${n}${again}: stored completed`);
}

/** The trials on `servers`, then the check again after a lease's worth of supervisor passes. */
async function stress(t: Test, servers: ServerProcess[], db: FreshDatabase | undefined): Promise<void> {
  const probes = db ? await Promise.all(servers.map((s) => sweepProbe(s, db))) : [];
  const trials: Trial[] = [];
  const started = Date.now();
  for (let n = 1; n <= TRIALS; n++) {
    const trial = await runTrial(t, n, servers);
    trials.push(trial);
    const tally = new Map<string, number>();
    for (const o of trial.outcomes) tally.set(o, (tally.get(o) ?? 0) + 1);
    t.comment(`trial ${n}: ${[...tally].map(([o, k]) => `${o} ×${k}`).join(', ')}`);
    t.equal(trial.outcomes.filter((o) => o === 'ran').length, 1, `trial ${n}: exactly one answer ran the call`);
    t.notOk(
      trial.outcomes.some((o) => o === 'other' || (o.startsWith('refused') && o !== 'refused -32602' && o !== 'refused -32004')),
      `trial ${n}: every other message was refused (-32602 / -32004), re-prompted or continued the completed task`,
    );
    await checkTrial(t, n, trial, servers[(n + 1) % servers.length], db);
  }
  t.comment(`${TRIALS} trials × ${ANSWERS + FREE_TEXT} concurrent messages + ${LATE} late answers in ${Date.now() - started} ms`);
  // A stale copy of a task would show itself later: a re-prompt, a second run, or a claimed call
  // whose lease lapses (failed: interrupted). Wait until every instance has swept after a whole
  // lease has passed since the last trial settled, then look again.
  if (db) {
    const settled = Date.now();
    await Promise.all(probes.map((p) => p.passAfter(settled + LEASE_MS)));
    for (const [i, trial] of trials.entries()) await checkTrial(t, i + 1, trial, servers[i % servers.length], db, ' (later)');
    await Promise.all(probes.map((p) => p.release()));
  }
}

const PG = process.env.TEST_DATABASE_URL !== undefined && process.env.TEST_DATABASE_URL !== '';

t.test(
  `exactly once: ${PG ? 'two instances on one PostgreSQL database' : 'one instance on PGlite (TEST_DATABASE_URL unset)'}`,
  async (t) => {
    const db = await freshDatabase(t);
    if (!db) {
      t.comment('TEST_DATABASE_URL is unset: the single-instance variant on PGlite instead (PGlite is one process by construction)');
      const server = await spawnServer(t, { script: SCRIPT, env: { DATA_DIR: tempDir('devtool-data-'), LEASE_MS: String(LEASE_MS) } });
      await stress(t, [server], undefined);
      return;
    }
    const env = { DATABASE_URL: db.url, LEASE_MS: String(LEASE_MS) };
    const a = await spawnServer(t, { script: SCRIPT, env }); // first: migrates the new database
    const b = await spawnServer(t, { script: SCRIPT, env });
    await stress(t, [a, b], db);
  },
);
