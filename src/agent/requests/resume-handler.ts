/**
 * The resume handler (RFC §3.2 "Client-to-Agent Messages"): several answers per message, in any order;
 * only exact yes/no tokens authorize or decline.
 * A message to a paused task is read as answers to its pending tool calls:
 * ToolCallConfirmation DataParts (one or several), a `{"confirmation":"yes"|"no"}` DataPart,
 * or the exact text token `yes` / `no` when exactly one call waits. Anything else re-prompts.
 * An answer may carry the user's feedback for the model (protocol/answer-feedback.ts): in its DataPart,
 * or as the message's text beside a single answer.
 *
 * The message arrives decoded (wire/wire-decoder.ts: its answers, checked on their own);
 * `planResume` only reads and throws `invalidParams` before anything changes, so a bad
 * answer leaves the task waiting. `applyResume` judges what the answers grant (off the event
 * loop: a shell line's paths are probed on disk), then claims every answered call in the store
 * at once, all or none, so the same call can never run twice; what follows a won claim runs
 * without an await.
 */
import type { Message } from '@a2a-js/sdk';
import { attachTextFeedback } from '../../protocol/answer-feedback.js';
import { invalidParams, unsupported } from '../../protocol/errors.js';
import { ConfirmationOptionId } from '../../protocol/extension.js';
import type { LiveTask, TurnCall } from '../runtime/live-task.js';
import { needsApproval } from '../policy/approval-policy.js';
import { answerGrants, applyEdit, approveCall, declineCall } from '../runtime/call-lifecycle.js';
import { repromptTask, resumeWorking } from '../runtime/task-lifecycle.js';
import type { TurnLoop } from '../runtime/turn-loop.js';
import type { Answer, TaskIntent } from '../wire/wire-decoder.js';
import { PAUSED } from '../wire/agent-events.js';

export interface Decision {
  call: TurnCall;
  /** The card the answer named, as the copy showed it when the answer was read (a re-proposal gives the call a new one). */
  shown: { id: string; hash?: string };
  option: string;
  newContent?: string;
  /** The user's note on this answer, for the model. */
  feedback?: string;
}

export type ResumePlan = { kind: 'decisions'; decisions: Decision[] } | { kind: 'reprompt'; reason: string };

function describeAnswered(call: TurnCall): string {
  const id = call.snapshot.id;
  if (call.answer === undefined) return `tool call ${id} needed no answer (it ran without asking; status ${call.snapshot.status})`;
  if (call.phase === 'ready') {
    return `tool call ${id} was already answered (${call.answer}): it runs on that answer, or fails as interrupted if that run was lost; tasks/resubscribe follows it`;
  }
  return `tool call ${id} was already answered (${call.answer}; status ${call.snapshot.status})`;
}

/** Finds the call an answer names and checks the chosen option. Throws invalidParams. */
function decide(task: LiveTask, known: KnownCalls, answer: Omit<Answer, 'feedback'>): Decision {
  const { at, callId: id, editedContent: newContent } = answer;
  const call = known.get(id);
  const waiting = task.awaiting();
  if (call === undefined) {
    const pending =
      waiting.length > 0 ? `waiting: ${waiting.map((c) => c.snapshot.id).join(', ')}` : `it is not waiting for any; state ${task.state}`;
    throw invalidParams(`${at}.tool_call_id: task ${task.id} has no tool call "${id}" (${pending})`);
  }
  if (call.phase !== 'awaiting') throw invalidParams(`${at}.tool_call_id: ${describeAnswered(call)}`);
  const offered = call.snapshot.confirmation?.options.map((o) => o.id) ?? [];
  let option = answer.option;
  if (!offered.includes(option) && answer.orOffered !== undefined && offered.includes(answer.orOffered)) option = answer.orOffered;
  if (!offered.includes(option)) {
    throw invalidParams(`${at}.selected_option_id: "${option}" was not offered for ${id} (offered: ${offered.join(', ')})`);
  }
  if (option === ConfirmationOptionId.modifyWithEditor && newContent === undefined) {
    throw invalidParams(`${at}.file_details.new_content: modify_with_editor needs the edited content`);
  }
  if (option !== ConfirmationOptionId.modifyWithEditor && newContent !== undefined) {
    throw invalidParams(`${at}.file_details: modified content is only accepted with selected_option_id "modify_with_editor"`);
  }
  return { call, shown: { id, hash: call.shownHash }, option, newContent };
}

