/**
 * The one owner of a tool call's life. Every change of a call's phase and card happens
 * here, each with its event (the card, published through the task) and its audit entry:
 *
 *   propose ─┬─ needs no approval ─► ready ─► executing ─► done: SUCCEEDED | FAILED
 *            └─ awaiting ─┬─ approve ─► ready ─► …
 *                         └─ decline | expire | task canceled ─► done: CANCELLED
 *   ready ─► awaiting: judged again right before it runs (on the disk as the turn's earlier
 *            calls left it), it now needs a person, or the file its card's diff was computed
 *            from changed: a fresh card, and the old answer (if any) is void (rejudgeCall)
 *   any open call ─► interrupt (its process died) | the task failed ─► done: FAILED or CANCELLED
 *
 * A move the table does not allow is a bug and throws; a result that arrives after the call
 * was closed (cancelled while it ran) is dropped.
 */
import { createHash, randomUUID } from 'node:crypto';
import { ConfirmationOptionId } from '../../protocol/extension.js';
import { CALL_MOVES } from '../../protocol/task-states.js';
import { ToolFailure } from '../../tools/tool.js';
import type { AnyTool, ToolProposal, ToolResult } from '../../tools/tool.js';
import { grantsFor, needsApproval, optionsFor } from '../policy/approval-policy.js';
import { isToolConfigTarget } from '../policy/tool-config.js';
import { LiveOutputFeed } from './live-output.js';
import { CheckpointError } from './checkpoints.js';
import type { CallPhase, LiveTask, TurnCall } from './live-task.js';
import type { ModelContent, ModelFunctionCall, ModelPart } from '../model/model-client.js';
import { callTool, type ToolSet } from './toolbox.js';
import type { ToolCallSnapshot } from '../wire/agent-events.js';

function move(call: TurnCall, to: CallPhase): void {
  if (!CALL_MOVES[call.phase].includes(to)) throw new Error(`tool call ${call.snapshot.id} cannot move from ${call.phase} to ${to}`);
  call.phase = to;
}

/** Why a call was closed without running to its end, as the card's error type. */
export type DeclineType = 'declined' | 'cancelled' | 'approval_timeout';

const DECLINE_DECISION = { declined: 'declined', cancelled: 'cancelled', approval_timeout: 'expired' } as const;
/** How a waiting card's flow ended when it is closed this way (metrics). */
const DECLINE_OUTCOME = { declined: 'declined', cancelled: 'cancelled', approval_timeout: 'expired' } as const;

function responsePart(call: TurnCall, response: Record<string, unknown>): ModelPart {
  return { functionResponse: { id: call.modelCallId, name: call.snapshot.toolName, response } };
}

/**
 * A new call of the model's turn, PENDING; unknown tools and invalid arguments carry their error
 * already. A valid one is published as being validated (`call-step`) until its first card.
 * `byCommand`: the server's own command proposed it, and may name a command's own tool (ToolSet.commandTools).
 */
export async function proposeCall(
  task: LiveTask,
  fc: ModelFunctionCall,
  position: number,
  set: ToolSet,
  byCommand = false,
): Promise<TurnCall> {
  const input = fc.args ?? {};
  const call: TurnCall = {
    snapshot: { id: `tc_${randomUUID()}`, toolName: fc.name, status: 'PENDING', input },
    phase: 'ready',
    turn: task.turnNo,
    position,
    modelCallId: fc.id,
    proposedAt: new Date(),
  };
  const tool = byCommand ? callTool(set, fc.name) : set.byName.get(fc.name);
  if (tool === undefined) {
    const available = [...set.byName.keys()].join(', ');
    call.snapshot.error = { message: `Unknown tool "${fc.name}". Available tools: ${available}`, type: 'unknown_tool' };
    return call;
  }
  call.tool = tool;
  const checked = await tool.validate(input, { workspace: task.context.workspace });
  if (!checked.ok) {
    call.snapshot.error = checked.error;
    return call;
  }
  call.args = checked.args;
  call.snapshot.description = tool.describe(checked.args);
  // Valid: the policy decides next whether it waits for a person (a step its card does not show).
  task.publish({ type: 'call-step', step: 'validating', call: structuredClone(call.snapshot) });
  return call;
}

