/**
 * A client of the legacy dialect (gemini-cli's own a2a-server wire), as such clients are written:
 * raw v0.3 JSON-RPC and SSE, `metadata.coderAgent` settings, ToolCall objects found by their
 * `status`. Plus the transcripts recorded from the original server (test/fixtures/legacy/).
 */
import { readFileSync } from 'node:fs';
import { rpc } from './sse.js';
import type { PostResult, Target } from './sse.js';

let n = 0;

/** The settings marker that makes a new task speak the legacy dialect. */
export function coderAgent(workspacePath: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { coderAgent: { kind: 'agent-settings', workspacePath, ...extra } };
}

/** A v0.3 user message; `text` undefined → only the parts in `extra`. */
export function legacyMessage(text: string | undefined, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { kind: 'message', role: 'user', messageId: `legacy-${++n}`, parts: text === undefined ? [] : [{ kind: 'text', text }], ...extra };
}

/** The `result`s of a stream answer; throws with the body when it is not a stream or carries an error. */
export function results(res: PostResult): any[] {
  if (res.events === undefined) throw new Error(`expected an SSE stream, got ${res.status} ${res.contentType}: ${res.raw}`);
  return res.events.map((e) => {
    if (e.data.error) throw new Error(`stream carried an error: ${JSON.stringify(e.data.error)}`);
    return e.data.result;
  });
}

/** message/stream, read to its end. */
export async function stream(target: Target, message: Record<string, unknown>, headers?: Record<string, string>): Promise<any[]> {
  return results(await rpc(target, 'message/stream', { message }, { headers }));
}

/** The first ToolCall object with `status` in a list of stream results (or recorded frames). */
export function legacyCard(events: any[], status: string): any {
  for (const e of events) {
    const r = e?.result ?? e;
    const data = r?.status?.message?.parts?.[0]?.data;
    if (data?.request !== undefined && data.status === status) return data;
  }
  return undefined;
}

/** A recorded transcript: flow name → the SSE frames of each request. */
export function fixture(name: string): Record<string, any[]> {
  return JSON.parse(readFileSync(new URL(`../fixtures/legacy/${name}.json`, import.meta.url), 'utf8')) as Record<string, any[]>;
}

const typeOf = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/**
 * Where `ours` lacks what the original sent: every key path of `theirs` that is missing in `ours`
 * or holds another JSON type there (arrays compared by their first element). `skip` names keys
 * not compared (values that are the original's own, like `checkpoint`).
 */
export function missingKeys(ours: unknown, theirs: unknown, skip: readonly string[] = [], at = '$'): string[] {
  if (typeOf(ours) !== typeOf(theirs)) return [`${at}: ${typeOf(theirs)} expected, got ${typeOf(ours)}`];
  if (Array.isArray(theirs)) {
    return theirs.length > 0 && (ours as unknown[]).length > 0 ? missingKeys((ours as unknown[])[0], theirs[0], skip, `${at}[0]`) : [];
  }
  if (typeOf(theirs) !== 'object') return [];
  const out: string[] = [];
  for (const [k, v] of Object.entries(theirs as Record<string, unknown>)) {
    if (skip.includes(k)) continue;
    const mine = (ours as Record<string, unknown>)[k];
    if (mine === undefined) out.push(`${at}.${k}: missing`);
    else out.push(...missingKeys(mine, v, skip, `${at}.${k}`));
  }
  return out;
}
