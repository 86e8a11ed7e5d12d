/**
 * Follows tasks' event logs for streams. Events come from the store (the log is the
 * database), announced either by this process right after it committed them (the fast
 * path: no read back) or by a store notification from any process (LISTEN/NOTIFY).
 * A follower never sees a gap or a duplicate: it yields seq N+1 after N, reading the store
 * when what it was handed does not continue its cursor.
 */
import type { StoredEvent, TaskStore } from '../task-store.js';

interface Watcher {
  taskId: string;
  /** Events handed over in order, not yet yielded. */
  buffer: StoredEvent[];
  /** Something newer exists than the buffer holds: read the store. */
  stale: boolean;
  wake?: () => void;
}

/** Told of committed events: `event` of every one this process learns of, `final` of pauses and ends notified by the store. */
export interface HubListener {
  event?(taskId: string, seq: number): void;
  final?(taskId: string, seq: number): void;
}

/** Waits before re-reading a log whose read failed. */
const READ_RETRY_MS = [50, 250, 1000];

export class EventHub {
  private readonly watchers = new Map<string, Set<Watcher>>();
  private readonly listeners: HubListener[] = [];
  private unsubscribe?: () => Promise<void>;
  private stopped = false;

  /**
   * @param recheckMs how long a follower waits for a notification before it re-reads the log
   *   anyway (notifications are lost while a LISTEN connection reconnects).
   */
  constructor(
    private readonly store: TaskStore,
    private readonly recheckMs = 5_000,
  ) {}

  /** Starts listening to store notifications. */
  async start(): Promise<void> {
    this.unsubscribe = await this.store.subscribe((taskId, seq, final) => this.notified(taskId, seq, final));
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
    for (const w of this.watchers.get(taskId) ?? []) {
      w.buffer.push(ev);
      w.wake?.();
    }
  }

  private notified(taskId: string, seq: number, final: boolean): void {
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
        return await this.store.eventsAfter(taskId, cursor);
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
    const w: Watcher = { taskId, buffer: [], stale: true };
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
          next = w.buffer.splice(0);
        } else if (w.stale || w.buffer.length > 0) {
          w.stale = false;
          next = await this.read(taskId, cursor);
        }
        for (const ev of next) {
          if (ev.seq !== cursor + 1) {
            w.stale = true; // a gap in what was handed over: read the store next round
            break;
          }
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
