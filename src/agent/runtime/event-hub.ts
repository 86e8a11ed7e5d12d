/**
 * Follows tasks' event logs for streams. Events come from the store (the log is the
 * database), announced either by this process right after it committed them (the fast
 * path: no read back) or by a store notification from any process (LISTEN/NOTIFY).
 * A follower never sees a gap or a duplicate: it yields seq N+1 after N, reading the store
 * when what it was handed does not continue its cursor. The only seqs it skips are events
 * superseded by a later one it does yield: keyed events compacted out of the stored log
 * (TaskStore), and a keyed event whose successor is already handed over when it is taken.
 *
 * What is handed over is held per follower only up to a byte budget: a follower that falls
 * behind (its client stopped reading) drops what it holds and reads the store when it goes on,
 * where the log is compacted; so a stalled stream costs at most the budget.
 */
import type { StoredEvent, TaskStore } from '../task-store.js';

interface Watcher {
  taskId: string;
  /** Events handed over in order, not yet yielded. */
  buffer: StoredEvent[];
  /** Something newer exists than the buffer holds: read the store. */
  stale: boolean;
  /** Approximate size of the buffer's events (see approxBytes). */
  bytes: number;
  wake?: () => void;
}

/** Told of committed events: `event` of every one this process learns of, `final` of pauses and ends notified by the store. */
export interface HubListener {
  event?(taskId: string, seq: number): void;
  final?(taskId: string, seq: number): void;
}

/** Waits before re-reading a log whose read failed. */
const READ_RETRY_MS = [50, 250, 1000];

/** Events read from the store at a time: a long log is replayed page by page, not loaded whole. */
const READ_PAGE = 32;

/** Default budget of events held for one follower (STREAM_BUFFER_BYTES). */
export const DEFAULT_FOLLOWER_BUFFER_BYTES = 4 * 1024 * 1024;

/**
 * The size of a value as JSON, roughly (strings by length, a few bytes per key and value); no
 * copy is made. Every event a stream carries is sized once (a 10,000-delta answer: 10,000
 * times), so the walk allocates nothing (no Object.entries pairs for the collector).
 */
export function approxBytes(value: unknown, depth = 0): number {
  if (typeof value === 'string') return value.length + 2;
  if (value === null || typeof value !== 'object' || depth > 64) return 8;
  let n = 2;
  if (Array.isArray(value)) for (let i = 0; i < value.length; i++) n += approxBytes(value[i], depth + 1) + 1;
  else
    for (const k in value) if (Object.hasOwn(value, k)) n += k.length + 4 + approxBytes((value as Record<string, unknown>)[k], depth + 1);
  return n;
}

/** Drops keyed events that a later event of `events` with the same key supersedes. */
function coalesce(events: StoredEvent[]): StoredEvent[] {
  if (!events.some((ev) => ev.key !== undefined)) return events;
  const seen = new Set<string>();
  return events
    .reverse()
    .filter((ev) => ev.key === undefined || (!seen.has(ev.key) && (seen.add(ev.key), true)))
    .reverse();
}

/**
 * What this process knows of a task's log: the newest seq it learned of (committed here, or
 * notified from another process), and the tail of it committed here, when that tail is
 * gapless up to `known` (a stream that starts after a commit of this process takes it from
 * here instead of reading the log back).
 */
interface Tail {
  known: number;
  /** Gapless, ending at `known` when not empty. */
  recent: StoredEvent[];
  /** approxBytes of each of `recent` (measured once, when it was committed). */
  sizes: number[];
  bytes: number;
}

/**
 * Tasks whose tail is kept (the least recently touched is dropped first), and the events and
 * bytes of one task's tail: at most 16 MB in all. A tail only has to bridge a request's own
 * commits and the start of its stream (a new task's snapshot and `working`, a few KB).
 */
const TAILS_KEPT = 1024;
const TAIL_EVENTS = 8;
const TAIL_BYTES = 16 * 1024;

function forgetRecent(tail: Tail): void {
  tail.recent = [];
  tail.sizes = [];
  tail.bytes = 0;
}

