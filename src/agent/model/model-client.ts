/**
 * The model port. History uses the Gemini `Content` JSON shape (role + parts) because it
 * is plain data, survives storage, and carries `thoughtSignature`s that must be echoed
 * back verbatim. Adapters: GenaiModelClient (@google/genai) and ScriptedModelClient.
 */
import type { AgentArtifact, TokenUsage } from '../wire/agent-events.js';

export interface ModelFunctionCall {
  id?: string;
  name: string;
  args?: Record<string, unknown>;
}

export interface ModelFunctionResponse {
  id?: string;
  name: string;
  response: Record<string, unknown>;
}

export interface ModelPart {
  text?: string;
  /** True for thought summaries (`includeThoughts`); never shown as answer text. */
  thought?: boolean;
  thoughtSignature?: string;
  functionCall?: ModelFunctionCall;
  functionResponse?: ModelFunctionResponse;
}

export interface ModelContent {
  role: 'user' | 'model';
  parts: ModelPart[];
}

export interface FunctionDeclaration {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface ModelRequest {
  systemInstruction?: string;
  /** The A2A messageId of the user message this turn answers (scripted models may key on it). */
  messageId?: string;
  contents: ModelContent[];
  tools: FunctionDeclaration[];
}

/** One streamed piece of the model's answer: the parts exactly as the API sent them. */
export interface ModelChunk {
  parts: ModelPart[];
  /** Outputs of the task, published as artifact updates as they stream (A2A §4.1.7). */
  artifacts?: AgentArtifact[];
  /**
   * How a turn without function calls ends the task; default `completed`. `input-required` asks
   * the user a question (the text), `rejected` declines the task (A2A §4.1.3).
   */
  outcome?: ModelOutcome;
  /**
   * The tokens the call has used so far (the API's `usageMetadata`): each chunk that carries it
   * supersedes the last, so the call's last one is its total. A chunk may carry only this.
   */
  usage?: TokenUsage;
}

export interface ModelOutcome {
  state: 'completed' | 'input-required' | 'rejected';
  /** The status message's text. */
  text?: string;
  /**
   * `message`: the answer is a direct reply, not the result of a piece of work (A2A lets an
   * agent answer `SendMessage` with a Message instead of a Task). Honoured for a `completed`
   * outcome of the first step of a task's first message, before any tool call: a non-streaming
   * `SendMessage` then answers with the status message (the task is still stored, so the
   * conversation and the audit keep it); a stream, whose first event is already the Task,
   * ends with the task completed as usual.
   */
  reply?: 'message';
}

export interface ModelClient {
  /** The model name reported in every event's metadata. */
  readonly model: string;
  /**
   * Streams one model turn. MUST stop (throwing an AbortError) when `signal` aborts.
   * Errors are thrown as ModelError so the loop can tell retryable ones apart.
   */
  generate(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelChunk>;
}

/** A failed model call. `retryable` marks quota, overload and network errors. */
export class ModelError extends Error {
  readonly code = 'AGENT_ERR_MODEL_CALL';
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly status?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'ModelError';
  }
}
