/**
 * The one owner of a task's state. Every change of it happens here, each with its event
 * (published through the task, which logs it and moves its status):
 *
 *   created: submitted ─► working          (a message, a command)
 *            completed                     (the legacy dialect's POST /tasks: idle until its first message)
 *   working ─► input-required | auth-required   (calls wait for a person; a question to the user)
 *           ─► completed | rejected             (the turn ended)
 *   paused  ─► working                          (answered; a follow-up to a question)
 *           ─► paused                           (a re-prompt, a reminder)
 *   completed ─► working                        (a follow-up, where the A2A version allows one)
 *   any open state ─► failed | canceled         (failTask: one path for every failure; cancelTask)
 *
 * A move the table does not allow is a bug and throws; a task that already failed or was
 * canceled takes no further state (its events are dropped, as LiveTask.publish does).
 */
import type { Message, Task } from '@a2a-js/sdk';
import { newTask, STATE_TO_V1, userMessage } from '../../protocol/a2a.js';
import { PAUSE_OR_TERMINAL, TERMINAL } from '../../protocol/task-states.js';
import type { AgentEvent, TaskStateName } from '../wire/agent-events.js';
import { abandonTurn, closeOpenCalls, declineCall } from './call-lifecycle.js';
import type { LiveTask, TurnCall } from './live-task.js';
import { pauseEvent } from './pause.js';

type StateEvent = Extract<AgentEvent, { type: 'state' }>;
type Waiting = ReadonlyArray<Pick<TurnCall, 'snapshot'>>;

const OPEN: readonly TaskStateName[] = ['working', 'input-required', 'auth-required', 'completed', 'rejected', 'failed', 'canceled'];

const TASK_MOVES: Readonly<Record<TaskStateName, readonly TaskStateName[]>> = {
  submitted: ['working', 'failed', 'canceled'],
  working: OPEN,
  'input-required': OPEN,
  'auth-required': OPEN,
  completed: ['working', 'failed', 'canceled'],
  failed: [],
  canceled: [],
  rejected: [],
};

/** Checks a move against the table. Throws on a move it does not allow. */
function check(task: LiveTask, to: TaskStateName): void {
  if (!TASK_MOVES[task.state].includes(to)) throw new Error(`task ${task.id} cannot move from ${task.state} to ${to}`);
}

function move(task: LiveTask, event: StateEvent): void {
  if (task.halted) return;
  check(task, event.state);
  task.publish(event);
}

/**
 * A new task's snapshot: `submitted` with `message` as its first history entry; without one (the
 * legacy dialect's POST /tasks) `completed` with an empty history: it waits as a finished turn does.
 */
export function createdSnapshot(taskId: string, contextId: string, message: Message | undefined): Task {
  const snapshot = newTask(taskId, contextId, { ...(message ?? userMessage(contextId, [])), taskId, contextId });
  if (message === undefined) {
    snapshot.history = [];
    snapshot.status = { state: STATE_TO_V1.completed, message: undefined, timestamp: new Date().toISOString() };
  }
  return snapshot;
}

/** The task works (a new task, a follow-up): published. */
export function startWorking(task: LiveTask): void {
  move(task, { type: 'state', state: 'working' });
}

/** Answers were accepted: the task works again (its answered calls' cards say so on the wire). */
export function resumeWorking(task: LiveTask): void {
  if (task.halted) return;
  check(task, 'working');
  task.setState('working');
}

/** The pause event for `waiting` calls (`lead`: a re-prompt's reason, a reminder), checked. */
function pausing(task: LiveTask, waiting: Waiting, lead?: string): AgentEvent {
  const event = pauseEvent(task, waiting, lead);
  if (event.type === 'state') check(task, event.state);
  return event;
}

/** The task waits for answers to `waiting` calls. */
export function pauseTask(task: LiveTask, waiting: Waiting, lead?: string): void {
  if (task.halted) return;
  task.publish(pausing(task, waiting, lead));
}

/**
 * A message to a paused task that answers nothing (`reason` says why): the waiting cards and the
 * pause are sent again, with `message` in the history, only while the store still has those calls
 * waiting (LiveTask.publishWhileAwaiting). Resolves with the seqs of the events, or undefined when
 * a call was claimed meanwhile (nothing was written).
 */
export async function repromptTask(task: LiveTask, reason: string, message: Message): Promise<number[] | undefined> {
  const waiting = task.awaiting();
  const events: AgentEvent[] = waiting.map((call) => ({ type: 'tool-call', call: structuredClone(call.snapshot) }));
  events.push(pausing(task, waiting, reason));
  return task.publishWhileAwaiting(
    waiting.map((c) => c.snapshot.id),
    events,
    message,
  );
}

