/**
 * What a raw client of the development-tool flow checks across all streams of one task:
 * ToolCalls ride TOOL_CALL_UPDATE events and move only along the RFC's status paths; bad
 * answers are refused as plain JSON-RPC errors before any SSE.
 */
import type t from 'tap';
import { RPC_ERROR_CODE } from '../../src/protocol/errors.js';
import { rpc } from './sse.js';
import type { PostResult } from './sse.js';
import { dataOf, devtool } from './server.js';
import type { TestServer } from './server.js';

export type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const STATUS_PATHS = [
  ['PENDING', 'EXECUTING', 'SUCCEEDED'],
  ['PENDING', 'EXECUTING', 'FAILED'],
  ['PENDING', 'CANCELLED'],
];
const TERMINAL_STATUS = new Set(['SUCCEEDED', 'FAILED', 'CANCELLED']);

/** Every status-update a client saw for one task, across all of its streams. */
export class TaskWatch {
  readonly results: any[] = [];
  taskId = '';
  contextId = '';

  /** Records a stream answer and returns its results (the `result` of each SSE event). */
  take(res: PostResult): any[] {
    if (res.events === undefined) throw new Error(`expected an SSE stream, got ${res.contentType}: ${res.raw}`);
    const results = res.events.map((e) => {
      if (e.data.error) throw new Error(`stream carried an error: ${JSON.stringify(e.data.error)}`);
      return e.data.result;
    });
    for (const r of results) {
      if (r.kind === 'task') {
        this.taskId = r.id;
        this.contextId = r.contextId;
      } else this.results.push(r);
    }
    return results;
  }
}

/**
 * Checks the ToolCall updates of a task: each rides a TOOL_CALL_UPDATE event (and every
 * TOOL_CALL_UPDATE carries a ToolCall), and per tool_call_id the statuses only move
 * PENDING → EXECUTING → SUCCEEDED | FAILED or PENDING → CANCELLED. Repeated PENDING
 * (re-prompt) and repeated EXECUTING (live_content) collapse. With `complete`, every
 * call must have reached a terminal status. Returns the collapsed sequence per id.
 */
export function checkToolCalls(t: Test, watch: TaskWatch, complete = true): Map<string, string[]> {
  const seqs = new Map<string, string[]>();
  const problems: string[] = [];
  for (const r of watch.results) {
    if (r.kind !== 'status-update') problems.push(`unexpected result kind ${r.kind}`);
    if (r.taskId !== watch.taskId) problems.push(`event for task ${r.taskId}, expected ${watch.taskId}`);
    const kind = devtool(r)?.kind;
    const data = dataOf(r);
    const isCall = data !== undefined && 'tool_call_id' in data;
    if (isCall && kind !== 'TOOL_CALL_UPDATE') problems.push(`ToolCall ${data.tool_call_id} ${data.status} sent with kind ${kind}`);
    if (kind === 'TOOL_CALL_UPDATE' && !isCall) problems.push(`TOOL_CALL_UPDATE without a ToolCall: ${JSON.stringify(r.status)}`);
    if (!isCall) continue;
    const seq = seqs.get(data.tool_call_id) ?? [];
    const last = seq.at(-1);
    if (!(last === data.status && (last === 'PENDING' || last === 'EXECUTING'))) seq.push(data.status);
    seqs.set(data.tool_call_id, seq);
    if (data.status !== 'PENDING' && 'confirmation_request' in data) {
      problems.push(`${data.tool_call_id} ${data.status} still carries confirmation_request`);
    }
  }
  for (const [id, seq] of seqs) {
    const ok = STATUS_PATHS.some((p) => seq.length <= p.length && seq.every((s, i) => s === p[i]));
    if (!ok) problems.push(`${id}: illegal status sequence ${seq.join(' → ')}`);
    if (complete && !TERMINAL_STATUS.has(seq.at(-1) as string)) problems.push(`${id}: ended ${seq.at(-1)}, not terminal`);
  }
  t.same(problems, [], 'ToolCall updates: kind TOOL_CALL_UPDATE, legal status moves');
  return seqs;
}

/** Asserts a plain JSON-RPC INVALID_PARAMS (-32602) refusal (no SSE) whose message matches every pattern. */
export function refused(t: Test, res: PostResult, ...patterns: RegExp[]): void {
  t.equal(res.status, 200, 'JSON-RPC errors ride HTTP 200');
  t.match(res.contentType, /^application\/json/, 'answered as JSON, not as a stream');
  t.equal(res.events, undefined, 'no SSE events');
  t.notMatch(res.raw, /^(data|event|id):/m, 'no SSE framing in the body');
  t.equal(res.json?.error?.code, RPC_ERROR_CODE.INVALID_PARAMS, `INVALID_PARAMS: ${res.json?.error?.message}`);
  t.notOk(res.json && 'result' in res.json, 'no result');
  for (const p of patterns) t.match(res.json?.error?.message, p);
}

export async function getTask(srv: TestServer, id: string): Promise<any> {
  const res = await rpc(srv.url, 'tasks/get', { id });
  if (!res.json?.result) throw new Error(`tasks/get failed: ${res.raw}`);
  return res.json.result;
}
