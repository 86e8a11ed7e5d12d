/**
 * Runs the model's regular expression off the main thread. A pattern such as `^(a+)+$`
 * backtracks for minutes on a short line; on the main thread that would freeze every
 * stream and task of the server. Here the worker is terminated when a file takes longer
 * than the time limit or the call is cancelled, and the search fails with the reason.
 */
import { Worker } from 'node:worker_threads';

/** Plain JavaScript, evaluated in the worker (no loader or build step needed). */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
parentPort.on('message', ({ id, source, flags, text, max }) => {
  try {
    const re = new RegExp(source, flags);
    const lines = text.split('\\n');
    const hits = [];
    for (let i = 0; i < lines.length && hits.length < max; i++) {
      if (re.test(lines[i].replace(/\\r$/, ''))) hits.push(i);
    }
    parentPort.postMessage({ id, hits });
  } catch (err) {
    parentPort.postMessage({ id, error: String(err && err.message || err) });
  }
});
`;

export type LineMatch = { ok: true; lines: number[] } | { ok: false; reason: 'timeout' | 'cancelled' | 'error'; message: string };

/** One worker per search call; `close()` when done. */
export class RegexWorker {
  private worker?: Worker;
  private next = 0;

  constructor(
    private readonly source: string,
    private readonly flags: string,
    private readonly timeoutMs: number,
  ) {}

  /** Indexes of the lines of `text` that match (at most `max`). */
  match(text: string, max: number, signal: AbortSignal): Promise<LineMatch> {
    const worker = (this.worker ??= new Worker(WORKER_SOURCE, { eval: true, resourceLimits: { maxOldGenerationSizeMb: 256 } }));
    const id = ++this.next;
    return new Promise<LineMatch>((resolve) => {
      const done = (result: LineMatch, kill: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        worker.off('message', onMessage);
        worker.off('error', onError);
        if (kill) void this.close();
        resolve(result);
      };
      const onMessage = (m: { id: number; hits?: number[]; error?: string }) => {
        if (m.id !== id) return;
        done(m.error !== undefined ? { ok: false, reason: 'error', message: m.error } : { ok: true, lines: m.hits ?? [] }, false);
      };
      const onError = (err: Error) => done({ ok: false, reason: 'error', message: err.message }, true);
      const onAbort = () => done({ ok: false, reason: 'cancelled', message: 'The search was cancelled' }, true);
      const timer = setTimeout(
        () =>
          done(
            {
              ok: false,
              reason: 'timeout',
              message: `the pattern took more than ${this.timeoutMs} ms on one file (catastrophic backtracking?)`,
            },
            true,
          ),
        this.timeoutMs,
      );
      worker.on('message', onMessage);
      worker.on('error', onError);
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) return onAbort();
      worker.postMessage({ id, source: this.source, flags: this.flags, text, max });
    });
  }

  async close(): Promise<void> {
    const w = this.worker;
    this.worker = undefined;
    await w?.terminate();
  }
}
