/**
 * Real streams for the client library's tests: the scripted model's scenarios played against
 * the real server, each SSE frame read by the tests' own parser (test/support/sse.ts, not the
 * library's) into the StreamItems the fold takes.
 */
import type { StreamItem } from '../../src/client/index.js';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { rpc } from './sse.js';
import { confirmMessage, URI, userMessage } from './server.js';

const say = (...texts: string[]) => ({ chunks: texts.map((text) => [{ text }]) });

/** TEST_SCRIPT and the scenarios only the client tests play. */
export const CLIENT_SCRIPT: ModelScript = {
  model: 'scripted-client',
  scripts: [
    {
      when: '^report',
      steps: [
        {
          chunks: [[{ text: 'Here is the report.' }]],
          artifacts: [
            { artifactId: 'report', name: 'report.txt', parts: [{ text: 'part one, ' }], lastChunk: false },
            { artifactId: 'report', parts: [{ text: 'part two' }, { data: { rows: 2 } }], append: true, lastChunk: true },
          ],
        },
      ],
    },
    { when: '^reject', steps: [{ chunks: [[{ text: 'No.' }]], outcome: { state: 'rejected', text: 'not doing that' } }] },
    {
      when: '^slow story',
      steps: [{ chunks: Array.from({ length: 12 }, (_, i) => [{ text: `word${i} ` }]), delayMs: 40 }],
    },
    {
      when: '^edit then talk',
      steps: [{ chunks: [[{ functionCall: { name: 'write_file', args: { file_path: 'e.txt', content: 'one\n' } } }]] }, say('Edited.')],
    },
    ...TEST_SCRIPT.scripts,
  ],
};

export type Version = '0.3' | '1.0';

/** The items of one streaming call, in order. */
export async function record(
  url: string,
  method: string,
  params: unknown,
  opts: { version?: Version; headers?: Record<string, string> } = {},
): Promise<StreamItem[]> {
  const res = await rpc(url, method, params, opts);
  if (res.events === undefined) throw new Error(`${method} answered no stream: ${res.raw}`);
  return res.events.map((e) => ({ ...(e.id !== undefined ? { id: e.id } : {}), event: e.data.result }));
}

/** A first message that sets the workspace (AgentSettings), in the version's form. */
export function firstMessage(text: string, workspace: string, version: Version = '0.3'): Record<string, unknown> {
  const metadata = { [URI]: { workspace_path: workspace } };
  if (version === '0.3') return userMessage(text, { metadata });
  return { role: 'ROLE_USER', messageId: `m1-${Math.random()}`, parts: [{ text }], metadata };
}

/** An answer to a card, in the version's form. */
export function answerMessage(taskId: string, contextId: string, version: Version, data: Record<string, unknown>): Record<string, unknown> {
  if (version === '0.3') return confirmMessage(taskId, contextId, data);
  return { role: 'ROLE_USER', messageId: `a-${Math.random()}`, taskId, contextId, parts: [{ data }] };
}

const STREAM: Record<Version, string> = { '0.3': 'message/stream', '1.0': 'SendStreamingMessage' };

/** The waiting ToolCall DataParts of a recorded stream (RFC dialect), either version. */
export function waitingCalls(items: StreamItem[]): Array<{ tool_call_id: string }> {
  return items.flatMap((item) => {
    const e = item.event as any;
    const update = e?.statusUpdate ?? e;
    const data = update?.status?.message?.parts
      ?.map((p: any) => p.data)
      .find((d: any) => d?.confirmation_request !== undefined && d.status === 'PENDING');
    return data !== undefined ? [data] : [];
  });
}

export function idsOf(items: StreamItem[]): { taskId: string; contextId: string } {
  const e = items[0]?.event as any;
  const task = e?.task ?? e;
  return { taskId: task.id, contextId: task.contextId };
}

/**
 * A prompt and then, at each pause, an answer to the first waiting card (`option`), until the
 * task ends: the streams of the whole task, concatenated.
 */
export async function playTask(
  url: string,
  prompt: string,
  workspace: string,
  opts: { version?: Version; option?: string; extra?: Record<string, unknown> } = {},
): Promise<StreamItem[]> {
  const version = opts.version ?? '0.3';
  const headers = { version };
  const items = await record(url, STREAM[version], { message: firstMessage(prompt, workspace, version) }, headers);
  const { taskId, contextId } = idsOf(items);
  const answered = new Set<string>();
  for (let round = 0; round < 5; round++) {
    const last = items.at(-1)?.event as any;
    const state = (last?.statusUpdate ?? last)?.status?.state;
    if (state !== 'input-required' && state !== 'TASK_STATE_INPUT_REQUIRED') break;
    const waiting = waitingCalls(items).find((c) => !answered.has(c.tool_call_id));
    if (waiting === undefined) break;
    answered.add(waiting.tool_call_id);
    const data = { tool_call_id: waiting.tool_call_id, selected_option_id: opts.option ?? 'proceed_once', ...opts.extra };
    items.push(...(await record(url, STREAM[version], { message: answerMessage(taskId, contextId, version, data) }, headers)));
  }
  return items;
}
