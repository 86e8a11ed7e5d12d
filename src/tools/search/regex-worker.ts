/**
 * Runs the model's regular expressions and compiled globs off the main thread. A pattern
 * such as `^(a+)+$`, or the RegExp picomatch makes of `{?,??}*{?,??}*…`, backtracks for
 * seconds or minutes on one short line or file name; on the main thread that would freeze
 * every stream and task of the server. Here the worker is terminated when a request takes
 * longer than its time limit or the call is cancelled, and the search fails with the reason.
 *
 * Workers are pooled: starting one costs tens of milliseconds, more than a whole ordinary
 * glob. A search leases a worker for its duration and hands it back when done; a worker
 * that timed out, was cancelled or failed is terminated instead. Idle workers are unref'd
 * (they never keep the process alive).
 */
import { Worker } from 'node:worker_threads';
import type { CompiledGlob } from './glob-pattern.js';

/** Plain JavaScript, evaluated in the worker (no loader or build step needed). */
const WORKER_SOURCE = `
const { parentPort } = require('node:worker_threads');
let cached;
function regex(source, flags) {
  if (!cached || cached.source !== source || cached.flags !== flags) cached = { source, flags, re: new RegExp(source, flags) };
  return cached.re;
}
// Compiled globs by source and flags: a walk sends one request per directory with the same set.
const globCache = new Map();
function globRegex(source, flags) {
  const key = flags + '/' + source;
  let re = globCache.get(key);
  if (re === undefined) {
    if (globCache.size >= 1024) globCache.clear();
    re = new RegExp(source, flags);
    globCache.set(key, re);
  }
  return re;
}
function matchLines({ source, flags, text, max }) {
  const re = regex(source, flags);
  const lines = text.split('\\n');
  const hits = [];
  for (let i = 0; i < lines.length && hits.length < max; i++) {
    if (re.test(lines[i].replace(/\\r$/, ''))) hits.push(i);
  }
  return hits;
}
// picomatch's own test: '' never matches, the pattern itself always does.
function globMatches(g, re, p) {
  if (p === '') return false;
  if (p === g.glob) return true;
  let subject = p;
  if (g.basename) {
    const segs = p.split('/');
    subject = segs[segs.length - 1] === '' ? segs[segs.length - 2] : segs[segs.length - 1];
  }
  return re.test(subject);
}
// A path is a hit when any glob matches it; a dirOnly glob only matches paths flagged as directories.
function matchPaths({ globs, paths, dirs }) {
  const res = globs.map((g) => globRegex(g.source, g.flags));
  const hits = [];
  for (let i = 0; i < paths.length; i++) {
    for (let j = 0; j < globs.length; j++) {
      if (globs[j].dirOnly && !(dirs && dirs[i])) continue;
      if (globMatches(globs[j], res[j], paths[i])) { hits.push(i); break; }
    }
  }
  return hits;
}
parentPort.on('message', (m) => {
  try {
    parentPort.postMessage({ id: m.id, hits: m.op === 'paths' ? matchPaths(m) : matchLines(m) });
  } catch (err) {
    parentPort.postMessage({ id: m.id, error: String(err && err.message || err) });
  }
});
`;

/** Idle workers kept for the next search; more are terminated when handed back. */
const MAX_IDLE = 2;
const idle: Worker[] = [];

function spawn(): Worker {
  const worker = new Worker(WORKER_SOURCE, { eval: true, resourceLimits: { maxOldGenerationSizeMb: 256 } });
  // An idle worker has no request listening: without these, its crash would be an unhandled 'error'.
  worker.on('error', () => undefined);
  worker.once('exit', () => {
    const at = idle.indexOf(worker);
    if (at >= 0) idle.splice(at, 1);
  });
  return worker;
}

function acquire(): Worker {
  const worker = idle.pop() ?? spawn();
  worker.ref();
  return worker;
}

function release(worker: Worker): void {
  if (idle.length >= MAX_IDLE) {
    void worker.terminate(); // resolves with the exit code; never rejects
    return;
  }
  worker.unref();
  idle.push(worker);
}

/** Indexes of the matching lines or paths, or why there are none. */
export type WorkerMatch = { ok: true; hits: number[] } | { ok: false; reason: 'timeout' | 'cancelled' | 'error'; message: string };

type Request =
  | { op: 'lines'; source: string; flags: string; text: string; max: number }
  | { op: 'paths'; globs: readonly CompiledGlob[]; paths: string[]; dirs?: boolean[] };

/** One worker leased for one search call; `close()` when done. */
export class RegexWorker {
  private worker?: Worker;
  private next = 0;

  /** Indexes of the lines of `text` that match the regex (at most `max`). */
  matchLines(
    regex: { source: string; flags: string },
    text: string,
    max: number,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<WorkerMatch> {
    const timeout = `the pattern took more than ${timeoutMs} ms on one file (catastrophic backtracking?)`;
    return this.call({ op: 'lines', source: regex.source, flags: regex.flags, text, max }, timeoutMs, timeout, signal);
  }

  /**
   * Indexes of the paths that match any of the globs (picomatch's semantics). `dirs[i]` says
   * whether `paths[i]` is a directory: a glob with `dirOnly` matches directories only.
   */
  matchPaths(
    globs: readonly CompiledGlob[],
    paths: string[],
    timeoutMs: number,
    signal: AbortSignal,
    dirs?: boolean[],
  ): Promise<WorkerMatch> {
    const timeout = `matching the pattern against file paths took more than ${timeoutMs} ms`;
    return this.call({ op: 'paths', globs, paths, ...(dirs ? { dirs } : {}) }, timeoutMs, timeout, signal);
  }

  private call(request: Request, timeoutMs: number, timeoutMessage: string, signal: AbortSignal): Promise<WorkerMatch> {
    const worker = (this.worker ??= acquire());
    const id = ++this.next;
    return new Promise<WorkerMatch>((resolve) => {
      const done = (result: WorkerMatch, kill: boolean) => {
        clearTimeout(timer);
        signal.removeEventListener('abort', onAbort);
        worker.off('message', onMessage);
        worker.off('error', onError);
        if (kill) this.kill();
        resolve(result);
      };
      const onMessage = (m: { id: number; hits?: number[]; error?: string }) => {
        if (m.id !== id) return;
        done(m.error !== undefined ? { ok: false, reason: 'error', message: m.error } : { ok: true, hits: m.hits ?? [] }, false);
      };
      const onError = (err: Error) => done({ ok: false, reason: 'error', message: err.message }, true);
      const onAbort = () => done({ ok: false, reason: 'cancelled', message: 'The search was cancelled' }, true);
      const timer = setTimeout(() => done({ ok: false, reason: 'timeout', message: timeoutMessage }, true), timeoutMs);
      worker.on('message', onMessage);
      worker.on('error', onError);
      signal.addEventListener('abort', onAbort, { once: true });
      if (signal.aborted) return onAbort();
      worker.postMessage({ id, ...request });
    });
  }

  /** Terminates the leased worker (it may be stuck in a match). */
  private kill(): void {
    const w = this.worker;
    this.worker = undefined;
    void w?.terminate(); // resolves with the exit code; never rejects
  }

  /** Hands the worker back to the pool. */
  close(): void {
    const w = this.worker;
    this.worker = undefined;
    if (w) release(w);
  }
}
