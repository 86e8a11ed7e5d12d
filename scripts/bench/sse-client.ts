/**
 * A minimal benchmark client: v0.3 JSON-RPC `message/stream` over Node's `http` with a
 * keep-alive Agent, and a streaming SSE reader that parses `data:` frames as they arrive,
 * timestamps the first and the final one, and stops parsing at the final frame (it still
 * lets the response end, so the socket goes back to the pool).
 *
 * It also checks each stream against RFC Appendix A (event order, ids, `final` only on
 * the last event) and reports deviations as errors, never throws on them.
 */
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { performance } from 'node:perf_hooks';

/** Appendix A step 2+4 and step 7+9, as `kind/state/devtool kind/ToolCall status/final`. */
export const EXPECTED_FIRST = [
  'task/submitted///',
  'status-update/working/STATE_CHANGE//',
  'status-update/working/TOOL_CALL_UPDATE/PENDING/',
  'status-update/input-required/STATE_CHANGE//final',
].join(' | ');
export const EXPECTED_CONFIRM = [
  'status-update/working/TOOL_CALL_UPDATE/EXECUTING/',
  'status-update/working/TOOL_CALL_UPDATE/SUCCEEDED/',
  'status-update/working/TEXT_CONTENT//',
  'status-update/working/TEXT_CONTENT//',
  'status-update/completed/STATE_CHANGE//final',
].join(' | ');

/** A part of a v0.3 message, as far as the bench reads it. */
export interface V03Part {
  kind?: string;
  text?: string;
  data?: { tool_call_id?: string; status?: string };
}

/** One v0.3 JSON-RPC `result` (a Task, a status-update, …), as far as the bench reads it. */
export interface V03Result {
  kind?: string;
  id?: string;
  taskId?: string;
  contextId?: string;
  final?: boolean;
  metadata?: Record<string, unknown>;
  status?: { state?: string; message?: { parts?: V03Part[] } };
}

/** A JSON-RPC answer (or one SSE data frame) as the bench reads it. */
export interface RpcEnvelope {
  result?: V03Result;
  error?: { code?: number; message?: string };
}

/** The DataPart of a result's status message, if any. */
export function dataPartOf(r: V03Result | undefined): V03Part['data'] {
  return r?.status?.message?.parts?.find((p) => p.kind === 'data')?.data;
}

export interface StreamResult {
  status: number;
  /** ms from request start to the first `data:` frame (NaN if none). */
  firstMs: number;
  /** ms from request start to the final frame (NaN if none). */
  finalMs: number;
  /** ms from request start to the response end. */
  endMs: number;
  /** The `result` of each frame, up to and including the final one. */
  results: V03Result[];
  /** Frames received after the final one (should be 0). */
  afterFinal: number;
  /** `data:` frames up to and including the final one (also counted when results are not kept). */
  frames: number;
  /** Bytes of the response body up to and including the final frame's block. */
  bytes: number;
  /** The frames' `id:` values in arrival order (only with `StreamOptions.ids`). */
  ids?: (number | undefined)[];
  error?: string;
}

/** Per-request options of `BenchClient.stream`. */
export interface StreamOptions {
  timeoutMs?: number;
  /** Keep each frame's `result` in `results` (default true). */
  keepResults?: boolean;
  /** Record each data frame's `id:` in `ids`. */
  ids?: boolean;
  /** Sees every data frame as received: its raw SSE block (with the blank line) and its parsed envelope. */
  onFrame?: (raw: string, env: RpcEnvelope) => void;
}

export interface FlowResult {
  ok: boolean;
  /** Request start of the new task → final (`completed`) frame of the confirm stream. */
  flowMs: number;
  firstEventMs: number;
  taskId?: string;
  error?: string;
  /** Signature of the stream that deviated (for the report). */
  detail?: string;
}

/** `kind/state/devtool kind/ToolCall status/final` of one v0.3 result. */
export function signature(r: V03Result | undefined): string {
  // The extension's own entry (a pause's metadata also carries its `inputSchema`).
  const meta = r?.metadata
    ? (Object.values(r.metadata).find((v) => typeof (v as { kind?: unknown } | null)?.kind === 'string') as { kind?: string } | undefined)
    : undefined;
  const data = dataPartOf(r);
  return `${r?.kind}/${r?.status?.state}/${meta?.kind ?? ''}/${data?.status ?? ''}/${r?.final ? 'final' : ''}`;
}

let seq = 0;
const runId = randomUUID().slice(0, 8);
const messageId = () => `bench-${runId}-${++seq}`;