/**
 * A reminder that `waiting` calls expire soon (`lead` says when): the pause sent again, only while
 * the store still has those calls waiting (LiveTask.publishWhileAwaiting) — logged after an
 * answer's claim, it would show a pause over the calls that answer runs and refuse its writes.
 * Resolves with the event's seq, or undefined when a call was claimed meanwhile (nothing was written).
 */
export async function remindTask(task: LiveTask, waiting: Waiting, lead: string): Promise<number[] | undefined> {
  if (task.halted) return undefined;
  return task.publishWhileAwaiting(
    waiting.map((c) => c.snapshot.id),
    [pausing(task, waiting, lead)],
  );
}

/** The turn ended: `completed` (or the model's own outcome: a question, a refusal). */
export function endTurn(task: LiveTask, end: Omit<StateEvent, 'type'>): void {
  if (TERMINAL.has(end.state) || end.state === 'input-required') move(task, { type: 'state', ...end });
  else throw new Error(`task ${task.id}: a turn cannot end ${end.state}`);
}

/**
 * Ends the task `failed` with `reason` (shown to the client as text and in the event's error):
 * open calls are closed, the turn is abandoned, and whatever still runs for it is aborted.
 * Nothing is published after it. The one path of every failure (model, tool, store, interruption).
 */
export function failTask(task: LiveTask, reason: string): void {
  if (task.halted) return;
  closeOpenCalls(task, `The task failed before this call finished: ${reason}`, undefined);
  abandonTurn(task, reason);
  task.modelRunning = false;
  move(task, { type: 'state', state: 'failed', text: reason, error: reason });
  task.abort.abort();
  task.releaseWrites(); // an end never waits on a step's held writes
}

/**
 * Ends the task `canceled` on a client's request: open calls CANCELLED, the running tool and model
 * aborted. The cancel of a working copy lands whatever another process appended meanwhile (a task
 * running there), as long as the store still has the task in the state this copy saw
 * (LiveTask.checkStateOnly). A paused (or gemini-cli idle) copy may be one kept since it paused
 * (TaskCache.park): its turn is only right while nothing was appended, so its last seq is checked —
 * else a pause reached again on another process would pass the state check, and the cancel would
 * close the earlier turn's calls (over their results) and leave the waiting ones open.
 */
export function cancelTask(task: LiveTask, principal: string | undefined): void {
  if (!PAUSE_OR_TERMINAL.has(task.state)) task.checkStateOnly();
  for (const call of task.turn) {
    if (call.phase !== 'done') declineCall(task, call, { reason: 'The task was canceled.', type: 'cancelled', principal });
  }
  abandonTurn(task, 'The task was canceled.');
  move(task, { type: 'state', state: 'canceled', text: 'The task was canceled by the client.' });
  task.abort.abort();
  task.releaseWrites();
}

// Whether a task stays in this process's memory. Callers say what happened; this decides what the
// task cache does with the copy. A pause or end committed releases the task (the cache's onFinal),
// and a task whose writes were abandoned is forgotten (onAbandoned).

/** This instance works on `task` now: it stays in memory until its next pause or end is committed. */
export function workHere(task: LiveTask): void {
  task.residency?.hold(task);
}

/**
 * A request to `task` was refused and changed nothing: no copy it loaded stays behind (nothing
 * would bring a copy of a task worked on elsewhere up to date). One this instance was working on
 * is released without being parked: the refused request may have touched it.
 */
export function refusedHere(task: LiveTask, workedHere: boolean): void {
  if (workedHere) task.residency?.release(task, false);
  else task.residency?.discard(task);
}

/** `task` was read here but nothing was done to it (it had moved on): let go, parked if it waits. */
export function notWorkedHere(task: LiveTask): void {
  task.residency?.release(task);
}

/** A task created with nothing to do yet (the gemini-cli dialect's POST /tasks): not kept; its first message loads it. */
export function idleUntilAsked(task: LiveTask): void {
  task.residency?.forget(task);
}

/**
 * This process's copy of `task` is behind the store (another instance moved it on): dropped; the
 * next use reads it afresh. Not a copy that runs something here, or that an answer waits on, unless
 * it stopped: its own writes tell whether it is behind, and a second copy beside it would neither
 * be leased nor take its answers in line.
 */
export function staleCopy(task: LiveTask): void {
  if (!task.halted && (task.answerPending || !task.idle)) return;
  task.residency?.forget(task);
}
