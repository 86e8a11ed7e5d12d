/**
 * The agent core in the test's process, without Fastify: a MemoryTaskStore, the write queue,
 * the event hub, the RFC encoder, a toolbox of fake tools, TaskRuns, a TurnLoop and a
 * TaskCache, wired as app.ts wires them. Plus fake tools and models, a recording logger, a
 * reader of a task's committed event log, and bounded waits (no fixed sleeps).
 */
import { randomUUID } from 'node:crypto';
import { mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Task } from '@a2a-js/sdk';
import type { FastifyInstance } from 'fastify';
import { EventHub } from '../../src/agent/runtime/event-hub.js';
import { LiveTask } from '../../src/agent/runtime/live-task.js';
import type { ContextState, LiveTaskDeps } from '../../src/agent/runtime/live-task.js';
import type { AgentLogger } from '../../src/agent/logger.js';
import type { ModelChunk, ModelClient, ModelRequest } from '../../src/agent/model/model-client.js';
import { ScriptedModelClient } from '../../src/agent/model/scripted-model-client.js';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { TaskCache } from '../../src/agent/runtime/task-cache.js';
import { TaskRuns } from '../../src/agent/runtime/task-runs.js';
import type { AuditRecord, ContextSettings, StoredCall, StoredEvent, TaskStore } from '../../src/agent/task-store.js';
import { Toolbox } from '../../src/agent/runtime/toolbox.js';
import { TurnLoop } from '../../src/agent/runtime/turn-loop.js';
import { RfcEncoder } from '../../src/agent/wire/rfc-encoder.js';
import { LegacyEncoder } from '../../src/agent/wire/legacy-encoder.js';
import type { Encoders } from '../../src/agent/wire/wire-encoder.js';
import { WriteQueue } from '../../src/agent/runtime/write-queue.js';
import type { Metrics } from '../../src/lib/metrics.js';
import { dataPart, newTask, stateName, textPart, userMessage } from '../../src/protocol/a2a.js';
import type { JsonObject } from '../../src/protocol/a2a.js';
import { loadDevtoolSchema } from '../../src/protocol/devtool-schema.js';
import { DEVTOOL_EXTENSION_URI } from '../../src/protocol/extension.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import type { AnyTool, ToolContext, ToolKind, ToolProposal, ToolResult } from '../../src/tools/tool.js';
import { parseSse } from './sse.js';
import type { SseEvent } from './sse.js';

export interface Teardown {
  teardown(fn: () => unknown): void;
}

// ---- logging ------------------------------------------------------------------------

export interface LogEntry {
  level: 'warn' | 'error';
  obj: Record<string, unknown>;
  msg: string;
}

/** A logger that keeps what it is told. */
export function recordingLogger(): AgentLogger & { entries: LogEntry[]; errors(): LogEntry[]; warnings(): LogEntry[] } {
  const entries: LogEntry[] = [];
  return {
    entries,
    warn: (obj, msg) => void entries.push({ level: 'warn', obj: obj as Record<string, unknown>, msg }),
    error: (obj, msg) => void entries.push({ level: 'error', obj: obj as Record<string, unknown>, msg }),
    errors: () => entries.filter((e) => e.level === 'error'),
    warnings: () => entries.filter((e) => e.level === 'warn'),
  };
}

/**
 * Records unhandled rejections while a test runs (a detached run that lets an error escape
 * would produce one); the listener is removed at teardown.
 */
export function watchRejections(t: Teardown): unknown[] {
  const seen: unknown[] = [];
  const onRejection = (reason: unknown) => void seen.push(reason);
  process.on('unhandledRejection', onRejection);
  t.teardown(() => void process.off('unhandledRejection', onRejection));
  return seen;
}

// ---- tools --------------------------------------------------------------------------

export interface FakeToolSpec {
  name: string;
  kind?: ToolKind;
  /** Default: succeeds with `ran <name>`. */
  run?: (args: Record<string, unknown>, ctx: ToolContext) => Promise<ToolResult>;
  /** Default: a generic proposal. */
  propose?: (args: Record<string, unknown>) => Promise<ToolProposal>;
  /** Arguments with `bad` set are refused (type `invalid_args`). */
  validating?: boolean;
  /** Offers modify_with_editor: the edit replaces `content`. */
  editable?: boolean;
  /** A shell-like tool: its command line is `args.command`. */
  shell?: boolean;
}

