/**
 * Row ↔ port-type conversions. Tasks and events are stored as A2A v1.0 JSON (the SDK's
 * toJSON/fromJSON), so the rows stay readable with plain SQL and survive SDK upgrades
 * the way the wire format does; nullable columns become absent optional fields.
 */
import { StreamResponse, Task, TaskStatus } from '@a2a-js/sdk';
import type { AuditRecord, CallPhase, StoredCall, StoredEvent } from '../agent/task-store.js';
import type { ToolCallSnapshot } from '../agent/wire/agent-events.js';
import type { auditLog, events, toolCalls } from './schema.js';

type CallRow = typeof toolCalls.$inferSelect;
type CallInsert = typeof toolCalls.$inferInsert;
type EventRow = typeof events.$inferSelect;
type AuditRow = typeof auditLog.$inferSelect;

/** Drops null/undefined fields so optional port fields come back absent, not null. */
function defined<T extends object>(o: T): T {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== null && v !== undefined)) as T;
}

export function taskToJson(task: Task): unknown {
  return Task.toJSON(task);
}

/**
 * A status as v1.0 JSON: the same shape as `taskToJson(task).status`, so a status-only
 * event stores exactly what a whole snapshot with that status would.
 */
export function statusToJson(status: TaskStatus): unknown {
  return TaskStatus.toJSON(status);
}

export function taskFromJson(json: unknown): Task {
  return Task.fromJSON(json);
}

export function responseToJson(response: StreamResponse): unknown {
  return StreamResponse.toJSON(response);
}

export function eventFromRow(row: Pick<EventRow, 'seq' | 'payload' | 'final'>): StoredEvent {
  return { seq: row.seq, response: StreamResponse.fromJSON(row.payload), final: row.final };
}

export function callToRow(c: StoredCall): CallInsert {
  return {
    id: c.id,
    taskId: c.taskId,
    turn: c.turn,
    position: c.position,
    toolName: c.toolName,
    modelCallId: c.modelCallId ?? null,
    args: c.args ?? null,
    snapshot: c.snapshot,
    phase: c.phase,
    answer: c.answer ?? null,
    response: c.response ?? null,
    shownHash: c.shownHash ?? null,
    proposedAt: c.proposedAt,
    expiresAt: c.expiresAt ?? null,
    leaseOwner: c.leaseOwner ?? null,
    leaseUntil: c.leaseUntil ?? null,
    pgid: c.processGroup?.pgid ?? null,
    processStamp: c.processGroup?.stamp ?? null,
  };
}

export function callFromRow(r: CallRow): StoredCall {
  return defined({
    id: r.id,
    taskId: r.taskId,
    turn: r.turn,
    position: r.position,
    toolName: r.toolName,
    modelCallId: r.modelCallId ?? undefined,
    args: (r.args ?? undefined) as Record<string, unknown> | undefined,
    snapshot: r.snapshot as ToolCallSnapshot,
    phase: r.phase as CallPhase,
    answer: r.answer ?? undefined,
    response: r.response ?? undefined,
    shownHash: r.shownHash ?? undefined,
    proposedAt: r.proposedAt,
    expiresAt: r.expiresAt ?? undefined,
    leaseOwner: r.leaseOwner ?? undefined,
    leaseUntil: r.leaseUntil ?? undefined,
    processGroup: r.pgid !== null && r.processStamp !== null ? { pgid: r.pgid, stamp: r.processStamp } : undefined,
  });
}

export function auditFromRow(r: AuditRow): AuditRecord {
  return defined({
    id: r.id,
    at: r.at,
    taskId: r.taskId,
    contextId: r.contextId,
    toolCallId: r.toolCallId ?? undefined,
    decision: r.decision as AuditRecord['decision'],
    principal: r.principal ?? undefined,
    optionId: r.optionId ?? undefined,
    shownHash: r.shownHash ?? undefined,
    detail: (r.detail ?? undefined) as Record<string, unknown> | undefined,
  });
}