/**
 * Moves a proposed call to `awaiting` with its confirmation request when the context's
 * policy says a person must approve it. A proposal that cannot be prepared (the file to
 * replace in does not match) leaves the call to fail with that reason when it runs.
 */
export async function requestApproval(task: LiveTask, call: TurnCall, approvalTimeoutMs: number | undefined): Promise<void> {
  if (call.tool === undefined || call.args === undefined) return;
  if (!(await needsApproval(call.tool, call.args, task.context))) return;
  if (!(await prepareCard(task, call, call.tool, call.args))) return;
  call.phase = 'awaiting';
  call.shownHash = task.cardHash(call.snapshot);
  if (approvalTimeoutMs !== undefined) call.expiresAt = new Date(call.proposedAt.getTime() + approvalTimeoutMs);
}

/**
 * Sets the call's confirmation request, computed on the files as they are now (`computed`: a
 * proposal the caller has just made, not made again). False when the proposal cannot be
 * prepared: the call then carries the reason and fails when it runs.
 */
async function prepareCard(
  task: LiveTask,
  call: TurnCall,
  tool: AnyTool,
  args: Record<string, unknown>,
  computed?: ToolProposal,
): Promise<boolean> {
  try {
    const proposal =
      computed ??
      (tool.propose
        ? await tool.propose(args, { workspace: task.context.workspace })
        : { type: 'generic' as const, description: call.snapshot.description ?? tool.name });
    call.snapshot.confirmation = { options: await optionsFor(tool, args, task.context), proposal };
    return true;
  } catch (err) {
    call.snapshot.error =
      err instanceof ToolFailure
        ? err.error
        : { message: `Could not prepare ${tool.name}: ${(err as Error).message}`, type: 'proposal_failed' };
    call.args = undefined;
    return false;
  }
}

/**
 * Judges a ready call again right before it runs, on the disk as the turn's earlier calls left
 * it (what was judged when the turn was planned may no longer hold: a call before it may have
 * made a symlink, or changed the file an edit's card showed). True: the call runs (or fails
 * with the reason its arguments or card no longer hold). False: it went back to `awaiting` with
 * a fresh card (audited `re-proposed`) and waits for a person; an answer to its earlier card
 * is void.
 * - A call no person approved for its card (it needed no approval, or an "always" answer on
 *   another card covered it) has its file arguments checked again and the policy asked again.
 * - A call a person approved runs as approved, but an edit only over the content its diff was
 *   computed from.
 */
export async function rejudgeCall(task: LiveTask, call: TurnCall, approvalTimeoutMs: number | undefined): Promise<boolean> {
  const { tool, args } = call;
  if (tool === undefined || args === undefined) return true;
  if (call.approvedCard !== undefined && call.approvedCard === call.shownHash) {
    const stale = await staleEdit(task, call, tool, args);
    return stale === undefined ? true : reproposeCall(task, call, stale.reason, approvalTimeoutMs, stale.now);
  }
  if (tool.kind === 'edit') {
    const checked = await tool.validate(args, { workspace: task.context.workspace });
    if (!checked.ok) {
      call.snapshot.error = checked.error;
      call.args = undefined;
      return true;
    }
  }
  if (!(await needsApproval(tool, args, task.context))) return true;
  return reproposeCall(task, call, 'judged again before it ran, after the calls before it: it now needs approval', approvalTimeoutMs);
}

/**
 * Why an approved edit's card no longer shows what it would write (its file changed since), with
 * the proposal computed now (the fresh card, when there is one); undefined when the card holds.
 */
async function staleEdit(
  task: LiveTask,
  call: TurnCall,
  tool: AnyTool,
  args: Record<string, unknown>,
): Promise<{ reason: string; now?: ToolProposal } | undefined> {
  const shown = call.snapshot.confirmation?.proposal;
  if (shown?.type !== 'edit' || shown.change.baseHash === undefined || tool.propose === undefined) return undefined;
  let now: ToolProposal;
  try {
    now = await tool.propose(args, { workspace: task.context.workspace });
  } catch {
    return { reason: `${describeEdited(tool, args)} changed after the card was shown, and the edit no longer applies` };
  }
  if (now.type === 'edit' && now.change.baseHash === shown.change.baseHash) return undefined;
  return { reason: `${describeEdited(tool, args)} changed after the card was shown`, now };
}