/** Every run of every fake tool, in order: [tool name, args]. */
export type RunLog = Array<[string, Record<string, unknown>]>;

/** A tool implementing the Tool port with no side effects; its runs are recorded in `runs`. */
export function fakeTool(spec: FakeToolSpec, runs: RunLog = []): AnyTool {
  const tool: AnyTool = {
    name: spec.name,
    description: `The fake tool ${spec.name}. It does nothing.`,
    parameters: { type: 'object', properties: { content: { type: 'string' }, command: { type: 'string' } } },
    kind: spec.kind ?? 'other',
    validate: (args) =>
      spec.validating && args.bad !== undefined
        ? { ok: false, error: { message: `${spec.name}: argument "bad" is not allowed`, type: 'invalid_args' } }
        : { ok: true, args: { ...args } },
    describe: (args) => `${spec.name} ${JSON.stringify(args)}`,
    propose: spec.propose ?? (async () => ({ type: 'generic', description: `run ${spec.name}` })),
    run: async (args, ctx) => {
      runs.push([spec.name, args]);
      return spec.run ? spec.run(args, ctx) : { llmContent: `ran ${spec.name}`, display: { type: 'text', text: `ran ${spec.name}` } };
    },
  };
  if (spec.editable) tool.withModifiedContent = (args, content) => ({ ...args, content });
  if (spec.shell)
    tool.commandLine = async (args, ctx) => (typeof args.command === 'string' ? { command: args.command, cwd: ctx.workspace } : undefined);
  return tool;
}

/** A tool that runs until its task is aborted; `started` resolves once it runs, and it then answers `result`. */
export function hangingTool(name: string, result: ToolResult = { llmContent: 'late', display: { type: 'text', text: 'late' } }) {
  let markStarted!: () => void;
  const started = new Promise<void>((resolve) => (markStarted = resolve));
  const tool = fakeTool({
    name,
    kind: 'read',
    run: (_args, ctx) =>
      new Promise<ToolResult>((resolve) => {
        markStarted();
        if (ctx.signal.aborted) resolve(result);
        ctx.signal.addEventListener('abort', () => resolve(result), { once: true });
      }),
  });
  return { tool, started };
}

/**
 * The default fake tool set: `look` (read), `edit` (edit, editable), `exec` (shell-like),
 * `poke` (other, validating), `broken` (returns a tool error), `crash` (throws).
 */
export function fakeTools(runs: RunLog): AnyTool[] {
  return [
    fakeTool({ name: 'look', kind: 'read' }, runs),
    fakeTool({ name: 'edit', kind: 'edit', editable: true }, runs),
    fakeTool({ name: 'exec', kind: 'execute', shell: true }, runs),
    fakeTool({ name: 'poke', kind: 'other', validating: true }, runs),
    fakeTool(
      {
        name: 'broken',
        kind: 'read',
        run: async () => ({ isError: true, error: { message: 'disk on fire', type: 'tool_failed' }, llmContent: 'partial output' }),
      },
      runs,
    ),
    fakeTool(
      {
        name: 'crash',
        kind: 'read',
        run: async () => {
          throw new Error('boom');
        },
      },
      runs,
    ),
  ];
}

// ---- models -------------------------------------------------------------------------

export const fcall = (name: string, args: Record<string, unknown> = {}) => ({ functionCall: { name, args } });
export const say = (...texts: string[]) => ({ chunks: texts.map((text) => [{ text }]) });

