/**
 * The consistency checker of the chaos suites: after a crash and a restart, over the wire (and
 * the PostgreSQL rows when there are any), it checks what the durability promises say:
 * - no task is wedged: every task is terminal or paused; each paused one is answered (every
 *   waiting card, `proceed_once`) and must then end;
 * - every task's log replays from Last-Event-ID 0 with contiguous ids 1..n, where the only ids
 *   that may be missing are superseded EXECUTING cards (the compaction key `executing:<call>`:
 *   a later EXECUTING card of the same, not yet finished, call is in the replay);
 * - what each client saw before the crash is consistent with the replay: the same id carries the
 *   same event (or a card the replay superseded), and a live stream skipped nothing the replay has;
 * - every approved call ran at most once: at most one `executed` audit row per call, never one
 *   without an `authorized` row for a call that waited for a person, never one for a declined
 *   call; and the shell command's side effect (`start` lines in ran.log) matches those rows.
 *
 * The pure parts (replayProblems, viewProblems, executionProblems) take recorded events, so a
 * test can hand them a corrupted log and see them fail.
 */
import { readFileSync, existsSync } from 'node:fs';
import path from 'node:path';
import type postgres from 'postgres';
import { rpc } from '../support/sse.js';
import { dataOf, textOf } from '../support/server.js';
import { readStream, SHELL_COMMAND, stateOf, waitingCards } from './flows.js';
import type { FlowRecord, SeenEvent } from './flows.js';

/** A subtest's `t` (only what the checker uses). */
interface Test {
  ok(value: unknown, ...message: [string] | [string, { todo: string }]): unknown;
  comment(...args: unknown[]): unknown;
}

const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
/** JSON with object keys sorted: the store's jsonb does not keep key order, so equal events may print differently. */
const canonical = (v: unknown): string =>
  v === null || typeof v !== 'object'
    ? JSON.stringify(v)
    : Array.isArray(v)
      ? `[${v.map(canonical).join(',')}]`
      : `{${Object.keys(v)
          .sort()
          .map((k) => `${JSON.stringify(k)}:${canonical((v as Record<string, unknown>)[k])}`)
          .join(',')}}`;
const same = (a: unknown, b: unknown) => canonical(a) === canonical(b);

/** The first path where two JSON values differ, with both sides (for a readable problem). */
function firstDifference(a: any, b: any, at = ''): string {
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object')
    return `${at || '.'}: ${JSON.stringify(a)?.slice(0, 80)} ≠ ${JSON.stringify(b)?.slice(0, 80)}`;
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) if (!same(a[k], b[k])) return firstDifference(a[k], b[k], `${at}.${k}`);
  return `${at}: same keys, different order`;
}

const PAUSED_STATES = new Set(['input-required', 'auth-required']);

/** One line per event of a log, for a problem's diagnosis. */
export const describeLog = (events: SeenEvent[]): string =>
  events
    .map((e) => {
      const card = dataOf(e.result);
      const what = card?.tool_call_id
        ? `${card.tool_name} ${card.status} ${card.tool_call_id.slice(0, 11)}`
        : (stateOf(e.result) ?? e.result?.kind);
      const why = stateOf(e.result) === 'failed' ? ` "${textOf(e.result).slice(0, 100)}"` : '';
      return `${e.id ?? '-'}:${what}${why}${e.result?.final ? ' (final)' : ''}`;
    })
    .join(', ');

/** The events of a replay by id (the snapshot, which has none, left out). */
const byId = (replay: SeenEvent[]) => new Map(replay.filter((e) => e.id !== undefined).map((e) => [e.id as number, e]));

/**
 * True when the replay supersedes `seq`: an EXECUTING card of a call (`callId` when known) comes
 * later, in the same stretch of running (no pause or end between them), with no other card of
 * that call between them, and — for a call that waited for a person — after the pause that
 * followed its PENDING card: only then can `seq` have been an earlier EXECUTING card of it.
 */
