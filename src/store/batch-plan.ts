/**
 * Turns a WriteBatch (the port's group commit) into what the SQL of commit.ts needs: one
 * bump per task, where each event's seq lands relative to its task's new last_seq, calls
 * deduplicated (last wins) and sorted (the upsert locks them in that order), history
 * merged per context, grants deduplicated, a task's consecutive text deltas stored as one row
 * (a text run). Pure: no database here.
 */
import type { Task, TaskStatus } from '@a2a-js/sdk';
import type { ModelContent } from '../agent/model/model-client.js';
import type { AuditEntry, StoredCall, WriteBatch } from '../agent/task-store.js';
import { stateName } from '../protocol/a2a.js';
import { responseToJson, statusToJson, taskToJson } from './mappers.js';

/** One task's share of a batch: a single UPDATE of its row. */
export interface TaskBump {
  id: string;
  /** How many events the batch appends to the task. */
  count: number;
  /**
   * The snapshot to store (v1.0 JSON): that of the task's last event in the batch — or,
   * when that event carries only a status, the batch's latest whole snapshot of the task
   * with that status. Absent when the batch has no whole snapshot of the task: then
   * `status` is set on the stored one.
   */
  snapshot?: unknown;
  /** When `snapshot` is absent: the status (v1.0 JSON) the stored snapshot takes. */
  status?: unknown;
  /** The A2A state name of the task's last status (the `tasks.state` column). */
  state: string;
  /** Whether any of the task's events in the batch is final. */
  final: boolean;
  /** What the writer's copy knows (WriteBatch.expect): the bump is refused unless the stored task still has it. */
  expect?: { lastSeq?: number; state?: string };
}

/**
 * An event row: its seq is the task's new last_seq minus `back`. A row of `span` > 1 (a text
 * run, only in BatchPlan.stored) holds the events `seq - span + 1` … `seq`, its payload the
 * array of theirs (schema.ts `events.span`).
 */
export interface EventRow {
  task_id: string;
  back: number;
  payload: unknown;
  final: boolean;
  /** Compaction key; null when the event is never superseded. */
  key: string | null;
  span: number;
}

/** What commit.ts writes for a batch, each part in the order its statement needs. */
export interface BatchPlan {
  /** Nothing to write: no transaction at all. */
  empty: boolean;
  /** Contexts and tasks created first (WriteBatch.create), in batch order. */
  create: NonNullable<WriteBatch['create']>;
  /** Tasks touched by events, by id (code-unit order; the database locks them in its own id order). */
  tasks: TaskBump[];
  /** One per batch event, in batch order (each takes a seq). */
  events: EventRow[];
  /**
   * The rows to insert: `events` less keyed ones that a later event of the same task and
   * key in the batch supersedes (they take a seq but are never stored), with each run of a
   * task's consecutive text deltas joined into one row (see textRuns).
   */
  stored: EventRow[];
  /** Distinct ids, the last entry of each id, in lock order. */
  calls: StoredCall[];
  /** Per context (by id) its contents in batch order. */
  history: Array<{ contextId: string; contents: ModelContent[] }>;
  /** Distinct (context, tool) pairs, the first grant of each, in key order. */
  trust: Array<{ contextId: string; toolName: string; principal?: string }>;
  audit: AuditEntry[];
  /** WriteBatch.closeTurns, in batch order. */
  closeTurns: Array<{ taskId: string; turn: number }>;
}

/**
 * Code-unit order: the same in every process and independent of the database collation
 * (claimCalls sorts call ids the same way).
 */
export function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

type BatchEvent = WriteBatch['events'][number];

/** What a task's events in the batch leave: the latest whole snapshot, and a status set after it. */
interface TaskTail {
  count: number;
  final: boolean;
  full?: Task;
  /** The status of the last event when it (and maybe others before it) carried only a status. */
  status?: TaskStatus;
}

/** The task an event belongs to; throws on an event that cannot be stored. */
function taskIdOf(ev: BatchEvent): string {
  if (ev.task !== undefined && ev.task.id !== ev.taskId)
    throw new Error(`commit: event of task ${ev.taskId} carries the snapshot of task ${ev.task.id}`);
  if (ev.task === undefined && ev.status === undefined)
    throw new Error(`commit: event of task ${ev.taskId} carries neither task nor status`);
  return ev.taskId;
}