export class EventHub {
  private readonly watchers = new Map<string, Set<Watcher>>();
  private readonly tails = new Map<string, Tail>();
  private readonly listeners: HubListener[] = [];
  private unsubscribe?: () => Promise<void>;
  private stopped = false;

  /** Followers that dropped their buffer for the byte budget so far (for tests and the log). */
  readonly stats = { overflows: 0 };

  /**
   * @param recheckMs how long a follower waits for a notification before it re-reads the log
   *   anyway (notifications are lost while a LISTEN connection reconnects).
   * @param bufferBytes the most a follower holds of what was handed over before it drops it
   *   and reads the store instead.
   */
  constructor(
    private readonly store: TaskStore,
    private readonly recheckMs = 5_000,
    private readonly bufferBytes = DEFAULT_FOLLOWER_BUFFER_BYTES,
  ) {}

  /** Starts listening to store notifications. */
  async start(): Promise<void> {
    this.unsubscribe = await this.store.subscribe((taskId, seq, final, local) => this.notified(taskId, seq, final, local === true));
  }

  /** Ends every follower (the app is closing) and stops listening. */
  async stop(): Promise<void> {
    this.stopped = true;
    await this.unsubscribe?.();
    for (const set of this.watchers.values()) for (const w of set) w.wake?.();
  }

  /** Adds a listener (push delivery looks for work on every event; the task cache watches for cancels elsewhere). */
  addListener(listener: HubListener): void {
    this.listeners.push(listener);
  }

  /** This process committed `ev`: hand it to local followers without a read. */
  published(taskId: string, ev: StoredEvent): void {
    for (const l of this.listeners) l.event?.(taskId, ev.seq);
    const size = approxBytes(ev.response);
    this.remember(taskId, ev, size);
    const set = this.watchers.get(taskId);
    if (set === undefined) return;
    for (const w of set) {
      this.hold(w, ev, size);
      w.wake?.();
    }
  }

  /** The task whose tail was touched last (tailOf): touching it again changes nothing. */
  private touched?: { taskId: string; tail: Tail };

  /** The task's tail, touched (kept longest). */
  private tailOf(taskId: string): Tail {
    // A streamed answer touches its task's tail once per event: no Map delete and insert for each.
    const last = this.touched;
    if (last !== undefined && last.taskId === taskId && this.tails.get(taskId) === last.tail) return last.tail;
    const tail = this.tails.get(taskId) ?? { known: 0, recent: [], sizes: [], bytes: 0 };
    this.tails.delete(taskId);
    this.tails.set(taskId, tail);
    this.touched = { taskId, tail };
    if (this.tails.size > TAILS_KEPT) this.tails.delete(this.tails.keys().next().value as string);
    return tail;
  }

  /** Adds an event committed here to its task's tail (see Tail). */
  private remember(taskId: string, ev: StoredEvent, size: number): void {
    const tail = this.tailOf(taskId);
    if (ev.seq <= tail.known) return; // older than what is known: the tail stays as it is
    if (ev.seq !== tail.known + 1) forgetRecent(tail);
    tail.known = ev.seq;
    tail.recent.push(ev);
    tail.sizes.push(size);
    tail.bytes += size;
    while (tail.recent.length > TAIL_EVENTS || (tail.bytes > TAIL_BYTES && tail.recent.length > 0)) {
      tail.recent.shift();
      tail.bytes -= tail.sizes.shift()!;
    }
  }

  /**
   * The task's events after `afterSeq` as this process knows them, when it knows all of them up
   * to the newest it heard of; undefined when only the log can tell.
   */
  private knownAfter(taskId: string, afterSeq: number): StoredEvent[] | undefined {
    const tail = this.tails.get(taskId);
    if (tail === undefined || afterSeq > tail.known) return undefined;
    if (afterSeq === tail.known) return [];
    const first = tail.recent[0];
    if (first === undefined || first.seq > afterSeq + 1) return undefined;
    return tail.recent.filter((ev) => ev.seq > afterSeq);
  }

  /** Adds `ev` to what `w` holds — or, past the budget, drops it all: `w` reads the (compacted) log instead. */
  private hold(w: Watcher, ev: StoredEvent, size: number): void {
    if (w.bytes + size <= this.bufferBytes) {
      w.buffer.push(ev);
      w.bytes += size;
      return;
    }
    this.stats.overflows += 1;
    w.buffer = [];
    w.bytes = 0;
    w.stale = true;
  }

