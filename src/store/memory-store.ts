/**
 * TaskStore and PushStore in process memory, with the observable behaviour of PgTaskStore
 * (test/store runs the same contract suites against both): for tests and benchmarks, or a
 * server that needs no durable state. A MemoryDatabase holds the data and every
 * MemoryTaskStore on it plays one process on one database:
 * - each method runs to completion before another starts (no await inside), so a write is
 *   atomic and of two racing claims exactly one wins;
 * - a commit stages every row first (anything that can fail, fails there) and only then
 *   changes the tables: a refused batch leaves no trace;
 * - notifications go to every store on the database, after the commit, like NOTIFY;
 * - values cross the boundary as copies, tasks and events as their v1.0 JSON like the
 *   database columns, so no caller can change stored state by reference;
 * - close() closes one store; the data stays for the others.
 */
import type { StreamResponse, Task } from '@a2a-js/sdk';
import type { ModelContent } from '../agent/model/model-client.js';
import type {
  AuditEntry,
  AuditRecord,
  CallClaim,
  CallPhase,
  Checkpoint,
  ClaimCommitResult,
  ClaimResult,
  ClaimTerms,
  ContextSettings,
  EventListener,
  NewContext,
  NewTask,
  NewTaskOptions,
  StoredCall,
  StoredContext,
  StoredEvent,
  StoredTask,
  TaskStore,
  TaskVersion,
  WriteBatch,
  WorkspaceClaim,
} from '../agent/task-store.js';
import type { WireDialect } from '../agent/wire/wire-encoder.js';
import type { PushConfigInput, PushConfigRecord, PushStore } from '../push/push-store.js';
import type { StoredSigningKey } from '../push/push-signer.js';
import { stateName } from '../protocol/a2a.js';
import { byCodeUnits, planBatch, seqsOf, type BatchPlan, type TaskBump } from './batch-plan.js';
import { eventFromRow, taskFromJson, taskToJson } from './mappers.js';
import { FINISHED, storedPhaseMoves } from '../protocol/task-states.js';
import { StaleWriteError } from '../protocol/errors.js';
import { belowPrefix, selfAndAncestors } from './workspace-paths.js';

type Json = Record<string, unknown>;

interface TaskRow {
  id: string;
  contextId: string;
  /** The A2A state name of the snapshot's status (what listTasks filters on). */
  state: string;
  principal?: string;
  dialect: WireDialect;
  /** The latest snapshot as v1.0 JSON; replaced on every change, never mutated. */
  task: Json;
  /**
   * The stored event log in seq order, payload as v1.0 JSON text (superseded keyed events removed);
   * like the table's rows, one of `span` > 1 is a text run ending at `seq` (schema.ts), its
   * payload the JSON text of each of its events (a page read parses only its own).
   */
  events: Array<{ seq: number; payload: string | string[]; final: boolean; key?: string; span: number }>;
  /** The seq of the last event appended (stored or since compacted). */
  lastSeq: number;
  /** The database clock at the last change: listTasks shows the most recently updated first. */
  updatedAt: number;
  leaseOwner?: string;
  leaseUntil?: Date;
  closedTurns: Set<number>;
  /** Ids of the task's calls. */
  calls: Set<string>;
}

interface ContextRow {
  id: string;
  workspace: string;
  settings: ContextSettings;
  principal?: string;
  /** ModelContent as JSON text, oldest first. */
  history: string[];
  /** Trusted tools: the first grant's principal and the database clock of its commit. */
  trust: Map<string, { principal?: string; at: number }>;
}

interface CallRow {
  call: StoredCall;
  /** When the expiry reminder went out; kept when the call is saved again. */
  remindedAt?: Date;
}

interface PushRow {
  config: PushConfigRecord;
  leaseOwner?: string;
  leaseUntil?: Date;
}

/** One task's share of a commit, as NOTIFY carries it. */
interface Note {
  taskId: string;
  seq: number;
  final: boolean;
}

/**
 * The data: what one PostgreSQL database is to PgTaskStores. Only MemoryTaskStore reads and
 * writes the tables; hand the object to `new MemoryTaskStore(database)` (or call
 * `store.connect()`) for another store on the same data.
 */
export class MemoryDatabase {
  readonly contexts = new Map<string, ContextRow>();
  readonly tasks = new Map<string, TaskRow>();
  readonly calls = new Map<string, CallRow>();
  readonly audit: AuditRecord[] = [];
  /** By JSON `[taskId, id]`. */
  readonly pushConfigs = new Map<string, PushRow>();
  readonly signingKeys = new Map<string, StoredSigningKey>();
  /** Checkpoints by call id, in the order they were stored. */
  readonly checkpoints = new Map<string, Checkpoint>();
  /** Workspace claims: directory → principal. */
  readonly workspaceClaims = new Map<string, string>();
  /** The stores that listen (one entry per store, like one LISTEN per PgTaskStore). */
  readonly hearers = new Set<(notes: Note[]) => void>();
  private clock = 0;

  /** The next value of the logical clock that orders changes (now() of a transaction). */
  tick(): number {
    return ++this.clock;
  }

  /** Tells every listening store, after the current commit returned (never inside it). */
  notify(notes: Note[]): void {
    if (notes.length === 0) return;
    setImmediate(() => {
      for (const hear of [...this.hearers]) hear(notes);
    });
  }
}

/** What a jsonb column makes of `value`: a deep copy through JSON text (undefined members dropped). */
function jsonCopy<T>(value: T): T {
  return JSON.parse(JSON.stringify(value)) as T;
}

function dateCopy(d: Date | undefined | null): Date | undefined {
  return d === undefined || d === null ? undefined : new Date(d.getTime());
}

/** Drops null/undefined members, as nullable columns come back: absent, not null. */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as T;
}

