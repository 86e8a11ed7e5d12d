/** Matches walked paths against a compiled glob in the search worker, within a time budget per call. */
import type { ToolError } from '../tool.js';
import type { CompiledGlob } from './glob-pattern.js';
import type { RegexWorker } from './regex-worker.js';

/** Default time budget for matching one call's paths (an ordinary glob needs a few ms per 10,000 paths). */
export const DEFAULT_MATCH_BUDGET_MS = 5_000;

/** Paths sent to the worker at once. */
const BATCH = 4_096;

/**
 * Filters paths through one leased worker. The budget covers all of a call's matching:
 * each request may take what is left of it, so however the paths are batched, a call
 * holds its worker for at most the budget before it fails with `search_timeout`.
 */
export class PathFilter {
  private spentMs = 0;
  /** Set when matching failed (timeout or worker error); cancellation leaves it unset. */
  failure?: ToolError;

  constructor(
    private readonly worker: RegexWorker,
    private readonly glob: CompiledGlob,
    private readonly argName: string,
    private readonly budgetMs: number,
    private readonly signal: AbortSignal,
  ) {}

  /** The entries whose `rel` matches, in order; undefined when matching stopped (see `failure` and the signal). */
  async filter<E extends { rel: string }>(entries: E[]): Promise<E[] | undefined> {
    const out: E[] = [];
    for (let start = 0; start < entries.length; start += BATCH) {
      const batch = entries.slice(start, start + BATCH);
      const started = performance.now();
      const found = await this.worker.matchPaths(
        this.glob,
        batch.map((e) => e.rel),
        Math.max(1, this.budgetMs - this.spentMs),
        this.signal,
      );
      this.spentMs += performance.now() - started;
      if (!found.ok) {
        if (found.reason !== 'cancelled') this.failure = this.describe(found.reason, found.message);
        return undefined;
      }
      for (const i of found.hits) out.push(batch[i] as E);
    }
    return out;
  }

  /**
   * Like {@link filter}, over a stream of entries, in batches of `batchSize` (only one batch
   * and the matches are held, however large the walk). Check `failure` after the loop.
   */
  async *stream<E extends { rel: string }>(entries: AsyncIterable<E> | Iterable<E>, batchSize = 1_024): AsyncGenerator<E> {
    let pending: E[] = [];
    for await (const entry of entries) {
      pending.push(entry);
      if (pending.length < batchSize) continue;
      const matched = await this.filter(pending);
      if (matched === undefined) return;
      pending = [];
      yield* matched;
    }
    const matched = await this.filter(pending);
    if (matched !== undefined) yield* matched;
  }

  private describe(reason: 'timeout' | 'error', message: string): ToolError {
    const pattern = JSON.stringify(this.glob.glob.length > 80 ? `${this.glob.glob.slice(0, 60)}…` : this.glob.glob);
    if (reason === 'error') return { type: 'invalid_argument', message: `${this.argName} ${pattern} could not be matched: ${message}` };
    return {
      type: 'search_timeout',
      message:
        `Search stopped: ${message} (${this.argName} ${pattern} backtracks heavily on some names). ` +
        'Use a simpler pattern: fewer * and ? within one path segment, fewer {a,b} alternatives.',
    };
  }
}