  /**
   * A store notification. One of this process's own commits (`local`) changes nothing: its
   * events are handed over by published() — every event this process commits goes through it.
   * Another process's commit makes the followers of its task read the log.
   */
  private notified(taskId: string, seq: number, final: boolean, local: boolean): void {
    if (local) return;
    const tail = this.tailOf(taskId);
    if (seq > tail.known) {
      tail.known = seq;
      forgetRecent(tail);
    }
    for (const l of this.listeners) {
      l.event?.(taskId, seq);
      if (final) l.final?.(taskId, seq);
    }
    for (const w of this.watchers.get(taskId) ?? []) {
      w.stale = true;
      w.wake?.();
    }
  }

  /**
   * The log after `cursor`. A read the store refuses is tried again a few times (a database
   * blip must not end a client's stream); after that the error ends the stream.
   */
  private async read(taskId: string, cursor: number): Promise<StoredEvent[]> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.store.eventsAfter(taskId, cursor, READ_PAGE);
      } catch (err) {
        if (attempt >= READ_RETRY_MS.length) throw err;
        await new Promise((resolve) => setTimeout(resolve, READ_RETRY_MS[attempt]));
      }
    }
  }

  /**
   * Yields every event after `afterSeq`, waiting for new ones, and returns after the first
   * final event (or at once after `signal` aborts). With `untilFinal: false` it returns when
   * the log has nothing more right now (a replay).
   */
  async *follow(
    taskId: string,
    afterSeq: number,
    opts: { signal?: AbortSignal; untilFinal?: boolean } = {},
  ): AsyncGenerator<StoredEvent, void, undefined> {
    // Started right after this process's own commits (a new task, an answer): what it knows
    // of the log is handed over at once; the log is read only when something is not known here.
    const known = this.knownAfter(taskId, afterSeq);
    const w: Watcher = { taskId, buffer: known ?? [], stale: known === undefined, bytes: 0 };
    let set = this.watchers.get(taskId);
    if (!set) this.watchers.set(taskId, (set = new Set()));
    set.add(w);
    const onAbort = () => w.wake?.();
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    let cursor = afterSeq;
    try {
      for (;;) {
        if (opts.signal?.aborted || this.stopped) return;
        let next: StoredEvent[] = [];
        w.buffer = w.buffer.filter((ev) => ev.seq > cursor);
        w.buffer.sort((a, b) => a.seq - b.seq);
        if (w.buffer[0]?.seq === cursor + 1) {
          // What was handed over continues the cursor: its gapless prefix (a gap after it is
          // read from the store next round), less keyed events superseded within it.
          let n = 1;
          while (n < w.buffer.length && w.buffer[n]!.seq === w.buffer[n - 1]!.seq + 1) n++;
          next = coalesce(w.buffer.splice(0, n));
          if (w.buffer.length === 0) w.bytes = 0;
        } else if (w.stale || w.buffer.length > 0) {
          // The store's log itself: a gap in it is a compacted event, not a missing one.
          w.stale = false;
          next = await this.read(taskId, cursor);
          if (next.length === READ_PAGE) w.stale = true; // more may follow: the next page next round
        }
        for (const ev of next) {
          cursor = ev.seq;
          yield ev;
          if (ev.final && opts.untilFinal !== false) return;
        }
        if (next.length === 0) {
          if (opts.untilFinal === false) return;
          await new Promise<void>((resolve) => {
            // A notification can be lost (the LISTEN connection dropped and reconnected): re-read
            // the log now and then rather than wait forever.
            const timer = setTimeout(() => {
              w.stale = true;
              resolve();
            }, this.recheckMs);
            timer.unref();
            w.wake = () => {
              clearTimeout(timer);
              resolve();
            };
            if (w.stale || w.buffer.length > 0 || opts.signal?.aborted || this.stopped) w.wake();
          });
          w.wake = undefined;
        }
      }
    } finally {
      opts.signal?.removeEventListener('abort', onAbort);
      set.delete(w);
      if (set.size === 0) this.watchers.delete(taskId);
    }
  }
}
