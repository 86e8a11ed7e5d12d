/**
 * Counts what crosses the PostgreSQL wire protocol (v3), for the bench's probe. Frontend
 * messages (client → server) are `type(1) length(4) body`, after one untyped startup message
 * on a socket. A statement is an Execute (`E`, extended protocol) or a Query (`Q`, simple
 * protocol: BEGIN/COMMIT); a Parse (`P`) is a statement text sent for planning; each Sync
 * (`S`) and Query is answered by one ReadyForQuery (`Z`). A round trip starts when the client
 * sends while nothing it sent before is unanswered (pipelined statements share one).
 */

/**
 * Splits a byte stream into messages, calling `onType` with each one's type byte (0 for the
 * untyped first message, when there is one); keeps partial frames for the next chunk.
 */
export class MessageSplitter {
  private pending: Buffer = Buffer.alloc(0);

  constructor(
    private readonly onType: (type: number) => void,
    /** The first message has no type byte (a socket's StartupMessage). */
    private untypedFirst = false,
  ) {}

  push(chunk: Uint8Array): void {
    let buf =
      this.pending.length === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([this.pending, chunk]);
    for (;;) {
      if (this.untypedFirst) {
        if (buf.length < 4) break;
        const len = buf.readInt32BE(0);
        if (buf.length < len) break;
        buf = buf.subarray(len);
        this.untypedFirst = false;
        this.onType(0);
        continue;
      }
      if (buf.length < 5) break;
      const len = buf.readInt32BE(1);
      if (buf.length < 1 + len) break;
      this.onType(buf[0]);
      buf = buf.subarray(1 + len);
    }
    this.pending = Buffer.from(buf); // a copy: the caller may reuse its buffer
  }
}

const E = 0x45;
const Q = 0x51;
const P = 0x50;
const S = 0x53;
const Z = 0x5a;

/** Totals of one store's wire traffic (cumulative; the bench subtracts two snapshots). */
export interface WireTotals {
  statements: number;
  parses: number;
  roundTrips: number;
  /** PGlite only: ms spent inside the WASM postgres (on the server's main thread). */
  engineMs: number;
}

export function emptyWire(): WireTotals {
  return { statements: 0, parses: 0, roundTrips: 0, engineMs: 0 };
}

/** One PostgreSQL connection: feed it what the client wrote and what it read. */
export class SocketCounter {
  private unanswered = 0;
  private sentNow = false;
  private readonly out: MessageSplitter;
  private readonly in: MessageSplitter;

  constructor(private readonly totals: WireTotals) {
    this.out = new MessageSplitter((type) => {
      this.sentNow = true;
      if (type === E || type === Q) totals.statements++;
      if (type === P) totals.parses++;
      // The startup is answered by a ReadyForQuery too (after authentication; a password
      // exchange in between counts as part of the startup's round trip).
      if (type === S || type === Q || type === 0) this.unanswered++;
    }, true);
    this.in = new MessageSplitter((type) => {
      if (type === Z && this.unanswered > 0) this.unanswered--;
    });
  }

  written(chunk: Uint8Array): void {
    const idle = this.unanswered === 0;
    this.sentNow = false;
    this.out.push(chunk);
    if (idle && this.sentNow) this.totals.roundTrips++;
  }

  read(chunk: Uint8Array): void {
    this.in.push(chunk);
  }
}

/**
 * One call into PGlite's engine (execProtocolRawSync: whole messages, synchronous): one
 * round trip; its statements counted like a socket's. A first byte 0 is the startup message.
 */
export function countEngineCall(totals: WireTotals, bytes: Uint8Array, ms: number): void {
  totals.roundTrips++;
  totals.engineMs += ms;
  if (bytes.length === 0 || bytes[0] === 0) return;
  new MessageSplitter((type) => {
    if (type === E || type === Q) totals.statements++;
    if (type === P) totals.parses++;
  }).push(bytes);
}

/** What the probe sees of a request to the PGlite worker (src/store/pglite-protocol.ts). */
export interface ThreadRequest {
  op: string;
  sql?: string;
  params?: unknown[];
}

/**
 * Counts one request to the PGlite worker: one round trip; a query, an exec, BEGIN and
 * COMMIT/ROLLBACK one statement each. A query without parameters is parsed anew (PGlite's
 * `query()` sends an unnamed Parse); one with parameters only the first time its text is seen
 * (`prepared`: the texts the worker keeps prepared, src/store/pglite-prepared.ts, whose LRU of
 * 300 the store's statements do not fill, and whose drop after DDL happens before any is cached).
 */
export function countThreadRequest(totals: WireTotals, req: ThreadRequest, prepared: Set<string>): void {
  totals.roundTrips++;
  if (['query', 'exec', 'begin', 'end'].includes(req.op)) totals.statements++;
  if (req.op !== 'query') return;
  const text = req.sql ?? '';
  if (req.params?.length && prepared.has(text)) return;
  if (req.params?.length) prepared.add(text);
  totals.parses++;
}
