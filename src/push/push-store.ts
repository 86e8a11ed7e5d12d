/**
 * The push port: what delivery needs from the database. The task's event log is the
 * outbox; each config carries a cursor (`deliveredSeq`) that only moves forward.
 * Implemented by store/ (PgTaskStore).
 */
import type { SigningKeyStore } from './push-signer.js';
import type { A2aVersion } from '../protocol/a2a.js';

/** The A2A version a config was registered with; it picks the body shape. */
export type PushWireVersion = A2aVersion;

export interface PushConfigInput {
  taskId: string;
  id: string;
  url: string;
  token?: string;
  authentication?: { scheme: string; credentials: string };
  wireVersion: PushWireVersion;
  principal?: string;
}

export interface PushConfigRecord extends PushConfigInput {
  deliveredSeq: number;
  attempts: number;
  nextAttemptAt: Date;
  lastError?: string;
  dropped: number;
  createdAt: Date;
}

export interface PushStore extends SigningKeyStore {
  /**
   * Creates or replaces the config `(taskId, id)`. A new config starts after event `afterSeq`
   * (0 = from the task's first event); a replaced one keeps its cursor.
   */
  savePushConfig(config: PushConfigInput, afterSeq: number): Promise<void>;
  getPushConfig(taskId: string, id: string): Promise<PushConfigRecord | undefined>;
  listPushConfigs(taskId: string): Promise<PushConfigRecord[]>;
  /** True when any task has a push config (lets an idle dispatcher skip work). */
  hasPushConfigs(): Promise<boolean>;
  /** True when it existed. */
  deletePushConfig(taskId: string, id: string): Promise<boolean>;
  /**
   * Leases up to `limit` configs that have undelivered events and whose next attempt is due
   * (or whose lease lapsed), for `owner` until `leaseUntil`.
   */
  claimDuePushes(owner: string, now: Date, leaseUntil: Date, limit: number): Promise<PushConfigRecord[]>;
  /**
   * Moves the cursor to `seq` (delivered, or given up on when `dropped`) and resets the
   * attempts; the lease stays (deferPush releases it). False when `owner` no longer holds it.
   */
  advancePush(taskId: string, id: string, owner: string, seq: number, outcome: { dropped?: string }): Promise<boolean>;
  /**
   * Releases the lease, with the attempts made at the next event and when to try again
   * (`error` = why the last attempt failed; undefined keeps the last recorded error), moving
   * the cursor forward to `deliveredSeq` when given (never backward).
   */
  deferPush(
    taskId: string,
    id: string,
    owner: string,
    attempts: number,
    nextAttemptAt: Date,
    error: string | undefined,
    deliveredSeq?: number,
  ): Promise<boolean>;
}
