/** Answers to a paused in-process task, for the resume planning tests (see core.ts). */
import type { Message } from '@a2a-js/sdk';
import type { LiveTask, TurnCall } from '../../src/agent/runtime/live-task.js';
import { planResume } from '../../src/agent/requests/resume-handler.js';
import { RfcDecoder } from '../../src/agent/wire/rfc-decoder.js';
import type { TaskIntent } from '../../src/agent/wire/wire-decoder.js';
import { runTurn, startTask } from './core.js';
import type { Core } from './core.js';

/** A task paused on the calls the prompt's script proposes. */
export async function pausedOn(core: Core, prompt: string): Promise<{ task: LiveTask; calls: TurnCall[] }> {
  const task = await startTask(core, { text: prompt });
  await runTurn(core, task);
  if (task.state !== 'input-required') throw new Error(`${prompt}: expected a pause, got ${task.state}`);
  return { task, calls: task.awaiting() };
}

/** The task's calls by id, as the router hands them to planResume. */
export const knownCalls = (task: LiveTask) => new Map(task.turn.map((c) => [c.snapshot.id, c]));

/** A message to a task, read by the RFC's decoder as the router reads it. */
export function decoded(core: Core, message: Message): TaskIntent {
  const intent = new RfcDecoder({ schema: core.schema, checkServers: () => undefined }).decode(message);
  if (intent.kind === 'new-task') throw new Error('the message names no task');
  return intent;
}

export const planFor = (core: Core, task: LiveTask, message: Message) => planResume(task, decoded(core, message), knownCalls(task));

/** A ToolCallConfirmation's data. */
export const confirmation = (id: string, option: string, extra: Record<string, unknown> = {}) => ({
  tool_call_id: id,
  selected_option_id: option,
  ...extra,
});