function describeEdited(tool: AnyTool, args: Record<string, unknown>): string {
  return tool.editedPath?.(args) ?? tool.name;
}

/**
 * Moves a ready call back to `awaiting` with a card computed now, under a new id: its answer and
 * feedback are void, the store reopens it under this process's lease (TaskStore.reopenCall), the
 * old card is closed CANCELLED `superseded` (naming the new id), then the new card is published
 * and audited `re-proposed` with `reason`. A new id, because an answer names a call by id: a
 * repeated answer to the old card (a client's retry) must not approve a card nobody saw.
 * False (the call does not run here).
 */
async function reproposeCall(
  task: LiveTask,
  call: TurnCall,
  reason: string,
  approvalTimeoutMs: number | undefined,
  computed?: ToolProposal,
): Promise<boolean> {
  const { tool, args } = call;
  const previous = call.shownHash;
  const old = structuredClone(call.snapshot);
  delete call.snapshot.confirmation;
  if (tool === undefined || args === undefined || !(await prepareCard(task, call, tool, args, computed))) return true; // fails with the reason
  move(call, 'awaiting');
  delete call.answer;
  delete call.feedback;
  delete call.approvedCard;
  call.snapshot.id = `tc_${randomUUID()}`;
  call.shownHash = task.cardHash(call.snapshot);
  if (approvalTimeoutMs !== undefined) call.expiresAt = new Date(Date.now() + approvalTimeoutMs);
  else delete call.expiresAt;
  if (!(await task.reopen(call, old.id))) {
    call.snapshot.id = old.id;
    call.elsewhere = true; // the store does not have it ready under this process's lease: not this copy's to run
    return false;
  }
  const superseded = { message: `Replaced by a new card (${call.snapshot.id}): ${reason}`, type: 'superseded' };
  const { confirmation: _shown, ...closed } = old;
  task.publish({ type: 'tool-call', call: { ...closed, status: 'CANCELLED', error: superseded } });
  task.publish({ type: 'call-step', step: 'validating', call: structuredClone(call.snapshot) });
  task.publishCall(call);
  task.metrics.cardShown(call.snapshot.id);
  const detail = { reason, previousToolCallId: old.id, ...(previous !== undefined ? { previousShownHash: previous } : {}) };
  task.audit({ toolCallId: call.snapshot.id, decision: 're-proposed', shownHash: call.shownHash, detail });
  return false;
}

/** Publishes a new call's first card; a call that waits is audited as proposed, with the hash of what was shown. */
export function showCall(task: LiveTask, call: TurnCall): void {
  task.publishCall(call);
  if (call.phase !== 'awaiting') return;
  task.audit({ toolCallId: call.snapshot.id, decision: 'proposed', shownHash: call.shownHash });
  task.metrics.cardShown(call.snapshot.id);
}

/**
 * The grant keys `option` adds when it answers `call`, judged now (a shell line's paths probed off
 * the event loop). Asked before the answer is claimed, so that {@link approveCall}, which runs
 * right after the claim is won, needs no await.
 */
export async function answerGrants(task: LiveTask, call: TurnCall, option: string): Promise<string[]> {
  return call.tool && call.args ? grantsFor(call.tool, call.args, option, task.context) : [];
}

/** True for the answers that may grant something ("always" answers): {@link approveCall} needs their grants. */
const mayGrant = (option: string): boolean =>
  option === ConfirmationOptionId.proceedAlways ||
  option === ConfirmationOptionId.proceedAlwaysTool ||
  option === ConfirmationOptionId.proceedAlwaysServer;

/**
 * A person approved `call` with `option` (already claimed in the store): audited, "always" grants kept, ready to run.
 * `covered`: the answer named another call, whose "always" grant covers this one.
 * `grants`: what the answer adds ({@link answerGrants}); an "always" answer must bring them.
 * Their `feedback`, if any, is audited with the answer and goes to the model with the call's result.
 */
