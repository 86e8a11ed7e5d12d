/** Answers to a paused in-process task, for the resume planning tests (see core.ts). */
import type { Message, SendMessageRequest } from '@a2a-js/sdk';
import { Access } from '../../src/agent/policy/access.js';
import { MessageRouter } from '../../src/agent/requests/message-router.js';
import type { Routed } from '../../src/agent/requests/message-router.js';
import { TaskFactory } from '../../src/agent/requests/task-factory.js';
import { LegacyDecoder } from '../../src/agent/wire/legacy-decoder.js';
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

const routers = new WeakMap<Core, MessageRouter>();

/** The core's MessageRouter, as the app builds it (no access rules, the RFC dialect by default): one per core. */
export function routerFor(core: Core): MessageRouter {
  let router = routers.get(core);
  if (router === undefined) {
    const access = new Access();
    router = new MessageRouter({
      decoders: {
        rfc: new RfcDecoder({ schema: core.schema, checkServers: () => undefined }),
        legacy: new LegacyDecoder({ schema: core.schema, checkServers: () => undefined }),
      },
      loop: core.loop,
      store: core.store,
      cache: core.cache,
      access,
      factory: new TaskFactory({
        store: core.store,
        cache: core.cache,
        toolbox: core.toolbox,
        access,
        defaultWorkspace: core.workspace,
        instanceId: core.instanceId,
        leaseMs: core.leaseMs,
      }),
      instanceId: core.instanceId,
      leaseMs: core.leaseMs,
    });
    routers.set(core, router);
  }
  return router;
}

/** `message` routed by the core's MessageRouter, as message/stream routes it. */
export const routeMessage = (core: Core, message: Message): Promise<Routed> => routerFor(core).route({ message } as SendMessageRequest);
