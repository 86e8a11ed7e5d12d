/**
 * Pauses that describe their expected answer (A2A TaskState INPUT_REQUIRED / AUTH_REQUIRED;
 * development-tool RFC §3.2 "Client-to-Agent Messages"). Every pause event carries an
 * `inputSchema`: the JSON Schema (draft 2020-12) of the data of each DataPart the answer may
 * hold, a ToolCallConfirmation in proto field names. The resume handler (requests/resume-handler.ts)
 * accepts exactly the ToolCallConfirmations this schema accepts; test/unit/agent/pause-schema.test.ts
 * holds the two to each other.
 *
 * A pause is `auth-required` instead of `input-required` when authentication is on and the
 * task's principal lacks an approver role (policy/access.ts): it can then only decline, so the
 * schema offers `cancel` alone and the text names the role that approving needs.
 */
import { ConfirmationOptionId } from '../../protocol/extension.js';
import { FEEDBACK_PATTERN, MAX_FEEDBACK_CHARS } from '../../protocol/answer-feedback.js';
import type { AgentEvent, ToolCallSnapshot } from '../wire/agent-events.js';
import { pausePrompt } from './call-lifecycle.js';
import type { LiveTask, TurnCall } from './live-task.js';

/** The JSON Schema dialect of every `inputSchema`. */
export const INPUT_SCHEMA_DIALECT = 'https://json-schema.org/draft/2020-12/schema';

type Schema = Record<string, unknown>;
type Waiting = ReadonlyArray<Pick<TurnCall, 'snapshot'>>;

const MODIFY = ConfirmationOptionId.modifyWithEditor;

/** The optional note for the model that any answer may carry (protocol/answer-feedback.ts checks the same). */
const FEEDBACK: Schema = {
  type: 'string',
  maxLength: MAX_FEEDBACK_CHARS,
  pattern: FEEDBACK_PATTERN,
  description: 'Optional: a note for the model — why a call is declined, or what to keep in mind with its result.',
};

function confirmation(id: string, option: Schema, extra: Schema = {}, required: string[] = []): Schema {
  return {
    type: 'object',
    properties: { tool_call_id: { const: id }, selected_option_id: option, ...extra, feedback: FEEDBACK },
    required: ['tool_call_id', 'selected_option_id', ...required],
    additionalProperties: false,
  };
}

/** The accepted answers to one call: its offered options; edited content only with modify_with_editor. */
function callBranches(call: ToolCallSnapshot, declineOnly: boolean): Schema[] {
  const offered = (call.confirmation?.options ?? []).map((o) => o.id);
  const options = declineOnly ? offered.filter((o) => o === ConfirmationOptionId.cancel) : offered;
  const plain = options.filter((o) => o !== MODIFY);
  const branches: Schema[] = [];
  if (plain.length > 0) branches.push(confirmation(call.id, { enum: plain }));
  if (options.includes(MODIFY)) {
    const fileDetails = {
      type: 'object',
      properties: { new_content: { type: 'string' } },
      required: ['new_content'],
      additionalProperties: false,
    };
    branches.push(confirmation(call.id, { const: MODIFY }, { file_details: fileDetails }, ['file_details']));
  }
  return branches;
}

/**
 * The schema of one ToolCallConfirmation answering one of `waiting`: a `oneOf` with a branch per
 * call (and per modify_with_editor), plus top-level enums for clients that only read those.
 * `declineOnly` (auth-required) offers `cancel` alone.
 */
export function answerSchema(waiting: readonly ToolCallSnapshot[], declineOnly = false): Schema {
  const branches = waiting.flatMap((c) => callBranches(c, declineOnly));
  const ids = waiting.map((c) => c.id);
  const options = [...new Set(branches.flatMap((b) => optionsOf(b)))];
  return {
    $schema: INPUT_SCHEMA_DIALECT,
    title: 'ToolCallConfirmation',
    description:
      'The data of each DataPart of the answer: one ToolCallConfirmation (proto field names) per waiting call it answers. ' +
      'A single waiting call may also be answered with the text "yes" or "no". ' +
      'A text part beside a single confirmation is its feedback.',
    type: 'object',
    properties: { tool_call_id: { enum: ids }, selected_option_id: { enum: options } },
    required: ['tool_call_id', 'selected_option_id'],
    oneOf: branches,
  };
}

function optionsOf(branch: Schema): string[] {
  const option = (branch.properties as { selected_option_id: { enum?: string[]; const?: string } }).selected_option_id;
  return option.enum ?? (option.const !== undefined ? [option.const] : []);
}

/** True when the task's pause must be `auth-required`: its principal may not approve. */
export function approvalBlocked(task: Pick<LiveTask, 'pauseAuthority' | 'state'>): boolean {
  return task.pauseAuthority ? !task.pauseAuthority.mayApprove : task.state === 'auth-required';
}

/** The pause event for `waiting` calls; `lead` (a re-prompt's reason, a reminder) goes before the prompt. */
export function pauseEvent(task: Pick<LiveTask, 'pauseAuthority' | 'state'>, waiting: Waiting, lead?: string): AgentEvent {
  const blocked = approvalBlocked(task);
  const snapshots = waiting.map((c) => c.snapshot);
  const prompt = blocked ? authPrompt(waiting, task.pauseAuthority?.approverRoles ?? []) : pausePrompt(waiting);
  return {
    type: 'state',
    state: blocked ? 'auth-required' : 'input-required',
    text: lead ? `${lead} ${prompt}` : prompt,
    inputSchema: answerSchema(snapshots, blocked),
  };
}

function authPrompt(waiting: Waiting, roles: readonly string[]): string {
  const list = waiting.map((c) => `${c.snapshot.toolName} (${c.snapshot.id})`).join('; ');
  const role = roles.length > 0 ? `role ${roles.join(' or ')}` : 'an approver role';
  return (
    `Waiting for approval of ${waiting.length === 1 ? 'a tool call' : `${waiting.length} tool calls`}: ${list}. ` +
    `Approving needs ${role}, which this task's principal does not have: answer with a credential carrying it, ` +
    `or decline with selected_option_id "cancel" (or "no") and the task goes on without the call.`
  );
}