/**
 * The bump of one task. Only the snapshot that is stored is serialised (one per task per
 * batch), and a status-only tail costs the status alone: a running task's many small events
 * do not re-serialise its growing history.
 */
function bumpOf(id: string, t: TaskTail): TaskBump {
  const bump = { id, count: t.count, final: t.final };
  if (t.status === undefined) return { ...bump, snapshot: taskToJson(t.full!), state: stateName(t.full!.status?.state) };
  const state = stateName(t.status.state);
  if (t.full === undefined) return { ...bump, status: statusToJson(t.status), state };
  return { ...bump, snapshot: { ...(taskToJson(t.full) as object), status: statusToJson(t.status) }, state };
}

/**
 * A text delta: a status update whose message is text alone, neither final nor keyed (the
 * model's answer streams as thousands of them). Such events may share a row (textRuns).
 */
function isTextDelta(ev: BatchEvent): boolean {
  if (ev.final || ev.key !== undefined || ev.response.payload?.$case !== 'statusUpdate') return false;
  const parts = ev.response.payload.value.status?.message?.parts;
  return parts !== undefined && parts.length > 0 && parts.every((p) => p.content?.$case === 'text');
}

function planTasks(events: BatchEvent[]): { tasks: TaskBump[]; rows: EventRow[]; text: boolean[] } {
  const tails = new Map<string, TaskTail>();
  // Each event with its task's tail and its index within that task (the tail's count is final only after the loop).
  const placed: Array<{ ev: BatchEvent; id: string; tail: TaskTail; index: number }> = [];
  for (const ev of events) {
    const id = taskIdOf(ev);
    let tail = tails.get(id);
    if (!tail) tails.set(id, (tail = { count: 0, final: false }));
    placed.push({ ev, id, tail, index: tail.count });
    tail.count += 1;
    tail.final ||= ev.final;
    if (ev.task !== undefined) {
      tail.full = ev.task;
      tail.status = undefined;
    } else {
      tail.status = ev.status;
    }
  }
  const tasks = [...tails.entries()].sort(([a], [b]) => byCodeUnits(a, b)).map(([id, t]) => bumpOf(id, t));
  const rows = placed.map(({ ev, id, tail, index }) => ({
    task_id: id,
    back: tail.count - 1 - index,
    payload: responseToJson(ev.response),
    final: ev.final,
    key: ev.key ?? null,
    span: 1,
  }));
  return { tasks, rows, text: placed.map(({ ev }) => isTextDelta(ev)) };
}

/**
 * The rows to store (BatchPlan.stored): keyed rows superseded later in the batch (same task and
 * key) dropped, then text runs joined. `text[i]` tells whether `rows[i]` is a text delta.
 */
function storedRows(rows: EventRow[], text: boolean[]): EventRow[] {
  const seen = new Set<string>();
  const kept: number[] = [];
  for (let i = rows.length - 1; i >= 0; i--) {
    const row = rows[i]!;
    if (row.key !== null) {
      const id = JSON.stringify([row.task_id, row.key]);
      if (seen.has(id)) continue;
      seen.add(id);
    }
    kept.push(i);
  }
  kept.reverse();
  return textRuns(
    kept.map((i) => rows[i]!),
    kept.map((i) => text[i]!),
  );
}

/**
 * The most events one text run holds: a 10,000-delta answer is ~80 rows, and a reader resuming
 * inside a run (a page of 32 events) makes the database read at most a run or two of it.
 */
export const MAX_RUN = 128;

/**
 * Joins each task's text deltas of consecutive seqs into one row, up to MAX_RUN of them (other tasks' events may lie
 * between them in the batch; any other event of the task, or a seq gap, ends the run): a
 * 10,000-chunk answer costs the log a few rows, not 10,000. The run's row takes its last
 * event's seq (`back`), `span` the number of its events, the payload their array in seq order.
 * Rows in `rows` are not modified.
 */
