/**
 * The real server driven by the real @google/genai SDK against the fake Gemini API over
 * HTTP (GenaiModelClient with baseUrl = the fake), plus a small scenario builder for the
 * fake's answers and helpers to run one message over v0.3 `message/stream`.
 */
import { GenaiModelClient } from '../../src/agent/model/genai-model-client.js';
import type { AppOptions } from '../../src/app.js';
import { candidateChunk, fnCallChunk, startFakeGemini, textChunk } from './fake-gemini.js';
import type { FakeGemini } from './fake-gemini.js';
import { confirmMessage, startServer, URI, userMessage } from './server.js';
import type { TestServer } from './server.js';
import { rpc } from './sse.js';
import type { PostResult } from './sse.js';

export const MODEL = 'gemini-test';

export interface GeminiServer extends TestServer {
  fake: FakeGemini;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** A fresh fake Gemini and a server whose model is GenaiModelClient pointed at it. */
export async function startGeminiServer(
  t: Teardown,
  opts: { env?: Record<string, string>; includeThoughts?: boolean; app?: Partial<AppOptions> } = {},
): Promise<GeminiServer> {
  const fake = await startFakeGemini();
  t.teardown(() => fake.close());
  const model = new GenaiModelClient({ model: MODEL, apiKey: 'test-key', baseUrl: fake.url, includeThoughts: opts.includeThoughts });
  const srv = await startServer(t, { model, env: opts.env, app: opts.app });
  return { ...srv, fake };
}

/** What the fake answers, one model request per step, in order. */
export interface Scenario {
  /** One streamed answer with one function call per `[name, args]` (all in one chunk). */
  calls(...calls: Array<[string, Record<string, unknown>, string?]>): Scenario;
  /** One streamed answer with a single function call. */
  call(name: string, args: Record<string, unknown>, id?: string): Scenario;
  /** One streamed answer of text chunks (the model stops: no call). */
  say(...texts: string[]): Scenario;
  /** One streamed answer with the given raw chunks' parts, e.g. thoughts then text. */
  chunks(...parts: Array<Array<Record<string, unknown>>>): Scenario;
  /** One Google API error answer. */
  fail(status: number, message: string, statusName: string): Scenario;
  /** One request that never answers. */
  hang(): Scenario;
}

export function scenario(fake: FakeGemini): Scenario {
  const s: Scenario = {
    calls: (...calls) => {
      const parts = calls.map(([name, args, id]) => ({ functionCall: { ...(id ? { id } : {}), name, args } }));
      fake.enqueue({ chunks: [candidateChunk(parts, 'STOP')] });
      return s;
    },
    call: (name, args, id) => {
      fake.enqueue({ chunks: [fnCallChunk(name, args, id, { finishReason: 'STOP' })] });
      return s;
    },
    say: (...texts) => {
      fake.enqueue({ chunks: texts.map((text, i) => textChunk(text, i === texts.length - 1 ? { finishReason: 'STOP' } : {})) });
      return s;
    },
    chunks: (...parts) => {
      fake.enqueue({ chunks: parts.map((p, i) => candidateChunk(p, i === parts.length - 1 ? 'STOP' : undefined)) });
      return s;
    },
    fail: (status, message, statusName) => {
      fake.enqueue({ status, error: { code: status, message, status: statusName } });
      return s;
    },
    hang: () => {
      fake.enqueue({ hang: true });
      return s;
    },
  };
  return s;
}

/** The JSON body of the fake's n-th recorded request. */
export function modelBody(fake: FakeGemini, n: number): any {
  const req = fake.requests[n];
  if (req === undefined) throw new Error(`fake-gemini: no request #${n} (${fake.requests.length} recorded)`);
  return req.body;
}

/** The functionResponse parts of the last content of the n-th request (what the model was told). */
export function functionResponses(fake: FakeGemini, n: number): Array<{ id?: string; name: string; response: any }> {
  const contents = modelBody(fake, n).contents as Array<{ role: string; parts: any[] }>;
  return (contents.at(-1)?.parts ?? []).filter((p) => p.functionResponse).map((p) => p.functionResponse);
}

/** AgentSettings metadata for a message. */
export function settings(s: Record<string, unknown>): Record<string, unknown> {
  return { [URI]: s };
}

/** The `result`s of a stream answer; throws with the body when it is not a stream. */
export function results(res: PostResult): any[] {
  if (res.events === undefined) throw new Error(`expected an SSE stream, got ${res.status} ${res.contentType}: ${res.raw}`);
  return res.events.map((e) => {
    if (e.data.error) throw new Error(`stream carried an error: ${JSON.stringify(e.data.error)}`);
    return e.data.result;
  });
}

/** Sends a new message (a new task) over v0.3 message/stream and reads the whole answer. */
export async function send(
  srv: TestServer,
  text: string,
  opts: { contextId?: string; taskId?: string; settings?: Record<string, unknown> } = {},
): Promise<PostResult> {
  const extra: Record<string, unknown> = {};
  if (opts.contextId) extra.contextId = opts.contextId;
  if (opts.taskId) extra.taskId = opts.taskId;
  if (opts.settings) extra.metadata = settings(opts.settings);
  return rpc(srv.url, 'message/stream', { message: userMessage(text, extra) });
}

/** Answers tool calls of a paused task over v0.3 message/stream. */
export async function answer(
  srv: TestServer,
  taskId: string,
  contextId: string,
  ...confirmations: Record<string, unknown>[]
): Promise<PostResult> {
  return rpc(srv.url, 'message/stream', { message: confirmMessage(taskId, contextId, ...confirmations) });
}
