/**
 * Matches walked paths against compiled globs in the search worker, within a time budget per
 * call. Every pattern a request, a model or a workspace file supplies (glob patterns, include,
 * exclude, `.gitignore` lines) is matched here, never on the event loop.
 */
import type { ToolError } from '../tool.js';
import type { CompiledGlob } from './glob-pattern.js';
import type { RegexWorker } from './regex-worker.js';

/** Default time budget for matching one call's paths (an ordinary glob needs a few ms per 10,000 paths). */
export const DEFAULT_MATCH_BUDGET_MS = 5_000;

/** Paths sent to the worker at once. */
const BATCH = 4_096;

/** The matching time one tool call may spend, shared by all its filters. */
export class MatchBudget {
  spentMs = 0;
  constructor(readonly totalMs: number) {}

  /** What is left, at least 1 ms (a request with no time left times out at once). */
  get leftMs(): number {
    return Math.max(1, this.totalMs - this.spentMs);
  }
}

/**
 * Filters paths through one leased worker against a set of globs (a path matches when any
 * glob does). The budget covers all of a call's matching: each request may take what is left
 * of it, so however the paths are batched, a call holds its worker for at most the budget
 * before it fails with `search_timeout`.
 */
export class PathFilter {
  /** Set when matching failed (timeout or worker error); cancellation leaves it unset. */
  failure?: ToolError;
  private readonly globs: readonly CompiledGlob[];
  private readonly budget: MatchBudget;

  constructor(
    private readonly worker: RegexWorker,
    glob: CompiledGlob | readonly CompiledGlob[],
    private readonly argName: string,
    budget: number | MatchBudget,
    private readonly signal: AbortSignal,
  ) {
    this.globs = Array.isArray(glob) ? glob : [glob as CompiledGlob];
    this.budget = typeof budget === 'number' ? new MatchBudget(budget) : budget;
  }

  /**
   * Which entries match, as a flag per entry; undefined when matching stopped (see `failure`
   * and the signal). An entry with `isDir` true is a directory (for dir-only globs).
   */
  async matches(entries: ReadonlyArray<{ rel: string; isDir?: boolean }>): Promise<boolean[] | undefined> {
    const out: boolean[] = new Array<boolean>(entries.length).fill(false);
    if (this.globs.length === 0) return out;
    for (let start = 0; start < entries.length; start += BATCH) {
      const batch = entries.slice(start, start + BATCH);
      const dirs = batch.some((e) => e.isDir === true) ? batch.map((e) => e.isDir === true) : undefined;
      const started = performance.now();
      const found = await this.worker.matchPaths(
        this.globs,
        batch.map((e) => e.rel),
        this.budget.leftMs,
        this.signal,
        dirs,
      );
      this.budget.spentMs += performance.now() - started;
      if (!found.ok) {
        if (found.reason !== 'cancelled') this.failure = this.describe(found.reason, found.message);
        return undefined;
      }
      for (const i of found.hits) out[start + i] = true;
    }
    return out;
  }

  /** The entries whose `rel` matches, in order; undefined when matching stopped (see `failure` and the signal). */
  async filter<E extends { rel: string }>(entries: E[]): Promise<E[] | undefined> {
    const flags = await this.matches(entries);
    return flags && entries.filter((_, i) => flags[i]);
  }

  /**
   * Like {@link filter}, over a stream of entries, in batches of `batchSize` (only one batch
   * and the matches are held, however large the walk). Check `failure` after the loop.
   * `keep: false` yields the entries that do NOT match (an exclude list); `key` gives the
   * path matched for an entry (default: its `rel`).
   */
  async *stream<E extends { rel: string }>(
    entries: AsyncIterable<E> | Iterable<E>,
    options: { batchSize?: number; keep?: boolean; key?: (entry: E) => string } = {},
  ): AsyncGenerator<E> {
    const { batchSize = 1_024, keep = true, key } = options;
    let pending: E[] = [];
    const flush = async (): Promise<E[] | undefined> => {
      const flags = await this.matches(key ? pending.map((e) => ({ rel: key(e) })) : pending);
      const batch = pending;
      pending = [];
      return flags && batch.filter((_, i) => flags[i] === keep);
    };
    for await (const entry of entries) {
      pending.push(entry);
      if (pending.length < batchSize) continue;
      const passed = await flush();
      if (passed === undefined) return;
      yield* passed;
    }
    const passed = await flush();
    if (passed !== undefined) yield* passed;
  }

  private describe(reason: 'timeout' | 'error', message: string): ToolError {
    const first = this.globs[0]?.glob ?? '';
    const one = JSON.stringify(first.length > 80 ? `${first.slice(0, 60)}…` : first);
    const pattern = this.globs.length === 1 ? `${this.argName} ${one}` : `one of the ${this.argName} patterns`;
    if (reason === 'error') return { type: 'invalid_argument', message: `${pattern} could not be matched: ${message}` };
    return {
      type: 'search_timeout',
      message:
        `Search stopped: ${message} (${pattern} backtracks heavily on some names). ` +
        'Use a simpler pattern: fewer * and ? within one path segment, fewer {a,b} alternatives.',
    };
  }
}
