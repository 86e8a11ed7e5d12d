/**
 * The development-tool RFC dialect, inbound (RFC §3.2 "Client-to-Agent Messages"): answers are
 * ToolCallConfirmation DataParts (several per message, in any order), a `{"confirmation":
 * "yes"|"no"}` DataPart, or the exact text token `yes` / `no`; an answer's feedback rides in its
 * DataPart (protocol/answer-feedback.ts) or as the message's text beside a single answer.
 * AgentSettings ride in the message metadata under the extension URI.
 *
 * Everything the message alone can refuse is found here, in one walk over its parts; whether an
 * answer fits the task (the call exists, waits, offers the option) is the resume handler's.
 */
import { isObject } from '../../lib/is-object.js';
import type { Message } from '@a2a-js/sdk';
import { attachTextFeedback, checkFeedback } from '../../protocol/answer-feedback.js';
import type { DevtoolSchema } from '../../protocol/devtool-schema.js';
import { invalidParams } from '../../protocol/errors.js';
import { ConfirmationOptionId } from '../../protocol/extension.js';
import type { ModelPart } from '../model/model-client.js';
import { readSettings } from '../policy/settings.js';
import type { RequestedSettings, WorkspacePolicy } from '../policy/settings.js';
import type { ContextSettings } from '../task-store.js';
import type { WireDialect } from './wire-encoder.js';
import type { Answer, DecodedSettings, Intent, WireDecoder } from './wire-decoder.js';

export const YES_NO: ReadonlyMap<string, string> = new Map([
  ['yes', ConfirmationOptionId.proceedOnce],
  ['no', ConfirmationOptionId.cancel],
]);

/** What the walk over a message's parts found so far. */
export class PartReading {
  readonly answers: Answer[] = [];
  yesNo?: { token: 'yes' | 'no'; at: string };
  /** Some part is shaped like an answer (well-formed or not). */
  answerLike = false;
  /** The first thing wrong, in part order. */
  refusal?: Error;

  fail(err: unknown): void {
    this.refusal ??= err instanceof Error ? err : new Error(String(err));
  }

  /** Adds a well-formed answer (a second answer to one call is refused). */
  add(answer: Answer): void {
    if (this.answers.some((a) => a.callId === answer.callId)) {
      this.fail(invalidParams(`${answer.at}.tool_call_id: ${answer.callId} is answered twice in this message`));
      return;
    }
    if (answer.feedback !== undefined) {
      try {
        answer.feedback = checkFeedback(answer.feedback, `${answer.at}.feedback`);
      } catch (err) {
        this.fail(err);
      }
    }
    this.answers.push(answer);
  }
}

/** Reads one DataPart of a message; returns false when it is not an answer of this dialect. */
export type ReadData = (data: unknown, at: string, reading: PartReading) => boolean;

export interface DecoderOptions {
  schema: DevtoolSchema;
  /** The MCP layer's check of client-given server configs (a message naming the problem, or undefined). */
  checkServers: (servers: NonNullable<ContextSettings['mcpServers']>, at: string) => string | undefined;
  /** Where clients may put workspaces. */
  workspacePolicy?: WorkspacePolicy;
}

/** The settings, read now; an error is kept for the router to throw at its step. */
export function decodeSettings(read: () => RequestedSettings | undefined): DecodedSettings {
  try {
    return { ok: true, value: read() };
  } catch (err) {
    return { ok: false, error: err instanceof Error ? err : new Error(String(err)) };
  }
}

/**
 * The one walk over a message's parts, shared by both dialects: `readData` reads the dialect's
 * answers; text and other data go to the model.
 */
export function decodeMessage(message: Message, dialect: WireDialect, settings: DecodedSettings, readData: ReadData): Intent {
  const texts: string[] = [];
  const data: ModelPart[] = [];
  const reading = new PartReading();
  message.parts.forEach((p, index) => {
    if (p.content?.$case === 'text') {
      if (p.content.value !== '') texts.push(p.content.value);
    } else if (p.content?.$case === 'data') {
      data.push({ text: JSON.stringify(p.content.value) });
      readData(p.content.value, `message.parts[${index}].data`, reading);
    }
  });
  const text = texts.join('\n');
  const modelParts = text ? [{ text }, ...data] : data;
  const base = { message, settings, parts: modelParts.length > 0 ? modelParts : [{ text: '(empty message)' }] };
  if (!message.taskId) {
    const refusal = reading.answerLike
      ? invalidParams('message.taskId is required to answer a tool call (the answer names no task)')
      : undefined;
    return { kind: 'new-task', dialect, ...base, ...(refusal ? { refusal } : {}) };
  }
  const trimmed = text.trim();
  const { answers, yesNo } = reading;
  if (answers.length > 0 && yesNo)
    reading.fail(invalidParams(`${yesNo.at}: send either ToolCallConfirmations or a yes/no answer, not both`));
  if (answers.length > 0 && reading.refusal === undefined) {
    try {
      attachTextFeedback(answers, trimmed, (answers[0] as Answer).at);
    } catch (err) {
      reading.fail(err);
    }
  }
  if (reading.refusal !== undefined || answers.length > 0) {
    return { kind: 'answers', ...base, answers, ...(reading.refusal ? { refusal: reading.refusal } : {}) };
  }
  const token = yesNo?.token ?? trimmed;
  if (token === 'yes' || token === 'no') {
    return { kind: 'yes-no', ...base, token, option: YES_NO.get(token) as string, ...(yesNo ? { at: yesNo.at } : {}), text: trimmed };
  }
  return { kind: 'follow-up', ...base };
}

/** The RFC's answers: a ToolCallConfirmation, or a `{"confirmation": "yes"|"no"}`. */
export function readRfcData(schema: DevtoolSchema, data: unknown, at: string, reading: PartReading): boolean {
  const confirmation = schema.looksLikeToolCallConfirmation(data);
  if (!confirmation && isObject(data) && 'confirmation' in data) {
    reading.answerLike = true;
    const token = typeof data.confirmation === 'string' ? data.confirmation.trim() : '';
    if (token === 'yes' || token === 'no') reading.yesNo = { token, at };
    else reading.fail(invalidParams(`${at}.confirmation must be "yes" or "no"`));
    return true;
  }
  if (!confirmation) return false;
  reading.answerLike = true;
  const parsed = schema.parseToolCallConfirmation(data, at);
  if (!parsed.ok) {
    reading.fail(invalidParams(parsed.message));
    return true;
  }
  const { tool_call_id: callId, selected_option_id: option, new_content: editedContent, feedback } = parsed.value;
  reading.add({
    callId,
    option,
    at,
    ...(editedContent !== undefined ? { editedContent } : {}),
    ...(feedback !== undefined ? { feedback } : {}),
  });
  return true;
}

export class RfcDecoder implements WireDecoder {
  readonly dialect = 'rfc' as const;

  constructor(private readonly opts: DecoderOptions) {}

  decode(message: Message): Intent {
    const settings = decodeSettings(() => this.settings(message.metadata));
    return decodeMessage(message, this.dialect, settings, (data, at, reading) => readRfcData(this.opts.schema, data, at, reading));
  }

  settings(metadata: Record<string, unknown> | undefined, at?: string): RequestedSettings | undefined {
    const { schema, checkServers, workspacePolicy } = this.opts;
    return readSettings(metadata, schema, checkServers, at, workspacePolicy);
  }
}