export function approveCall(
  task: LiveTask,
  call: TurnCall,
  option: string,
  principal: string | undefined,
  feedback?: string,
  how: { covered?: boolean; grants?: readonly string[] } = {},
): void {
  // A programming error, caught before anything changes: an "always" answer approved without its grants would grant nothing.
  if (how.grants === undefined && mayGrant(option)) throw new Error(`approveCall: the "${option}" answer needs its grants (answerGrants)`);
  move(call, 'ready'); // its card's flow is counted by the resume handler, once the answer's claim is won
  call.answer = option;
  // Approved and next to run: a step its card does not show (it stays PENDING until it runs).
  const { confirmation: _asked, ...approved } = call.snapshot;
  task.publish({ type: 'call-step', step: 'scheduled', call: structuredClone(approved) });
  // An answer naming the call approves its card; one covered by another call's "always" is judged again when it runs.
  if (how.covered !== true && call.shownHash !== undefined) call.approvedCard = call.shownHash;
  if (feedback !== undefined) call.feedback = feedback;
  // A person's own edit (modify_with_editor) runs instead of what the card showed: the record names it too.
  const edited =
    option === ConfirmationOptionId.modifyWithEditor && call.args !== undefined
      ? { editedInputHash: createHash('sha256').update(JSON.stringify(call.args)).digest('hex') }
      : undefined;
  const detail = { ...feedbackDetail(feedback).detail, ...edited };
  const entry = {
    toolCallId: call.snapshot.id,
    principal,
    optionId: option,
    shownHash: call.shownHash,
    ...(Object.keys(detail).length > 0 ? { detail } : {}),
  };
  task.audit({ decision: 'authorized', ...entry });
  for (const grant of how.grants ?? []) {
    if (!task.context.trustedTools.has(grant)) task.trust(grant);
  }
}

/**
 * Closes a call that will not run (declined, expired, or its task canceled). The model is told, and the turn goes on.
 * The user's `feedback` on a decline tells the model why (the card keeps the plain reason); it is audited with the answer.
 */
export function declineCall(
  task: LiveTask,
  call: TurnCall,
  how: { reason?: string; type?: DeclineType; principal?: string; feedback?: string; answer?: string } = {},
): void {
  const { reason = 'The user declined this tool call.', type = 'declined', principal, feedback } = how;
  if (how.answer !== undefined) call.answer = how.answer; // a person's answer (cancel), recorded with the decline
  const toModel = feedback !== undefined ? `${reason} Their feedback: ${feedback}` : `${reason} Do not retry it unless the user asks.`;
  // A task's cancel closes running calls too: only a card that waited ends a confirmation flow. A
  // person's answer (how.answer) is counted by the resume handler, once the answer's claim is won.
  if (call.phase === 'awaiting' && how.answer === undefined)
    task.metrics.cardClosed(call.snapshot.id, DECLINE_OUTCOME[type], call.proposedAt);
  closeWithoutResult(task, call, 'CANCELLED', { message: reason, type }, toModel);
  const decision = DECLINE_DECISION[type];
  task.audit({
    toolCallId: call.snapshot.id,
    decision,
    principal,
    optionId: call.answer,
    shownHash: call.shownHash,
    ...feedbackDetail(feedback),
  });
}

/**
 * A person's edit (modify_with_editor) becomes the call's arguments and its card's input. Only
 * once their answer's claim was won: a losing answer never changes what the winner runs.
 */
export function applyEdit(call: TurnCall, edit: { args: Record<string, unknown>; snapshot: TurnCall['snapshot'] }): void {
  call.args = edit.args;
  call.snapshot.input = edit.snapshot.input;
}

/**
 * Closes a call whose process died while it ran (its lease lapsed, or the embedded store's
 * only process restarted): FAILED `interrupted`. `killedGroup`: the process group it left
 * running, which the recovery killed. `started` false: the call was still `ready` (its EXECUTING
 * card is stored before its tool starts), so its card says it did not run.
 */
