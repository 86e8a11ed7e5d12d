/**
 * The inbound counterpart of the encoders: one WireDecoder per wire dialect turns an incoming
 * Message, once, into an Intent — what the message means, read from the message alone. The
 * router switches on the intent; the resume handler and the stranger check read its answers.
 *
 * A decoder never throws: what is wrong with the message is carried in the intent (`refusal`,
 * `settings.error`, with the field path in its message) and thrown by the router at the step
 * that refuses it, so a message to a task is still refused as "not found" or "not yours" before
 * its answers are judged.
 */
import type { Message } from '@a2a-js/sdk';
import { DEVTOOL_EXTENSION_URI } from '../../protocol/extension.js';
import type { ModelPart } from '../model/model-client.js';
import { isLegacySettings } from '../policy/settings.js';
import type { RequestedSettings } from '../policy/settings.js';
import type { WireDialect } from './wire-encoder.js';

/** One answer to a tool call, in either dialect. */
export interface Answer {
  callId: string;
  option: string;
  /** The edited content (modify_with_editor). */
  editedContent?: string;
  /** The user's note on this answer, for the model. */
  feedback?: string;
  /** Where the answer is: `message.parts[i].data` (error field paths start here). */
  at: string;
  /**
   * The option meant when `option` is not offered but this one is (the legacy dialect's
   * `proceed_always_tool`/`_server` on a built-in tool, which offers only `proceed_always`).
   */
  orOffered?: string;
}

/** The AgentSettings a message carries (undefined: none), or why they are refused. */
export type DecodedSettings = { ok: true; value: RequestedSettings | undefined } | { ok: false; error: Error };

interface Decoded {
  /** The message as it arrived (recorded in the task's history as is). */
  message: Message;
  settings: DecodedSettings;
  /** The model's view of the message: its text, and any data parts as JSON. */
  parts: ModelPart[];
}

/** A message without a taskId: a new task, in the decoder's dialect. `refusal`: it carries an answer. */
export interface NewTaskIntent extends Decoded {
  kind: 'new-task';
  dialect: WireDialect;
  refusal?: Error;
}

/**
 * Answers to named tool calls (ToolCallConfirmations; legacy `{callId, outcome}`), each with its
 * feedback (a text part beside a single answer is its feedback). Also any message with a
 * malformed answer-shaped part: `refusal` says the first thing wrong; `answers` holds the
 * well-formed ones (the stranger check records them).
 */
export interface AnswersIntent extends Decoded {
  kind: 'answers';
  answers: Answer[];
  refusal?: Error;
}

/** A yes/no answer that names no call: a `{"confirmation": …}` DataPart (`at`), or the exact text token. */
export interface YesNoIntent extends Decoded {
  kind: 'yes-no';
  token: 'yes' | 'no';
  option: string;
  /** The DataPart it came in; absent for a text token. */
  at?: string;
  /** The message text, trimmed: beside a DataPart, that answer's feedback. */
  text: string;
}

/** Anything else sent to a task: text (and data) for the model. */
export interface FollowUpIntent extends Decoded {
  kind: 'follow-up';
}

export type Intent = NewTaskIntent | AnswersIntent | YesNoIntent | FollowUpIntent;

/** What a message to an existing task can mean. */
export type TaskIntent = Exclude<Intent, NewTaskIntent>;

/** Reads one dialect's messages. */
export interface WireDecoder {
  readonly dialect: WireDialect;
  /** The intent of `message` (a new task when it has no taskId). MUST NOT throw. */
  decode(message: Message): Intent;
  /** AgentSettings from request metadata (`at`: the field path of errors). Throws invalidParams. */
  settings(metadata: Record<string, unknown> | undefined, at?: string): RequestedSettings | undefined;
}

/** One decoder per dialect. */
export type Decoders = Readonly<Record<WireDialect, WireDecoder>>;

/**
 * The dialect of a new task: legacy when its first message carries `coderAgent` agent-settings,
 * the RFC's when it carries AgentSettings under the extension URI, else `fallback` (WIRE_DIALECT).
 */
export function chooseDialect(metadata: Record<string, unknown> | undefined, fallback: WireDialect): WireDialect {
  if (isLegacySettings(metadata?.coderAgent)) return 'legacy';
  if (metadata?.[DEVTOOL_EXTENSION_URI] !== undefined) return 'rfc';
  return fallback;
}

/** The settings a decoded message carries. Throws the reason they are refused. */
export function settingsOf(intent: Intent): RequestedSettings | undefined {
  if (!intent.settings.ok) throw intent.settings.error;
  return intent.settings.value;
}

/** True when the message carries an answer in a DataPart (a text `yes` is not one). */
export function carriesAnswer(intent: TaskIntent): boolean {
  return intent.kind === 'answers' || (intent.kind === 'yes-no' && intent.at !== undefined);
}

/** The tool call ids the message's well-formed answers name. */
export function namedCallIds(intent: TaskIntent): string[] {
  return intent.kind === 'answers' ? intent.answers.map((a) => a.callId) : [];
}