/**
 * A write the database refuses (a foreign or unique key), with its SQLSTATE like the
 * database's own refusals, so the write queue knows nothing of it was written.
 */
function refused(message: string, code: '23503' | '23505'): Error {
  return Object.assign(new Error(message), { code });
}

/** A batch with nothing in it, to spread the one-kind writes over. */
function nothing(): WriteBatch {
  return { events: [], calls: [], history: [], trust: [], audit: [] };
}

const LIVE_PHASES = new Set(['executing', 'ready']);

/** Task, then turn, then position: the order of the call sweeps. */
function byTurnOrder(a: StoredCall, b: StoredCall): number {
  return byCodeUnits(a.taskId, b.taskId) || a.turn - b.turn || a.position - b.position;
}

/** A call as its row stores it: known fields only, JSON members through JSON, Dates copied. */
function callIn(c: StoredCall): StoredCall {
  return defined({
    id: c.id,
    taskId: c.taskId,
    turn: c.turn,
    position: c.position,
    toolName: c.toolName,
    modelCallId: c.modelCallId,
    args: c.args === undefined ? undefined : jsonCopy(c.args),
    snapshot: jsonCopy(c.snapshot),
    phase: c.phase,
    answer: c.answer,
    response: c.response === undefined ? undefined : jsonCopy(c.response),
    shownHash: c.shownHash,
    proposedAt: dateCopy(c.proposedAt)!,
    expiresAt: dateCopy(c.expiresAt),
    leaseOwner: c.leaseOwner,
    leaseUntil: dateCopy(c.leaseUntil),
    processGroup: c.processGroup === undefined ? undefined : { ...c.processGroup },
  });
}

/** A checkpoint as its row stores it: known fields only, copies throughout. */
function checkpointIn(c: Checkpoint): Checkpoint {
  return defined({
    callId: c.callId,
    name: c.name,
    taskId: c.taskId,
    contextId: c.contextId,
    workspace: c.workspace,
    principal: c.principal,
    toolName: c.toolName,
    historyLength: c.historyLength,
    messageId: c.messageId,
    files: c.files.map((f) => defined({ path: f.path, content: f.content })),
    restoreOf: c.restoreOf,
    createdAt: dateCopy(c.createdAt)!,
  });
}

/** Newest first, ties by call id (descending), as the database orders them. */
function newestFirst(list: Checkpoint[]): Checkpoint[] {
  return [...list].sort((a, b) => b.createdAt.getTime() - a.createdAt.getTime() || byCodeUnits(b.callId, a.callId));
}

function auditIn(e: AuditEntry, id: number, at: Date): AuditRecord {
  return defined({
    id,
    at,
    taskId: e.taskId,
    contextId: e.contextId,
    toolCallId: e.toolCallId,
    decision: e.decision,
    principal: e.principal,
    optionId: e.optionId,
    shownHash: e.shownHash,
    detail: e.detail === undefined ? undefined : jsonCopy(e.detail),
  });
}

/** A batch's rows in stored form, made before anything changes: what can fail, fails here. */
interface Staged {
  tasks: Array<{ row: TaskRow; bump: TaskBump; task: Json; events: TaskRow['events'] }>;
  history: Array<{ row: ContextRow; contents: string[] }>;
  calls: StoredCall[];
  audit: AuditRecord[];
}

/** Throws (a refusal) when a task or context the batch writes to does not exist. */
function checkKeys(db: MemoryDatabase, plan: BatchPlan): void {
  const task = plan.tasks.find((t) => !db.tasks.has(t.id));
  if (task) throw refused(`commit: unknown task ${task.id}`, '23503');
  const history = plan.history.find((h) => !db.contexts.has(h.contextId));
  if (history) throw refused(`commit: unknown context ${history.contextId}`, '23503');
  const call = plan.calls.find((c) => !db.tasks.has(c.taskId));
  if (call) throw refused(`commit: call ${call.id} of unknown task ${call.taskId}`, '23503');
  const grant = plan.trust.find((g) => !db.contexts.has(g.contextId));
  if (grant) throw refused(`commit: trust grant in unknown context ${grant.contextId}`, '23503');
  const storedOf = (t: TaskBump) => ({ lastSeq: db.tasks.get(t.id)!.lastSeq, state: db.tasks.get(t.id)!.state });
  const stale = plan.tasks.filter((t) => {
    const { lastSeq, state } = storedOf(t);
    const { lastSeq: seq = lastSeq, state: expected = state } = t.expect ?? {};
    return (FINISHED as ReadonlySet<string>).has(state) || seq !== lastSeq || expected !== state;
  });
  if (stale.length > 0) throw new StaleWriteError(stale.map((t) => ({ taskId: t.id, expected: t.expect ?? {}, stored: storedOf(t) })));
  checkTurnsToClose(db, plan);
}

/** Each turn the plan closes has every call done once the plan's calls are saved, and is not closed yet (WriteBatch.closeTurns). */
function checkTurnsToClose(db: MemoryDatabase, plan: BatchPlan): void {
  for (const { taskId, turn } of plan.closeTurns) {
    const row = db.tasks.get(taskId);
    if (!row) throw refused(`commit: closing a turn of unknown task ${taskId}`, '23503');
    const phases = new Map<string, string>();
    for (const id of row.calls) {
      const { call } = db.calls.get(id)!;
      if (call.turn === turn) phases.set(id, call.phase);
    }
    for (const c of plan.calls) {
      const before = phases.get(c.id) ?? db.calls.get(c.id)?.call.phase;
      if (c.taskId === taskId && c.turn === turn && (before === undefined || storedPhaseMoves(before as CallPhase, c.phase)))
        phases.set(c.id, c.phase);
    }
    if (row.closedTurns.has(turn) || [...phases.values()].some((p) => p !== 'done')) {
      throw new StaleWriteError([{ taskId, expected: {}, stored: { lastSeq: row.lastSeq, state: row.state }, turn }]);
    }
  }
}

