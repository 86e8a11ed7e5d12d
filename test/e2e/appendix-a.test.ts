/**
 * RFC Appendix A, reproduced over real HTTP with a raw SSE reader, in both wire
 * versions: prompt → PENDING card → input-required (final) → confirm on a new stream →
 * EXECUTING → SUCCEEDED → text → completed (final) → the task continues on a follow-up.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { rpc } from '../support/sse.js';
import { confirmMessage, dataOf, devtool, startServer, textOf, URI, userMessage } from '../support/server.js';

t.test('Appendix A over v0.3 message/stream, raw SSE', async (t) => {
  const srv = await startServer(t);
  const first = await rpc(srv.url, 'message/stream', {
    message: userMessage('write a greeting', { metadata: { [URI]: { workspace_path: srv.workspace } } }),
  });
  t.equal(first.status, 200);
  t.match(first.contentType, /^text\/event-stream/);
  const ev = first.events!.map((e) => e.data.result);
  t.same(
    ev.map((r) => [r.kind, r.status?.state, devtool(r)?.kind ?? null, dataOf(r)?.status ?? null, r.final ?? null]),
    [
      ['task', 'submitted', null, null, null],
      ['status-update', 'working', 'STATE_CHANGE', null, false],
      ['status-update', 'working', 'TOOL_CALL_UPDATE', 'PENDING', false],
      ['status-update', 'input-required', 'STATE_CHANGE', null, true],
    ],
    'step 2 and 4: Task, STATE_CHANGE working, PENDING card, input-required final',
  );
  const [task, , pending] = ev;
  t.ok(task.id && task.contextId, 'the Task carries the new ids');
  t.equal(devtool(pending).model, 'scripted-test', 'metadata names the model');
  const card = dataOf(pending);
  t.match(card, {
    tool_name: 'write_file',
    status: 'PENDING',
    input_parameters: { file_path: 'hello.txt', content: 'hello world\n' },
    confirmation_request: {
      options: [{ id: 'proceed_once' }, { id: 'proceed_always' }, { id: 'modify_with_editor' }, { id: 'cancel' }],
      file_edit_details: {
        file_name: 'hello.txt',
        file_path: path.join(srv.workspace, 'hello.txt'),
        new_content: 'hello world\n',
      },
    },
  });
  t.strictSame(
    card.confirmation_request.options.map((o: any) => o.id),
    ['proceed_once', 'proceed_always', 'modify_with_editor', 'cancel'],
    'those four options, no more',
  );
  t.match(card.confirmation_request.file_edit_details.formatted_diff, /\+hello world/);
  t.notOk('old_content' in card.confirmation_request.file_edit_details, 'a new file has no old_content');

  const second = await rpc(srv.url, 'message/stream', {
    message: confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' }),
  });
  const ev2 = second.events!.map((e) => e.data.result);
  const kinds = ev2.map((r) => [devtool(r)?.kind, dataOf(r)?.status ?? r.status.state]);
  t.same(kinds[0], ['TOOL_CALL_UPDATE', 'EXECUTING'], 'step 7 event 1: EXECUTING');
  t.same(kinds[1], ['TOOL_CALL_UPDATE', 'SUCCEEDED'], 'step 7 event 2: SUCCEEDED');
  t.same(
    kinds.slice(2, -1),
    [
      ['TEXT_CONTENT', 'working'],
      ['TEXT_CONTENT', 'working'],
    ],
    'step 9 event 3: text deltas',
  );
  t.same(kinds.at(-1), ['STATE_CHANGE', 'completed']);
  t.equal(ev2.at(-1).final, true, 'step 9 event 4: completed is final');
  t.equal(ev2.slice(2, -1).map(textOf).join(''), 'Wrote hello.txt.', 'deltas concatenate to the answer');
  const done = dataOf(ev2[1]);
  t.equal(done.tool_call_id, card.tool_call_id, 'the same call id on every update');
  t.match(done.output.diff, { file_name: 'hello.txt', new_content: 'hello world\n' });
  t.notOk('confirmation_request' in done, 'no confirmation_request once answered');
  t.equal(readFileSync(path.join(srv.workspace, 'hello.txt'), 'utf8'), 'hello world\n', 'the file was written');

  // Step 10: a completed task can be continued with the same taskId.
  const third = await rpc(srv.url, 'message/stream', {
    message: userMessage('thanks', { taskId: task.id, contextId: task.contextId }),
  });
  const ev3 = third.events!.map((e) => e.data.result);
  t.same(
    ev3.map((r) => [devtool(r)?.kind, r.status.state]),
    [
      ['STATE_CHANGE', 'working'],
      ['TEXT_CONTENT', 'working'],
      ['STATE_CHANGE', 'completed'],
    ],
  );
  t.equal(textOf(ev3[1]), 'You said: thanks');
  t.ok(
    ev3.every((r) => r.taskId === task.id && r.contextId === task.contextId),
    'same task and context',
  );
});

t.test('Appendix A over v1.0 SendStreamingMessage, raw SSE', async (t) => {
  const srv = await startServer(t);
  const message = {
    messageId: 'v1-m1',
    role: 'ROLE_USER',
    parts: [{ text: 'write a greeting' }],
    metadata: { [URI]: { workspacePath: srv.workspace } },
  };
  const first = await rpc(srv.url, 'SendStreamingMessage', { message }, { version: '1.0' });
  const ev = first.events!.map((e) => e.data.result);
  t.same(Object.keys(ev[0]), ['task']);
  t.equal(ev[0].task.status.state, 'TASK_STATE_SUBMITTED');
  const updates = ev.slice(1).map((r) => r.statusUpdate);
  t.same(
    updates.map((u) => [u.status.state, u.metadata[URI].kind]),
    [
      ['TASK_STATE_WORKING', 'STATE_CHANGE'],
      ['TASK_STATE_WORKING', 'TOOL_CALL_UPDATE'],
      ['TASK_STATE_INPUT_REQUIRED', 'STATE_CHANGE'],
    ],
  );
  const card = updates[1].status.message.parts[0].data;
  t.equal(card.status, 'PENDING');
  const { id: taskId, contextId } = ev[0].task;
  const second = await rpc(
    srv.url,
    'SendStreamingMessage',
    {
      message: {
        messageId: 'v1-m2',
        role: 'ROLE_USER',
        taskId,
        contextId,
        parts: [{ data: { toolCallId: card.tool_call_id, selectedOptionId: 'proceed_once' } }],
      },
    },
    { version: '1.0' },
  );
  const u2 = second.events!.map((e) => e.data.result.statusUpdate);
  t.same(
    u2.map((u) => u.status.message?.parts[0]?.data?.status ?? u.status.state),
    ['EXECUTING', 'SUCCEEDED', 'TASK_STATE_WORKING', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED'],
  );
  t.equal(readFileSync(path.join(srv.workspace, 'hello.txt'), 'utf8'), 'hello world\n');
});