function superseded(replay: SeenEvent[], seq: number, callId?: string): boolean {
  const logged = replay.filter((e) => e.id !== undefined);
  const blocked = new Set<string>();
  for (const e of logged.filter((x) => (x.id as number) > seq)) {
    if (e.result?.final === true) return false;
    const card = dataOf(e.result);
    if (card?.tool_call_id === undefined || blocked.has(card.tool_call_id)) continue;
    if (card.status !== 'EXECUTING') blocked.add(card.tool_call_id);
    else if ((callId ?? card.tool_call_id) === card.tool_call_id) {
      const asked = logged.find((x) => dataOf(x.result)?.tool_call_id === card.tool_call_id && dataOf(x.result).confirmation_request);
      const answeredAfter = (x: SeenEvent) =>
        x.result?.final === true && (x.id as number) > (asked?.id as number) && (x.id as number) < seq;
      if (asked === undefined || logged.some(answeredAfter)) return true;
      blocked.add(card.tool_call_id);
    }
  }
  return false;
}

/** What is wrong with one task's replay from Last-Event-ID 0 (empty: nothing). */
export function replayProblems(replay: SeenEvent[]): string[] {
  const problems: string[] = [];
  if (replay[0]?.result?.kind !== 'task') problems.push('the replay does not start with the task snapshot');
  const events = replay.filter((e) => e.id !== undefined);
  let expected = 1;
  for (const e of events) {
    const id = e.id as number;
    if (id < expected) problems.push(`id ${id} after ${expected - 1}: not increasing`);
    for (let s = expected; s < id; s++)
      if (!superseded(replay, s)) problems.push(`id ${s} missing and no later EXECUTING card supersedes it`);
    expected = Math.max(expected, id + 1);
  }
  const last = events.at(-1)?.result;
  const state = stateOf(last);
  if (state === undefined || !TERMINAL.has(state)) problems.push(`the log ends ${state ?? 'with no state'}, not terminal`);
  if (last?.final !== true) problems.push('the last event is not final');
  const snapshot = stateOf(replay[0]?.result);
  if (snapshot !== state) problems.push(`the snapshot says ${snapshot}, the log ends ${state}`);
  if (events.slice(0, -1).some((e) => e.result?.final === true && TERMINAL.has(stateOf(e.result) ?? ''))) {
    problems.push('an event follows a terminal one');
  }
  return problems;
}

/** What is inconsistent between the streams a client saw and the task's replay. */
export function viewProblems(
  replay: SeenEvent[],
  streams: SeenEvent[][],
): { problems: string[]; compared: number; supersededSeen: number } {
  const problems: string[] = [];
  const ids = byId(replay);
  const replayIds = [...ids.keys()];
  let compared = 0;
  let supersededSeen = 0;
  streams.forEach((stream, k) => {
    // A resubscribe to a paused task re-sends its waiting cards and pause (older ids), not a run of the log.
    const resent = stream[0]?.id === undefined && PAUSED_STATES.has(stateOf(stream[0]?.result) ?? '');
    let previous: number | undefined;
    for (const e of stream) {
      if (e.id === undefined) continue;
      compared++;
      const logged = ids.get(e.id);
      if (logged) {
        if (!same(logged.result, e.result))
          problems.push(`stream ${k}: id ${e.id} differs from the replay (replay ≠ live at ${firstDifference(logged.result, e.result)})`);
      } else if (dataOf(e.result)?.status === 'EXECUTING' && superseded(replay, e.id, dataOf(e.result).tool_call_id)) supersededSeen++;
      else problems.push(`stream ${k}: id ${e.id} was seen live but the replay has no such event and nothing supersedes it`);
      if (previous !== undefined && !resent) {
        if (e.id <= previous) problems.push(`stream ${k}: id ${e.id} after ${previous}`);
        const skipped = replayIds.filter((i) => i > (previous as number) && i < (e.id as number));
        if (skipped.length > 0)
          problems.push(
            `stream ${k} (ids ${stream.map((x) => x.id ?? 'snapshot').join(' ')}): went from ${previous} to ${e.id}, skipping ${skipped.join(', ')} of the replay`,
          );
      }
      previous = e.id;
    }
  });
  return { problems, compared, supersededSeen };
}

/** One audit/list entry (the fields the checker reads). */
export interface AuditEntry {
  decision: string;
  tool_call_id?: string;
  option_id?: string;
}

