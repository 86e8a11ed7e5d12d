/**
 * A fake Gemini API on Fastify (127.0.0.1, ephemeral port) for driving the real
 * @google/genai SDK over HTTP. Responses are served from a FIFO queue; every request
 * is recorded. Point the SDK at it with `httpOptions.baseUrl = fake.url`.
 */
import Fastify from 'fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';

/** The JSON shape of a GenerateContentResponse, loose enough to fake any chunk. */
export interface GenerateContentResponseJson {
  candidates?: Array<{
    content?: { role?: string; parts?: Array<Record<string, unknown>> };
    finishReason?: string;
    index?: number;
    safetyRatings?: Array<{ category: string; probability?: string; blocked?: boolean }>;
  }>;
  promptFeedback?: { blockReason?: string; blockReasonMessage?: string };
  usageMetadata?: Record<string, unknown>;
  modelVersion?: string;
  [key: string]: unknown;
}

export type FakeResponse =
  /**
   * Streamed as SSE for `:streamGenerateContent`, merged into one JSON for `:generateContent`.
   * `delayMs` waits before each chunk; `destroyAfter` kills the socket after that many chunks.
   */
  | { chunks: GenerateContentResponseJson[]; delayMs?: number; destroyAfter?: number }
  /** A Google API error: `{ error: { code, message, status } }` with HTTP `status`. */
  | { status: number; error: { code: number; message: string; status: string } }
  /** Never answers; the request stays open until the client goes away or the fake closes. */
  | { hang: true };

export interface FakeGeminiRequest {
  method: string;
  /** Path without the query string, e.g. `/v1beta/models/m:streamGenerateContent`. */
  path: string;
  /** Path with the query string. */
  url: string;
  headers: IncomingHttpHeaders;
  body: unknown;
}

export interface FakeGemini {
  /** Base URL, e.g. `http://127.0.0.1:41234`. */
  url: string;
  requests: FakeGeminiRequest[];
  enqueue(response: FakeResponse): void;
  close(): Promise<void>;
}

export async function startFakeGemini(): Promise<FakeGemini> {
  const app = Fastify({ logger: false, forceCloseConnections: true, bodyLimit: 50 * 1024 * 1024 });
  const queue: FakeResponse[] = [];
  const requests: FakeGeminiRequest[] = [];
  const open = new Set<FastifyReply>();

  app.all('/*', async (request, reply) => {
    const url = request.url;
    requests.push({
      method: request.method,
      path: url.split('?')[0],
      url,
      headers: request.headers,
      body: request.body,
    });
    const next = queue.shift();
    if (next === undefined) {
      return reply
        .code(500)
        .send(errorBody(500, `fake-gemini: nothing queued for ${request.method} ${url} (call enqueue() first)`, 'INTERNAL'));
    }
    if ('status' in next) return reply.code(next.status).send({ error: next.error });
    if ('hang' in next) return hang(request, reply, open);
    if (url.includes(':streamGenerateContent')) return streamSse(request, reply, next, open);
    return reply.send(mergeChunks(next.chunks));
  });

  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  if (address === null || typeof address === 'string') throw new Error('fake-gemini: no TCP address');
  return {
    url: `http://127.0.0.1:${address.port}`,
    requests,
    enqueue: (response) => void queue.push(response),
    close: async () => {
      for (const reply of open) reply.raw.destroy();
      await app.close();
    },
  };
}

function errorBody(code: number, message: string, status: string): { error: { code: number; message: string; status: string } } {
  return { error: { code, message, status } };
}

async function hang(request: FastifyRequest, reply: FastifyReply, open: Set<FastifyReply>): Promise<void> {
  reply.hijack();
  open.add(reply);
  await new Promise<void>((resolve) => {
    request.raw.socket.once('close', resolve);
  });
  open.delete(reply);
}

async function streamSse(
  request: FastifyRequest,
  reply: FastifyReply,
  response: { chunks: GenerateContentResponseJson[]; delayMs?: number; destroyAfter?: number },
  open: Set<FastifyReply>,
): Promise<void> {
  reply.hijack();
  open.add(reply);
  const raw = reply.raw;
  raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
  try {
    const limit = response.destroyAfter ?? Infinity;
    for (const chunk of response.chunks.slice(0, limit)) {
      if (response.delayMs) await sleep(response.delayMs);
      if (raw.destroyed || raw.writableEnded) return;
      // Wait for the bytes to leave, so a later destroy() cannot discard them.
      await new Promise<void>((resolve) => raw.write(`data: ${JSON.stringify(chunk)}\r\n\r\n`, () => resolve()));
    }
    if (response.destroyAfter !== undefined) {
      await sleep(20);
      request.raw.socket.destroy();
      return;
    }
    raw.end();
  } finally {
    open.delete(reply);
  }
}

/** Folds streamed chunks into the single response `:generateContent` would return. */
function mergeChunks(chunks: GenerateContentResponseJson[]): GenerateContentResponseJson {
  const merged: GenerateContentResponseJson = {};
  const parts: Array<Record<string, unknown>> = [];
  let finishReason: string | undefined;
  for (const chunk of chunks) {
    const candidate = chunk.candidates?.[0];
    parts.push(...(candidate?.content?.parts ?? []));
    finishReason = candidate?.finishReason ?? finishReason;
    if (chunk.promptFeedback) merged.promptFeedback = chunk.promptFeedback;
    if (chunk.usageMetadata) merged.usageMetadata = chunk.usageMetadata;
    if (chunk.modelVersion) merged.modelVersion = chunk.modelVersion;
  }
  if (parts.length > 0 || finishReason) {
    merged.candidates = [{ content: { role: 'model', parts }, ...(finishReason ? { finishReason } : {}), index: 0 }];
  }
  return merged;
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** One streamed response carrying a single text part (a thought summary with `thought: true`). */
export function textChunk(
  text: string,
  options: { thought?: boolean; thoughtSignature?: string; finishReason?: string } = {},
): GenerateContentResponseJson {
  const part: Record<string, unknown> = { text };
  if (options.thought) part.thought = true;
  if (options.thoughtSignature) part.thoughtSignature = options.thoughtSignature;
  return candidateChunk([part], options.finishReason);
}

/** One streamed response carrying a single function call part. */
export function fnCallChunk(
  name: string,
  args: Record<string, unknown>,
  id?: string,
  options: { thoughtSignature?: string; finishReason?: string } = {},
): GenerateContentResponseJson {
  const part: Record<string, unknown> = { functionCall: { ...(id ? { id } : {}), name, args } };
  if (options.thoughtSignature) part.thoughtSignature = options.thoughtSignature;
  return candidateChunk([part], options.finishReason);
}

/** One streamed response with the given raw parts. */
export function candidateChunk(parts: Array<Record<string, unknown>>, finishReason?: string): GenerateContentResponseJson {
  return {
    candidates: [{ content: { role: 'model', parts }, ...(finishReason ? { finishReason } : {}), index: 0 }],
  };
}