export function interruptCall(
  task: LiveTask,
  call: TurnCall,
  leaseOwner: string | undefined,
  killedGroup?: number,
  why = `lease of ${leaseOwner ?? 'unknown instance'} lapsed`,
  started = call.phase !== 'ready',
): void {
  const name = call.snapshot.toolName;
  const killed = killedGroup === undefined ? '' : ` Its processes, still running, were killed (process group ${killedGroup}).`;
  const message = !started
    ? `${name} never started (${why}); it did not run.`
    : `The server stopped while ${name} was running (${why}); it may not have finished.${killed}`;
  closeWithoutResult(task, call, 'FAILED', { message, type: 'interrupted' }, message);
  task.audit({
    toolCallId: call.snapshot.id,
    decision: 'interrupted',
    detail: { leaseOwner, ...(killedGroup === undefined ? {} : { killedGroup }) },
  });
}

/**
 * What a task's `Interrupted:` reason says of the calls it ended: those that ran, else those
 * that never started (claimed or queued, their EXECUTING card not yet stored).
 */
export function interruptedWork(calls: ReadonlyArray<{ name: string; started: boolean }>, stopped: string): string {
  const ran = calls.filter((c) => c.started).map((c) => c.name);
  if (ran.length > 0) return `the server ${stopped} while ${ran.join(', ')} ran`;
  if (calls.length > 0) return `${calls.map((c) => c.name).join(', ')} never started`;
  return `the server ${stopped} while the model was answering`;
}

/** Runs a ready call and publishes EXECUTING (with live output), then its result. Never throws. */
export async function runCall(task: LiveTask, call: TurnCall): Promise<void> {
  const snap = call.snapshot;
  // An edit a person approved writes only over the content its card's diff was computed from;
  // one that runs without a person's answer for its card was judged, and is computed, now.
  const shown = call.approvedCard !== undefined ? snap.confirmation?.proposal : undefined;
  const expectedBase = shown?.type === 'edit' ? shown.change.baseHash : undefined;
  // Awaited only when a checkpoint is due: otherwise the call moves on in the same tick, as it always did.
  let kept: { name?: string; error?: string } = {};
  if (checkpointDue(task, call)) {
    // The checkpoint is written to the store: only for an answer whose claim holds.
    await task.claimNow();
    if (task.halted) return;
    kept = await keepFiles(task, call);
    if (task.halted || call.phase !== 'ready') return; // closed while its files were read: it does not run
    if (kept.name !== undefined) snap.checkpoint = kept.name;
  }
  move(call, 'executing');
  snap.status = 'EXECUTING';
  delete snap.confirmation;
  task.publishCall(call);
  task.audit({ toolCallId: snap.id, decision: 'executed', optionId: call.answer, shownHash: call.shownHash });
  if (call.tool === undefined || call.args === undefined) {
    // Unknown tool or invalid arguments: the error was recorded when the call was proposed.
    finishCall(task, call, { isError: true, error: snap.error ?? { message: 'Tool call could not be run', type: 'invalid_call' } });
    return;
  }
  if (kept.error !== undefined) {
    finishCall(task, call, { isError: true, error: { message: `Nothing was written: ${kept.error}`, type: 'checkpoint_failed' } });
    return;
  }
  // The EXECUTING card and the `executed` audit row are committed before the tool starts: a
  // side effect is never without its record, even when the process is killed the moment after.
  await task.flush();
  if (task.halted || task.writesFailed) return; // the task fails (or was taken over) for that write; nothing runs
  let result: ToolResult;
  const started = performance.now();
  // live_content is a bounded window of the output, updated at a bounded rate (live-output.ts).
  const feed = new LiveOutputFeed((window) => {
    if (call.phase !== 'executing' || window === snap.liveContent) return;
    snap.liveContent = window;
    task.publishCall(call);
  }, task.liveOutput);
  try {
    result = await call.tool.run(call.args, {
      workspace: task.context.workspace,
      signal: task.abort.signal,
      ...(expectedBase !== undefined ? { expectedBase } : {}),
      refuseWrite: writeGuard(task, shown?.type === 'edit' ? shown.change.filePath : undefined),
      onLiveOutput: (text) => feed.push(text),
      // Stored before the command can do much: after a crash, the recovery kills this group.
      onProcessGroup: (group) => {
        if (call.phase !== 'executing') return;
        call.processGroup = group;
        task.saveCall(call);
      },
    });
  } catch (err) {
    result = { isError: true, error: { message: `Tool ${snap.toolName} crashed: ${(err as Error).message}`, type: 'tool_crashed' } };
  } finally {
    feed.close();
    task.metrics.toolRan(call.tool.name, (performance.now() - started) / 1000);
  }
  // The result commits with what follows it (the next call's EXECUTING card, or the turn's close
  // and the model's turn): the turn loop's runReady / settle end the hold.
  task.holdWrites();
  finishCall(task, call, result);
}