function stage(db: MemoryDatabase, plan: BatchPlan): Staged {
  checkKeys(db, plan);
  const count = new Map(plan.tasks.map((t) => [t.id, t.count]));
  const logs = new Map<string, TaskRow['events']>();
  for (const e of plan.stored) {
    const log = logs.get(e.task_id) ?? [];
    const seq = (db.tasks.get(e.task_id)?.lastSeq ?? 0) + count.get(e.task_id)! - e.back;
    const payload = e.span > 1 ? (e.payload as unknown[]).map((p) => JSON.stringify(p)) : JSON.stringify(e.payload);
    log.push({ seq, payload, final: e.final, span: e.span, ...(e.key !== null ? { key: e.key } : {}) });
    logs.set(e.task_id, log);
  }
  const tasks = plan.tasks.map((bump) => {
    const row = db.tasks.get(bump.id)!;
    // A status-only tail keeps the stored snapshot (its history) and takes the status.
    const task = bump.snapshot !== undefined ? jsonCopy(bump.snapshot as Json) : { ...row.task, status: jsonCopy(bump.status) };
    return { row, bump, task, events: logs.get(bump.id) ?? [] };
  });
  const history = plan.history.map((h) => ({ row: db.contexts.get(h.contextId)!, contents: h.contents.map((c) => JSON.stringify(c)) }));
  const at = new Date();
  const audit = plan.audit.map((e, i) => auditIn(e, db.audit.length + 1 + i, at));
  return { tasks, history, calls: plan.calls.map(callIn), audit };
}

/**
 * Inserts or replaces a staged call; the reminder mark and the answer of a replaced one stay, and
 * a replacement that would move its phase back, or from awaiting to ready, is ignored (saveCalls).
 */
function putCall(db: MemoryDatabase, staged: StoredCall): void {
  const old = db.calls.get(staged.id);
  if (old && !storedPhaseMoves(old.call.phase, staged.phase)) return;
  const { answer: _, ...rest } = staged;
  const answer = old ? old.call.answer : staged.answer;
  const call: StoredCall = answer === undefined ? rest : { ...rest, answer };
  if (old && old.call.taskId !== call.taskId) db.tasks.get(old.call.taskId)?.calls.delete(call.id);
  db.tasks.get(call.taskId)!.calls.add(call.id);
  db.calls.set(call.id, { call, ...(old?.remindedAt ? { remindedAt: old.remindedAt } : {}) });
}

/** Stores a new context (createContext); one that exists stays as it is. Returns whether it was created. */
function insertContext(db: MemoryDatabase, ctx: NewContext): boolean {
  if (db.contexts.has(ctx.id)) return false;
  const settings = jsonCopy(ctx.settings ?? {});
  const principal = defined({ principal: ctx.principal });
  db.contexts.set(ctx.id, { id: ctx.id, workspace: ctx.workspace, settings, history: [], trust: new Map(), ...principal });
  return true;
}

/** Stores a new task (createTask); throws, storing nothing, on an unknown context or a taken id. */
function insertTask(db: MemoryDatabase, { task, principal, opts = {} }: NewTask): void {
  const { lease, dialect = 'rfc' } = opts;
  const json = jsonCopy(taskToJson(task) as Json);
  if (!db.contexts.has(task.contextId)) throw refused(`createTask: unknown context ${task.contextId}`, '23503');
  if (db.tasks.has(task.id)) throw refused(`createTask: task ${task.id} exists`, '23505');
  const row: TaskRow = {
    id: task.id,
    contextId: task.contextId,
    state: stateName(task.status?.state),
    task: json,
    dialect,
    events: [],
    lastSeq: 0,
    updatedAt: db.tick(),
    closedTurns: new Set(),
    calls: new Set(),
  };
  if (principal !== undefined && principal !== null) row.principal = principal;
  if (lease) Object.assign(row, { leaseOwner: lease.owner, leaseUntil: dateCopy(lease.until) });
  db.tasks.set(task.id, row);
}

/** Creates the plan's contexts and tasks, then stages it; when anything throws, what it created is removed again. */
function stageCreating(db: MemoryDatabase, plan: BatchPlan): Staged {
  const contexts: string[] = [];
  const tasks: string[] = [];
  try {
    for (const ctx of plan.create.contexts) if (insertContext(db, ctx)) contexts.push(ctx.id);
    for (const t of plan.create.tasks) {
      insertTask(db, t);
      tasks.push(t.task.id);
    }
    return stage(db, plan);
  } catch (err) {
    for (const id of tasks) db.tasks.delete(id);
    for (const id of contexts) db.contexts.delete(id);
    throw err;
  }
}

/** Commits `batch` (see TaskStore.commit): all of it, or — when it throws — nothing. */
function commitBatch(db: MemoryDatabase, batch: WriteBatch): number[] {
  const plan = planBatch(batch);
  if (plan.empty) return [];
  const staged = stageCreating(db, plan);
  // Nothing below throws: the batch lands whole.
  const now = db.tick();
  const lastSeq = new Map<string, number>();
  for (const { row, bump, task, events } of staged.tasks) {
    // Compaction: the batch's keyed events supersede the stored ones with the same key.
    const keys = new Set(events.flatMap((e) => (e.key !== undefined ? [e.key] : [])));
    if (keys.size > 0) row.events = row.events.filter((e) => e.key === undefined || !keys.has(e.key));
    row.events.push(...events);
    Object.assign(row, { task, state: bump.state, updatedAt: now, lastSeq: row.lastSeq + bump.count });
    lastSeq.set(row.id, row.lastSeq);
  }
  for (const { row, contents } of staged.history) row.history.push(...contents);
  for (const call of staged.calls) putCall(db, call);
  for (const g of plan.trust) {
    const { trust } = db.contexts.get(g.contextId)!;
    if (!trust.has(g.toolName)) trust.set(g.toolName, { ...(g.principal !== undefined ? { principal: g.principal } : {}), at: now });
  }
  db.audit.push(...staged.audit);
  for (const { taskId, turn } of plan.closeTurns) db.tasks.get(taskId)!.closedTurns.add(turn);
  db.notify(plan.tasks.map((t) => ({ taskId: t.id, seq: lastSeq.get(t.id)!, final: t.final })));
  return seqsOf(plan, lastSeq);
}

