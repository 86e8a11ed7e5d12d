/**
 * Feedback with an answer, end to end over real HTTP and SSE: a client declines or approves a
 * write with a note (in the ToolCallConfirmation's `feedback` field, or as a text part beside
 * it; in the legacy dialect beside `{callId, outcome}`), and the model's next request carries
 * the note in that call's functionResponse, `audit/list` shows it on the answer's entry, and
 * the cards on the stream and in the replay stay as they are without feedback. Through the real
 * @google/genai adapter, the note is in the functionResponse of the HTTP request to Gemini.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelChunk, ModelClient, ModelRequest } from '../../src/agent/model/model-client.js';
import { ScriptedModelClient } from '../../src/agent/model/scripted-model-client.js';
import { rpc } from '../support/sse.js';
import { confirmMessage, dataOf, startServer, userMessage } from '../support/server.js';
import type { TestServer } from '../support/server.js';
import { coderAgent, legacyCard, legacyMessage, stream } from '../support/legacy-client.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { answer, functionResponses, results, scenario, send, startGeminiServer } from '../support/gemini-server.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** The scripted model, keeping a copy of every request it receives. */
class RecordingModel implements ModelClient {
  readonly model: string;
  readonly requests: ModelRequest[] = [];
  readonly #inner = new ScriptedModelClient(TEST_SCRIPT);

  constructor() {
    this.model = this.#inner.model;
  }

  generate(request: ModelRequest, signal: AbortSignal): AsyncIterable<ModelChunk> {
    this.requests.push(structuredClone(request));
    return this.#inner.generate(request, signal);
  }
}

async function server(t: Test): Promise<{ srv: TestServer; model: RecordingModel }> {
  const model = new RecordingModel();
  return { srv: await startServer(t, { model }), model };
}

/** The function responses of the model's request that follows `prompt` (its conversation's last content). */
function toldAfter(model: RecordingModel, taskText: string): Array<Record<string, unknown>> {
  const request = model.requests.findLast((r) => r.contents.some((c) => c.role === 'user' && c.parts.some((p) => p.text === taskText)));
  const last = request?.contents.at(-1);
  return (last?.parts ?? []).flatMap((p) => (p.functionResponse ? [p.functionResponse.response] : []));
}

/** Starts `prompt` and returns the task's ids and its one waiting card. */
async function pausedWrite(t: Test, srv: TestServer, prompt: string) {
  const res = await rpc(srv.url, 'message/stream', { message: userMessage(prompt) });
  const events = (res.events ?? []).map((e) => e.data.result);
  const card = events.map(dataOf).find((d) => d?.confirmation_request !== undefined);
  t.equal(events.at(-1)?.status?.state, 'input-required', `${prompt}: pauses`);
  return { taskId: events[0].id as string, contextId: events[0].contextId as string, card };
}

async function auditEntries(srv: TestServer, taskId: string): Promise<any[]> {
  return (await rpc(srv.url, 'audit/list', { task_id: taskId })).json?.result?.entries ?? [];
}

t.test('cancel with feedback in the DataPart: the model is told why; the audit keeps it; the card does not', async (t) => {
  const { srv, model } = await server(t);
  const prompt = 'write hello, cancel with feedback';
  const { taskId, contextId, card } = await pausedWrite(t, srv, prompt);
  const feedback = 'Not in the root: put it under docs/.';
  const res = await rpc(srv.url, 'message/stream', {
    message: confirmMessage(taskId, contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'cancel', feedback }),
  });
  const events = (res.events ?? []).map((e) => e.data.result);
  const cancelled = events.map(dataOf).find((d) => d?.status === 'CANCELLED');
  t.same(cancelled?.error, { message: 'The user declined this tool call.', type: 'declined' }, 'the card as without feedback');
  t.equal(events.at(-1)?.status?.state, 'completed', 'the turn went on');
  t.same(toldAfter(model, prompt), [{ error: `The user declined this tool call. Their feedback: ${feedback}` }], 'the model was told why');
  t.match(
    (await auditEntries(srv, taskId)).find((e) => e.decision === 'declined'),
    { tool_call_id: card.tool_call_id, option_id: 'cancel', detail: { feedback } },
    'audit/list shows the feedback with the answer',
  );
  const replay = await rpc(srv.url, 'tasks/resubscribe', { id: taskId }, { headers: { 'Last-Event-ID': '0' } });
  t.notMatch(
    JSON.stringify(replay.events?.map((e) => e.data.result.status?.message?.parts) ?? []),
    /docs\//,
    'no card or status carries it',
  );
});

