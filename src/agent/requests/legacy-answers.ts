/**
 * Answers in the legacy dialect (gemini-cli's a2a-server): a DataPart `{callId, outcome, newContent?}`
 * per answered call. They are rewritten into the RFC's ToolCallConfirmations, so one resume handler
 * (claims, audit, several answers at once) serves both dialects. Where that server hangs the stream
 * (an unknown outcome, a malformed answer) this one refuses with INVALID_PARAMS before anything changes.
 *
 * - `newContent` with `proceed_once` is that server's one-click inline edit; with
 *   `modify_with_editor` it is the edited content (this server never opens an editor): both are
 *   `modify_with_editor` here, and the edited content is what gets written.
 * - `proceed_always_tool` / `proceed_always_server` on a built-in tool act as `proceed_always`.
 * - `feedback` (this server's addition; that server has no place for it) is the user's note for the
 *   model, as in a ToolCallConfirmation; a text part beside a single answer is its feedback too.
 */
import type { Message, Part } from '@a2a-js/sdk';
import { dataPart } from '../../protocol/a2a.js';
import { invalidParams } from '../../protocol/errors.js';
import { ConfirmationOptionId } from '../../protocol/extension.js';
import type { KnownCalls } from './resume-handler.js';
import { isObject } from '../../lib/is-object.js';

const OUTCOMES: ReadonlySet<string> = new Set(Object.values(ConfirmationOptionId));

/** True for a DataPart object shaped like a legacy answer (it has a callId or an outcome). */
export function looksLikeLegacyAnswer(data: unknown): data is Record<string, unknown> {
  return isObject(data) && (Object.hasOwn(data, 'callId') || Object.hasOwn(data, 'outcome'));
}

/** One legacy answer as a ToolCallConfirmation (JSON). Throws invalidParams naming the field. */
function confirmationOf(data: Record<string, unknown>, at: string): Record<string, unknown> {
  const { callId, outcome, newContent, feedback } = data;
  if (typeof callId !== 'string' || callId === '') throw invalidParams(`${at}.callId must be the callId of a waiting tool call`);
  if (typeof outcome !== 'string' || !OUTCOMES.has(outcome)) {
    throw invalidParams(`${at}.outcome must be one of ${[...OUTCOMES].join(', ')} (got ${JSON.stringify(outcome ?? null)})`);
  }
  if (newContent !== undefined && typeof newContent !== 'string') throw invalidParams(`${at}.newContent must be a string`);
  if (feedback !== undefined && typeof feedback !== 'string') throw invalidParams(`${at}.feedback must be a string`);
  if (outcome === ConfirmationOptionId.modifyWithEditor && newContent === undefined) {
    throw invalidParams(`${at}.newContent: modify_with_editor needs the edited content (this server opens no editor)`);
  }
  if (newContent !== undefined && outcome !== ConfirmationOptionId.proceedOnce && outcome !== ConfirmationOptionId.modifyWithEditor) {
    throw invalidParams(`${at}.newContent is only accepted with outcome proceed_once or modify_with_editor`);
  }
  return {
    tool_call_id: callId,
    selected_option_id: newContent !== undefined ? ConfirmationOptionId.modifyWithEditor : outcome,
    ...(newContent !== undefined ? { file_details: { new_content: newContent } } : {}),
    ...(feedback !== undefined ? { feedback } : {}),
  };
}

/** The message with its legacy answers rewritten as ToolCallConfirmations. Throws invalidParams. */
export function fromLegacyAnswers(message: Message): Message {
  let changed = false;
  const parts = message.parts.map((p, index): Part => {
    const data: unknown = p.content?.$case === 'data' ? p.content.value : undefined;
    if (!looksLikeLegacyAnswer(data)) return p;
    changed = true;
    return dataPart(confirmationOf(data, `message.parts[${index}].data`));
  });
  return changed ? { ...message, parts } : message;
}

const ALWAYS_MCP: ReadonlySet<string> = new Set([ConfirmationOptionId.proceedAlwaysTool, ConfirmationOptionId.proceedAlwaysServer]);

/** `proceed_always_tool`/`_server` answers to calls that offer only `proceed_always` (built-in tools) become that. */
export function adaptLegacyOptions(message: Message, known: KnownCalls): Message {
  const parts = message.parts.map((p): Part => {
    const data: unknown = p.content?.$case === 'data' ? p.content.value : undefined;
    if (!isObject(data) || typeof data.tool_call_id !== 'string' || !ALWAYS_MCP.has(String(data.selected_option_id))) return p;
    const offered = known.get(data.tool_call_id)?.snapshot.confirmation?.options.map((o) => o.id) ?? [];
    if (offered.includes(String(data.selected_option_id)) || !offered.includes(ConfirmationOptionId.proceedAlways)) return p;
    return dataPart({ ...data, selected_option_id: ConfirmationOptionId.proceedAlways });
  });
  return { ...message, parts };
}
