/**
 * The sets of task states and the order of tool-call phases, written once: the agent's task
 * and call lifecycles, the store (a stored call never moves back), the transport (a pause ends
 * a stream) and push (a pause is worth a notification) all read them from here.
 */
import type { A2aStateName } from './a2a.js';

/**
 * The pauses: the task waits for its client. `auth-required` when the waiting calls need an
 * approver role the task's principal lacks (A2A TaskState AUTH_REQUIRED), `input-required` otherwise.
 */
export const PAUSED: ReadonlySet<A2aStateName> = new Set(['input-required', 'auth-required']);
export const TERMINAL: ReadonlySet<A2aStateName> = new Set(['completed', 'failed', 'canceled', 'rejected']);
/**
 * Ended for good: no move leaves these (a completed task may take a follow-up), so the store
 * appends no event to a task stored in one of them (TaskStore.commit refuses the batch).
 */
export const FINISHED: ReadonlySet<A2aStateName> = new Set(['failed', 'canceled', 'rejected']);
/** States after which a stream ends (the client must send something, or the task is over). */
export const PAUSE_OR_TERMINAL: ReadonlySet<A2aStateName> = new Set([...PAUSED, ...TERMINAL]);
/** The states in which a task holds its conversation: it works, or waits for an answer. */
export const BUSY_STATES: readonly A2aStateName[] = ['input-required', 'auth-required', 'working', 'submitted'];

/** A tool call's phase (agent/runtime/call-lifecycle.ts moves it). */
export type CallPhase = 'ready' | 'awaiting' | 'executing' | 'done';

/** The phases in order: a stored call never moves back (awaiting → ready is the claim's alone). */
export const CALL_PHASE_ORDER: readonly CallPhase[] = ['awaiting', 'ready', 'executing', 'done'];

/** The moves a call's phase may make (ready → awaiting: judged again before it runs). */
export const CALL_MOVES: Readonly<Record<CallPhase, readonly CallPhase[]>> = {
  awaiting: ['ready', 'done'],
  ready: ['executing', 'awaiting', 'done'],
  executing: ['done'],
  done: [],
};

/** True for a pause state, in any spelling stateName gives (the transport and push read wire states). */
export function isPaused(state: string | undefined): boolean {
  return (PAUSED as ReadonlySet<string | undefined>).has(state);
}

/** True when a stored call in phase `from` may be replaced by one in phase `to` (TaskStore.saveCalls). */
export function storedPhaseMoves(from: CallPhase, to: CallPhase): boolean {
  return CALL_PHASE_ORDER.indexOf(from) <= CALL_PHASE_ORDER.indexOf(to) && !(from === 'awaiting' && to === 'ready');
}
