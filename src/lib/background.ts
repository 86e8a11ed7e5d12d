/**
 * Work that runs detached from whoever started it (a timer tick, a model step after a
 * request returned, a connection closing) still has an owner: a Background. Nothing floats:
 * every run is tracked until it settles, an error that escapes it goes to the owner's
 * handler (which logs it, or fails the task it belonged to) instead of becoming an
 * unhandled rejection that would stop the process, and `drain()` waits for what is running.
 */
export type BackgroundErrorHandler = (err: unknown, what: string) => void;

export class Background {
  private readonly running = new Set<Promise<void>>();

  constructor(private readonly onError: BackgroundErrorHandler) {}

  /** Starts `work` now and returns at once. `what` names it in the error handler's report. */
  run(what: string, work: () => Promise<unknown>): void {
    const settled = this.settle(what, work);
    this.running.add(settled);
    void settled.finally(() => this.running.delete(settled));
  }

  /** Runs `work` and resolves when it is over; an error goes to the handler, never to the caller. */
  async settle(what: string, work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (err) {
      try {
        this.onError(err, what);
      } catch {
        // The handler itself failed (e.g. a logger that throws): nothing more can be done here.
      }
    }
  }

  /** How many runs have not settled yet. */
  get size(): number {
    return this.running.size;
  }

  /**
   * Resolves once every run (including runs started meanwhile) has settled, or after `timeoutMs`
   * (when given) with the runs still going; true when all settled.
   */
  async drain(timeoutMs?: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<false>((resolve) => {
      if (timeoutMs !== undefined) timer = setTimeout(() => resolve(false), timeoutMs);
    });
    const all = (async () => {
      while (this.running.size > 0) await Promise.allSettled([...this.running]);
      return true as const;
    })();
    try {
      return await Promise.race([all, late]);
    } finally {
      clearTimeout(timer);
    }
  }
}
