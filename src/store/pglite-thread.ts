/**
 * The server's end of the PGlite worker (src/store/pglite-worker.ts): an object with the
 * part of PGlite's interface that drizzle's PGlite driver uses (`query`, `exec`,
 * `transaction`), plus `listen` and `close`. Each call is one message to the worker and one
 * reply; the WASM engine never runs on this thread.
 *
 * If the worker dies (an engine abort, a kill), every call waiting on it and every later call
 * fails with an error that says so; nothing waits forever. The worker keeps the process alive
 * only while a call waits for it.
 */
import { Worker } from 'node:worker_threads';
import type { QueryOptions, Results } from '@electric-sql/pglite';
import type { RequestBody, WorkerReply, WorkerStart } from './pglite-protocol.js';

/** The transaction handle `transaction` passes to its callback. */
export interface ThreadTransaction {
  query<T>(sql: string, params?: unknown[], options?: QueryOptions): Promise<Results<T>>;
  exec(sql: string): Promise<Results[]>;
  rollback(): Promise<void>;
  readonly closed: boolean;
}

/** The compiled worker sits next to this module; under tsx (development, tests) it is the .ts file. */
const FROM_SOURCE = import.meta.url.endsWith('.ts');
const WORKER_URL = new URL(FROM_SOURCE ? './pglite-worker.ts' : './pglite-worker.js', import.meta.url);

/**
 * A worker does not inherit the loader hooks `node --import tsx` registered (Node 20), so from
 * source it loads the .ts module through whatever loader it has (a test runner's), and else
 * registers tsx first (the failed attempt is cached, hence the query on the second).
 */
function startWorker(workerData: WorkerStart): Worker {
  if (!FROM_SOURCE) return new Worker(WORKER_URL, { workerData });
  const url = JSON.stringify(WORKER_URL.href);
  const tsx = JSON.stringify(import.meta.resolve('tsx/esm/api'));
  const boot =
    `import(${url}).catch(async (e) => {` +
    ` if (e?.code !== 'ERR_UNKNOWN_FILE_EXTENSION') throw e;` +
    ` (await import(${tsx})).register(); await import(${url} + '?tsx'); })`;
  return new Worker(boot, { eval: true, workerData });
}

/** An error the worker sent back: its message and plain fields (a DatabaseError's code, detail…). */
function revive(fields: Record<string, unknown>): Error {
  const e = new Error(String(fields.message));
  for (const [k, v] of Object.entries(fields)) if (k !== 'message' && k !== 'stack') (e as unknown as Record<string, unknown>)[k] = v;
  return e;
}

export class PgliteThread {
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  private readonly listeners = new Map<string, Set<(payload: string) => void>>();
  private nextId = 1;
  private failure: Error | undefined;
  private closing = false;

  private constructor(
    private readonly worker: Worker,
    private readonly where: string,
  ) {
    worker.on('message', (m: WorkerReply) => this.receive(m));
    worker.on('error', (e) => this.fail(`it failed: ${e.message}`));
    worker.on('exit', (code) => this.fail(this.closing ? 'it was closed' : `its thread exited (code ${code})`));
  }

  /** Starts the worker and waits until PGlite in it is ready (a new data directory is initialised first). */
  static async start(start: WorkerStart): Promise<PgliteThread> {
    const worker = startWorker(start);
    const thread = new PgliteThread(worker, start.dataDir ?? 'in memory');
    try {
      await new Promise((resolve, reject) => thread.pending.set(0, { resolve, reject }));
    } catch (e) {
      await worker.terminate();
      throw e;
    }
    thread.idle();
    return thread;
  }

  /** Runs one statement (with parameters: the extended protocol). */
  query<T>(sql: string, params?: unknown[], options?: QueryOptions, tx?: number): Promise<Results<T>> {
    const drizzleParsers = options?.parsers !== undefined && Object.keys(options.parsers).length > 0;
    return this.request({ op: 'query', sql, params, rowMode: options?.rowMode, drizzleParsers, tx }) as Promise<Results<T>>;
  }

  /** Runs statements without parameters (the simple protocol; several may be separated by `;`). */
  exec(sql: string, tx?: number): Promise<Results[]> {
    return this.request({ op: 'exec', sql, tx }) as Promise<Results[]>;
  }

  /**
   * BEGIN, the callback's statements, COMMIT; ROLLBACK when the callback throws. While it is
   * open, statements outside it wait (PGlite holds its transaction lock in the worker).
   */
  async transaction<T>(fn: (tx: ThreadTransaction) => Promise<T>): Promise<T> {
    const id = (await this.request({ op: 'begin' })) as number;
    let closed = false;
    const open = () => {
      if (closed) throw new Error('Transaction is closed');
    };
    const end = (commit: boolean) => {
      closed = true;
      return this.request({ op: 'end', tx: id, commit });
    };
    const tx: ThreadTransaction = {
      query: async (sql, params, options) => (open(), this.query(sql, params, options, id)),
      exec: async (sql) => (open(), this.exec(sql, id)),
      rollback: async () => (open(), void (await end(false))),
      get closed() {
        return closed;
      },
    };
    let result: T;
    try {
      result = await fn(tx);
    } catch (e) {
      if (!closed) await end(false).catch(() => {});
      throw e;
    }
    if (!closed) await end(true);
    return result;
  }

  /** LISTENs on `channel`; resolves once listening, to a function that stops this callback. */
  async listen(channel: string, cb: (payload: string) => void): Promise<() => Promise<void>> {
    let set = this.listeners.get(channel);
    if (!set) this.listeners.set(channel, (set = new Set()));
    set.add(cb);
    await this.request({ op: 'listen', channel });
    return async () => {
      set.delete(cb);
      if (set.size === 0 && this.listeners.get(channel) === set) {
        this.listeners.delete(channel);
        await this.request({ op: 'unlisten', channel });
      }
    };
  }

  /** Closes PGlite (its data is on disk when this resolves) and ends the thread. */
  async close(): Promise<void> {
    if (this.failure) return;
    try {
      await this.request({ op: 'close' });
    } finally {
      this.closing = true;
      await this.worker.terminate();
    }
  }

  /** Ends the thread at once, as a crash would (tests). */
  async kill(): Promise<void> {
    await this.worker.terminate();
  }

  private request(body: RequestBody): Promise<unknown> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    if (this.pending.size === 0) this.worker.ref();
    return new Promise((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      this.worker.postMessage({ ...body, id });
    });
  }

  private receive(m: WorkerReply): void {
    if ('notify' in m) {
      for (const cb of this.listeners.get(m.notify) ?? []) cb(m.payload);
      return;
    }
    const waiting = this.pending.get(m.id);
    if (!waiting) return;
    this.pending.delete(m.id);
    this.idle();
    if (m.ok) waiting.resolve(m.result);
    else waiting.reject(revive(m.error));
  }

  /** Nothing waits on the worker: it must not keep the process alive. */
  private idle(): void {
    if (this.pending.size === 0) this.worker.unref();
  }

  private fail(why: string): void {
    this.failure ??= new Error(`the embedded database (PGlite, ${this.where}) is not available: ${why}`);
    for (const waiting of this.pending.values()) waiting.reject(this.failure);
    this.pending.clear();
  }
}