/**
 * The write flow's file slots: flow n writes `bench-<n mod WRITE_SLOTS>.txt` (the model script has
 * an entry per slot, writeCombinedScript). One shared file made concurrent flows collide: an
 * approved edit whose file another flow wrote meanwhile is asked again or refused (the edit
 * guards), which the bench counted as failed flows. More slots than clients keep flows apart.
 */
export const WRITE_SLOTS = 256;
export const writePrompt = (slot: number) => `bench: write the file #${slot}`;
let flows = 0;

export class BenchClient {
  readonly agent: http.Agent;
  private nextId = 1;

  constructor(
    private readonly baseUrl: string,
    maxSockets: number,
    private readonly timeoutMs = 30_000,
  ) {
    this.agent = new http.Agent({ keepAlive: true, maxSockets, maxFreeSockets: maxSockets });
  }

  destroy(): void {
    this.agent.destroy();
  }

  /** Posts one JSON-RPC request and reads the SSE answer (or a JSON error answer). */
  stream(method: string, params: unknown, opts: StreamOptions = {}): Promise<StreamResult> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params });
    const timeoutMs = opts.timeoutMs ?? this.timeoutMs;
    const t0 = performance.now();
    return new Promise((resolve) => {
      const out: StreamResult = {
        status: 0,
        firstMs: Number.NaN,
        finalMs: Number.NaN,
        endMs: Number.NaN,
        results: [],
        afterFinal: 0,
        frames: 0,
        bytes: 0,
        ...(opts.ids ? { ids: [] } : {}),
      };
      let settled = false;
      const done = (error?: string) => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        out.endMs = performance.now() - t0;
        if (error && !out.error) out.error = error;
        resolve(out);
      };
      const req = http.request(this.baseUrl, {
        method: 'POST',
        agent: this.agent,
        headers: { 'content-type': 'application/json', accept: 'text/event-stream', 'content-length': Buffer.byteLength(body) },
      });
      const timer = setTimeout(() => {
        done(`timeout after ${timeoutMs} ms`);
        req.destroy();
      }, timeoutMs);
      req.on('error', (err: NodeJS.ErrnoException) => done(`socket ${err.code ?? err.message}`));
      req.on('response', (res) => {
        out.status = res.statusCode ?? 0;
        res.setEncoding('utf8');
        const isSse = String(res.headers['content-type'] ?? '').startsWith('text/event-stream');
        let buf = '';
        let final = false;
        res.on('data', (chunk: string) => {
          if (!isSse) {
            buf += chunk;
            return;
          }
          if (final) {
            if (chunk.includes('data:')) out.afterFinal++;
            return; // stop reading at the final event
          }
          buf += chunk.includes('\r') ? chunk.replace(/\r\n?/g, '\n') : chunk;
          let cut: number;
          // Blocks are cut at a moving offset (not by re-slicing the buffer per block): a
          // 64 KiB read of a long stream holds ~100 frames.
          let at = 0;
          while (!final && (cut = buf.indexOf('\n\n', at)) >= 0) {
            const block = buf.slice(at, cut);
            at = cut + 2;
            out.bytes += Buffer.byteLength(block) + 2;
            final = this.onBlock(block, out, t0, opts);
          }
          buf = buf.slice(at);
          if (final && buf.includes('data:')) out.afterFinal++;
        });
        res.on('end', () => {
          if (!isSse) {
            done(describeNonStream(out.status, buf));
            return;
          }
          done(final ? undefined : `stream ended without a final event (${out.results.length} events)`);
        });
        res.on('error', (err: NodeJS.ErrnoException) => done(`response ${err.code ?? err.message}`));
      });
      req.end(body);
    });
  }

  /** Handles one SSE block; returns true when it was the final event. */
  private onBlock(block: string, out: StreamResult, t0: number, opts: StreamOptions): boolean {
    const data: string[] = [];
    let event = '';
    let id: number | undefined;
    for (const line of block.split('\n')) {
      if (line.startsWith('data:')) data.push(line.slice(line.charAt(5) === ' ' ? 6 : 5));
      else if (line.startsWith('event:')) event = line.slice(6).trim();
      else if (line.startsWith('id:')) id = Number(line.slice(3).trim());
    }
    if (data.length === 0) return false; // a comment (keep-alive) or an id-only block
    if (Number.isNaN(out.firstMs)) out.firstMs = performance.now() - t0;
    let env: RpcEnvelope | null;
    try {
      env = JSON.parse(data.join('\n')) as RpcEnvelope | null;
    } catch {
      out.error = 'unparsable data frame';
      return false;
    }
    out.frames++;
    out.ids?.push(id);
    opts.onFrame?.(`${block}\n\n`, env ?? {});
    if (event === 'error' || env?.error) {
      out.error = `stream error frame: ${JSON.stringify(env?.error ?? env).slice(0, 200)}`;
      out.finalMs = performance.now() - t0;
      return true;
    }
    if (opts.keepResults !== false) out.results.push(env?.result ?? {}); // a frame without a result fails the order check
    if (env?.result?.final === true) {
      out.finalMs = performance.now() - t0;
      return true;
    }
    return false;
  }

  /**
   * One Appendix A flow: new task → input-required → proceed_once → completed. `capture` sees
   * each data frame's raw SSE block, by stream (the flow ceiling replays them).
   */
  async flow(capture?: (stream: 'first' | 'confirm', raw: string) => void): Promise<FlowResult> {
    const t0 = performance.now();
    const first = await this.stream(
      'message/stream',
      {
        message: {
          kind: 'message',
          role: 'user',
          messageId: messageId(),
          parts: [{ kind: 'text', text: writePrompt(flows++ % WRITE_SLOTS) }],
        },
      },
      { ids: true, ...(capture ? { onFrame: (raw: string) => capture('first', raw) } : {}) },
    );
    const fail = (error: string, detail?: string): FlowResult => ({
      ok: false,
      flowMs: performance.now() - t0,
      firstEventMs: first.firstMs,
      error,
      detail,
    });
    if (first.error) return fail(first.error);
    const sig1 = first.results.map(signature).join(' | ');
    if (sig1 !== EXPECTED_FIRST) return fail('order: first stream', sig1);
    if (first.afterFinal > 0) return fail('events after final: first stream');
    const task = first.results[0];
    const card = dataPartOf(first.results[2]);
    if (!task?.id || !task.contextId || !card?.tool_call_id) return fail('missing ids in first stream');
    if (!first.results.every((r) => (r.kind === 'task' ? r.id : r.taskId) === task.id)) return fail('taskId mismatch: first stream');

    const second = await this.stream(
      'message/stream',
      {
        message: {
          kind: 'message',
          role: 'user',
          messageId: messageId(),
          taskId: task.id,
          contextId: task.contextId,
          parts: [{ kind: 'data', data: { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' } }],
        },
      },
      { ids: true, ...(capture ? { onFrame: (raw: string) => capture('confirm', raw) } : {}) },
    );
    if (second.error) return fail(second.error);
    const sig2 = second.results.map(signature).join(' | ');
    if (sig2 !== EXPECTED_CONFIRM) return fail('order: confirm stream', sig2);
    if (second.afterFinal > 0) return fail('events after final: confirm stream');
    if (!second.results.every((r) => r.taskId === task.id)) return fail('taskId mismatch: confirm stream');
    const ids = second.results.slice(0, 2).map((r) => dataPartOf(r)?.tool_call_id);
    if (ids.some((id) => id !== card.tool_call_id)) return fail('tool_call_id mismatch: confirm stream');
    // SSE ids are the task's event sequence numbers: 1, 2, 3… with no gap across both streams.
    const seqs = [...(first.ids ?? []), ...(second.ids ?? [])];
    if (seqs.some((id, i) => id !== i + 1)) return fail('ids: not 1..n across both streams', seqs.join(','));
    return { ok: true, flowMs: performance.now() - t0 - (second.endMs - second.finalMs), firstEventMs: first.firstMs, taskId: task.id };
  }

  /** A plain JSON-RPC call (e.g. tasks/get); returns the parsed envelope. */
  call(method: string, params: unknown): Promise<RpcEnvelope> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.nextId++, method, params });
    return new Promise((resolve) => {
      const req = http.request(this.baseUrl, {
        method: 'POST',
        agent: this.agent,
        timeout: this.timeoutMs,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      });
      req.on('timeout', () => req.destroy(new Error('timeout')));
      req.on('error', (err) => resolve({ error: { message: err.message } }));
      req.on('response', (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          try {
            resolve(JSON.parse(text) as RpcEnvelope);
          } catch {
            resolve({ error: { message: `unparsable: ${text.slice(0, 200)}` } });
          }
        });
      });
      req.end(body);
    });
  }
}

function describeNonStream(status: number, body: string): string {
  try {
    const env = JSON.parse(body) as RpcEnvelope | null;
    if (env?.error) return `rpc ${env.error.code}: ${String(env.error.message).slice(0, 160)}`;
  } catch {
    /* fall through */
  }
  return `http ${status}, not an event stream: ${body.slice(0, 160)}`;
}