/** A script for the fake tools: each entry answers prompts starting with its keyword. */
export const FAKE_SCRIPT: ModelScript = {
  model: 'fake-model',
  scripts: [
    { when: '^look', steps: [{ chunks: [[fcall('look', { path: 'a' })]] }, say('Looked.')] },
    {
      when: '^edit and exec',
      steps: [{ chunks: [[fcall('edit', { path: 'a', content: 'A' }), fcall('exec', { command: 'echo hi' })]] }, say('Both done.')],
    },
    { when: '^edit', steps: [{ chunks: [[fcall('edit', { path: 'a', content: 'A' })]] }, say('Edited.')] },
    {
      when: '^two edits',
      steps: [{ chunks: [[fcall('edit', { path: 'a', content: 'A' }), fcall('edit', { path: 'b', content: 'B' })]] }, say('Both done.')],
    },
    { when: '^exec', steps: [{ chunks: [[fcall('exec', { command: 'echo hi' })]] }, say('Ran it.')] },
    { when: '^hang', steps: [{ chunks: [[fcall('hang', {})]] }, say('Hung.')] },
    {
      when: '^think',
      steps: [{ chunks: [[{ text: '**Planning** the answer', thought: true }], [{ text: 'Hel' }], [{ text: 'lo' }]] }],
    },
    { steps: [{ echo: true }] },
  ],
};

/** A model whose every call is `answer(request, call number)`; calls are counted. */
export class FnModel implements ModelClient {
  readonly model = 'fn-model';
  calls = 0;
  readonly requests: ModelRequest[] = [];

  constructor(private readonly answer: (request: ModelRequest, n: number, signal: AbortSignal) => AsyncIterable<ModelChunk>) {}

