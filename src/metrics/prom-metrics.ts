/**
 * The Metrics port (lib/metrics.ts) on prom-client, rendered as Prometheus text for GET /metrics.
 *
 * Each app has a registry of its own (never prom-client's global one: tests build many apps in
 * one process, and a metric name may be registered once per registry). The default process and
 * Node metrics are per process by nature, and collectDefaultMetrics starts a GC observer and an
 * event-loop histogram it never stops, so they are collected ONCE per process into a registry of
 * their own and rendered after each app's.
 *
 * Labels take values from closed sets only: task states, call statuses, outcomes, and for tools
 * the names of the built-in tools, every other tool (an MCP server's, named by whoever configured
 * it) being `mcp` and a name that resolved to no tool `unknown`.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { CallEndStatus, ConfirmationOutcome, Metrics, PushOutcome, TakeoverOutcome, TaskEndState } from '../lib/metrics.js';

const METRIC_PREFIX = 'devtool_a2a_';

const TASK_STATES: readonly TaskEndState[] = ['completed', 'failed', 'canceled', 'rejected'];
const CONFIRMATION_OUTCOMES: readonly ConfirmationOutcome[] = ['approved', 'declined', 'expired', 'cancelled'];
const PUSH_OUTCOMES: readonly PushOutcome[] = ['delivered', 'dropped'];
const TAKEOVER_OUTCOMES: readonly TakeoverOutcome[] = ['interrupted', 'paused'];

/** The label of a tool that is not built in (an MCP server's tool), and of a name that resolved to none. */
const MCP_TOOL_LABEL = 'mcp';
const UNKNOWN_TOOL_LABEL = 'unknown';

/** Waiting cards remembered at most (cards answered on another instance are never closed here). */
const WAITING_KEPT = 10_000;

export interface PromMetricsOptions {
  /** The names of the built-in tools: the only tool names that become label values. */
  builtinTools: Iterable<string>;
}

let processRegistry: Registry | undefined;

/** The default process and Node metrics, collected once per process. */
function processMetrics(): Registry {
  if (processRegistry === undefined) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}

/** A counter whose label values from `values` read 0 before their first increment (a dashboard sees the series). */
function counter<L extends string>(registry: Registry, name: string, help: string, label?: L, values: readonly string[] = []): Counter<L> {
  const c = new Counter<L>({ name: METRIC_PREFIX + name, help, labelNames: label ? [label] : [], registers: [registry] });
  if (label) for (const v of values) c.inc({ [label]: v } as Partial<Record<L, string>>, 0);
  return c;
}

const SECONDS_SHORT = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5];
const SECONDS_TOOL = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const SECONDS_HUMAN = [1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600, 14400, 86400];
const BATCH_WRITES = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512];

export class PromMetrics implements Metrics {
  readonly registry = new Registry();
  private readonly builtin: ReadonlySet<string>;
  /** Cards this process showed and has not seen closed, with when (performance.now()). */
  private readonly waiting = new Map<string, number>();

