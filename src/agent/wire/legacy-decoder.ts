/**
 * The legacy dialect, inbound (gemini-cli's a2a-server): an answer is a DataPart
 * `{callId, outcome, newContent?}` per answered call; the RFC's answers are read too. Settings
 * are `coderAgent` agent-settings in the message metadata (beside any RFC AgentSettings). Where
 * that server hangs the stream (an unknown outcome, a malformed answer) this one refuses with
 * INVALID_PARAMS before anything changes.
 *
 * - `newContent` with `proceed_once` is that server's one-click inline edit; with
 *   `modify_with_editor` it is the edited content (this server never opens an editor): both are
 *   `modify_with_editor` here, and the edited content is what gets written.
 * - `proceed_always_tool` / `proceed_always_server` on a built-in tool act as `proceed_always`.
 * - `proceed_always_and_save` (newer gemini-cli clients: "allow always, and keep it") acts as
 *   `proceed_always` (`proceed_always_tool` on an MCP tool): the grant is kept for the
 *   conversation, in the store, like every "always" grant here (never in a settings file).
 * - `feedback` (this server's addition; that server has no place for it) is the user's note for the
 *   model, as in a ToolCallConfirmation; a text part beside a single answer is its feedback too.
 */
import type { Message } from '@a2a-js/sdk';
import { invalidParams } from '../../protocol/errors.js';
import { ConfirmationOptionId } from '../../protocol/extension.js';
import { readLegacySettings } from '../policy/settings.js';
import type { RequestedSettings } from '../policy/settings.js';
import { isObject } from '../../lib/is-object.js';
import { decodeMessage, decodeSettings, readRfcData, RfcDecoder } from './rfc-decoder.js';
import type { DecoderOptions, PartReading } from './rfc-decoder.js';
import type { Answer, Intent, WireDecoder } from './wire-decoder.js';

/** Newer gemini-cli clients' "allow always, and keep it". */
const ALWAYS_AND_SAVE = 'proceed_always_and_save';
const OUTCOMES: ReadonlySet<string> = new Set([...Object.values(ConfirmationOptionId), ALWAYS_AND_SAVE]);
const ALWAYS_MCP: ReadonlySet<string> = new Set([ConfirmationOptionId.proceedAlwaysTool, ConfirmationOptionId.proceedAlwaysServer]);

/** The option an outcome is read as, and the one taken instead when that is not offered. */
function optionOf(outcome: string): { option: string; orOffered?: string } {
  if (outcome === ALWAYS_AND_SAVE) return { option: ConfirmationOptionId.proceedAlways, orOffered: ConfirmationOptionId.proceedAlwaysTool };
  return ALWAYS_MCP.has(outcome) ? { option: outcome, orOffered: ConfirmationOptionId.proceedAlways } : { option: outcome };
}

/** True for a DataPart object shaped like a legacy answer (it has a callId or an outcome). */
export function looksLikeLegacyAnswer(data: unknown): data is Record<string, unknown> {
  return isObject(data) && (Object.hasOwn(data, 'callId') || Object.hasOwn(data, 'outcome'));
}

/** One legacy answer. Throws invalidParams naming the field. */
export function legacyAnswer(data: Record<string, unknown>, at: string): Answer {
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
    callId,
    ...(newContent !== undefined ? { option: ConfirmationOptionId.modifyWithEditor } : optionOf(outcome)),
    at,
    ...(newContent !== undefined ? { editedContent: newContent } : {}),
    // An empty note is no note, as in a ToolCallConfirmation.
    ...(feedback !== undefined && feedback !== '' ? { feedback } : {}),
  };
}

export class LegacyDecoder implements WireDecoder {
  readonly dialect = 'legacy' as const;
  private readonly rfc: RfcDecoder;

  constructor(private readonly opts: DecoderOptions) {
    this.rfc = new RfcDecoder(opts);
  }

  decode(message: Message): Intent {
    const settings = decodeSettings(() => this.settings(message.metadata));
    return decodeMessage(message, this.dialect, settings, (data, at, reading) => this.readData(data, at, reading));
  }

  private readData(data: unknown, at: string, reading: PartReading): boolean {
    if (!looksLikeLegacyAnswer(data)) {
      const before = reading.answers.length;
      const read = readRfcData(this.opts.schema, data, at, reading);
      // A ToolCallConfirmation in a legacy task may use that server's "always" options too.
      const added = reading.answers.length > before ? reading.answers.at(-1) : undefined;
      if (added && isObject(data) && typeof data.tool_call_id === 'string' && ALWAYS_MCP.has(added.option)) {
        added.orOffered = ConfirmationOptionId.proceedAlways;
      }
      return read;
    }
    reading.answerLike = true;
    try {
      reading.add(legacyAnswer(data, at));
    } catch (err) {
      reading.fail(err);
    }
    return true;
  }

  /** The RFC's AgentSettings, with the `coderAgent` agent-settings over them. */
  settings(metadata: Record<string, unknown> | undefined, at?: string): RequestedSettings | undefined {
    const rfc = this.rfc.settings(metadata, at);
    const legacy = readLegacySettings(metadata?.coderAgent, undefined, this.opts.workspacePolicy);
    if (legacy === undefined || rfc === undefined) return legacy ?? rfc;
    return { workspace: legacy.workspace ?? rfc.workspace, settings: { ...rfc.settings, ...legacy.settings } };
  }
}
