/** Helpers for tests that drive the server with the real @a2a-js/sdk client: clients by binding, stream reading, states. */
import { TaskState } from '@a2a-js/sdk';
import type { StreamResponse } from '@a2a-js/sdk';
import {
  ClientFactory,
  ClientFactoryOptions,
  DefaultAgentCardResolver,
  JsonRpcTransportFactory,
  RestTransportFactory,
} from '@a2a-js/sdk/client';
import type { Client } from '@a2a-js/sdk/client';

const STATES: Record<number, string> = {
  [TaskState.TASK_STATE_SUBMITTED]: 'submitted',
  [TaskState.TASK_STATE_WORKING]: 'working',
  [TaskState.TASK_STATE_INPUT_REQUIRED]: 'input-required',
  [TaskState.TASK_STATE_COMPLETED]: 'completed',
  [TaskState.TASK_STATE_CANCELED]: 'canceled',
  [TaskState.TASK_STATE_FAILED]: 'failed',
  [TaskState.TASK_STATE_REJECTED]: 'rejected',
};

/** The v0.3 name of a v1.0 TaskState (`none` when absent). */
export const stateOf = (s: TaskState | undefined): string => (s === undefined ? 'none' : (STATES[s] ?? `state-${s}`));

/** The first DataPart value of a status update (a ToolCall or AgentThought), or undefined. */
export function toolCallOf(r: StreamResponse): any {
  if (r.payload?.$case !== 'statusUpdate') return undefined;
  const part = r.payload.value.status?.message?.parts.find((p) => p.content?.$case === 'data');
  return part?.content?.$case === 'data' ? part.content.value : undefined;
}

/** Reads a stream to its end. */
export async function collect(gen: AsyncGenerator<StreamResponse, void, undefined>): Promise<StreamResponse[]> {
  const out: StreamResponse[] = [];
  for await (const ev of gen) out.push(ev);
  return out;
}

/** What a promise rejects with (undefined when it resolves). */
export function rejection(p: Promise<unknown>): Promise<any> {
  return p.then(
    () => undefined,
    (e: unknown) => e,
  );
}

/** The path of a fetch argument, for recording requests. */
export function pathOf(input: string | URL | Request): string {
  return new URL(input instanceof Request ? input.url : String(input)).pathname;
}

/**
 * A v1.0 client made by ClientFactory from the server's card, preferring `binding`; every
 * request (the card fetch included) goes through `fetchImpl`.
 */
export function sdkClient(url: string, binding: 'JSONRPC' | 'HTTP+JSON', fetchImpl: typeof fetch = fetch): Promise<Client> {
  const transport = binding === 'JSONRPC' ? new JsonRpcTransportFactory({ fetchImpl }) : new RestTransportFactory({ fetchImpl });
  const factory = new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [transport],
      cardResolver: new DefaultAgentCardResolver({ fetchImpl }),
      preferredTransports: [binding],
    }),
  );
  return factory.createFromUrl(url);
}