/** The calls of the task's highest turn, in position order (copies). */
function latestTurn(db: MemoryDatabase, taskId: string): StoredCall[] {
  const calls = [...(db.tasks.get(taskId)?.calls ?? [])].map((id) => db.calls.get(id)!.call);
  const turn = calls.reduce((max, c) => Math.max(max, c.turn), -Infinity);
  return calls
    .filter((c) => c.turn === turn)
    .sort((a, b) => a.position - b.position)
    .map((c) => structuredClone(c));
}

/** True exactly once per (task, turn); an unknown task throws. */
function closeTurnOf(db: MemoryDatabase, taskId: string, turn: number): boolean {
  const row = db.tasks.get(taskId);
  if (!row) throw refused(`closeTurn: unknown task ${taskId}`, '23503');
  if (row.closedTurns.has(turn)) return false;
  row.closedTurns.add(turn);
  return true;
}

/** Another owner runs calls of the task (claimed or executing, under a live lease); see TaskStore.claimCalls. */
function runsElsewhere(db: MemoryDatabase, task: TaskRow, owner: string, now: number): boolean {
  return [...task.calls].some((id) => {
    const { call } = db.calls.get(id)!;
    return LIVE_PHASES.has(call.phase) && call.leaseOwner !== owner && call.leaseUntil !== undefined && call.leaseUntil.getTime() >= now;
  });
}

/** Awaiting → ready for every claim, or nothing; see TaskStore.claimCalls. */
function claim(db: MemoryDatabase, taskId: string, claims: CallClaim[], owner: string, leaseUntil: Date, expectSeq?: number): ClaimResult {
  const stored = db.tasks.get(taskId);
  if (stored && expectSeq !== undefined && stored.lastSeq !== expectSeq) return { ok: false, notAwaiting: [], behind: stored.lastSeq };
  const won = new Set<string>();
  const lost = new Set<string>();
  for (const c of claims) {
    const row = db.calls.get(c.id);
    const sameCard = c.shownHash === undefined || row?.call.shownHash === c.shownHash;
    if (row && row.call.taskId === taskId && row.call.phase === 'awaiting' && sameCard && !won.has(c.id)) won.add(c.id);
    else lost.add(c.id);
  }
  if (lost.size > 0) return { ok: false, notAwaiting: claims.map((c) => c.id).filter((id) => lost.has(id)) };
  // Every claimed call still waits, but another owner runs calls of the task: this one waits its turn.
  if (stored && runsElsewhere(db, stored, owner, Date.now())) return { ok: false, notAwaiting: [], behind: stored.lastSeq };
  const changes = claims.map((c) => ({
    row: db.calls.get(c.id)!,
    set: defined({ phase: 'ready' as const, answer: c.answer, leaseOwner: owner, leaseUntil: dateCopy(leaseUntil) }),
    args: c.args === undefined ? undefined : jsonCopy(c.args),
    snapshot: c.snapshot === undefined ? undefined : jsonCopy(c.snapshot),
  }));
  for (const { row, set, args, snapshot } of changes) {
    Object.assign(row.call, set, args !== undefined ? { args } : {}, snapshot !== undefined ? { snapshot } : {});
  }
  const task = db.tasks.get(taskId)!; // a call of it was awaiting
  Object.assign(task, { leaseOwner: owner, leaseUntil: dateCopy(leaseUntil) });
  return { ok: true, lastSeq: task.lastSeq };
}

/** claim, then — when it is won — commitBatch expected at the claim's last seq; a refused batch undoes the claim. See TaskStore.claimAndCommit. */
function claimThenCommit(db: MemoryDatabase, terms: ClaimTerms, batch: WriteBatch): ClaimCommitResult {
  const { taskId, claims, owner, leaseUntil, expectSeq } = terms;
  const task = db.tasks.get(taskId);
  const before = {
    lease: task && { leaseOwner: task.leaseOwner, leaseUntil: task.leaseUntil },
    calls: claims.flatMap((c) => {
      const row = db.calls.get(c.id);
      return row ? [{ row, call: structuredClone(row.call) }] : [];
    }),
  };
  const won = claim(db, taskId, claims, owner, leaseUntil, expectSeq);
  if (!won.ok) return won;
  const expect = batch.expect?.map((e) => (e.taskId === taskId ? { taskId, lastSeq: won.lastSeq } : e));
  try {
    return { ...won, seqs: commitBatch(db, expect === undefined ? batch : { ...batch, expect }) };
  } catch (err) {
    for (const { row, call } of before.calls) row.call = call;
    if (task && before.lease) Object.assign(task, before.lease);
    if (!(err instanceof StaleWriteError)) throw err;
    return { ok: false, notAwaiting: [], behind: err.stale[0]?.stored.lastSeq ?? won.lastSeq };
  }
}