t.test('proceed_once with feedback as a text part beside: the note reaches the model with the result', async (t) => {
  const { srv, model } = await server(t);
  const prompt = 'write hello, approve with feedback';
  const { taskId, contextId, card } = await pausedWrite(t, srv, prompt);
  const message = confirmMessage(taskId, contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' });
  (message.parts as unknown[]).push({ kind: 'text', text: 'Fine, but use British spelling from now on.' });
  const res = await rpc(srv.url, 'message/stream', { message });
  const events = (res.events ?? []).map((e) => e.data.result);
  t.same(
    events.map(dataOf).flatMap((d) => (d?.status ? [d.status] : [])),
    ['EXECUTING', 'SUCCEEDED'],
  );
  t.equal(readFileSync(path.join(srv.workspace, 'hello.txt'), 'utf8'), 'hello world\n', 'the write ran');
  const [told] = toldAfter(model, prompt);
  t.match(told, { user_feedback: 'Fine, but use British spelling from now on.' }, 'beside the result');
  t.ok(told && 'output' in told, 'the result is still there');
  t.match(
    (await auditEntries(srv, taskId)).find((e) => e.decision === 'authorized'),
    {
      option_id: 'proceed_once',
      detail: { feedback: 'Fine, but use British spelling from now on.' },
    },
  );
});

t.test('too long or ambiguous feedback is refused with -32602 before anything starts; the call still waits', async (t) => {
  const { srv } = await server(t);
  const { taskId, contextId, card } = await pausedWrite(t, srv, 'write hello, refused feedback');
  const long = await rpc(srv.url, 'message/stream', {
    message: confirmMessage(taskId, contextId, {
      tool_call_id: card.tool_call_id,
      selected_option_id: 'cancel',
      feedback: 'x'.repeat(5000),
    }),
  });
  t.match(long.json?.error, { code: -32602, message: /feedback is 5000 characters long; feedback may be at most 4096 characters/ });
  const both = confirmMessage(taskId, contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'cancel', feedback: 'a' });
  (both.parts as unknown[]).push({ kind: 'text', text: 'b' });
  const twice = await rpc(srv.url, 'message/stream', { message: both });
  t.match(twice.json?.error, { code: -32602, message: /send the feedback once/ });
  const task = await rpc(srv.url, 'tasks/get', { id: taskId });
  t.equal(task.json?.result?.status?.state, 'input-required', 'still waiting');
  t.same(
    (await auditEntries(srv, taskId)).map((e) => e.decision),
    ['proposed'],
    'nothing was decided',
  );
});

t.test('legacy dialect: feedback beside {callId, outcome}, in the answer or as a text part', async (t) => {
  const { srv, model } = await server(t);
  for (const [prompt, parts] of [
    ['write hello, legacy field', (callId: string) => [{ kind: 'data', data: { callId, outcome: 'cancel', feedback: 'Legacy says no.' } }]],
    [
      'write hello, legacy text',
      (callId: string) => [
        { kind: 'data', data: { callId, outcome: 'cancel' } },
        { kind: 'text', text: 'Legacy says no.' },
      ],
    ],
  ] as const) {
    const first = await stream(srv.url, legacyMessage(prompt, { metadata: coderAgent(srv.workspace) }));
    const callId = legacyCard(first, 'awaiting_approval').request.callId as string;
    const second = await stream(srv.url, legacyMessage(undefined, { taskId: first[0].id, parts: parts(callId) }));
    t.ok(legacyCard(second, 'cancelled'), `${prompt}: cancelled`);
    t.same(toldAfter(model, prompt), [{ error: 'The user declined this tool call. Their feedback: Legacy says no.' }], prompt);
    t.match(
      (await auditEntries(srv, first[0].id)).find((e) => e.decision === 'declined'),
      { detail: { feedback: 'Legacy says no.' } },
    );
  }
});

t.test('through @google/genai: the functionResponse on the HTTP request to Gemini carries the feedback', async (t) => {
  const srv = await startGeminiServer(t);
  scenario(srv.fake)
    .calls(['write_file', { file_path: 'a.txt', content: 'A\n' }, 'w-a'], ['write_file', { file_path: 'b.txt', content: 'B\n' }, 'w-b'])
    .say('Done.');
  const first = results(await send(srv, 'write two files'));
  const [a, b] = first.map(dataOf).filter((d) => d?.confirmation_request !== undefined);
  const before = srv.fake.requests.length;
  const second = results(
    await answer(
      srv,
      first[0].id,
      first[0].contextId,
      { tool_call_id: a.tool_call_id, selected_option_id: 'cancel', feedback: 'No a.txt, please.' },
      { tool_call_id: b.tool_call_id, selected_option_id: 'proceed_once', feedback: 'b.txt is fine.' },
    ),
  );
  t.equal(second.at(-1)?.status?.state, 'completed');
  t.equal(srv.fake.requests.length, before + 1, 'one more request to Gemini');
  t.same(functionResponses(srv.fake, before), [
    { id: 'w-a', name: 'write_file', response: { error: 'The user declined this tool call. Their feedback: No a.txt, please.' } },
    { id: 'w-b', name: 'write_file', response: { output: 'Wrote 1 line to b.txt (created)', user_feedback: 'b.txt is fine.' } },
  ]);
});