/** Calls a message may name: the current turn's, plus earlier ones it names (loaded by the caller). */
export type KnownCalls = ReadonlyMap<string, TurnCall>;

/**
 * Reads a decoded message sent to a task with waiting calls against those calls (the message
 * itself was checked by its decoder). Throws invalidParams; changes nothing.
 */
export function planResume(task: LiveTask, intent: TaskIntent, known: KnownCalls): ResumePlan {
  if (intent.kind === 'answers') {
    if (intent.refusal) throw intent.refusal;
    return {
      kind: 'decisions',
      decisions: intent.answers.map((answer) => {
        const decision = decide(task, known, answer);
        if (answer.feedback !== undefined) decision.feedback = answer.feedback;
        return decision;
      }),
    };
  }
  if (intent.kind === 'follow-up') return { kind: 'reprompt', reason: 'That reply is not an answer to the waiting tool call.' };
  const waiting = task.awaiting();
  if (waiting.length !== 1)
    return { kind: 'reprompt', reason: `"${intent.token}" is ambiguous: ${waiting.length} tool calls are waiting.` };
  const only = (waiting[0] as TurnCall).snapshot.id;
  const decision = decide(task, known, { callId: only, option: intent.option, at: 'message' });
  // Beside a {"confirmation": …} DataPart, the text is that answer's feedback; a text token is the answer itself.
  if (intent.at !== undefined) attachTextFeedback([decision], intent.text, intent.at);
  return { kind: 'decisions', decisions: [decision] };
}

/** Each answered call's answer, with the grant keys it adds (judged before the claim: {@link answerGrants}). */
type Answers = Map<TurnCall, { option: string; newContent?: string; feedback?: string; grants: string[] }>;

/** The decisions, plus the waiting calls that an "always" answer among them covers (they run too). */
async function withCoveredSiblings(task: LiveTask, decisions: Decision[]): Promise<Answers> {
  const answers: Answers = new Map();
  const grants = new Set(task.context.trustedTools);
  let granting: string | undefined;
  for (const { call, option, newContent, feedback } of decisions) {
    const adds = await answerGrants(task, call, option);
    answers.set(call, { option, newContent, feedback, grants: adds });
    for (const g of adds) {
      grants.add(g);
      granting ??= option;
    }
  }
  if (granting === undefined) return answers;
  const scope = {
    settings: task.context.settings,
    trustedTools: grants,
    workspace: task.context.workspace,
    confined: task.context.confined,
  };
  for (const sibling of task.awaiting()) {
    if (answers.has(sibling) || !sibling.tool || !sibling.args || (await needsApproval(sibling.tool, sibling.args, scope))) continue;
    answers.set(sibling, { option: granting, grants: await answerGrants(task, sibling, granting) });
  }
  return answers;
}

/**
 * Edited arguments (modify_with_editor), prepared on copies: they only become the call's once
 * the claim is won, so a losing answer cannot change what the winning one runs.
 */
function editedArgs(answers: Answers): Map<TurnCall, { args: Record<string, unknown>; snapshot: TurnCall['snapshot'] }> {
  const edited = new Map<TurnCall, { args: Record<string, unknown>; snapshot: TurnCall['snapshot'] }>();
  for (const [call, { option, newContent }] of answers) {
    if (option === ConfirmationOptionId.modifyWithEditor && call.tool?.withModifiedContent && call.args) {
      const args = call.tool.withModifiedContent(call.args, newContent as string);
      edited.set(call, { args, snapshot: { ...call.snapshot, input: { ...call.snapshot.input, ...args } } });
    }
  }
  return edited;
}