  generate(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelChunk> {
    this.requests.push(structuredClone(request));
    return this.answer(request, ++this.calls, signal);
  }
}

/** A gate a fake model or tool waits on; `open()` lets everything through. */
export function gate(): { wait: (signal?: AbortSignal) => Promise<void>; open: () => void } {
  let open!: () => void;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return {
    open,
    wait: (signal) =>
      new Promise<void>((resolve, reject) => {
        void opened.then(resolve);
        signal?.addEventListener('abort', () => reject(Object.assign(new Error('aborted'), { name: 'AbortError' })), { once: true });
      }),
  };
}

// ---- the core -----------------------------------------------------------------------

export interface CoreOptions {
  /** The store this core writes to (default: a new MemoryTaskStore, closed at teardown). */
  store?: MemoryTaskStore;
  /** What the loop reads through (default: `store`); a faulty wrapper goes here. */
  loopStore?: TaskStore;
  tools?: AnyTool[];
  /** Tools added to the default fake ones. */
  extraTools?: AnyTool[];
  model?: ModelClient;
  script?: ModelScript;
  /** Replaces the toolbox the loop and cache resolve tools through. */
  toolbox?: Toolbox;
  instanceId?: string;
  leaseMs?: number;
  approvalTimeoutMs?: number;
  maxModelSteps?: number;
  modelAttempts?: number;
  /** What the write queue and the tasks count in (default: nothing). */
  metrics?: Metrics;
}

export interface Core {
  store: MemoryTaskStore;
  schema: ReturnType<typeof loadDevtoolSchema>;
  encoder: RfcEncoder;
  encoders: Encoders;
  hub: EventHub;
  writes: WriteQueue;
  logger: ReturnType<typeof recordingLogger>;
  runs: TaskRuns;
  toolbox: Toolbox;
  loop: TurnLoop;
  cache: TaskCache;
  model: ModelClient;
  /** Runs of the default fake tools. */
  toolRuns: RunLog;
  workspace: string;
  instanceId: string;
  leaseMs: number;
  /** What TaskCache gives the LiveTasks it creates (failed writes fail the task). */
  deps: LiveTaskDeps;
}

/** The test tools' commands are judged as if sandboxed (app.ts says so only where bubblewrap runs). */
const CONF = { shellConfined: true } as const;

/** Wires the agent core as app.ts does; everything is stopped at teardown (detached runs drained first). */
export async function makeCore(t: Teardown, opts: CoreOptions = {}): Promise<Core> {
  const store = opts.store ?? new MemoryTaskStore();
  const logger = recordingLogger();
  const schema = loadDevtoolSchema();
  const encoder = new RfcEncoder(schema);
  const encoders: Encoders = { rfc: encoder, legacy: new LegacyEncoder() };
  const toolRuns: RunLog = [];
  const workspace = realpathSync(mkdtempSync(path.join(tmpdir(), 'devtool-core-')));
  const toolbox =
    opts.toolbox ??
    new Toolbox({ builtin: opts.tools ?? [...fakeTools(toolRuns), ...(opts.extraTools ?? [])], defaultCwd: workspace, logger });
  const hub = new EventHub(store);
  await hub.start();
  const writes = new WriteQueue(store, logger, opts.metrics);
  const runs = new TaskRuns(logger);
  const model = opts.model ?? new ScriptedModelClient(opts.script ?? FAKE_SCRIPT);
  const instanceId = opts.instanceId ?? `instance-${randomUUID().slice(0, 6)}`;
  const leaseMs = opts.leaseMs ?? 30_000;
  const loop = new TurnLoop({
    model,
    toolbox,
    store: opts.loopStore ?? store,
    runs,
    systemInstruction: 'test',
    logger,
    retryBaseDelayMs: 1,
    approvalTimeoutMs: opts.approvalTimeoutMs,
    maxModelSteps: opts.maxModelSteps,
    modelAttempts: opts.modelAttempts,
  });
  // What the cache and the tasks made outside it share.
  const common = { store, writes, hub, encoders, model: model.model, logger, instanceId, leaseMs, metrics: opts.metrics };
  const cache = new TaskCache({ ...common, toolbox, runs, ...CONF });
  const deps: LiveTaskDeps = { ...common, onWriteFailed: (task, err) => runs.fail(task, 'saving its events', err) };
  t.teardown(async () => {
    await runs.drain();
    await hub.stop();
    await toolbox.close();
    if (!opts.store) await store.close();
    rmSync(workspace, { recursive: true, force: true });
  });
  return {
    store,
    schema,
    encoder,
    encoders,
    hub,
    writes,
    logger,
    runs,
    toolbox,
    loop,
    cache,
    model,
    toolRuns,
    workspace,
    instanceId,
    leaseMs,
    deps,
  };
}

export interface NewTaskOptions {
  text?: string;
  settings?: ContextSettings;
  trusted?: string[];
  /** Task metadata (e.g. a slash command's). */
  metadata?: Record<string, unknown>;
  /** An existing context to put the task in. */
  contextId?: string;
  /** Create through the TaskCache (kept in its memory) instead of a bare LiveTask. */
  viaCache?: boolean;
}

/**
 * Creates a context (unless given) and a task in the store, and its LiveTask as TaskCache.create
 * does; publishes the snapshot and `working`, as MessageRouter.createTask does.
 */
export async function startTask(core: Core, opts: NewTaskOptions = {}): Promise<LiveTask> {
  const contextId = opts.contextId ?? randomUUID();
  await core.store.createContext({ id: contextId, workspace: core.workspace, settings: opts.settings ?? {} });
  for (const grant of opts.trusted ?? []) await core.store.addTrust(contextId, grant);
  const stored = await core.store.loadContext(contextId);
  if (!stored) throw new Error('context not stored');
  const context: ContextState = {
    id: stored.id,
    workspace: stored.workspace,
    history: stored.history,
    trustedTools: new Set(stored.trustedTools),
    settings: stored.settings,
    tools: await core.toolbox.forContext(stored),
    confined: true, // as TaskCache.contextOf with shellConfined
  };
  const taskId = randomUUID();
  const message = { ...userMessage(contextId, [textPart(opts.text ?? 'hello')]), taskId };
  const snapshot: Task = newTask(taskId, contextId, message);
  if (opts.metadata) snapshot.metadata = opts.metadata;
  await core.store.createTask(snapshot);
  await core.store.leaseTasks([taskId], core.instanceId, new Date(Date.now() + core.leaseMs));
  const live = opts.viaCache ? core.cache.create(snapshot, context) : new LiveTask(snapshot, context, core.deps);
  live.publishSnapshot();
  live.publish({ type: 'state', state: 'working' });
  return live;
}

/** Starts the model on the task's first message and waits until every detached run settled and every write is committed. */
export async function runTurn(core: Core, task: LiveTask, text?: string): Promise<void> {
  core.loop.startTurn(task, [{ text: text ?? firstText(task) }]);
  await settled(core, task);
}

/** Waits for the detached runs, then for the task's writes. */
export async function settled(core: Core, task: LiveTask): Promise<void> {
  await core.runs.drain();
  await task.flush();
}

function firstText(task: LiveTask): string {
  const c = task.task.history[0]?.parts[0]?.content;
  return c?.$case === 'text' ? c.value : '';
}

export const SLASH = (command: string) => ({ [DEVTOOL_EXTENSION_URI]: { slash_command: command } });

// ---- messages -----------------------------------------------------------------------

/** A v1.0 user message to `task` with text and/or data parts. */
export function answer(task: LiveTask, ...parts: Array<string | JsonObject>) {
  const message = userMessage(
    task.task.contextId,
    parts.map((p) => (typeof p === 'string' ? textPart(p) : dataPart(p))),
  );
  return { ...message, taskId: task.id };
}

// ---- the event log ------------------------------------------------------------------

/** One committed event, decoded for assertions. */
export interface LogEvent {
  seq: number;
  final: boolean;
  /** `task` for a Task snapshot, else the DevelopmentToolEvent kind. */
  kind: string;
  /** The task state the event carries (v0.3 spelling). */
  state: string;
  /** The ToolCall of a TOOL_CALL_UPDATE (proto JSON). */
  call?: any;
  thought?: any;
  text: string;
  /** The DevelopmentToolEvent error, if any. */
  error?: string;
}

export function decode(ev: StoredEvent): LogEvent {
  const p = ev.response.payload;
  if (p?.$case === 'task') return { seq: ev.seq, final: ev.final, kind: 'task', state: stateName(p.value.status?.state), text: '' };
  if (p?.$case !== 'statusUpdate') return { seq: ev.seq, final: ev.final, kind: String(p?.$case), state: '', text: '' };
  const u = p.value;
  const meta = u.metadata?.[DEVTOOL_EXTENSION_URI] as { kind?: string; error?: string } | undefined;
  const parts = u.status?.message?.parts ?? [];
  const data = parts.find((x) => x.content?.$case === 'data')?.content;
  const text = parts.map((x) => (x.content?.$case === 'text' ? x.content.value : '')).join('');
  const value = data?.$case === 'data' ? data.value : undefined;
  const out: LogEvent = { seq: ev.seq, final: ev.final, kind: meta?.kind ?? '', state: stateName(u.status?.state), text };
  if (value && 'tool_call_id' in value) out.call = value;
  else if (value) out.thought = value;
  if (meta?.error !== undefined) out.error = meta.error;
  return out;
}

/** The task's committed event log, decoded. */
export async function logOf(store: TaskStore, taskId: string, afterSeq = 0): Promise<LogEvent[]> {
  return (await store.eventsAfter(taskId, afterSeq)).map(decode);
}

/** A compact view of events: the ToolCall status (with its tool) or the task state, `!` marking final events. */
export function shape(events: LogEvent[]): string[] {
  return events.map((e) => {
    if (e.kind === 'task') return 'task';
    if (e.call) return `${e.call.tool_name}:${e.call.status}`;
    if (e.kind === 'TEXT_CONTENT') return `text:${e.text}`;
    if (e.kind === 'THOUGHT') return 'thought';
    return `${e.state}${e.final ? '!' : ''}`;
  });
}

/** The audit decisions of a task, in order: [decision, tool name or call id]. */
export async function auditOf(store: TaskStore, taskId: string): Promise<AuditRecord[]> {
  return store.listAudit({ taskId });
}

/** The stored task's state (v0.3 spelling). */
export async function storedState(store: TaskStore, taskId: string): Promise<string> {
  return stateName((await store.loadTask(taskId))?.task.status?.state);
}

/**
 * Polls `check` until it returns something other than undefined/false; throws after `ms`.
 * Each round yields to the event loop (a short timer), so detached work can go on.
 */
export async function until<T>(what: string, check: () => T | undefined | false | Promise<T | undefined | false>, ms = 5_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

// ---- SSE through app.inject, read as it arrives ------------------------------------

let nextRpcId = 1;

/** An SSE answer read event by event (app.inject with payloadAsStream: it resolves once the first event is written). */
export interface OpenStream {
  status: number;
  contentType: string;
  /** The JSON body when the answer is not a stream. */
  json?: any;
  /** The next SSE event, or undefined once the stream ended. */
  next(): Promise<SseEvent | undefined>;
  /** Every remaining event, until the stream ends. */
  rest(): Promise<SseEvent[]>;
}

export async function openStream(
  app: FastifyInstance,
  method: string,
  params: unknown,
  headers: Record<string, string> = {},
): Promise<OpenStream> {
  const res = await app.inject({
    method: 'POST',
    url: '/',
    headers: { host: '127.0.0.1', 'content-type': 'application/json', ...headers },
    payload: JSON.stringify({ jsonrpc: '2.0', id: nextRpcId++, method, params }),
    payloadAsStream: true,
  });
  const contentType = String(res.headers['content-type'] ?? '');
  const iterator = res.stream()[Symbol.asyncIterator]();
  if (!contentType.startsWith('text/event-stream')) {
    let raw = '';
    for (let r = await iterator.next(); !r.done; r = await iterator.next()) raw += String(r.value);
    return { status: res.statusCode, contentType, json: JSON.parse(raw), next: async () => undefined, rest: async () => [] };
  }
  let buffer = '';
  const ready: SseEvent[] = [];
  let ended = false;
  const next = async (): Promise<SseEvent | undefined> => {
    while (ready.length === 0 && !ended) {
      const r = await iterator.next();
      if (r.done) {
        ended = true;
        ready.push(...parseSse(buffer));
        buffer = '';
        break;
      }
      buffer += String(r.value);
      const cut = buffer.lastIndexOf('\n\n');
      if (cut >= 0) {
        ready.push(...parseSse(buffer.slice(0, cut + 2)));
        buffer = buffer.slice(cut + 2);
      }
    }
    return ready.shift();
  };
  const rest = async () => {
    const all: SseEvent[] = [];
    for (let ev = await next(); ev !== undefined; ev = await next()) all.push(ev);
    return all;
  };
  return { status: res.statusCode, contentType, next, rest };
}

/**
 * The test script's model (TEST_SCRIPT by default), except that a prompt starting with `hold`
 * streams `holding` and then waits until `release()` (or its task is aborted): a task that
 * stays `working` for as long as a test needs.
 */
export class HoldingModel implements ModelClient {
  readonly model: string;
  /** How many model calls are waiting now. */
  held = 0;
  private gate = gate();

  constructor(private readonly inner: ModelClient) {
    this.model = inner.model;
  }

  release(): void {
    this.gate.open();
    this.gate = gate();
  }

  async *generate(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelChunk> {
    const last = [...request.contents].reverse().find((c) => c.role === 'user' && c.parts.some((p) => typeof p.text === 'string'));
    if (!last?.parts.some((p) => p.text?.startsWith('hold'))) {
      yield* this.inner.generate(request, signal);
      return;
    }
    yield { parts: [{ text: 'holding' }] };
    const wait = this.gate.wait(signal);
    this.held++;
    try {
      await wait;
    } finally {
      this.held--;
    }
    yield { parts: [{ text: ' released' }] };
  }
}

/** A call row as a dead instance left it: running, its lease lapsed a second ago. */
export function lapsedCall(taskId: string, over: Partial<StoredCall> = {}): StoredCall {
  const id = `tc_${randomUUID()}`;
  return {
    id,
    taskId,
    turn: 0,
    position: 0,
    toolName: 'look',
    modelCallId: 'm-0',
    args: {},
    snapshot: { id, toolName: 'look', status: 'EXECUTING', input: {} },
    phase: 'executing',
    proposedAt: new Date(Date.now() - 5_000),
    leaseOwner: 'dead',
    leaseUntil: new Date(Date.now() - 1_000),
    ...over,
  };
}
