/** The messages between the server's thread and the PGlite worker (src/store/pglite-worker.ts). */

/** What the worker is started with (its workerData). */
export interface WorkerStart {
  /** The data directory, or undefined for an in-memory database. */
  dataDir?: string;
  /** Bytes of WASM memory to start with (PGlite's `initialMemory`); undefined = PGlite's default. */
  initialMemory?: number;
  /** PostgreSQL start parameters (PGlite's `startParams`), when not PGlite's defaults. */
  startParams?: string[];
  /** Prepared statements to keep (src/store/pglite-prepared.ts); 0: every statement through PGlite's `query()`. */
  statementCache?: number;
}

export type WorkerRequest =
  | {
      id: number;
      op: 'query';
      sql: string;
      params: unknown[] | undefined;
      rowMode: 'array' | 'object' | undefined;
      /** Keep date/time/interval values as text (drizzle's PGlite driver asks for that on every query). */
      drizzleParsers: boolean;
      tx?: number;
    }
  | { id: number; op: 'exec'; sql: string; tx?: number }
  | { id: number; op: 'begin' }
  | { id: number; op: 'end'; tx: number; commit: boolean }
  | { id: number; op: 'listen' | 'unlisten'; channel: string }
  | { id: number; op: 'close' };

/** Distributes the Omit over the union, so each request kind keeps its own fields. */
export type RequestBody = WorkerRequest extends infer R ? (R extends WorkerRequest ? Omit<R, 'id'> : never) : never;

/** A reply to request `id` (0: the start-up), or a notification. */
export type WorkerReply =
  | { id: number; ok: true; result: unknown }
  | { id: number; ok: false; error: Record<string, unknown> }
  | { notify: string; payload: string };