/** Working/submitted tasks whose lease lapsed (or that never had one) and no call under a live lease covers. */
function staleTasks(db: MemoryDatabase, now: number): string[] {
  const liveCall = (id: string) => {
    const c = db.calls.get(id)!.call;
    return LIVE_PHASES.has(c.phase) && c.leaseUntil !== undefined && c.leaseUntil.getTime() >= now;
  };
  return [...db.tasks.values()]
    .filter((r) => r.state === 'working' || r.state === 'submitted')
    .filter((r) => r.leaseUntil === undefined || r.leaseUntil.getTime() < now)
    .filter((r) => ![...r.calls].some(liveCall))
    .map((r) => r.id);
}

const pushKey = (taskId: string, id: string) => JSON.stringify([taskId, id]);

/** A config as its row stores it: optional fields absent unless set, the wire version one of two. */
function pushIn(c: PushConfigInput): Omit<PushConfigRecord, 'deliveredSeq' | 'attempts' | 'nextAttemptAt' | 'dropped' | 'createdAt'> {
  return {
    taskId: c.taskId,
    id: c.id,
    url: c.url,
    ...(c.token !== undefined && c.token !== null ? { token: c.token } : {}),
    ...(c.authentication ? { authentication: { scheme: c.authentication.scheme, credentials: c.authentication.credentials } } : {}),
    wireVersion: c.wireVersion === '0.3' ? '0.3' : '1.0',
    ...(c.principal !== undefined && c.principal !== null ? { principal: c.principal } : {}),
  };
}

function savePush(db: MemoryDatabase, c: PushConfigInput, afterSeq: number): void {
  if (!db.tasks.has(c.taskId)) throw refused(`savePushConfig: unknown task ${c.taskId}`, '23503');
  const key = pushKey(c.taskId, c.id);
  const old = db.pushConfigs.get(key);
  const now = new Date();
  if (old) {
    const { deliveredSeq, dropped, createdAt } = old.config;
    // A replaced config keeps its cursor, its count of dropped events and its lease.
    old.config = { ...pushIn(c), deliveredSeq, attempts: 0, nextAttemptAt: now, dropped, createdAt };
    return;
  }
  const config = { ...pushIn(c), deliveredSeq: afterSeq, attempts: 0, nextAttemptAt: now, dropped: 0, createdAt: new Date(now) };
  db.pushConfigs.set(key, { config });
}

/** Configs with undelivered events, due, not leased (or the lease lapsed): leased to `owner`, earliest due first, then oldest. */
function claimDue(db: MemoryDatabase, owner: string, now: Date, leaseUntil: Date, limit: number): PushConfigRecord[] {
  const t = now.getTime();
  const due = [...db.pushConfigs.values()]
    .filter((r) => db.tasks.get(r.config.taskId)!.lastSeq > r.config.deliveredSeq)
    .filter((r) => r.config.nextAttemptAt.getTime() <= t && (r.leaseUntil === undefined || r.leaseUntil.getTime() < t))
    .sort((a, b) => a.config.nextAttemptAt.getTime() - b.config.nextAttemptAt.getTime())
    .slice(0, Math.max(0, limit));
  for (const r of due) Object.assign(r, { leaseOwner: owner, leaseUntil: dateCopy(leaseUntil) });
  return due.map((r) => structuredClone(r.config));
}

/** The config `(taskId, id)` when `owner` holds its lease. */
function held(db: MemoryDatabase, taskId: string, id: string, owner: string): PushRow | undefined {
  const row = db.pushConfigs.get(pushKey(taskId, id));
  return row?.leaseOwner === owner ? row : undefined;
}

/** The durable-state and push ports in memory; see the file comment. */
export class MemoryTaskStore implements TaskStore, PushStore {
  private readonly listeners = new Set<EventListener>();
  private closed = false;
  private readonly hear = (notes: Note[]) => {
    for (const note of notes) {
      for (const l of [...this.listeners]) {
        try {
          l(note.taskId, note.seq, note.final);
        } catch {
          // One listener's bug must not starve the others of notifications.
        }
      }
    }
  };

  /** A store on `database`; a new, empty database when none is given. */
  constructor(readonly database: MemoryDatabase = new MemoryDatabase()) {}

  /** Another store on the same data, as a second process on the same database. Closing either leaves the data. */
  connect(): MemoryTaskStore {
    return new MemoryTaskStore(this.database);
  }

  /** The database, unless this store was closed: then every method rejects, like a closed pool. */
  private use(method: string): MemoryDatabase {
    if (this.closed) throw Object.assign(new Error(`${method}: store is closed`), { code: 'AGENT_ERR_STORE_CLOSED' });
    return this.database;
  }

  /** Idempotent: a context that exists keeps its first workspace. */
  async createContext(ctx: NewContext): Promise<void> {
    insertContext(this.use('createContext'), ctx);
  }

  async updateContextSettings(id: string, settings: ContextSettings): Promise<void> {
    const row = this.use('updateContextSettings').contexts.get(id);
    if (row) row.settings = jsonCopy(settings);
  }

  async loadContext(id: string): Promise<StoredContext | undefined> {
    const row = this.use('loadContext').contexts.get(id);
    if (!row) return undefined;
    const trust = [...row.trust].sort(([a, x], [b, y]) => x.at - y.at || byCodeUnits(a, b));
    return {
      id: row.id,
      workspace: row.workspace,
      history: row.history.map((h) => JSON.parse(h) as ModelContent),
      trustedTools: trust.map(([toolName]) => toolName),
      settings: structuredClone(row.settings),
      ...(row.principal !== undefined ? { principal: row.principal } : {}),
    };
  }

  /** Throws when the context does not exist. */
  async appendHistory(contextId: string, contents: ModelContent[]): Promise<void> {
    commitBatch(this.use('appendHistory'), { ...nothing(), history: [{ contextId, contents }] });
  }

