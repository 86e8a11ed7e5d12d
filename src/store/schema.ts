/**
 * The durable schema (drizzle). Tables are unqualified so they land in the connection's
 * search_path schema: production uses `public`, tests use a throw-away schema each.
 * Migrations in `drizzle/` are generated from this file (`drizzle-kit generate`);
 * test/store/migrations.test.ts fails when the two drift apart.
 */
import { sql } from 'drizzle-orm';
import { bigserial, boolean, index, integer, jsonb, pgTable, primaryKey, text, timestamp } from 'drizzle-orm/pg-core';

/** timestamptz read back as a Date; `now()` by default where the row's birth is the value. */
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

/** One conversation (A2A context) and the workspace it is bound to. */
export const contexts = pgTable('contexts', {
  id: text('id').primaryKey(),
  workspace: text('workspace').notNull(),
  /** AgentSettings beyond the workspace: approval mode, allowed tools, MCP servers (ContextSettings). */
  settings: jsonb('settings').notNull().default({}),
  /** The principal that started the conversation (null when authentication is off); only it may use it. */
  principal: text('principal'),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

/** The model conversation of a context, one ModelContent per row, `idx` 0, 1, 2… */
export const contextHistory = pgTable(
  'context_history',
  {
    contextId: text('context_id')
      .notNull()
      .references(() => contexts.id, { onDelete: 'cascade' }),
    idx: integer('idx').notNull(),
    content: jsonb('content').notNull(),
  },
  (t) => [primaryKey({ columns: [t.contextId, t.idx] })],
);

/** Tools trusted for the rest of a context (`proceed_always`). */
export const trustGrants = pgTable(
  'trust_grants',
  {
    contextId: text('context_id')
      .notNull()
      .references(() => contexts.id, { onDelete: 'cascade' }),
    toolName: text('tool_name').notNull(),
    principal: text('principal'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.contextId, t.toolName] })],
);

/**
 * The latest snapshot of each task (v1.0 JSON) and the number of its last event. The row
 * is also the lock that serialises appenders: `last_seq` is bumped by UPDATE … RETURNING.
 */