function textRuns(rows: EventRow[], text: boolean[]): EventRow[] {
  const out: EventRow[] = [];
  const open = new Map<string, { row: EventRow; payloads: unknown[] }>();
  rows.forEach((row, i) => {
    const run = open.get(row.task_id);
    if (!text[i]) {
      open.delete(row.task_id);
      out.push(row);
    } else if (run !== undefined && run.row.back === row.back + 1 && run.row.span < MAX_RUN) {
      run.payloads.push(row.payload);
      run.row.back = row.back;
      run.row.span += 1;
      run.row.payload = run.payloads;
    } else {
      const started = { row: { ...row }, payloads: [row.payload] };
      open.set(row.task_id, started);
      out.push(started.row);
    }
  });
  return out;
}

function planHistory(history: WriteBatch['history']): BatchPlan['history'] {
  const byContext = new Map<string, ModelContent[]>();
  for (const h of history) {
    if (h.contents.length === 0) continue;
    const list = byContext.get(h.contextId) ?? [];
    list.push(...h.contents);
    byContext.set(h.contextId, list);
  }
  return [...byContext.entries()].sort(([a], [b]) => byCodeUnits(a, b)).map(([contextId, contents]) => ({ contextId, contents }));
}

function planTrust(trust: WriteBatch['trust']): BatchPlan['trust'] {
  const first = new Map<string, WriteBatch['trust'][number]>();
  for (const g of trust) {
    const key = JSON.stringify([g.contextId, g.toolName]);
    if (!first.has(key)) first.set(key, g);
  }
  return [...first.values()].sort((a, b) => byCodeUnits(a.contextId, b.contextId) || byCodeUnits(a.toolName, b.toolName));
}

/** Plans `batch`; see BatchPlan. Does not modify it. Throws on an event with neither task nor status. */
export function planBatch(batch: WriteBatch): BatchPlan {
  const planned = planTasks(batch.events);
  const expect = new Map((batch.expect ?? []).map(({ taskId, ...known }) => [taskId, known as NonNullable<TaskBump['expect']>]));
  const tasks = planned.tasks.map((t) => (expect.has(t.id) ? { ...t, expect: expect.get(t.id)! } : t));
  const { rows, text } = planned;
  const calls = [...new Map(batch.calls.map((c) => [c.id, c])).values()].sort((a, b) => byCodeUnits(a.id, b.id));
  const history = planHistory(batch.history);
  const trust = planTrust(batch.trust);
  const create = batch.create ?? { contexts: [], tasks: [] };
  const created = create.contexts.length + create.tasks.length;
  const closeTurns = batch.closeTurns ?? [];
  const empty = created + rows.length + calls.length + history.length + trust.length + batch.audit.length + closeTurns.length === 0;
  return { empty, create, closeTurns, tasks, events: rows, stored: storedRows(rows, text), calls, history, trust, audit: batch.audit };
}

/** The seqs of the batch's events, in batch order, from each task's new last_seq. */
export function seqsOf(plan: BatchPlan, lastSeq: Map<string, number>): number[] {
  return plan.events.map((e) => lastSeq.get(e.task_id)! - e.back);
}

/**
 * Parses a pg_notify payload `<taskId>:<lastSeq>:<0|1 any final>:<origin>` (commit.ts writes
 * it, one per task per commit; `origin` is the committing store's token, [0-9a-z] only, and
 * may be absent); task ids may contain ':'. Undefined when malformed.
 */
export function parseNotification(payload: string): { taskId: string; seq: number; final: boolean; origin?: string } | undefined {
  const last = payload.lastIndexOf(':');
  const tail = payload.slice(last + 1);
  if (last > 0 && /^[0-9a-z]{2,}$/.test(tail)) {
    const note = parseBare(payload.slice(0, last));
    return note && { ...note, origin: tail };
  }
  return parseBare(payload);
}

function parseBare(payload: string): { taskId: string; seq: number; final: boolean } | undefined {
  const flagAt = payload.lastIndexOf(':');
  const seqAt = flagAt > 0 ? payload.lastIndexOf(':', flagAt - 1) : -1;
  if (seqAt <= 0) return undefined;
  const seqText = payload.slice(seqAt + 1, flagAt);
  const flag = payload.slice(flagAt + 1);
  if (!/^\d+$/.test(seqText) || (flag !== '0' && flag !== '1')) return undefined;
  return { taskId: payload.slice(0, seqAt), seq: Number(seqText), final: flag === '1' };
}