  /** The first grant of a tool in a context stays (its principal too). */
  async addTrust(contextId: string, toolName: string, principal?: string): Promise<void> {
    commitBatch(this.use('addTrust'), { ...nothing(), trust: [{ contextId, toolName, principal }] });
  }

  /** The task's context must exist; a duplicate id throws. */
  async createTask(task: Task, principal?: string, opts: NewTaskOptions = {}): Promise<void> {
    insertTask(this.use('createTask'), { task, principal, opts });
  }

  async loadTask(id: string): Promise<StoredTask | undefined> {
    const row = this.use('loadTask').tasks.get(id);
    if (!row) return undefined;
    const stored: StoredTask = { task: taskFromJson(structuredClone(row.task)), lastSeq: row.lastSeq, dialect: row.dialect };
    if (row.principal !== undefined) stored.principal = row.principal;
    return stored;
  }

  async loadVersion(id: string): Promise<TaskVersion | undefined> {
    const db = this.use('loadVersion');
    const row = db.tasks.get(id);
    const context = row && db.contexts.get(row.contextId);
    if (!row || !context) return undefined;
    return { lastSeq: row.lastSeq, context: `${context.history.length}:${JSON.stringify(context.settings)}` };
  }

  /** Most recently updated first, then by id. `state` is an A2A name ('working') or 'TASK_STATE_WORKING'. */
  async listTasks(q: {
    contextId?: string;
    state?: string;
    states?: readonly string[];
    principal?: string;
    limit: number;
    offset: number;
  }): Promise<{ tasks: Task[]; total: number }> {
    const state = q.state === undefined ? undefined : stateName(q.state);
    const states = q.states === undefined ? undefined : new Set(q.states.map((s) => stateName(s)));
    const rows = [...this.use('listTasks').tasks.values()].filter(
      (r) =>
        (q.principal === undefined || r.principal === q.principal) &&
        (q.contextId === undefined || r.contextId === q.contextId) &&
        (state === undefined || r.state === state) &&
        (states === undefined || states.has(r.state)),
    );
    rows.sort((a, b) => b.updatedAt - a.updatedAt || byCodeUnits(a.id, b.id));
    const page = rows.slice(Math.max(0, q.offset), Math.max(0, q.offset) + Math.max(0, q.limit));
    return { tasks: page.map((r) => taskFromJson(structuredClone(r.task))), total: rows.length };
  }

  /** Throws when the task was never created. */
  async appendEvent(task: Task, response: StreamResponse, final: boolean): Promise<number> {
    const [seq] = commitBatch(this.use('appendEvent'), { ...nothing(), events: [{ taskId: task.id, task, response, final }] });
    return seq!;
  }

  /** Throws (and writes nothing) when any task or context of the batch does not exist. */
  async commit(batch: WriteBatch): Promise<number[]> {
    return commitBatch(this.use('commit'), batch);
  }

  async commitWhileAwaiting(batch: WriteBatch, taskId: string, callIds: string[]): Promise<number[] | undefined> {
    const db = this.use('commitWhileAwaiting');
    const awaiting = (id: string) => db.calls.get(id)?.call.taskId === taskId && db.calls.get(id)?.call.phase === 'awaiting';
    return callIds.every(awaiting) ? commitBatch(db, batch) : undefined;
  }

  async eventsAfter(taskId: string, afterSeq: number, limit?: number): Promise<StoredEvent[]> {
    const row = this.use('eventsAfter').tasks.get(taskId);
    const log = row?.events ?? [];
    // The log is in seq order: binary search for the first event after afterSeq.
    let lo = 0;
    for (let hi = log.length; lo < hi;) {
      const mid = (lo + hi) >>> 1;
      if (log[mid]!.seq > afterSeq) hi = mid;
      else lo = mid + 1;
    }
    // Found by its last seq, like the table's rows: a run that afterSeq falls in is read from there on.
    const out: StoredEvent[] = [];
    const max = limit === undefined ? Infinity : Math.max(0, Math.floor(limit));
    for (let r = lo; r < log.length && out.length < max; r++) {
      const { seq, payload, final, span } = log[r]!;
      const texts = typeof payload === 'string' ? [payload] : payload;
      for (let i = Math.max(0, afterSeq - (seq - span)); i < span && out.length < max; i++) {
        out.push(eventFromRow({ seq: seq - span + 1 + i, payload: JSON.parse(texts[i]!), final }));
      }
    }
    return out;
  }

  /** Listeners hear once per task per commit (of any store on the database), after the commit. */
  async subscribe(listener: EventListener): Promise<() => Promise<void>> {
    this.use('subscribe').hearers.add(this.hear);
    this.listeners.add(listener);
    return async () => {
      this.listeners.delete(listener);
    };
  }

  /** A later entry for the same id wins. */
  async saveCalls(calls: StoredCall[]): Promise<void> {
    commitBatch(this.use('saveCalls'), { ...nothing(), calls });
  }

  /** The calls of the task's highest turn, in position order. */
  async loadTurn(taskId: string): Promise<StoredCall[]> {
    return latestTurn(this.use('loadTurn'), taskId);
  }

  async loadCall(id: string): Promise<StoredCall | undefined> {
    const row = this.use('loadCall').calls.get(id);
    return row ? structuredClone(row.call) : undefined;
  }

  async claimCalls(taskId: string, claims: CallClaim[], owner: string, leaseUntil: Date, expectSeq?: number): Promise<ClaimResult> {
    return claim(this.use('claimCalls'), taskId, claims, owner, leaseUntil, expectSeq);
  }

  async claimAndCommit(terms: ClaimTerms, batch: WriteBatch): Promise<ClaimCommitResult> {
    return claimThenCommit(this.use('claimAndCommit'), terms, batch);
  }