/**
 * What is wrong with one task's executions: `audit` its audit entries, `replay` its log,
 * `shellStarts` the `start` lines its workspace's ran.log has.
 */
export function executionProblems(replay: SeenEvent[], audit: AuditEntry[], shellStarts: number): { problems: string[]; executed: number } {
  const problems: string[] = [];
  const cards = new Map<string, any[]>();
  for (const e of replay) {
    const card = dataOf(e.result);
    if (card?.tool_call_id !== undefined) cards.set(card.tool_call_id, [...(cards.get(card.tool_call_id) ?? []), card]);
  }
  const rows = (id: string, decision: string) => audit.filter((a) => a.tool_call_id === id && a.decision === decision);
  let executed = 0;
  let shellExecuted = 0;
  for (const [id, history] of cards) {
    const runs = rows(id, 'executed').length;
    executed += runs;
    if (runs > 1) problems.push(`call ${id} (${history[0].tool_name}) has ${runs} executed rows`);
    const waited = history.some((c) => c.status === 'PENDING' && c.confirmation_request !== undefined);
    if (runs > 0 && waited && rows(id, 'authorized').length === 0) problems.push(`call ${id} executed without an authorized row`);
    if (runs > 0 && rows(id, 'declined').length > 0) problems.push(`call ${id} was declined and executed`);
    if (history[0].input_parameters?.command === SHELL_COMMAND) shellExecuted += runs;
  }
  if (shellStarts > shellExecuted)
    problems.push(`ran.log has ${shellStarts} start lines for ${shellExecuted} executed rows of the command`);
  if (shellStarts > 1) problems.push(`the shell command started ${shellStarts} times`);
  return { problems, executed };
}

/** The figures of one check, printed by the suites. */
export interface Figures {
  /** The tasks checked. */
  ids: string[];
  tasks: number;
  /** Tasks no client had heard of (created, then the crash cut the stream before its first event). */
  unseen: number;
  /** Still working when the check began; ended (paused or terminal) by the supervisor after the restart. */
  settledLate: number;
  paused: number;
  /** Cards answered by the checker (proceed_once), on the paused tasks. */
  answered: number;
  executed: number;
  shellStarts: number;
  clientEvents: number;
  supersededSeen: number;
  states: Record<string, number>;
  problems: string[];
  /** The logs of the tasks with problems, for the diagnosis. */
  notes: string[];
}

export interface CheckOptions {
  /** A live server on the crashed store. */
  url: string;
  /** The flows the clients played (their tasks, workspaces and what they saw). */
  flows: FlowRecord[];
  /** Tasks to leave alone (an earlier round's, checked then). */
  skip?: Set<string>;
  /** How long a working task may take to be ended by the supervisor (a lease and a few sweeps), ms. */
  settleMs: number;
  /** The store's rows, when it is PostgreSQL. */
  sql?: postgres.Sql;
}

/** Every task id on the store (v1.0 ListTasks, page by page). */
async function listTaskIds(url: string): Promise<string[]> {
  const ids: string[] = [];
  let pageToken = '';
  for (let page = 0; page < 100; page++) {
    const res = await rpc(url, 'ListTasks', { pageSize: 100, pageToken }, { version: '1.0' });
    if (res.json?.error) throw new Error(`ListTasks: ${JSON.stringify(res.json.error)}`);
    ids.push(...(res.json.result.tasks ?? []).map((t: any) => t.id as string));
    pageToken = res.json.result.nextPageToken ?? '';
    if (pageToken === '') break;
  }
  return ids;
}

const getState = async (url: string, id: string): Promise<string | undefined> =>
  (await rpc(url, 'tasks/get', { id })).json?.result?.status?.state;

