/** Answers to a paused in-process task, for the resume planning tests (see core.ts). */
import type { Message } from '@a2a-js/sdk';
import type { LiveTask, TurnCall } from '../../src/agent/runtime/live-task.js';
import { planResume } from '../../src/agent/requests/resume-handler.js';
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

export const planFor = (core: Core, task: LiveTask, message: Message) => planResume(task, message, core.schema, knownCalls(task));

/** A ToolCallConfirmation's data. */
export const confirmation = (id: string, option: string, extra: Record<string, unknown> = {}) => ({
  tool_call_id: id,
  selected_option_id: option,
  ...extra,
});