export const tasks = pgTable(
  'tasks',
  {
    id: text('id').primaryKey(),
    contextId: text('context_id')
      .notNull()
      .references(() => contexts.id),
    /** The A2A state name ('working', 'input-required'…), for filtering without JSON paths. */
    state: text('state').notNull(),
    principal: text('principal'),
    task: jsonb('task').notNull(),
    lastSeq: integer('last_seq').notNull().default(0),
    /** The wire dialect the task speaks ('rfc' or 'legacy'); its events are logged in it. */
    dialect: text('dialect').notNull().default('rfc'),
    /** The process working on the task (model loop or calls) and until when it promised to renew. */
    leaseOwner: text('lease_owner'),
    leaseUntil: ts('lease_until'),
    createdAt: ts('created_at').notNull().defaultNow(),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [index('tasks_context_id_idx').on(t.contextId), index('tasks_state_idx').on(t.state)],
);

/**
 * Each task's numbered event log (StreamResponse v1.0 JSON), seq 1, 2, 3… as appended. An
 * event with a `key` supersedes the task's earlier events with the same key: they are deleted
 * when it is stored (compaction: an EXECUTING card replaces the call's previous one), so the
 * stored seqs may have gaps where superseded events were. A row may hold a run of events
 * (`span`): a row is found by its last seq, and replay (eventsAfter) expands it.
 */
export const events = pgTable(
  'events',
  {
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    seq: integer('seq').notNull(),
    payload: jsonb('payload').notNull(),
    final: boolean('final').notNull(),
    /** Compaction key (WriteBatch events' `key`); null for events that are never superseded. */
    key: text('key'),
    /**
     * How many consecutive events the row holds: seqs `seq - span + 1` … `seq`. A row of one
     * (the default) has the event's JSON as its payload; a longer one, a text run (a task's text
     * deltas committed together: batch-plan.ts), has a JSON array of them, never final or keyed.
     */
    span: integer('span').notNull().default(1),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [
    primaryKey({ columns: [t.taskId, t.seq] }),
    // Compaction finds a task's superseded events without reading the log's payloads.
    index('events_task_key_idx')
      .on(t.taskId, t.key)
      .where(sql`key is not null`),
  ],
);

/** Tool calls as proposed and as they moved on; claims and leases are decided here. */
export const toolCalls = pgTable(
  'tool_calls',
  {
    id: text('id').primaryKey(),
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    turn: integer('turn').notNull(),
    position: integer('position').notNull(),
    toolName: text('tool_name').notNull(),
    modelCallId: text('model_call_id'),
    args: jsonb('args'),
    snapshot: jsonb('snapshot').notNull(),
    phase: text('phase').notNull(),
    answer: text('answer'),
    response: jsonb('response'),
    shownHash: text('shown_hash'),
    proposedAt: ts('proposed_at').notNull(),
    expiresAt: ts('expires_at'),
    /** When the "about to expire" reminder went out (once per call). */
    remindedAt: ts('reminded_at'),
    leaseOwner: text('lease_owner'),
    leaseUntil: ts('lease_until'),
    /** The process group a running shell command leads, and `<boot id>:<leader start time>` (a reused pid has another). */
    pgid: integer('pgid'),
    processStamp: text('process_stamp'),
    updatedAt: ts('updated_at').notNull().defaultNow(),
  },
  (t) => [
    index('tool_calls_task_turn_idx').on(t.taskId, t.turn),
    // Done calls pile up forever; the sweeps (findInterrupted/findExpired) only look at live ones.
    index('tool_calls_live_phase_idx')
      .on(t.phase)
      .where(sql`phase <> 'done'`),
  ],
);

/**
 * Model turns that were closed: the primary key makes closeTurn true exactly once per
 * (task, turn), so one process alone continues the model after a turn's last call settles.
 */
export const closedTurns = pgTable(
  'closed_turns',
  {
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    turn: integer('turn').notNull(),
    closedAt: ts('closed_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.turn] })],
);

/**
 * Who decided what about which call. Append-only: the code never updates or deletes it,
 * and it has no foreign keys so it outlives the tasks it talks about.
 */
export const auditLog = pgTable(
  'audit_log',
  {
    id: bigserial('id', { mode: 'number' }).primaryKey(),
    at: ts('at').notNull().defaultNow(),
    taskId: text('task_id').notNull(),
    contextId: text('context_id').notNull(),
    toolCallId: text('tool_call_id'),
    decision: text('decision').notNull(),
    principal: text('principal'),
    optionId: text('option_id'),
    shownHash: text('shown_hash'),
    detail: jsonb('detail'),
  },
  (t) => [index('audit_log_task_id_idx').on(t.taskId, t.id), index('audit_log_context_id_idx').on(t.contextId, t.id)],
);

/**
 * Push notification configs, each with its own delivery cursor: the task's event log is the
 * outbox, `delivered_seq` the last event this receiver has (or that was given up on). A
 * config is due when its task's `last_seq` is past the cursor and `next_attempt_at` has come;
 * a dispatcher leases it while it posts, so each event goes out in order, from one process.
 */
export const pushConfigs = pgTable(
  'push_configs',
  {
    taskId: text('task_id')
      .notNull()
      .references(() => tasks.id, { onDelete: 'cascade' }),
    id: text('id').notNull(),
    url: text('url').notNull(),
    token: text('token'),
    authScheme: text('auth_scheme'),
    authCredentials: text('auth_credentials'),
    /** The A2A version the config was registered with ('0.3' | '1.0'): it picks the body shape. */
    wireVersion: text('wire_version').notNull(),
    principal: text('principal'),
    deliveredSeq: integer('delivered_seq').notNull().default(0),
    /** Failed attempts at the event after the cursor. */
    attempts: integer('attempts').notNull().default(0),
    nextAttemptAt: ts('next_attempt_at').notNull().defaultNow(),
    lastError: text('last_error'),
    /** Events given up on after the last attempt. */
    dropped: integer('dropped').notNull().default(0),
    leaseOwner: text('lease_owner'),
    leaseUntil: ts('lease_until'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.taskId, t.id] }), index('push_configs_next_attempt_idx').on(t.nextAttemptAt)],
);

/** Keys that sign push deliveries (JWKS at /.well-known/jwks.json); kept so receivers' caches stay valid across restarts. */
export const signingKeys = pgTable('signing_keys', {
  kid: text('kid').primaryKey(),
  alg: text('alg').notNull(),
  privateJwk: jsonb('private_jwk').notNull(),
  publicJwk: jsonb('public_jwk').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
});

/**
 * Who owns each workspace (WORKSPACE_SHARING=owner, with authentication): the principal that
 * first opened a context on it. The primary key decides between two principals claiming one
 * directory at once; the claim transaction locks the table, so of two claims of overlapping
 * directories (a parent and a child) only the first commits.
 */
export const workspaceClaims = pgTable('workspace_claims', {
  path: text('path').primaryKey(),
  principal: text('principal').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
});

/**
 * Checkpoints (CHECKPOINTING): before an approved file-modifying call runs, the files it will
 * touch, as they were (base64 bytes, or absent: the file did not exist), named by the call's
 * tool_call_id and by gemini-cli's `<ISO time>-<file>-<tool>`. In the store, not on a disk of
 * one instance: a restore works after a restart and from every instance. No foreign key, like
 * the audit log: a checkpoint is a record of what the workspace held, and outlives its task.
 */
export const checkpoints = pgTable(
  'checkpoints',
  {
    callId: text('call_id').primaryKey(),
    name: text('name').notNull(),
    taskId: text('task_id').notNull(),
    contextId: text('context_id').notNull(),
    /** The real path of the workspace the files are relative to. */
    workspace: text('workspace').notNull(),
    principal: text('principal'),
    toolName: text('tool_name').notNull(),
    /** The conversation position: the context's history length and the task's last user message. */
    historyLength: integer('history_length').notNull(),
    messageId: text('message_id'),
    /** CheckpointFile[]: `{path, content?}`, path relative to the workspace. */
    files: jsonb('files').notNull(),
    /** Set on the checkpoint a restore took of what it overwrote: the checkpoint it put back. */
    restoreOf: text('restore_of'),
    createdAt: ts('created_at').notNull().defaultNow(),
  },
  (t) => [index('checkpoints_name_idx').on(t.name), index('checkpoints_workspace_idx').on(t.workspace, t.createdAt)],
);