/** Polls until no task of `ids` is working or submitted (bounded); returns the states and which were late. */
async function settle(url: string, ids: string[], settleMs: number) {
  const states = new Map<string, string | undefined>();
  const late = new Set<string>();
  const deadline = Date.now() + settleMs;
  let pending = ids;
  for (let pass = 0; pending.length > 0; pass++) {
    const got = await Promise.all(pending.map(async (id) => [id, await getState(url, id)] as const));
    for (const [id, s] of got) states.set(id, s);
    pending = got.filter(([, s]) => s === undefined || s === 'working' || s === 'submitted').map(([id]) => id);
    if (pass === 0) for (const id of pending) late.add(id);
    if (pending.length === 0 || Date.now() > deadline) break;
    await sleep(200);
  }
  return { states, late };
}

const replayOf = async (url: string, id: string, flow: FlowRecord) =>
  (await readStream(flow, url, 'tasks/resubscribe', { id }, { 'Last-Event-ID': '0' })).seen;

/** Answers every waiting card of a paused task until it ends (at most 4 pauses); the problems found. */
async function answerPaused(url: string, id: string, log: SeenEvent[], own: FlowRecord, counts: { answered: number }): Promise<string[]> {
  let seen = log;
  for (let pauses = 0; pauses < 4; pauses++) {
    const state = stateOf(seen.at(-1)?.result);
    if (state !== undefined && TERMINAL.has(state)) return [];
    const cards = waitingCards(seen);
    if (state !== 'input-required' || cards.length === 0) return [`task ${id}: paused with no answerable card (last state ${state})`];
    counts.answered += cards.length;
    const contextId = seen.find((e) => e.result?.kind === 'task')?.result.contextId;
    const parts = cards.map((c) => ({ kind: 'data', data: { tool_call_id: c.tool_call_id, selected_option_id: 'proceed_once' } }));
    const message = { kind: 'message', role: 'user', messageId: `chaos-${id}-${pauses}`, taskId: id, contextId, parts };
    const res = await readStream(own, url, 'message/stream', { message });
    if (res.error) return [`task ${id}: the answer to its waiting cards was refused: ${res.error.code} ${res.error.message}`];
    seen = res.seen;
  }
  return [`task ${id}: still paused after 4 answers`];
}

/** The rows check on PostgreSQL: no call left ready or executing, the stored last seq equal to the replay's. */
async function rowProblems(sql: postgres.Sql, id: string, replay: SeenEvent[]): Promise<string[]> {
  const problems: string[] = [];
  const open = await sql`select id, phase from tool_calls where task_id = ${id} and phase in ('ready', 'executing')`;
  if (open.length > 0) problems.push(`task ${id}: calls left ${open.map((c) => `${c.phase as string}`).join(', ')} in the store`);
  const [row] = await sql`select last_seq from tasks where id = ${id}`;
  const lastId = replay.filter((e) => e.id !== undefined).at(-1)?.id;
  if (row?.last_seq !== lastId) problems.push(`task ${id}: stored last_seq ${row?.last_seq} but the replay ends at ${lastId}`);
  return problems;
}

/** Checks one settled task: answers it if paused, then its replay, the clients' views, its executions and (PostgreSQL) its rows. */
async function checkTask(id: string, state: string | undefined, opts: CheckOptions, figures: Figures): Promise<string[]> {
  const { url } = opts;
  if (state === 'working' || state === 'submitted' || state === undefined)
    return [`task ${id}: wedged ${state ?? 'unknown'} ${opts.settleMs} ms after the restart`];
  const problems: string[] = [];
  const own: FlowRecord = { n: -1, kind: 'write', workspace: '', streams: [], answers: new Map(), outcome: 'checker', thinkMs: 0 };
  if (state === 'input-required') {
    figures.paused++;
    problems.push(...(await answerPaused(url, id, await replayOf(url, id, own), own, figures)));
  }
  const replay = await replayOf(url, id, own);
  const final = stateOf(replay.at(-1)?.result) ?? 'none';
  figures.states[final] = (figures.states[final] ?? 0) + 1;
  problems.push(...replayProblems(replay).map((p) => `task ${id}: ${p}`));
  const flow = opts.flows.find((f) => f.taskId === id);
  const views = viewProblems(replay, [...(flow?.streams ?? []), ...own.streams]);
  figures.clientEvents += views.compared;
  figures.supersededSeen += views.supersededSeen;
  problems.push(...views.problems.map((p) => `task ${id} (flow ${flow?.n ?? '-'} ${flow?.kind ?? ''}): ${p}`));
  const audit: AuditEntry[] = (await rpc(url, 'audit/list', { task_id: id })).json?.result?.entries ?? [];
  const log = flow ? path.join(flow.workspace, 'ran.log') : undefined;
  const starts =
    log && existsSync(log)
      ? readFileSync(log, 'utf8')
          .split('\n')
          .filter((l) => l.startsWith('start ')).length
      : 0;
  const runs = executionProblems(replay, audit, starts);
  figures.executed += runs.executed;
  figures.shellStarts += starts;
  problems.push(...runs.problems.map((p) => `task ${id}: ${p}`));
  if (opts.sql) problems.push(...(await rowProblems(opts.sql, id, replay)));
  if (problems.length > 0) {
    const streams = [...(flow?.streams ?? []), ...own.streams].map(describeLog).join(' | ');
    figures.notes.push(
      `task ${id}: its replay: ${describeLog(replay)}; the streams seen: ${streams}; audit: ${audit.map((a) => a.decision).join(' ')}`,
    );
  }
  return problems;
}