  /** ready → awaiting with a new card (and id), only under `owner`'s lease; see TaskStore.reopenCall. */
  async reopenCall(call: StoredCall, owner: string, previousId: string = call.id): Promise<boolean> {
    const db = this.use('reopenCall');
    const row = db.calls.get(previousId);
    if (!row || row.call.taskId !== call.taskId || row.call.phase !== 'ready' || row.call.leaseOwner !== owner) return false;
    if (previousId !== call.id && db.calls.has(call.id)) return false;
    const { answer: _a, leaseOwner: _o, leaseUntil: _u, args: _g, shownHash: _h, expiresAt: _e, ...kept } = row.call;
    const card = defined({
      args: call.args === undefined ? undefined : jsonCopy(call.args),
      shownHash: call.shownHash,
      expiresAt: dateCopy(call.expiresAt),
    });
    row.call = { ...kept, ...card, id: call.id, phase: 'awaiting', snapshot: jsonCopy(call.snapshot) };
    delete row.remindedAt;
    if (previousId !== call.id) {
      db.calls.delete(previousId);
      db.calls.set(call.id, row);
      const ids = db.tasks.get(call.taskId)!.calls;
      ids.delete(previousId);
      ids.add(call.id);
    }
    return true;
  }

  /** True exactly once per (task, turn); an unknown task throws. */
  async closeTurn(taskId: string, turn: number): Promise<boolean> {
    return closeTurnOf(this.use('closeTurn'), taskId, turn);
  }

  async settleTurn(taskId: string, turn: number): Promise<{ calls: StoredCall[]; closed: boolean }> {
    const db = this.use('settleTurn');
    const calls = latestTurn(db, taskId);
    const closed = calls.every((c) => c.phase === 'done') && closeTurnOf(db, taskId, turn);
    return { calls, closed };
  }

  async leaseTasks(taskIds: string[], owner: string, leaseUntil: Date): Promise<void> {
    const db = this.use('leaseTasks');
    for (const id of taskIds) {
      const row = db.tasks.get(id);
      if (row) Object.assign(row, { leaseOwner: owner, leaseUntil: dateCopy(leaseUntil) });
    }
  }

  async findStaleTasks(now: Date): Promise<string[]> {
    return staleTasks(this.use('findStaleTasks'), now.getTime());
  }

  /** Extends the leases `owner` holds on the executing/ready calls of `taskIds`. */
  async renewLeases(owner: string, leaseUntil: Date, taskIds: readonly string[]): Promise<void> {
    const named = new Set(taskIds);
    for (const { call } of this.use('renewLeases').calls.values()) {
      if (named.has(call.taskId) && call.leaseOwner === owner && LIVE_PHASES.has(call.phase)) call.leaseUntil = dateCopy(leaseUntil);
    }
  }

  /** Every lease `owner` holds on tasks and calls lapses now (the epoch). */
  async releaseLeases(owner: string): Promise<void> {
    const db = this.use('releaseLeases');
    for (const row of db.tasks.values()) if (row.leaseOwner === owner) row.leaseUntil = new Date(0);
    for (const { call } of db.calls.values()) if (call.leaseOwner === owner) call.leaseUntil = new Date(0);
  }

  /** Executing/ready calls with no lease or a lapsed one, by task, turn and position. */
  async findInterrupted(now: Date): Promise<StoredCall[]> {
    const calls = [...this.use('findInterrupted').calls.values()].map((r) => r.call);
    const lapsed = (c: StoredCall) => c.leaseUntil === undefined || c.leaseUntil.getTime() < now.getTime();
    return calls
      .filter((c) => LIVE_PHASES.has(c.phase) && lapsed(c))
      .sort(byTurnOrder)
      .map((c) => structuredClone(c));
  }

  /** Awaiting calls whose expiresAt is before `before` and that got no reminder yet: marked reminded at `now`. */
  async claimReminders(before: Date, now: Date): Promise<StoredCall[]> {
    const rows = [...this.use('claimReminders').calls.values()].filter(
      (r) =>
        r.call.phase === 'awaiting' &&
        r.call.expiresAt !== undefined &&
        r.call.expiresAt.getTime() < before.getTime() &&
        r.remindedAt === undefined,
    );
    for (const r of rows) r.remindedAt = dateCopy(now);
    return rows.map((r) => structuredClone(r.call)).sort((a, b) => a.taskId.localeCompare(b.taskId) || a.position - b.position);
  }

  async unclaimReminders(callIds: string[], claimedAt: Date): Promise<void> {
    const calls = this.use('unclaimReminders').calls;
    for (const id of callIds) {
      const r = calls.get(id);
      if (r?.call.phase === 'awaiting' && r.remindedAt?.getTime() === claimedAt.getTime()) r.remindedAt = undefined;
    }
  }

  /** Awaiting calls past their expiresAt, by task, turn and position. */
  async findExpired(now: Date): Promise<StoredCall[]> {
    const calls = [...this.use('findExpired').calls.values()].map((r) => r.call);
    return calls
      .filter((c) => c.phase === 'awaiting' && c.expiresAt !== undefined && c.expiresAt.getTime() < now.getTime())
      .sort(byTurnOrder)
      .map((c) => structuredClone(c));
  }

  async savePushConfig(config: PushConfigInput, afterSeq: number): Promise<void> {
    savePush(this.use('savePushConfig'), config, afterSeq);
  }

  async getPushConfig(taskId: string, id: string): Promise<PushConfigRecord | undefined> {
    const row = this.use('getPushConfig').pushConfigs.get(pushKey(taskId, id));
    return row ? structuredClone(row.config) : undefined;
  }

