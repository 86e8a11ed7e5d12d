/**
 * Dialect-free events the agent publishes. Nothing here knows how a client expects
 * them on the wire: a WireEncoder (one per dialect) turns each into an A2A event.
 */
import type { ToolDisplay, ToolError, ToolProposal } from '../../tools/tool.js';

export type TaskStateName = 'submitted' | 'working' | 'input-required' | 'auth-required' | 'completed' | 'failed' | 'canceled' | 'rejected';

export type ToolCallStatusName = 'PENDING' | 'EXECUTING' | 'SUCCEEDED' | 'FAILED' | 'CANCELLED';

export interface OfferedOption {
  id: string;
  name: string;
  description?: string;
}

/** A snapshot of one tool call; the whole snapshot is sent on every update (RFC §3.2). */
export interface ToolCallSnapshot {
  id: string;
  toolName: string;
  status: ToolCallStatusName;
  description?: string;
  input: Record<string, unknown>;
  liveContent?: string;
  output?: ToolDisplay;
  error?: ToolError;
  /** Present while PENDING when the call waits for the user. */
  confirmation?: { options: OfferedOption[]; proposal: ToolProposal };
  /** The name of the checkpoint taken before the call ran (CHECKPOINTING; `restore <name>` puts its files back). */
  checkpoint?: string;
}

/** One part of an artifact: text, structured data, or a file (inline base64 bytes or a URL). */
export type ArtifactPart =
  { text: string } | { data: Record<string, unknown> } | { file: { name?: string; mediaType?: string; bytes?: string; uri?: string } };

/**
 * An output of the task (A2A §4.1.7 Artifact), apart from the conversation. A chunked artifact is
 * sent as several events with one id: `append` adds the parts to the earlier ones, `lastChunk` ends it.
 */
export interface AgentArtifact {
  artifactId: string;
  name?: string;
  description?: string;
  parts: ArtifactPart[];
  append?: boolean;
  lastChunk?: boolean;
}

/** The model's token counts, named as the Gemini API's `usageMetadata` names them. */
export interface TokenUsage {
  promptTokenCount: number;
  candidatesTokenCount: number;
  totalTokenCount: number;
  cachedContentTokenCount: number;
}

/**
 * Where a turn is, when that changes nothing in the task's state: `calls` — the model's answer
 * ended with function calls, which are being judged now; `model` — the calls' results go back
 * to the model, which runs again. A dialect that has no event for it shows nothing.
 */
export type TurnStep = 'calls' | 'model';

/**
 * A step of one call that its card (its status) does not show: `validating` — its arguments
 * were checked and the policy is deciding whether a person must approve it; `scheduled` — an
 * answer approved it and it runs next. A dialect that has no status for it shows nothing.
 */
export type CallStep = 'validating' | 'scheduled';

export type AgentEvent =
  | {
      type: 'state';
      state: TaskStateName;
      text?: string;
      error?: string;
      /** On a pause: the JSON Schema of the answer it accepts (see runtime/pause.ts). */
      inputSchema?: Record<string, unknown>;
      /** On `completed`: the text is a direct reply, which a non-streaming send answers as a Message. */
      reply?: 'message';
      /** On a pause or an end: the tokens the model calls since the previous pause or end used. */
      usage?: TokenUsage;
    }
  | { type: 'tool-call'; call: ToolCallSnapshot }
  | { type: 'turn-step'; step: TurnStep }
  | { type: 'call-step'; step: CallStep; call: ToolCallSnapshot }
  | { type: 'text'; delta: string }
  | { type: 'thought'; subject: string; description: string }
  | { type: 'artifact'; artifact: AgentArtifact };

/** The state sets live once, in protocol/task-states.ts. */
export { PAUSED, PAUSE_OR_TERMINAL, TERMINAL } from '../../protocol/task-states.js';