/**
 * Server bugs the chaos suites found and that are not fixed yet: still counted in the figures
 * and reported (as TODO assertions, with what is known), but they do not fail the suites.
 * Remove an entry once its bug is fixed; every other problem fails the check. (Empty: the last
 * three — events after a terminal one, a task left paused on a cancelled card, a command
 * started before its `executed` row — were fixed by checked writes; see docs/operations.md.)
 */
const KNOWN: { pattern: RegExp; todo: string }[] = [];

/** Tasks checked at once (each a few requests; the server under test shares the machine). */
const CHECK_JOBS = 4;

/** Runs every check over the tasks of `opts.flows` and every other task on the store not in `opts.skip`. */
export async function checkConsistency(t: Test, opts: CheckOptions): Promise<Figures> {
  const { url, flows } = opts;
  const seenIds = new Set(flows.map((f) => f.taskId).filter((id): id is string => id !== undefined));
  const ids = [...new Set([...(await listTaskIds(url)), ...seenIds])].filter((id) => !opts.skip?.has(id));
  const { states, late } = await settle(url, ids, opts.settleMs);
  const figures: Figures = {
    ids,
    tasks: ids.length,
    unseen: ids.filter((id) => !seenIds.has(id)).length,
    settledLate: [...late].filter((id) => states.get(id) !== 'working').length,
    paused: 0,
    answered: 0,
    executed: 0,
    shellStarts: 0,
    clientEvents: 0,
    supersededSeen: 0,
    states: {},
    problems: [],
    notes: [],
  };
  const queue = [...ids];
  const worker = async () => {
    for (let id = queue.shift(); id !== undefined; id = queue.shift())
      figures.problems.push(...(await checkTask(id, states.get(id), opts, figures)));
  };
  await Promise.all(Array.from({ length: CHECK_JOBS }, worker));
  const { problems, notes } = figures;
  for (const note of notes) t.comment(note);
  const known = problems.filter((p) => KNOWN.some((k) => k.pattern.test(p)));
  for (const k of KNOWN) {
    const hits = known.filter((p) => k.pattern.test(p));
    if (hits.length > 0) t.ok(false, `${hits.length} × known: ${hits.join('; ')}`, { todo: k.todo });
  }
  const unknown = problems.filter((p) => !known.includes(p));
  t.ok(
    unknown.length === 0,
    `consistent: ${ids.length} tasks${unknown.length ? `; ${unknown.length} problems:\n${unknown.slice(0, 40).join('\n')}` : ''}`,
  );
  return figures;
}

/** One line of figures for t.comment. */
export const describeFigures = (f: Figures): string =>
  `tasks ${f.tasks} (unseen by clients ${f.unseen}, ended by the supervisor after the restart ${f.settledLate}), ` +
  `paused ${f.paused} (cards answered ${f.answered}), end states ${JSON.stringify(f.states)}, executed rows ${f.executed}, ` +
  `shell start lines ${f.shellStarts}, client events compared ${f.clientEvents} (superseded ${f.supersededSeen}), problems ${f.problems.length}`;
