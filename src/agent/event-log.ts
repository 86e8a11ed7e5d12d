import type { StreamResponse } from '@a2a-js/sdk';

/** One event as it was sent, numbered within its task (1, 2, 3… no gaps). */
export interface LoggedEvent {
  seq: number;
  response: StreamResponse;
  /** True for the event that ends a stream: a pause (`input-required`) or a terminal state. */
  final: boolean;
}

/**
 * The per-task, append-only list of sent events. Streams follow it from a position, so a
 * run of the agent never depends on a connection: the run appends, readers catch up.
 */
export class EventLog {
  private readonly events: LoggedEvent[] = [];
  private wake: Array<() => void> = [];

  get lastSeq(): number {
    return this.events.length;
  }

  append(response: StreamResponse, final: boolean): LoggedEvent {
    const ev: LoggedEvent = { seq: this.events.length + 1, response, final };
    this.events.push(ev);
    const wake = this.wake;
    this.wake = [];
    for (const w of wake) w();
    return ev;
  }

  /** Events with seq > afterSeq. */
  after(afterSeq: number): LoggedEvent[] {
    return this.events.slice(Math.max(0, afterSeq));
  }

  /**
   * Yields every event after `afterSeq`, waiting for new ones, and returns after the
   * first final event. Returning early (the consumer stops) leaves the log untouched.
   */
  async *follow(afterSeq: number): AsyncGenerator<LoggedEvent, void, undefined> {
    let next = afterSeq;
    for (;;) {
      while (next < this.events.length) {
        const ev = this.events[next++];
        yield ev;
        if (ev.final) return;
      }
      await new Promise<void>((resolve) => this.wake.push(resolve));
    }
  }
}
