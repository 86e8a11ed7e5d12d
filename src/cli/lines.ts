/** The lines of an input stream, one `next()` at a time: prompts and answers share one source. */
import { createInterface } from 'node:readline';
import type { Interface } from 'node:readline';

export class LineSource {
  private readonly queue: string[] = [];
  private readonly waiters: Array<(line: string | undefined) => void> = [];
  private ended = false;
  private readonly rl: Interface;

  constructor(input: NodeJS.ReadableStream) {
    this.rl = createInterface({ input, crlfDelay: Infinity, terminal: false });
    this.rl.on('line', (line) => {
      const waiter = this.waiters.shift();
      if (waiter) waiter(line);
      else this.queue.push(line);
    });
    this.rl.on('close', () => {
      this.ended = true;
      for (const waiter of this.waiters.splice(0)) waiter(undefined);
    });
  }

  /** The next line, or undefined once the input ended. */
  next(): Promise<string | undefined> {
    const line = this.queue.shift();
    if (line !== undefined) return Promise.resolve(line);
    if (this.ended) return Promise.resolve(undefined);
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Stops reading (pending `next()` calls get undefined). */
  close(): void {
    this.rl.close();
  }

  /** Stops reading while another program owns the terminal ($EDITOR), and starts again. */
  pause(): void {
    this.rl.pause();
  }

  resume(): void {
    this.rl.resume();
  }
}
