/**
 * ModelClient adapter over @google/genai (Gemini API or Vertex AI).
 *
 * Streams `models.generateContentStream` and hands back each response's candidate
 * parts verbatim (thoughts and `thoughtSignature`s included). It never reads
 * `chunk.text`: that getter drops thought parts and console.warns on function calls.
 * The SDK makes one HTTP attempt (no retry options are set); retrying is the loop's
 * job, guided by `ModelError.retryable`.
 */
import { ApiError, GoogleGenAI } from '@google/genai';
import type { Content, GenerateContentConfig, GenerateContentResponse, Part } from '@google/genai';
import { ModelError } from './model-client.js';
import type { ModelChunk, ModelClient, ModelContent, ModelPart, ModelRequest } from './model-client.js';
import type { TokenUsage } from '../wire/agent-events.js';

export interface GenaiModelClientOptions {
  /** Model id, e.g. `gemini-2.5-flash`. */
  model: string;
  /** Gemini API key (or a Vertex AI express-mode key). Required unless `vertexai` is true. */
  apiKey?: string;
  /** Use Vertex AI instead of the Gemini API. Default false. */
  vertexai?: boolean;
  /** Vertex AI project (only with `vertexai`). */
  project?: string;
  /** Vertex AI location (only with `vertexai`). */
  location?: string;
  /** Overrides the API endpoint (tests point this at a local fake). */
  baseUrl?: string;
  /** Ask for thought summaries (`thinkingConfig.includeThoughts`). */
  includeThoughts?: boolean;
}

/** HTTP statuses worth retrying: quota/rate limit and server-side overload or failure. */
const RETRYABLE_STATUSES = new Set([429, 500, 502, 503, 504]);

/** Low-level codes of transport failures (Node net/dns and undici). */
const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ENETUNREACH',
  'EHOSTUNREACH',
  'ENETDOWN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'UND_ERR_CLOSED',
]);

/** Finish reasons that mean the answer was withheld for policy reasons. */
const BLOCKING_FINISH_REASONS = new Set(['SAFETY', 'PROHIBITED_CONTENT', 'BLOCKLIST', 'SPII']);

/** Longest slice of the API's own error text kept in a ModelError message. */
const MAX_API_MESSAGE = 1000;

export class GenaiModelClient implements ModelClient {
  readonly model: string;
  readonly #ai: GoogleGenAI;
  readonly #apiKey: string | undefined;
  readonly #includeThoughts: boolean;
  readonly #endpoint: string;

