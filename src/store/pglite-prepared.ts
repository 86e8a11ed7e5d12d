/**
 * Statements with parameters as named prepared statements, for the PGlite worker
 * (src/store/pglite-worker.ts). PGlite's `query()` makes six engine calls per statement (Parse,
 * Describe, Bind, Describe, Execute, Sync), parsing the text every time; here a statement is
 * parsed once per SQL text (Close of evicted ones + Parse + Describe + Sync: one call) and then
 * runs as Bind + Describe + Execute + Sync in one call. `query()` also merges the caller's
 * parsers (drizzle's date/time ones) into PGlite's whole table on every statement; the merged
 * table is kept per caller's set.
 *
 * What `query()` does is kept: the server infers the parameter types (no OIDs are sent) and each
 * value goes through PGlite's serializer for the inferred type; rows, fields and affectedRows come
 * from PGlite's own result parser; an error is PGlite's DatabaseError carrying `query`, `params`
 * and `queryOptions`. Sync ends every call, so after an error outside a transaction the
 * connection is usable, and inside one the transaction is left aborted, as with `query()`.
 *
 * The cache is an LRU by SQL text. A statement whose result columns changed under it (0A000,
 * "cached plan must not change result type") is prepared again and rerun once outside a
 * transaction; inside one the error has already aborted the transaction, so it is thrown (and
 * the next use prepares again). Only DDL changes result columns, and DDL reaches this database
 * through the worker as statements without parameters: `sawUnprepared` drops the whole cache
 * when one looks like DDL, so this process's own migrations never meet the error.
 */
import { Buffer } from 'node:buffer';
import { messages, parse, protocol } from '@electric-sql/pglite';
import type { ParserOptions, PGlite, QueryOptions, Results } from '@electric-sql/pglite';

const { serialize } = protocol;

/** A statement prepared under `name`, with the parameter types the server inferred. */
interface Prepared {
  name: string;
  paramTypes: number[];
}

/** Words that start a statement able to change a prepared statement's result columns. */
const DDL = /\b(alter|create|drop)\s/i;

export class PreparedStatements {
  /** By SQL text; Map order is use order (the first entry is the least recently used). */
  private readonly cache = new Map<string, Prepared>();
  private readonly toClose: string[] = [];
  /** PGlite's parsers with a caller's own over them, per caller's set (PGlite merges them per statement). */
  private readonly parsers = new WeakMap<ParserOptions, PGlite['parsers']>();
  private nextName = 1;

  constructor(
    private readonly pg: PGlite,
    private readonly size: number,
  ) {}

  /**
   * Runs one statement. `inTx`: the caller's PGlite transaction is open (it holds the
   * transaction lock); otherwise the statement waits for any open transaction, as `query()`.
   */
  query<T>(sql: string, params: unknown[], options: QueryOptions, inTx: boolean): Promise<Results<T>> {
    const run = () => this.pg.runExclusive(() => this.run<T>(sql, params, options, inTx));
    return inTx ? run() : this.pg._runExclusiveTransaction(run);
  }

  /** A statement that ran unprepared: after DDL, every cached plan may be stale. */
  sawUnprepared(sql: string): void {
    if (!DDL.test(sql)) return;
    for (const { name } of this.cache.values()) this.toClose.push(name);
    this.cache.clear();
  }

  private async run<T>(sql: string, params: unknown[], options: QueryOptions, inTx: boolean, again = false): Promise<Results<T>> {
    try {
      const statement = await this.prepare(sql);
      const values = params.map((param, i) => this.serialize(param, statement.paramTypes[i], options));
      const bound = [serialize.bind({ statement: statement.name, values }), serialize.describe({ type: 'P' }), serialize.execute({})];
      const replies = await this.pg.execProtocolStream(Buffer.concat([...bound, serialize.sync()]), { syncToFs: !inTx });
      return parse.parseResults(replies, this.parsersFor(options), { rowMode: options.rowMode })[0] as Results<T>;
    } catch (e) {
      if (!(e instanceof messages.DatabaseError)) throw e;
      if (e.code === '0A000' && e.routine === 'RevalidateCachedQuery' && this.cache.has(sql)) {
        this.toClose.push(this.cache.get(sql)!.name);
        this.cache.delete(sql);
        if (!inTx && !again) return this.run<T>(sql, params, options, inTx, true);
      }
      throw Object.assign(e, { query: sql, params, queryOptions: options });
    }
  }

  /** The cached statement for `sql` (now the most recently used), or a new one. */
  private async prepare(sql: string): Promise<Prepared> {
    const cached = this.cache.get(sql);
    if (cached) {
      this.cache.delete(sql);
      this.cache.set(sql, cached);
      return cached;
    }
    while (this.cache.size >= this.size) {
      const [oldest, { name }] = this.cache.entries().next().value as [string, Prepared];
      this.cache.delete(oldest);
      this.toClose.push(name);
    }
    // Close comes first: it runs even if the Parse fails (a missing statement is no error).
    const closes = this.toClose.splice(0).map((name) => serialize.close({ type: 'S', name }));
    const name = `a2a_${this.nextName++}`;
    const parsed = [serialize.parse({ name, text: sql }), serialize.describe({ type: 'S', name }), serialize.sync()];
    const replies = await this.pg.execProtocolStream(Buffer.concat([...closes, ...parsed]), { syncToFs: false });
    const statement = { name, paramTypes: parse.parseDescribeStatementResults(replies) };
    this.cache.set(sql, statement);
    return statement;
  }

  private parsersFor({ parsers }: QueryOptions): PGlite['parsers'] {
    if (!parsers) return this.pg.parsers;
    let merged = this.parsers.get(parsers);
    if (!merged) this.parsers.set(parsers, (merged = { ...this.pg.parsers, ...parsers }));
    return merged;
  }

  /** As `query()` does: null stays null, else the type's serializer, else toString(). */
  private serialize(param: unknown, oid: number | undefined, options: QueryOptions): string | null {
    if (param === null || param === undefined) return null;
    const serializer = oid === undefined ? undefined : (options.serializers?.[oid] ?? this.pg.serializers[oid]);
    // eslint-disable-next-line @typescript-eslint/no-base-to-string -- whatever toString() gives, as query() sends it
    return serializer ? serializer(param) : String(param);
  }
}
