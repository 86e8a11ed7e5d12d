/**
 * The worker thread that owns the embedded PGlite: PostgreSQL in WASM is CPU-bound and
 * synchronous inside each call, so it runs here and the server's event loop only posts
 * statements and receives rows (src/store/pglite-thread.ts is the other end).
 *
 * A statement with parameters runs as a prepared statement kept per SQL text
 * (src/store/pglite-prepared.ts); the others go through PGlite's `query`/`exec`.
 *
 * Requests are `{ id, op, ... }`; every request gets exactly one `{ id, ok, result | error }`.
 * A transaction is a `begin` whose reply carries a transaction id; statements naming it run
 * inside PGlite's own transaction (which holds PGlite's transaction lock, so statements outside
 * it wait, as in-process), and an `end` commits or rolls it back. Notifications on a channel
 * listened to are posted as `{ notify, payload }`.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { PGlite, types } from '@electric-sql/pglite';
import type { ParserOptions, PGliteOptions, QueryOptions, Transaction } from '@electric-sql/pglite';
import type { WorkerReply, WorkerRequest, WorkerStart } from './pglite-protocol.js';
import { PreparedStatements } from './pglite-prepared.js';

/** Prepared statements kept (by SQL text): the store's statements number well under this. */
const STATEMENT_CACHE = 300;

/** Date, time and interval types stay the text PostgreSQL sent, as drizzle's PGlite driver wants. */
const keepText = (value: string) => value;
const DRIZZLE_PARSERS: ParserOptions = Object.fromEntries(
  [types.TIMESTAMP, types.TIMESTAMPTZ, types.INTERVAL, types.DATE, 1231, 1115, 1185, 1187, 1182].map((oid) => [oid, keepText]),
);

/** Plain fields of an error (a DatabaseError's code, detail, constraint…): what crosses the thread boundary. */
function plainError(e: unknown): Record<string, unknown> {
  if (!(e instanceof Error)) return { message: String(e) };
  const out: Record<string, unknown> = { message: e.message, name: e.name };
  for (const [k, v] of Object.entries(e)) {
    if (v === undefined || v === null || ['string', 'number', 'boolean'].includes(typeof v)) out[k] = v;
  }
  return out;
}

class Owner {
  private readonly txs = new Map<number, { tx: Transaction; end: (commit: boolean) => void }>();
  private nextTx = 1;
  private readonly listening = new Map<string, () => Promise<void>>();

  constructor(
    private readonly pg: PGlite,
    private readonly port: MessagePort,
    private readonly prepared: PreparedStatements | undefined,
  ) {}

  private client(txId: number | undefined): Pick<Transaction, 'query' | 'exec'> {
    if (txId === undefined) return this.pg;
    const open = this.txs.get(txId);
    if (!open) throw new Error(`transaction ${txId} is not open`);
    return open.tx;
  }

  /** Starts a transaction; resolves with its id once BEGIN ran. The transaction ends on `end`. */
  private begin(): Promise<number> {
    return new Promise((resolveBegin, rejectBegin) => {
      const id = this.nextTx++;
      const done = this.pg.transaction(
        (tx) =>
          new Promise<void>((resolve, reject) => {
            this.txs.set(id, { tx, end: (commit) => (commit ? resolve() : reject(new RolledBack())) });
            resolveBegin(id);
          }),
      );
      this.ends.set(id, done);
      done.catch(rejectBegin); // only matters before BEGIN ran; later failures reach `end`
    });
  }

  private readonly ends = new Map<number, Promise<void>>();

  private async end(txId: number, commit: boolean): Promise<void> {
    const open = this.txs.get(txId);
    const done = this.ends.get(txId);
    if (!open || !done) throw new Error(`transaction ${txId} is not open`);
    this.txs.delete(txId);
    this.ends.delete(txId);
    open.end(commit);
    try {
      await done;
    } catch (e) {
      if (!(e instanceof RolledBack)) throw e;
    }
  }

  private async listen(channel: string): Promise<void> {
    if (this.listening.has(channel)) return;
    const stop = await this.pg.listen(channel, (payload) => this.port.postMessage({ notify: channel, payload } satisfies WorkerReply));
    this.listening.set(channel, stop);
  }

  private async unlisten(channel: string): Promise<void> {
    const stop = this.listening.get(channel);
    this.listening.delete(channel);
    await stop?.();
  }

  private query(req: Extract<WorkerRequest, { op: 'query' }>): Promise<unknown> {
    const client = this.client(req.tx);
    const options: QueryOptions = { rowMode: req.rowMode, ...(req.drizzleParsers ? { parsers: DRIZZLE_PARSERS } : {}) };
    if (this.prepared && req.params?.length) return this.prepared.query(req.sql, req.params, options, req.tx !== undefined);
    this.prepared?.sawUnprepared(req.sql);
    return client.query(req.sql, req.params, options);
  }

  async handle(req: WorkerRequest): Promise<unknown> {
    switch (req.op) {
      case 'query':
        return this.query(req);
      case 'exec':
        this.prepared?.sawUnprepared(req.sql);
        return this.client(req.tx).exec(req.sql);
      case 'begin':
        return this.begin();
      case 'end':
        return this.end(req.tx, req.commit);
      case 'listen':
        return this.listen(req.channel);
      case 'unlisten':
        return this.unlisten(req.channel);
      case 'close':
        await this.pg.close();
        return undefined;
    }
  }
}

class RolledBack extends Error {}

async function main(port: MessagePort, start: WorkerStart): Promise<void> {
  const options: PGliteOptions = { ...(start.initialMemory ? { initialMemory: start.initialMemory } : {}), startParams: start.startParams };
  const pg = start.dataDir === undefined ? new PGlite(options) : new PGlite(start.dataDir, options);
  try {
    await pg.waitReady;
  } catch (e) {
    port.postMessage({ id: 0, ok: false, error: plainError(e) } satisfies WorkerReply);
    return;
  }
  const cacheSize = start.statementCache ?? STATEMENT_CACHE;
  const owner = new Owner(pg, port, cacheSize > 0 ? new PreparedStatements(pg, cacheSize) : undefined);
  port.on('message', (req: WorkerRequest) => {
    owner.handle(req).then(
      (result) => port.postMessage({ id: req.id, ok: true, result } satisfies WorkerReply),
      (e: unknown) => port.postMessage({ id: req.id, ok: false, error: plainError(e) } satisfies WorkerReply),
    );
  });
  port.postMessage({ id: 0, ok: true, result: undefined } satisfies WorkerReply);
}

if (parentPort) void main(parentPort, workerData as WorkerStart);