/**
 * Carries out a plan. The answers are claimed in the store first (all or none): of two
 * answers to one call, on any process, one wins; the loser gets the same error as any
 * second answer, before its stream starts. Resolves once the claim is decided (the approved
 * calls then run detached) with the seq after which the events of this message begin.
 *
 * A re-prompt re-sends the waiting cards and the pause only while the store still has those
 * calls waiting (TaskStore.commitWhileAwaiting): this copy of the task may be stale — another
 * answer, on any process, may have claimed a call since it was loaded — and a card shown as
 * waiting over a call that runs, or a pause over a task that ended, would mislead every
 * reader and end the winner's stream. Such a message is refused like any message to a working
 * task (-32004), and nothing changes.
 *
 * Answers to one copy are decided one at a time (LiveTask.answering): a second answer waits for
 * the first one's claim, then is judged on what it did.
 */
export function applyResume(
  task: LiveTask,
  plan: ResumePlan,
  loop: TurnLoop,
  message: Message,
  principal: string | undefined,
  claimer: Claimer,
): Promise<number> {
  // One answer at a time on a copy: this one is judged once every answer before it was decided.
  return task.answering(() =>
    plan.kind === 'reprompt' ? reprompt(task, plan.reason, message) : answer(task, plan.decisions, loop, message, principal, claimer),
  );
}

async function reprompt(task: LiveTask, reason: string, message: Message): Promise<number> {
  const changed = () =>
    new CopyBehind(
      unsupported(
        `Task ${task.id} changed while this message was applied (a waiting call was answered, or another message reached the task, meanwhile); send it again`,
      ),
    );
  if (task.halted) throw changed();
  // Read once the answers before it were decided: only a copy that waits for a person, with nothing
  // of it running here, is re-prompted (a pause logged over a running call would end its answer's stream).
  if (!PAUSED.has(task.state) || !task.idle || task.awaiting().length === 0) {
    const waiting = task.awaiting().map((c) => c.snapshot.id);
    const answerable = waiting.length > 0 ? ` (answer the waiting ${waiting.join(', ')} with a ToolCallConfirmation)` : '';
    throw unsupported(`Task ${task.id} is still working; send the next message after it pauses or completes, or cancel it${answerable}`);
  }
  const seqs = await repromptTask(task, reason, message);
  if (seqs === undefined) {
    task.stopBehind(`a re-prompt of task ${task.id} found its waiting calls answered elsewhere`);
    throw changed();
  }
  return (seqs[0] ?? 1) - 1;
}

async function answer(
  task: LiveTask,
  decisions: Decision[],
  loop: TurnLoop,
  message: Message,
  principal: string | undefined,
  claimer: Claimer,
): Promise<number> {
  const answers = await withCoveredSiblings(task, decisions);
  // Judged with awaits, after the answers before this one: one of them may have taken a call, or
  // stopped the copy — or its run re-proposed a call (its file changed): the new card, under a
  // new id, was shown to nobody who answered here.
  const reproposed = decisions.filter((d) => d.call.snapshot.id !== d.shown.id || d.call.shownHash !== d.shown.hash).map((d) => d.shown.id);
  const taken = [...answers.keys()].filter((c) => c.phase !== 'awaiting').map((c) => c.snapshot.id);
  if (reproposed.length > 0 || taken.length > 0) throw answeredFirst([...new Set([...reproposed, ...taken])]);
  if (task.halted) throw new CopyBehind(unsupported(`Task ${task.id} changed while this answer was decided; send it again`));
  const edited = editedArgs(answers);
  // The copy applies the answer ahead of its claim only when nothing else runs in it: a claim not
  // won stops the copy, which must not stop a call or a model step another answer started. And
  // an "always" grant changes the context every task of it here shares: granted only once won.
  const idle = task.idle;
  const ahead = idle && [...answers.values()].every((a) => a.grants.length === 0);
  const terms = {
    claims: [...answers].map(([call, { option }]) => {
      const e = edited.get(call);
      // The card this copy showed: a call re-proposed meanwhile is not approved by an answer to its earlier card.
      const shown = call.shownHash !== undefined ? { shownHash: call.shownHash } : {};
      return { id: call.snapshot.id, answer: option, args: e?.args ?? call.args, snapshot: e?.snapshot ?? call.snapshot, ...shown };
    }),
    owner: claimer.owner,
    leaseUntil: claimer.leaseUntil(),
    // A copy kept since it paused may be behind the store: its last seq is checked. One that runs
    // a call here is this process's own, but its last seq trails that call's writes in flight.
    ...(claimer.checkSeq && idle ? { expectSeq: task.lastSeq } : {}),
  };
  // Ahead: the claim travels with what the answer writes (up to the first approved call's
  // EXECUTING card), one statement or nothing at all. Else the claim goes alone, first.
  const decided = ahead ? task.claimWithNextCommit(terms) : task.claimAlone(terms);
  const named = new Set(decisions.map((d) => d.call));
  if (ahead) {
    try {
      startApproved(task, answers, named, edited, message, principal, loop);
    } catch (err) {
      task.dropClaim(err);
    }
  }
  const result = await decided;
  if (!result.ok && result.behind !== undefined) {
    // Unchanged by a claim that went alone, but behind: stopped, so the router's retry (and any
    // answer queued on it) reads the task afresh instead of claiming on it without the seq check.
    if (terms.expectSeq !== undefined)
      task.stopBehind(`the answer's claim found task ${task.id} at seq ${result.behind}, not ${terms.expectSeq}`);
    throw new CopyBehind(unsupported(`Task ${task.id} changed while this answer was decided; send it again`));
  }
  if (!result.ok) throw answeredFirst(result.notAwaiting);
  countAnswered(task, answers);
  if (ahead) return result.lastSeq;
  // The claim is won: from here on a failure must fail the task (its calls are no longer waiting).
  // What the store logged before the claim (another instance's reminder of this pause) is behind
  // this copy now: its writes follow it (they are checked against the last seq the copy knows).
  task.lastSeq = Math.max(task.lastSeq, result.lastSeq);
  try {
    startApproved(task, answers, named, edited, message, principal, loop);
  } catch (err) {
    task.releaseWrites();
    loop.fail(task, 'applying the answers', err);
  }
  return result.lastSeq;
}

