/**
 * What newer gemini-cli clients and servers add to the gemini-cli dialect: the answer outcome
 * `proceed_always_and_save` (read as "always", the grant kept for the conversation), and the
 * turn's token usage (`usageMetadata`, as the Gemini API names its counts) in the metadata of
 * the status update that ends a stream.
 */
import t from 'tap';
import path from 'node:path';
import { readFileSync } from 'node:fs';
import { startGeminiServer } from '../support/gemini-server.js';
import { candidateChunk } from '../support/fake-gemini.js';
import type { FakeGemini } from '../support/fake-gemini.js';
import { buildServer, URI } from '../support/server.js';
import { coderAgent, legacyCard, legacyMessage, stream } from '../support/legacy-client.js';
import { rpc } from '../support/sse.js';

const answer = (taskId: string, data: Record<string, unknown>) => legacyMessage(undefined, { taskId, parts: [{ kind: 'data', data }] });

t.test('proceed_always_and_save acts as proceed_always; the grant holds for the conversation, in a new task too', async (t) => {
  const { app, workspace } = await buildServer(t);
  const first = await stream(app, legacyMessage('write hello', { metadata: coderAgent(workspace) }));
  const { id: taskId, contextId } = first[0];
  const card = legacyCard(first, 'awaiting_approval');
  const second = await stream(app, answer(taskId, { callId: card.request.callId, outcome: 'proceed_always_and_save' }));
  t.ok(legacyCard(second, 'success'), 'the call ran');
  t.equal(readFileSync(path.join(workspace, 'hello.txt'), 'utf8'), 'hello world\n');
  const again = await stream(app, legacyMessage('write hello', { taskId }));
  t.notOk(legacyCard(again, 'awaiting_approval'), 'a later write_file in the task asks no more');
  t.ok(legacyCard(again, 'success'));
  const other = await stream(app, legacyMessage('write hello', { contextId, metadata: coderAgent(workspace) }));
  t.not(other[0].id, taskId, 'a new task of the same conversation');
  t.notOk(legacyCard(other, 'awaiting_approval'), 'the grant is the conversation’s, not the task’s');
  t.ok(legacyCard(other, 'success'));
});

t.test('proceed_always_and_save is refused in the RFC dialect (not one of its options)', async (t) => {
  const { app, workspace } = await buildServer(t);
  const first = await stream(app, legacyMessage('write hello', { metadata: { [URI]: { workspace_path: workspace } } }));
  const card = first.map((r) => r.status?.message?.parts?.[0]?.data).find((d) => d?.status === 'PENDING' && d.confirmation_request);
  const res = await rpc(app, 'message/stream', {
    message: legacyMessage(undefined, {
      taskId: first[0].id,
      parts: [{ kind: 'data', data: { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_always_and_save' } }],
    }),
  });
  t.equal(res.json?.error?.code, -32602);
});

function usageChunk(fake: FakeGemini, parts: Array<Record<string, unknown>>, usage: Record<string, number>): void {
  fake.enqueue({ chunks: [{ ...candidateChunk(parts, 'STOP'), usageMetadata: usage }] });
}

t.test("usageMetadata: the final update of each stream carries the tokens of that stream's model calls", async (t) => {
  const srv = await startGeminiServer(t);
  const file = path.join(srv.workspace, 'u.txt');
  // Streamed counts are cumulative: a call's last chunk holds its total.
  srv.fake.enqueue({
    chunks: [
      { ...candidateChunk([{ text: 'Let me write it. ' }]), usageMetadata: { promptTokenCount: 100, totalTokenCount: 100 } },
      {
        ...candidateChunk([{ functionCall: { name: 'write_file', args: { file_path: file, content: 'u\n' } } }], 'STOP'),
        usageMetadata: { promptTokenCount: 100, candidatesTokenCount: 20, totalTokenCount: 120, cachedContentTokenCount: 60 },
      },
    ],
  });
  usageChunk(srv.fake, [{ text: 'Written.' }], { promptTokenCount: 150, candidatesTokenCount: 3, totalTokenCount: 153 });
  const first = await stream(srv.url, legacyMessage('write u', { metadata: coderAgent(srv.workspace) }));
  const pause = first.at(-1);
  t.match(pause, { final: true, status: { state: 'input-required' } });
  t.same(
    pause.metadata.usageMetadata,
    { promptTokenCount: 100, candidatesTokenCount: 20, totalTokenCount: 120, cachedContentTokenCount: 60 },
    'the pause: the one model call before it',
  );
  t.notOk(
    first.slice(0, -1).some((r) => r.metadata?.usageMetadata !== undefined),
    'only the final update carries it',
  );
  const card = legacyCard(first, 'awaiting_approval');
  const second = await stream(srv.url, answer(first[0].id, { callId: card.request.callId, outcome: 'proceed_once' }));
  t.same(
    second.at(-1).metadata.usageMetadata,
    { promptTokenCount: 150, candidatesTokenCount: 3, totalTokenCount: 153, cachedContentTokenCount: 0 },
    'the end of the turn: the model call after the answer',
  );

  // Two model calls in one stream are summed.
  srv.fake.enqueue({
    chunks: [candidateChunk([{ functionCall: { name: 'read_file', args: { file_path: file } } }], 'STOP')].map((c) => ({
      ...c,
      usageMetadata: { promptTokenCount: 10, candidatesTokenCount: 1, totalTokenCount: 11 },
    })),
  });
  usageChunk(srv.fake, [{ text: 'It says u.' }], {
    promptTokenCount: 20,
    candidatesTokenCount: 2,
    totalTokenCount: 22,
    cachedContentTokenCount: 5,
  });
  const third = await stream(srv.url, legacyMessage('read u', { taskId: first[0].id }));
  t.ok(legacyCard(third, 'success'), 'read_file ran without asking');
  t.same(third.at(-1).metadata.usageMetadata, {
    promptTokenCount: 30,
    candidatesTokenCount: 3,
    totalTokenCount: 33,
    cachedContentTokenCount: 5,
  });
});

t.test('the RFC dialect carries no usageMetadata (its wire is unchanged)', async (t) => {
  const srv = await startGeminiServer(t);
  usageChunk(srv.fake, [{ text: 'Hi.' }], { promptTokenCount: 1, candidatesTokenCount: 1, totalTokenCount: 2 });
  const events = await stream(srv.url, legacyMessage('hi', { metadata: { [URI]: { workspace_path: srv.workspace } } }));
  t.equal(events.at(-1).metadata[URI].kind, 'STATE_CHANGE');
  t.notOk(JSON.stringify(events).includes('usageMetadata'));
});
