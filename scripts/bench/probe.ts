/**
 * Preloaded into the server by the bench (`node --import tsx --import scripts/bench/probe.ts
 * src/main.ts`), never by the server itself. It subscribes to the phase channel (which turns
 * the server's hooks on, src/protocol/probe.ts), counts the database's wire traffic — PGlite:
 * every request to its worker thread (PgliteThread, src/store/pglite-thread.ts; a preload does
 * not run in a worker, so the engine itself is not seen), or every call into its engine when it
 * runs on this thread (PGlite.prototype.execProtocolRawSync); PostgreSQL: the bytes
 * of every socket to DATABASE_URL's port — and answers `{ probe: 'snapshot' }` on the IPC
 * channel with the cumulative totals.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import net from 'node:net';
import { performance } from 'node:perf_hooks';
import { PGlite } from '@electric-sql/pglite';
import { PHASE_CHANNEL } from '../../src/protocol/probe.js';
import { PgliteThread } from '../../src/store/pglite-thread.js';
import type { PhaseSample } from '../../src/protocol/probe.js';
import { PhaseTally } from './phase-tally.js';
import { countEngineCall, countThreadRequest, SocketCounter } from './wire-count.js';
import type { ThreadRequest } from './wire-count.js';

const tally = new PhaseTally();
diagnosticsChannel.subscribe(PHASE_CHANNEL, (m) => {
  const { phase, ms, detail } = m as PhaseSample;
  tally.add(phase, ms, detail);
});

type EngineCall = (this: PGlite, bytes: Uint8Array) => Uint8Array;
const engine = PGlite.prototype as unknown as { execProtocolRawSync: EngineCall };
const rawSync = engine.execProtocolRawSync;
engine.execProtocolRawSync = function (this: PGlite, bytes: Uint8Array): Uint8Array {
  const t0 = performance.now();
  try {
    return rawSync.call(this, bytes);
  } finally {
    countEngineCall(tally.wire, bytes, performance.now() - t0);
  }
};

// Each request to the worker, counted as countThreadRequest says (per thread: its prepared texts).
type Request = (this: PgliteThread, body: ThreadRequest) => Promise<unknown>;
const thread = PgliteThread.prototype as unknown as { request: Request };
const request = thread.request;
const prepared = new WeakMap<PgliteThread, Set<string>>();
thread.request = function (this: PgliteThread, body: ThreadRequest): Promise<unknown> {
  let texts = prepared.get(this);
  if (!texts) prepared.set(this, (texts = new Set()));
  countThreadRequest(tally.wire, body, texts);
  return request.call(this, body);
};

const dbUrl = process.env.DATABASE_URL;
const dbPort = dbUrl ? Number(new URL(dbUrl).port || 5432) : undefined;
if (dbPort !== undefined) {
  type Connect = (this: net.Socket, ...args: unknown[]) => net.Socket;
  const proto = net.Socket.prototype as unknown as { connect: Connect };
  const connect = proto.connect;
  proto.connect = function (this: net.Socket, ...args: unknown[]): net.Socket {
    const first = args[0];
    const port = typeof first === 'object' && first !== null ? (first as { port?: unknown }).port : first;
    const socket = connect.apply(this, args);
    // After connect(): it resets an own `write` property (net.js restores Socket.prototype.write).
    if (Number(port) === dbPort) watch(this);
    return socket;
  };
}

function watch(socket: net.Socket): void {
  const counter = new SocketCounter(tally.wire);
  const write = socket.write.bind(socket) as (...a: unknown[]) => boolean;
  socket.write = (chunk: unknown, ...rest: unknown[]) => {
    if (chunk instanceof Uint8Array) counter.written(chunk);
    else if (typeof chunk === 'string') counter.written(Buffer.from(chunk));
    return write(chunk, ...rest);
  };
  socket.on('data', (chunk: Buffer) => counter.read(chunk));
}

process.on('message', (m) => {
  if ((m as { probe?: string } | null)?.probe === 'snapshot') process.send?.({ probe: 'snapshot', data: tally.snapshot() });
});
process.channel?.unref(); // the IPC channel must not keep the server alive