  private readonly tasks = counter(
    this.registry,
    'tasks_ended_total',
    'Tasks that reached a terminal state, by state (committed by this instance).',
    'state',
    TASK_STATES,
  );
  private readonly confirmations = counter(
    this.registry,
    'confirmations_total',
    'Confirmation flows (a card waiting for a person) by how they ended: approved, declined, expired (APPROVAL_TIMEOUT), cancelled (the task ended).',
    'outcome',
    CONFIRMATION_OUTCOMES,
  );
  private readonly calls = new Counter({
    name: `${METRIC_PREFIX}tool_calls_total`,
    help: 'Tool calls by tool and final status. tool: a built-in tool name, "mcp" for any MCP tool, "unknown" for a name that is no tool.',
    labelNames: ['tool', 'status'],
    registers: [this.registry],
  });
  private readonly awaiting: Gauge = new Gauge({
    name: `${METRIC_PREFIX}tool_calls_awaiting_approval`,
    help: 'Cards waiting for a person now, as this instance knows them: PER INSTANCE (cards it showed and has not seen answered); with several instances, a card answered on another stays counted here.',
    registers: [this.registry],
    // Read at scrape time from the one record of waiting cards: nothing to keep in step.
    collect: (): void => this.awaiting.set(this.waiting.size),
  });
  private readonly approvalWait = new Histogram({
    name: `${METRIC_PREFIX}approval_wait_seconds`,
    help: 'Time from a card shown to its answer (or expiry, or cancellation), by outcome.',
    labelNames: ['outcome'],
    buckets: SECONDS_HUMAN,
    registers: [this.registry],
  });
  private readonly toolSeconds = new Histogram({
    name: `${METRIC_PREFIX}tool_run_seconds`,
    help: 'Tool execution time (the run only, not the wait for approval), by tool (as tool_calls_total labels it).',
    labelNames: ['tool'],
    buckets: SECONDS_TOOL,
    registers: [this.registry],
  });
  private readonly commitSeconds = new Histogram({
    name: `${METRIC_PREFIX}store_commit_seconds`,
    help: "Latency of the write queue's group commits (one transaction each).",
    buckets: SECONDS_SHORT,
    registers: [this.registry],
  });
  private readonly commitWrites = new Histogram({
    name: `${METRIC_PREFIX}store_commit_writes`,
    help: 'Writes per group commit (events, call rows, history, grants, audit entries).',
    buckets: BATCH_WRITES,
    registers: [this.registry],
  });
  private readonly sse = new Gauge({
    name: `${METRIC_PREFIX}sse_streams_open`,
    help: 'SSE streams open on this instance.',
    registers: [this.registry],
  });
  private readonly pushes = counter(
    this.registry,
    'push_deliveries_total',
    'Push notification events per config by outcome: delivered, or dropped (refused, or out of attempts).',
    'outcome',
    PUSH_OUTCOMES,
  );
  private readonly pushRetries = counter(
    this.registry,
    'push_retries_total',
    'Push delivery attempts that failed and were scheduled again.',
  );
  private readonly staleCopies = counter(
    this.registry,
    'stale_copy_retries_total',
    "Messages decided once more on a fresh read of their task: this instance's copy in memory was behind the store (another instance had moved the task on).",
  );
  private readonly takeovers = counter(
    this.registry,
    'lease_takeovers_total',
    "Tasks this instance took over after their owner's lease lapsed (on the embedded store: found at boot), by what it did: interrupted (failed) or paused on its cards.",
    'outcome',
    TAKEOVER_OUTCOMES,
  );

  constructor(options: PromMetricsOptions) {
    this.builtin = new Set(options.builtinTools);
    processMetrics();
  }

  private tool(name: string | undefined): string {
    if (name === undefined) return UNKNOWN_TOOL_LABEL;
    return this.builtin.has(name) ? name : MCP_TOOL_LABEL;
  }

  taskEnded(state: TaskEndState): void {
    this.tasks.inc({ state });
  }

  callEnded(tool: string | undefined, status: CallEndStatus): void {
    this.calls.inc({ tool: this.tool(tool), status });
  }

  toolRan(tool: string | undefined, seconds: number): void {
    this.toolSeconds.observe({ tool: this.tool(tool) }, seconds);
  }

  cardShown(callId: string): void {
    this.waiting.set(callId, performance.now());
    if (this.waiting.size > WAITING_KEPT) this.waiting.delete(this.waiting.keys().next().value as string);
  }

  cardClosed(callId: string, outcome: ConfirmationOutcome, proposedAt: Date): void {
    const shown = this.waiting.get(callId);
    this.waiting.delete(callId);
    const seconds = shown !== undefined ? (performance.now() - shown) / 1000 : (Date.now() - proposedAt.getTime()) / 1000;
    this.confirmations.inc({ outcome });
    this.approvalWait.observe({ outcome }, Math.max(0, seconds));
  }

  committed(seconds: number, writes: number): void {
    this.commitSeconds.observe(seconds);
    this.commitWrites.observe(writes);
  }

  sseOpened(): void {
    this.sse.inc();
  }

  sseClosed(): void {
    this.sse.dec();
  }

  pushDelivered(outcome: PushOutcome): void {
    this.pushes.inc({ outcome });
  }

  pushRetried(): void {
    this.pushRetries.inc();
  }

  leaseTakenOver(outcome: TakeoverOutcome): void {
    this.takeovers.inc({ outcome });
  }

  staleCopyRetried(): void {
    this.staleCopies.inc();
  }

  /** The Prometheus text of this app's metrics, then the process's. */
  async render(): Promise<{ contentType: string; body: string }> {
    const [own, shared] = await Promise.all([this.registry.metrics(), processMetrics().metrics()]);
    return { contentType: this.registry.contentType, body: own + shared };
  }
}