  constructor(options: GenaiModelClientOptions) {
    const vertexai = options.vertexai ?? false;
    if (!options.model) throw new Error('GenaiModelClient: model is required');
    if (!vertexai && !options.apiKey) {
      throw new Error('GenaiModelClient: apiKey is required for the Gemini API (or set vertexai with project/location)');
    }
    this.model = options.model;
    this.#apiKey = options.apiKey;
    this.#includeThoughts = options.includeThoughts ?? false;
    this.#endpoint = options.baseUrl ?? (vertexai ? 'Vertex AI' : 'https://generativelanguage.googleapis.com');
    // `vertexai` is always passed explicitly so GOOGLE_GENAI_USE_VERTEXAI in the
    // environment cannot flip the backend behind the config's back.
    this.#ai = new GoogleGenAI({
      vertexai,
      apiKey: options.apiKey,
      ...(vertexai ? { project: options.project, location: options.location } : {}),
      ...(options.baseUrl ? { httpOptions: { baseUrl: options.baseUrl } } : {}),
    });
  }

  async *generate(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelChunk> {
    if (signal.aborted) throw abortError(signal);
    // An own controller, so that a consumer that stops iterating early also tears down the HTTP stream.
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let stream: AsyncGenerator<GenerateContentResponse> | undefined;
    try {
      try {
        stream = await this.#ai.models.generateContentStream({
          model: this.model,
          contents: request.contents.map(toSdkContent),
          config: this.#config(request, controller.signal),
        });
      } catch (err) {
        throw this.#mapError(err, signal);
      }
      let yieldedAny = false;
      while (true) {
        let next: IteratorResult<GenerateContentResponse>;
        try {
          next = await stream.next();
        } catch (err) {
          throw this.#mapError(err, signal);
        }
        if (next.done) return;
        const parts = checkedParts(next.value, yieldedAny);
        const usage = tokenUsage(next.value);
        if (parts.length === 0) {
          if (usage !== undefined) yield { parts, usage }; // often on the last chunk, alone
          continue;
        }
        yieldedAny = true;
        yield usage !== undefined ? { parts, usage } : { parts };
        if (signal.aborted) throw abortError(signal);
      }
    } finally {
      signal.removeEventListener('abort', onAbort);
      controller.abort();
      await stream?.return(undefined).catch(() => undefined);
    }
  }

  #config(request: ModelRequest, abortSignal: AbortSignal): GenerateContentConfig {
    const config: GenerateContentConfig = { abortSignal };
    if (request.systemInstruction) config.systemInstruction = request.systemInstruction;
    if (request.tools.length > 0) {
      // Tool schemas are JSON Schema (lowercase types), which is what parametersJsonSchema takes;
      // `parameters` expects the OpenAPI Schema message with enum-cased types.
      config.tools = [
        {
          functionDeclarations: request.tools.map((d) => ({
            name: d.name,
            description: d.description,
            parametersJsonSchema: d.parameters,
          })),
        },
      ];
    }
    if (this.#includeThoughts) config.thinkingConfig = { includeThoughts: true };
    return config;
  }

  #mapError(err: unknown, signal: AbortSignal): Error {
    if (signal.aborted) return abortError(signal, err);
    if (err instanceof ModelError) return err;
    if (err instanceof ApiError || isApiErrorLike(err)) return this.#fromApiError(err as ApiError);
    const code = networkCode(err);
    const message = this.#redact(describeChain(err));
    if (code !== undefined || err instanceof TypeError) {
      return new ModelError(
        `Network failure talking to the Gemini API at ${this.#endpoint}${code ? ` (${code})` : ''}: ${message}`,
        true,
        undefined,
        { cause: err },
      );
    }
    if (message.includes('Incomplete JSON segment')) {
      return new ModelError(`The Gemini API stream ended mid-response: ${message}`, true, undefined, { cause: err });
    }
    return new ModelError(`Gemini API call failed: ${message}`, false, undefined, { cause: err });
  }

  #fromApiError(err: ApiError): ModelError {
    const status = err.status;
    const { message: apiMessage, status: apiStatus } = parseApiMessage(err.message);
    const detail = this.#redact(truncate(apiMessage));
    const http = `HTTP ${status}${apiStatus ? ` ${apiStatus}` : ''}`;
    const retryable = RETRYABLE_STATUSES.has(status);
    let text: string;
    if (status === 429) {
      text = `Gemini API quota exhausted or rate limited (${http}): ${detail}`;
    } else if (status >= 500) {
      text = `Gemini API is unavailable or failed (${http}): ${detail}`;
    } else if (status === 401 || status === 403 || (status === 400 && /api[ _]?key/i.test(apiMessage))) {
      text = `Gemini API rejected the API key (${http}): ${detail} — check the configured key and that the API is enabled for its project`;
    } else if (status === 404) {
      text = `Gemini model "${this.model}" was not found (${http}): ${detail} — check the model name`;
    } else if (status === 400) {
      text = `Gemini API rejected the request as invalid (${http}): ${detail}`;
    } else {
      text = `Gemini API call failed (${http}): ${detail}`;
    }
    return new ModelError(text, retryable, status);
  }

  #redact(text: string): string {
    const key = this.#apiKey;
    return key && key.length >= 4 ? text.split(key).join('[redacted]') : text;
  }
}

/** The response's token counts (absent counts are 0), when it carries any. */
function tokenUsage(response: GenerateContentResponse): TokenUsage | undefined {
  const u = response.usageMetadata;
  if (u === undefined) return undefined;
  return {
    promptTokenCount: u.promptTokenCount ?? 0,
    candidatesTokenCount: u.candidatesTokenCount ?? 0,
    totalTokenCount: u.totalTokenCount ?? 0,
    cachedContentTokenCount: u.cachedContentTokenCount ?? 0,
  };
}