  /** Oldest first, then by id. */
  async listPushConfigs(taskId: string): Promise<PushConfigRecord[]> {
    const rows = [...this.use('listPushConfigs').pushConfigs.values()].filter((r) => r.config.taskId === taskId);
    rows.sort((a, b) => a.config.createdAt.getTime() - b.config.createdAt.getTime() || byCodeUnits(a.config.id, b.config.id));
    return rows.map((r) => structuredClone(r.config));
  }

  async hasPushConfigs(): Promise<boolean> {
    return this.use('hasPushConfigs').pushConfigs.size > 0;
  }

  async deletePushConfig(taskId: string, id: string): Promise<boolean> {
    return this.use('deletePushConfig').pushConfigs.delete(pushKey(taskId, id));
  }

  async claimDuePushes(owner: string, now: Date, leaseUntil: Date, limit: number): Promise<PushConfigRecord[]> {
    return claimDue(this.use('claimDuePushes'), owner, now, leaseUntil, limit);
  }

  /** Cursor forward (never back), attempts reset; the lease stays. False when `owner` does not hold it. */
  async advancePush(taskId: string, id: string, owner: string, seq: number, outcome: { dropped?: string }): Promise<boolean> {
    const row = held(this.use('advancePush'), taskId, id, owner);
    if (!row) return false;
    const c = row.config;
    Object.assign(c, { deliveredSeq: Math.max(c.deliveredSeq, seq), attempts: 0, nextAttemptAt: new Date() });
    if (outcome.dropped !== undefined) Object.assign(c, { lastError: outcome.dropped, dropped: c.dropped + 1 });
    return true;
  }

  /** Releases the lease with the next attempt's schedule; see PushStore.deferPush. */
  async deferPush(
    taskId: string,
    id: string,
    owner: string,
    attempts: number,
    nextAttemptAt: Date,
    error: string | undefined,
    deliveredSeq?: number,
  ): Promise<boolean> {
    const row = held(this.use('deferPush'), taskId, id, owner);
    if (!row) return false;
    const c = row.config;
    Object.assign(c, { attempts, nextAttemptAt: dateCopy(nextAttemptAt) });
    if (error !== undefined) c.lastError = error;
    if (deliveredSeq !== undefined) c.deliveredSeq = Math.max(c.deliveredSeq, deliveredSeq);
    row.leaseOwner = undefined;
    row.leaseUntil = undefined;
    return true;
  }

  /** Oldest first. */
  async loadSigningKeys(): Promise<StoredSigningKey[]> {
    const keys = [...this.use('loadSigningKeys').signingKeys.values()];
    return keys.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime()).map((k) => structuredClone(k));
  }

  /** A key whose kid is stored already is not saved again (the first one stays). */
  async saveSigningKey(key: StoredSigningKey): Promise<void> {
    const db = this.use('saveSigningKey');
    if (db.signingKeys.has(key.kid)) return;
    const { kid, alg, privateJwk, publicJwk } = key;
    db.signingKeys.set(kid, { kid, alg, ...jsonCopy({ privateJwk, publicJwk }), createdAt: dateCopy(key.createdAt)! });
  }

  /** Append-only: nothing updates or deletes audit records. */
  /** One synchronous step, as the table lock makes it in PostgreSQL. */
  async claimWorkspace(dir: string, principal: string): Promise<WorkspaceClaim> {
    const claims = this.use('claimWorkspace').workspaceClaims;
    const above = new Set(selfAndAncestors(dir));
    const below = belowPrefix(dir);
    for (const [claimed, owner] of claims) {
      if (owner !== principal && (above.has(claimed) || claimed.startsWith(below))) return { ok: false, conflict: claimed };
    }
    if (!claims.has(dir)) claims.set(dir, principal);
    return { ok: true };
  }

  /** The first checkpoint of a call stays. */
  async saveCheckpoint(checkpoint: Checkpoint): Promise<void> {
    const db = this.use('saveCheckpoint');
    if (db.checkpoints.has(checkpoint.callId)) return;
    db.checkpoints.set(checkpoint.callId, checkpointIn(checkpoint));
  }

  async loadCheckpoint(callIdOrName: string, of?: { principal: string | undefined }): Promise<Checkpoint | undefined> {
    const db = this.use('loadCheckpoint');
    const named = [...db.checkpoints.values()].filter((c) => c.name === callIdOrName && (of === undefined || c.principal === of.principal));
    const found = db.checkpoints.get(callIdOrName) ?? newestFirst(named)[0];
    return found && checkpointIn(found);
  }

  async listCheckpoints(q: { workspace?: string; principal?: string; limit: number }): Promise<Checkpoint[]> {
    const all = [...this.use('listCheckpoints').checkpoints.values()].filter(
      (c) => (q.workspace === undefined || c.workspace === q.workspace) && (q.principal === undefined || c.principal === q.principal),
    );
    return newestFirst(all)
      .slice(0, Math.max(0, Math.floor(q.limit)))
      .map((c) => ({ ...checkpointIn(c), files: c.files.map((f) => ({ path: f.path })) }));
  }

  async audit(entry: AuditEntry): Promise<void> {
    commitBatch(this.use('audit'), { ...nothing(), audit: [entry] });
  }

  /** In insertion order; both filters combine; no filter lists everything. */
  async listAudit(q: { taskId?: string; contextId?: string }): Promise<AuditRecord[]> {
    return this.use('listAudit')
      .audit.filter((r) => (q.taskId === undefined || r.taskId === q.taskId) && (q.contextId === undefined || r.contextId === q.contextId))
      .map((r) => structuredClone(r));
  }

  /** Stops this store's notifications; the data stays for the other stores. Idempotent. */
  async ping(): Promise<void> {
    this.use('ping');
  }

  async close(): Promise<void> {
    this.closed = true;
    this.listeners.clear();
    this.database.hearers.delete(this.hear);
  }
}