/** Each answered card's flow ended: counted once the answer's claim is won (a losing answer closed nothing). */
function countAnswered(task: LiveTask, answers: Answers): void {
  for (const [call, { option }] of answers) {
    task.metrics.cardClosed(call.snapshot.id, option === ConfirmationOptionId.cancel ? 'declined' : 'approved', call.proposedAt);
  }
}

function startApproved(
  task: LiveTask,
  answers: ReadonlyMap<TurnCall, { option: string; feedback?: string; grants: readonly string[] }>,
  named: ReadonlySet<TurnCall>,
  edited: ReadonlyMap<TurnCall, { args: Record<string, unknown>; snapshot: TurnCall['snapshot'] }>,
  message: Message,
  principal: string | undefined,
  loop: TurnLoop,
): void {
  if (task.halted) return; // canceled (or failed) while the claim was decided: nothing runs
  task.holdWrites(); // until the first approved call's EXECUTING card: one commit, the claim's when it waits (runApproved releases)
  for (const [call, e] of edited) applyEdit(call, e);
  task.addUserMessage(message);
  resumeWorking(task);
  const toRun: TurnCall[] = [];
  for (const [call, { option, feedback, grants }] of answers) {
    if (option === ConfirmationOptionId.cancel) {
      declineCall(task, call, { principal, feedback, answer: option });
      continue;
    }
    approveCall(task, call, option, principal, feedback, { covered: !named.has(call), grants });
    toRun.push(call);
  }
  loop.runApproved(task, toRun);
}

/**
 * This process's copy of the task was behind the store (it was kept in memory while another
 * process moved the task on), so nothing of the message was applied: the router reads the task
 * afresh and decides once more. `answer` is what the client is told if the fresh copy is behind too.
 */
export class CopyBehind extends Error {
  constructor(readonly answer: Error) {
    super(`the task's copy in memory was behind the store: ${answer.message}`);
    this.name = 'CopyBehind';
  }
}

/** The refusal of an answer to calls another answer took first (here, or in the store). */
function answeredFirst(callIds: string[]): Error {
  return invalidParams(`tool call ${callIds.join(', ')} was already answered (another answer arrived first)`);
}

/** Who claims the answered calls (this process), until when, and whether the claim checks the copy's last seq. */
export interface Claimer {
  owner: string;
  leaseUntil: () => Date;
  /** The claim is refused (CopyBehind) when the task's stored last seq is not the copy's. */
  checkSeq: boolean;
}