/**
 * The checkpoint of a file-modifying call, taken right before it runs when checkpointing is on:
 * its name, or why it could not be taken (the call then fails, writing nothing).
 */
async function keepFiles(task: LiveTask, call: TurnCall): Promise<{ name?: string; error?: string }> {
  try {
    const name = await task.checkpoints?.take(task, call);
    return name === undefined ? {} : { name };
  } catch (err) {
    return { error: err instanceof CheckpointError ? err.message : `the checkpoint could not be taken (${(err as Error).message})` };
  }
}

/** The call gets a checkpoint before it runs (an edit with valid arguments, checkpointing on, or a restore). */
function checkpointDue(task: LiveTask, call: TurnCall): boolean {
  return task.checkpoints?.covers(call) === true;
}

/**
 * Where an edit may land, judged on the path it really opened (ToolContext.refuseWrite): the
 * judgement before it ran resolved the path earlier, and a folder on the way may have become a
 * symlink since (a command of another conversation on the same workspace can swap it). An edit a
 * person approved lands only on the file its card showed (`shownPath`); one that ran without a
 * card for it never on a file that makes tools run code, whatever the mode.
 */
function writeGuard(task: LiveTask, shownPath: string | undefined): (realPath: string) => Promise<string | undefined> {
  const { workspace } = task.context;
  return async (realPath) => {
    if (shownPath !== undefined)
      return realPath === shownPath ? undefined : `it would land on ${realPath}, not on ${shownPath} as its card showed`;
    return (await isToolConfigTarget(workspace, realPath, true))
      ? `${realPath} makes tools run code, and no person approved writing it`
      : undefined;
  };
}

function finishCall(task: LiveTask, call: TurnCall, result: ToolResult): void {
  // Closed while it ran (the task was canceled or failed): the record stays as it is.
  if (call.phase === 'done' || task.halted) return;
  const snap = call.snapshot;
  delete snap.liveContent; // the final result replaces live_content
  move(call, 'done');
  if (result.isError) {
    snap.status = 'FAILED';
    snap.error = result.error;
    // The model gets the reason (timed out, exit code, …) and whatever output there was.
    const response: Record<string, unknown> = { error: result.error.message, error_type: result.error.type };
    if (result.llmContent !== undefined && result.llmContent !== result.error.message) response.output = result.llmContent;
    call.response = responsePart(call, withFeedback(call, response));
  } else {
    snap.status = 'SUCCEEDED';
    snap.output = result.display;
    call.response = responsePart(call, withFeedback(call, { output: result.llmContent }));
  }
  task.metrics.callEnded(call.tool?.name, snap.status);
  task.publishCall(call);
  const detail = result.isError ? { error: result.error } : undefined;
  task.audit({ toolCallId: snap.id, decision: result.isError ? 'failed' : 'succeeded', detail });
}

/** The audit entry's detail for an answer with feedback (none without). */
function feedbackDetail(feedback: string | undefined): { detail?: { feedback: string } } {
  return feedback !== undefined ? { detail: { feedback } } : {};
}

/** The user's note on an approved call goes to the model beside its result. */
function withFeedback(call: TurnCall, response: Record<string, unknown>): Record<string, unknown> {
  return call.feedback !== undefined ? { ...response, user_feedback: call.feedback } : response;
}