/** Maps one streamed response to ModelParts, throwing a ModelError when it says the turn was blocked. */
function checkedParts(response: GenerateContentResponse, yieldedAny: boolean): ModelPart[] {
  const feedback = response.promptFeedback;
  if (feedback?.blockReason) {
    const why = feedback.blockReasonMessage ? `: ${feedback.blockReasonMessage}` : '';
    throw new ModelError(`Gemini blocked the prompt (blockReason ${feedback.blockReason})${why}`, false);
  }
  const candidate = response.candidates?.[0];
  const parts = (candidate?.content?.parts ?? []).map(fromSdkPart).filter(isNonEmptyPart);
  const finish = candidate?.finishReason;
  if (finish && BLOCKING_FINISH_REASONS.has(finish) && parts.length === 0 && !yieldedAny) {
    const categories = (candidate?.safetyRatings ?? []).filter((r) => r.blocked).map((r) => r.category);
    const which = categories.length > 0 ? ` (${categories.join(', ')})` : '';
    throw new ModelError(`Gemini withheld its answer (finishReason ${finish})${which}`, false);
  }
  return parts;
}

function fromSdkPart(part: Part): ModelPart {
  const out: ModelPart = {};
  if (typeof part.text === 'string') out.text = part.text;
  if (part.thought === true) out.thought = true;
  if (part.thoughtSignature) out.thoughtSignature = part.thoughtSignature;
  const call = part.functionCall;
  if (call?.name) {
    out.functionCall = {
      ...(call.id ? { id: call.id } : {}),
      name: call.name,
      ...(call.args ? { args: call.args } : {}),
    };
  }
  return out;
}

/** Drops parts that carry nothing we model (empty text, or only unsupported fields such as inlineData). */
function isNonEmptyPart(part: ModelPart): boolean {
  return Boolean(part.text || part.functionCall || part.thoughtSignature);
}

function toSdkContent(content: ModelContent): Content {
  return { role: content.role, parts: content.parts.map(toSdkPart) };
}

function toSdkPart(part: ModelPart): Part {
  const out: Part = {};
  if (part.text !== undefined) out.text = part.text;
  if (part.thought) out.thought = true;
  if (part.thoughtSignature) out.thoughtSignature = part.thoughtSignature;
  if (part.functionCall) out.functionCall = { ...part.functionCall };
  if (part.functionResponse) out.functionResponse = { ...part.functionResponse };
  return out;
}

/** The SDK puts the response body (JSON) in ApiError.message; pull out `error.message` and `error.status`. */
function parseApiMessage(raw: string): { message: string; status?: string } {
  const start = raw.indexOf('{');
  if (start >= 0) {
    try {
      const body = JSON.parse(raw.slice(start)) as { error?: { message?: unknown; status?: unknown } };
      const inner = body.error;
      if (inner && typeof inner.message === 'string') {
        const status = typeof inner.status === 'string' && inner.status !== '' ? inner.status : undefined;
        return { message: inner.message, status };
      }
    } catch {
      // Not JSON: fall back to the raw text.
    }
  }
  return { message: raw };
}

function isApiErrorLike(err: unknown): boolean {
  return err instanceof Error && err.name === 'ApiError' && typeof (err as { status?: unknown }).status === 'number';
}

/** Finds a transport error code anywhere in the cause chain (fetch wraps them as TypeError('fetch failed')). */
function networkCode(err: unknown, depth = 0): string | undefined {
  if (depth > 5 || typeof err !== 'object' || err === null) return undefined;
  const e = err as { code?: unknown; cause?: unknown; errors?: unknown };
  if (typeof e.code === 'string' && NETWORK_CODES.has(e.code)) return e.code;
  if (Array.isArray(e.errors)) {
    for (const inner of e.errors) {
      const code = networkCode(inner, depth + 1);
      if (code) return code;
    }
  }
  return networkCode(e.cause, depth + 1);
}

/** `fetch failed: connect ECONNREFUSED 127.0.0.1:1`: the message plus its first cause's, when that says more. */
function describeChain(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause;
  if (cause instanceof Error && cause.message && cause.message !== err.message) return `${err.message}: ${cause.message}`;
  return err.message;
}

function abortError(signal: AbortSignal, original?: unknown): Error {
  if (original instanceof Error && original.name === 'AbortError') return original;
  const reason: unknown = signal.reason;
  if (reason instanceof Error && reason.name === 'AbortError') return reason;
  const err = new Error('The model call was aborted', { cause: reason });
  err.name = 'AbortError';
  return err;
}

function truncate(text: string): string {
  return text.length > MAX_API_MESSAGE ? `${text.slice(0, MAX_API_MESSAGE)}…` : text;
}