/** Closes a call that ends without a result of its own (declined, interrupted, its task ended): card, and what the model is told. */
function closeWithoutResult(
  task: LiveTask,
  call: TurnCall,
  status: 'CANCELLED' | 'FAILED',
  error: { message: string; type: string },
  toModel: string,
): void {
  move(call, 'done');
  const snap = call.snapshot;
  snap.status = status;
  delete snap.confirmation;
  delete snap.liveContent;
  snap.error = error;
  call.response = responsePart(call, { error: toModel });
  task.metrics.callEnded(call.tool?.name, status);
  task.publishCall(call);
}

/**
 * Ends a turn that will not go on (the task was canceled or failed): the model's function
 * calls get their responses in the conversation, so the context's history stays valid for
 * the next task (Gemini refuses a function-call turn that is not followed by its responses).
 * When the turn failed before its calls were built, the calls of the model's last answer are
 * answered from the conversation itself.
 */
export function abandonTurn(task: LiveTask, reason: string): void {
  if (task.slashCommand !== undefined) return;
  if (task.turn.length === 0) {
    const answers = danglingAnswers(task.context.history, reason);
    if (answers !== undefined) task.appendHistory(answers);
    return;
  }
  const parts: ModelPart[] = task.turn.map((c) => c.response ?? responsePart(c, { error: reason }));
  task.appendHistory({ role: 'user', parts });
  task.turn = [];
}

/**
 * Error responses to the function calls of the conversation's last model answer, when nothing
 * answered them (undefined otherwise). A user's new turn after such an answer — its responses were
 * lost with a commit whose outcome is unknown — takes them first, so the conversation stays valid.
 */
export function danglingAnswers(history: readonly ModelContent[], reason: string): ModelContent | undefined {
  const last = history.at(-1);
  const open = last?.role === 'model' ? last.parts.flatMap((p) => (p.functionCall ? [p.functionCall] : [])) : [];
  const parts = open.map((fc) => ({ functionResponse: { id: fc.id, name: fc.name, response: { error: reason } } }));
  return parts.length > 0 ? { role: 'user', parts } : undefined;
}

/** Closes every open call of the turn because the task ends: waiting ones CANCELLED, running ones FAILED. */
export function closeOpenCalls(task: LiveTask, reason: string, principal: string | undefined): void {
  for (const call of task.turn) {
    if (call.phase === 'awaiting') declineCall(task, call, { reason, type: 'cancelled', principal });
    else if (call.phase !== 'done') {
      closeWithoutResult(task, call, 'FAILED', { message: reason, type: 'task_failed' }, reason);
      task.audit({ toolCallId: call.snapshot.id, decision: 'failed', detail: { error: { message: reason, type: 'task_failed' } } });
    }
  }
}

/** How a slash command's own calls ended, for its completed event. */
export function commandSummary(command: string, calls: ReadonlyArray<ToolCallSnapshot>): string {
  const lines = calls.map((c) => {
    const what = c.description ?? c.toolName;
    if (c.status === 'SUCCEEDED') return `done: ${what}`;
    if (c.status === 'CANCELLED') return `not done (${c.error?.type === 'declined' ? 'declined' : 'cancelled'}): ${what}`;
    return `failed: ${what}${c.error ? ` (${c.error.message})` : ''}`;
  });
  return `${command}: ${lines.join('; ')}`;
}

/** The text of the input-required event: what is waiting and how to answer. */
export function pausePrompt(waiting: ReadonlyArray<Pick<TurnCall, 'snapshot'>>): string {
  const list = waiting.map(
    (c) => `${c.snapshot.toolName} (${c.snapshot.id})${c.snapshot.description ? `: ${c.snapshot.description}` : ''}`,
  );
  const how =
    waiting.length === 1
      ? 'Reply "yes" to allow it or "no" to reject it, or send a ToolCallConfirmation.'
      : 'Send a ToolCallConfirmation for each (tool_call_id, selected_option_id).';
  return `Waiting for approval of ${waiting.length === 1 ? 'a tool call' : `${waiting.length} tool calls`}: ${list.join('; ')}. ${how}`;
}
