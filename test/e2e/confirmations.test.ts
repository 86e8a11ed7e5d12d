/**
 * The resume handler end to end (RFC §3.2 "Client-to-Agent Messages"), driven as a
 * raw client over real HTTP and SSE: bad answers are refused before any SSE with -32602 and
 * leave the task answerable; yes/no tokens; re-prompts; the four confirmation options.
 */
import t from 'tap';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { rpc } from '../support/sse.js';
import { confirmMessage, dataOf, devtool, startServer, tempDir, textOf, URI, userMessage } from '../support/server.js';
import type { TestServer } from '../support/server.js';
import { checkToolCalls, getTask, refused, TaskWatch } from '../support/tool-call-watch.js';
import type { Test } from '../support/tool-call-watch.js';

/** A compact view of a stream: [devtool kind, ToolCall status or task state, final]. */
const shape = (results: any[]) =>
  results.map((r) => [r.kind === 'task' ? 'task' : devtool(r)?.kind, dataOf(r)?.status ?? r.status?.state, r.final ?? null]);

interface Paused {
  watch: TaskWatch;
  /** The PENDING cards, in order. */
  cards: any[];
  /** The input-required event that ended the first stream. */
  pause: any;
}

/** Sends a new prompt and expects it to pause on confirmation cards. */
async function startPaused(t: Test, srv: TestServer, prompt: string, extra: Record<string, unknown> = {}): Promise<Paused> {
  const watch = new TaskWatch();
  const ev = watch.take(await rpc(srv.url, 'message/stream', { message: userMessage(prompt, extra) }));
  const pause = ev.at(-1);
  t.equal(pause.status.state, 'input-required', `${prompt}: pauses`);
  t.equal(pause.final, true, `${prompt}: the pause is final`);
  const cards = ev.filter((r) => dataOf(r)?.confirmation_request !== undefined).map(dataOf);
  t.ok(cards.length > 0, `${prompt}: a confirmation card`);
  t.ok(
    cards.every((c) => c.status === 'PENDING'),
    'cards are PENDING',
  );
  return { watch, cards, pause };
}

const confirm = (srv: TestServer, w: TaskWatch, ...confs: Record<string, unknown>[]) =>
  rpc(srv.url, 'message/stream', { message: confirmMessage(w.taskId, w.contextId, ...confs) });

const say = (srv: TestServer, w: TaskWatch, text: string) =>
  rpc(srv.url, 'message/stream', { message: userMessage(text, { taskId: w.taskId, contextId: w.contextId }) });

const hello = (srv: TestServer) => path.join(srv.workspace, 'hello.txt');

/** The normal approved write: EXECUTING, SUCCEEDED, the two text deltas, completed. */
function expectApprovedWrite(t: Test, results: any[], id: string, content = 'hello world\n'): void {
  t.same(
    shape(results),
    [
      ['TOOL_CALL_UPDATE', 'EXECUTING', false],
      ['TOOL_CALL_UPDATE', 'SUCCEEDED', false],
      ['TEXT_CONTENT', 'working', false],
      ['TEXT_CONTENT', 'working', false],
      ['STATE_CHANGE', 'completed', true],
    ],
    'EXECUTING → SUCCEEDED → text → completed (final)',
  );
  t.equal(dataOf(results[0]).tool_call_id, id);
  t.equal(dataOf(results[1]).tool_call_id, id);
  t.equal(dataOf(results[1]).output?.diff?.new_content, content, 'output.diff shows what was written');
  t.equal(results.slice(2, 4).map(textOf).join(''), 'Wrote hello.txt.');
}

t.test('bad answers are refused before any SSE and leave the task answerable', async (t) => {
  const srv = await startServer(t);
  const cases: { name: string; prompt?: string; conf: (id: string) => Record<string, unknown>[]; expect: (id: string) => RegExp[] }[] = [
    {
      name: 'unknown tool_call_id',
      conf: () => [{ tool_call_id: 'tc_nope', selected_option_id: 'proceed_once' }],
      expect: (id) => [/message\.parts\[0\]\.data\.tool_call_id/, /"tc_nope"/, new RegExp(`waiting: ${id}`)],
    },
    {
      name: 'an option that was not offered (proceed_always_server)',
      conf: (id) => [{ tool_call_id: id, selected_option_id: 'proceed_always_server' }],
      expect: (id) => [
        /selected_option_id/,
        /"proceed_always_server" was not offered/,
        new RegExp(id),
        /offered: proceed_once, proceed_always, modify_with_editor, cancel/,
      ],
    },
    {
      name: 'modify_with_editor is not offered for run_shell_command',
      prompt: 'shell fail',
      conf: (id) => [{ tool_call_id: id, selected_option_id: 'modify_with_editor', file_details: { new_content: 'x' } }],
      expect: (id) => [
        /selected_option_id/,
        /"modify_with_editor" was not offered/,
        new RegExp(id),
        /offered: proceed_once, proceed_always, cancel\)/,
      ],
    },
    {
      name: 'missing selected_option_id',
      conf: (id) => [{ tool_call_id: id }],
      expect: () => [/message\.parts\[0\]\.data\.selected_option_id must be a non-empty string/],
    },
    {
      name: 'empty selected_option_id',
      conf: (id) => [{ tool_call_id: id, selected_option_id: '' }],
      expect: () => [/selected_option_id must be a non-empty string/],
    },
    {
      name: 'tool_call_id is a number',
      conf: () => [{ tool_call_id: 42, selected_option_id: 'proceed_once' }],
      expect: () => [/message\.parts\[0\]\.data\.tool_call_id must be a non-empty string/],
    },
    {
      name: 'an unknown extra field',
      conf: (id) => [{ tool_call_id: id, selected_option_id: 'proceed_once', approved: true }],
      expect: () => [/message\.parts\[0\]\.data\.approved is not a field of ToolCallConfirmation/],
    },
    {
      name: 'modify_with_editor without new_content',
      conf: (id) => [{ tool_call_id: id, selected_option_id: 'modify_with_editor' }],
      expect: () => [/file_details\.new_content/, /modify_with_editor/],
    },
    {
      name: 'modify_with_editor with file_details but no new_content',
      conf: (id) => [{ tool_call_id: id, selected_option_id: 'modify_with_editor', file_details: {} }],
      expect: () => [/message\.parts\[0\]\.data\.file_details\.new_content must be a string/],
    },
    {
      name: 'new_content with proceed_once',
      conf: (id) => [{ tool_call_id: id, selected_option_id: 'proceed_once', file_details: { new_content: 'x' } }],
      expect: () => [/file_details/, /modify_with_editor/],
    },
    {
      name: 'the same call answered twice in one message',
      conf: (id) => [
        { tool_call_id: id, selected_option_id: 'proceed_once' },
        { tool_call_id: id, selected_option_id: 'cancel' },
      ],
      expect: (id) => [/message\.parts\[1\]\.data\.tool_call_id/, new RegExp(`${id} is answered twice`)],
    },
    {
      name: 'both spellings of one field',
      conf: (id) => [{ tool_call_id: id, toolCallId: id, selected_option_id: 'proceed_once' }],
      expect: () => [/message\.parts\[0\]\.data sets both tool_call_id and toolCallId/],
    },
    {
      name: 'both forms of modified_details',
      conf: (id) => [
        {
          tool_call_id: id,
          selected_option_id: 'modify_with_editor',
          file_details: { new_content: 'a' },
          modified_details: { file_details: { new_content: 'b' } },
        },
      ],
      expect: () => [/sets both file_details and modified_details/],
    },
    {
      name: 'a second confirmation part naming an unknown call',
      conf: (id) => [
        { tool_call_id: id, selected_option_id: 'proceed_once' },
        { tool_call_id: 'tc_ghost', selected_option_id: 'cancel' },
      ],
      expect: () => [/message\.parts\[1\]\.data\.tool_call_id/, /"tc_ghost"/],
    },
    {
      name: '{"confirmation":"maybe"}',
      conf: () => [{ confirmation: 'maybe' }],
      expect: () => [/message\.parts\[0\]\.data\.confirmation must be "yes" or "no"/],
    },
    {
      name: 'a ToolCallConfirmation and a yes/no in one message',
      conf: (id) => [{ tool_call_id: id, selected_option_id: 'proceed_once' }, { confirmation: 'no' }],
      expect: () => [/either ToolCallConfirmations or a yes\/no/],
    },
  ];
  for (const c of cases) {
    await t.test(c.name, async (t) => {
      const { watch, cards } = await startPaused(t, srv, c.prompt ?? 'write a greeting');
      const id = cards[0].tool_call_id;
      const before = await getTask(srv, watch.taskId);
      refused(t, await confirm(srv, watch, ...c.conf(id)), ...c.expect(id));
      const after = await getTask(srv, watch.taskId);
      t.equal(after.status.state, 'input-required', 'the task still waits');
      t.equal(after.history.length, before.history.length, 'the refused message is not in the history');
      t.same(after.status, before.status, 'the status is untouched');

      const done = watch.take(await confirm(srv, watch, { tool_call_id: id, selected_option_id: 'proceed_once' }));
      if (c.prompt === 'shell fail') {
        const statuses = shape(done)
          .map((s) => s[1])
          .filter((s, i, a) => !(s === 'EXECUTING' && a[i - 1] === 'EXECUTING'));
        t.same(statuses, ['EXECUTING', 'FAILED', 'working', 'completed'], 'a correct answer still works (the command runs and fails)');
        const failed = dataOf(done.find((r) => dataOf(r)?.status === 'FAILED'));
        t.equal(failed?.tool_call_id, id);
        t.match(failed?.error, { type: 'shell_exit_nonzero', status_code: 3 });
        t.equal(textOf(done.at(-2)), 'It failed.');
      } else {
        expectApprovedWrite(t, done, id);
        t.equal(readFileSync(hello(srv), 'utf8'), 'hello world\n', 'the file was written');
      }
      t.equal((await getTask(srv, watch.taskId)).status.state, 'completed');
      checkToolCalls(t, watch);
    });
  }
});

t.test('refusals are the same through message/send and the v1.0 binding', async (t) => {
  const srv = await startServer(t);
  const { watch, cards } = await startPaused(t, srv, 'write a greeting');
  const id = cards[0].tool_call_id;
  const send = await rpc(srv.url, 'message/send', {
    message: confirmMessage(watch.taskId, watch.contextId, { tool_call_id: 'tc_nope', selected_option_id: 'proceed_once' }),
  });
  t.equal(send.json?.error?.code, -32602, 'message/send: -32602');
  t.match(send.json?.error?.message, /"tc_nope"/);
  const v1 = await rpc(
    srv.url,
    'SendStreamingMessage',
    {
      message: {
        messageId: 'v1-bad',
        role: 'ROLE_USER',
        taskId: watch.taskId,
        contextId: watch.contextId,
        parts: [{ data: { toolCallId: id, selectedOptionId: 'maybe_later' } }],
      },
    },
    { version: '1.0' },
  );
  refused(t, v1, /"maybe_later" was not offered/);
  t.equal((await getTask(srv, watch.taskId)).status.state, 'input-required');
  expectApprovedWrite(t, watch.take(await confirm(srv, watch, { tool_call_id: id, selected_option_id: 'proceed_once' })), id);
});

t.test('the same call answered on two connections at once runs once', async (t) => {
  const srv = await startServer(t);
  const { watch, cards } = await startPaused(t, srv, 'write a greeting');
  const id = cards[0].tool_call_id;
  const answers = await Promise.all([
    confirm(srv, watch, { tool_call_id: id, selected_option_id: 'proceed_once' }),
    confirm(srv, watch, { tool_call_id: id, selected_option_id: 'cancel' }),
  ]);
  const streams = answers.filter((r) => r.events !== undefined);
  const errors = answers.filter((r) => r.events === undefined);
  t.equal(streams.length, 1, 'one answer is taken');
  t.equal(errors.length, 1, 'the other is refused');
  refused(t, errors[0], /already answered/, new RegExp(id));
  const done = watch.take(streams[0]);
  t.equal(done.at(-1).status.state, 'completed');
  const seq = checkToolCalls(t, watch).get(id);
  t.ok(
    JSON.stringify(seq) === JSON.stringify(['PENDING', 'EXECUTING', 'SUCCEEDED']) ||
      JSON.stringify(seq) === JSON.stringify(['PENDING', 'CANCELLED']),
    `one outcome: ${seq?.join(' → ')}`,
  );
  t.equal(existsSync(hello(srv)), seq?.at(-1) === 'SUCCEEDED', 'the file matches the outcome');
});

t.test('a confirmation to a task that is not waiting', async (t) => {
  const srv = await startServer(t);
  const { watch, cards } = await startPaused(t, srv, 'write a greeting');
  const id = cards[0].tool_call_id;
  expectApprovedWrite(t, watch.take(await confirm(srv, watch, { tool_call_id: id, selected_option_id: 'proceed_once' })), id);
  const before = await getTask(srv, watch.taskId);
  t.equal(before.status.state, 'completed');

  await t.test('a second answer to the answered call', async (t) => {
    refused(t, await confirm(srv, watch, { tool_call_id: id, selected_option_id: 'proceed_once' }), /already answered/, new RegExp(id));
  });
  await t.test('a second answer choosing another option', async (t) => {
    refused(t, await confirm(srv, watch, { tool_call_id: id, selected_option_id: 'cancel' }), /already answered/, new RegExp(id));
  });
  await t.test('{"confirmation":"yes"}', async (t) => {
    refused(t, await confirm(srv, watch, { confirmation: 'yes' }), /not waiting/, new RegExp(watch.taskId));
  });
  await t.test('an id the task never had', async (t) => {
    refused(
      t,
      await confirm(srv, watch, { tool_call_id: 'tc_other', selected_option_id: 'proceed_once' }),
      /"tc_other"/,
      /not waiting|already answered|waits for none/,
    );
  });
  const after = await getTask(srv, watch.taskId);
  t.same(after.status, before.status, 'still completed, status untouched');
  t.equal(after.history.length, before.history.length, 'nothing was added to the history');
  t.equal(readFileSync(hello(srv), 'utf8'), 'hello world\n');
  checkToolCalls(t, watch);

  // The task still continues with an ordinary follow-up (Appendix A step 10).
  const more = watch.take(await say(srv, watch, 'thanks'));
  t.same(
    shape(more).map((s) => s[1]),
    ['working', 'working', 'completed'],
  );
  t.equal(textOf(more[1]), 'You said: thanks');
});

t.test('a confirmation without taskId (a new task) is refused', async (t) => {
  const srv = await startServer(t);
  const cases: [string, Record<string, unknown>][] = [
    ['ToolCallConfirmation', { tool_call_id: 'tc_x', selected_option_id: 'proceed_once' }],
    ['camelCase ToolCallConfirmation', { toolCallId: 'tc_x', selectedOptionId: 'proceed_once' }],
    ['{"confirmation":"yes"}', { confirmation: 'yes' }],
  ];
  for (const [name, data] of cases) {
    await t.test(name, async (t) => {
      const message = { kind: 'message', role: 'user', messageId: `no-task-${name}`, parts: [{ kind: 'data', data }] };
      refused(t, await rpc(srv.url, 'message/stream', { message }), /taskId/);
    });
  }

  await t.test('the refusal leaves no trace: its contextId can still start with its own workspace', async (t) => {
    const contextId = 'ctx-after-refused-confirmation';
    const message = {
      kind: 'message',
      role: 'user',
      messageId: 'no-task-ctx',
      contextId,
      parts: [{ kind: 'data', data: { tool_call_id: 'tc_x', selected_option_id: 'proceed_once' } }],
    };
    refused(t, await rpc(srv.url, 'message/stream', { message }), /taskId/);
    const own = tempDir();
    const first = await rpc(srv.url, 'message/stream', {
      message: userMessage('write a greeting', { contextId, metadata: { [URI]: { workspace_path: own } } }),
    });
    t.ok(first.events, `the first real message of the context is accepted: ${first.json?.error?.message ?? 'ok'}`);
    const ev = first.events?.map((e) => e.data.result) ?? [];
    t.equal(dataOf(ev[2])?.confirmation_request?.file_edit_details?.file_path, path.join(own, 'hello.txt'), 'in its own workspace');
  });
});

t.test('yes/no tokens: only the exact words answer a single waiting call', async (t) => {
  const srv = await startServer(t);
  for (const token of ['yes', '  yes ', 'yes\n']) {
    await t.test(`text ${JSON.stringify(token)} approves once`, async (t) => {
      const { watch, cards } = await startPaused(t, srv, 'write a greeting');
      const done = watch.take(await say(srv, watch, token));
      expectApprovedWrite(t, done, cards[0].tool_call_id);
      t.equal(readFileSync(hello(srv), 'utf8'), 'hello world\n');
      checkToolCalls(t, watch);
    });
  }

  await t.test('DataPart {"confirmation":"yes"} approves once', async (t) => {
    const { watch, cards } = await startPaused(t, srv, 'write a greeting');
    expectApprovedWrite(t, watch.take(await confirm(srv, watch, { confirmation: 'yes' })), cards[0].tool_call_id);
    checkToolCalls(t, watch);
  });

  for (const [name, send] of [
    ['text "no"', (s: TestServer, w: TaskWatch) => say(s, w, 'no')],
    ['text " no "', (s: TestServer, w: TaskWatch) => say(s, w, ' no ')],
    ['DataPart {"confirmation":"no"}', (s: TestServer, w: TaskWatch) => confirm(s, w, { confirmation: 'no' })],
  ] as const) {
    await t.test(`${name} declines: CANCELLED, then the turn completes`, async (t) => {
      const ws = await startServer(t);
      const { watch, cards } = await startPaused(t, ws, 'write a greeting');
      const id = cards[0].tool_call_id;
      const done = watch.take(await send(ws, watch));
      t.same(
        shape(done).map((s) => s[1]),
        ['CANCELLED', 'working', 'working', 'completed'],
      );
      t.equal(devtool(done[0]).kind, 'TOOL_CALL_UPDATE');
      const cancelled = dataOf(done[0]);
      t.equal(cancelled.tool_call_id, id);
      t.equal(cancelled.error?.type, 'declined');
      t.match(cancelled.error?.message, /declined/);
      t.notOk('confirmation_request' in cancelled);
      t.notOk('output' in cancelled, 'a declined call has no output');
      t.equal(done.at(-1).final, true);
      t.notOk(existsSync(hello(ws)), 'nothing was written');
      t.same(checkToolCalls(t, watch).get(id), ['PENDING', 'CANCELLED']);
    });
  }

  await t.test('free text re-prompts and the task stays answerable', async (t) => {
    const { watch, cards } = await startPaused(t, srv, 'write a greeting');
    const id = cards[0].tool_call_id;
    const again = watch.take(await say(srv, watch, 'please do it'));
    t.same(shape(again), [
      ['TOOL_CALL_UPDATE', 'PENDING', false],
      ['STATE_CHANGE', 'input-required', true],
    ]);
    const card = dataOf(again[0]);
    t.equal(card.tool_call_id, id, 'the same call is re-sent');
    t.same(card.confirmation_request, cards[0].confirmation_request, 'with the same confirmation request');
    const prompt = textOf(again[1]);
    t.match(prompt, /not an answer/);
    t.match(prompt, new RegExp(`write_file \\(${id}\\)`));
    t.match(prompt, /"yes"/);
    t.match(prompt, /"no"/);
    t.match(prompt, /ToolCallConfirmation/);
    t.equal((await getTask(srv, watch.taskId)).status.state, 'input-required');

    // Twice in a row still works, and the next real answer is accepted.
    t.same(
      shape(watch.take(await say(srv, watch, 'hmm?'))).map((s) => s[1]),
      ['PENDING', 'input-required'],
    );
    // Only the exact tokens authorize (surrounding whitespace aside): "YES", "Yes", "yes please" re-prompt.
    for (const near of ['YES', 'Yes', 'yes please', 'y']) {
      t.same(
        shape(watch.take(await say(srv, watch, near))).map((s) => s[1]),
        ['PENDING', 'input-required'],
        `${JSON.stringify(near)} re-prompts`,
      );
    }
    expectApprovedWrite(t, watch.take(await say(srv, watch, 'yes')), id);
    t.same(checkToolCalls(t, watch).get(id), ['PENDING', 'EXECUTING', 'SUCCEEDED']);
  });

  await t.test('with two calls pending, "yes" re-prompts instead of approving', async (t) => {
    const ws = await startServer(t);
    const { watch, cards } = await startPaused(t, ws, 'two writes please');
    t.equal(cards.length, 2);
    const ids = cards.map((c) => c.tool_call_id);
    const again = watch.take(await say(ws, watch, 'yes'));
    t.same(shape(again), [
      ['TOOL_CALL_UPDATE', 'PENDING', false],
      ['TOOL_CALL_UPDATE', 'PENDING', false],
      ['STATE_CHANGE', 'input-required', true],
    ]);
    t.same(
      again.slice(0, 2).map((r) => dataOf(r).tool_call_id),
      ids,
      'both cards re-sent, same ids',
    );
    t.match(textOf(again[2]), /ambiguous/);
    t.match(textOf(again[2]), /2 tool calls/);
    t.match(textOf(again[2]), new RegExp(ids[0]));
    t.match(textOf(again[2]), new RegExp(ids[1]));
    t.notOk(existsSync(path.join(ws.workspace, 'a.txt')), 'nothing ran');
    t.notOk(existsSync(path.join(ws.workspace, 'b.txt')));
    t.equal((await getTask(ws, watch.taskId)).status.state, 'input-required');
    t.same(
      shape(watch.take(await confirm(ws, watch, { confirmation: 'no' }))).map((s) => s[1]),
      ['PENDING', 'PENDING', 'input-required'],
      '{"confirmation":"no"} is ambiguous too',
    );

    const done = watch.take(await confirm(ws, watch, ...ids.map((id) => ({ tool_call_id: id, selected_option_id: 'proceed_once' }))));
    t.equal(done.at(-1).status.state, 'completed');
    t.equal(readFileSync(path.join(ws.workspace, 'a.txt'), 'utf8'), 'A\n');
    t.equal(readFileSync(path.join(ws.workspace, 'b.txt'), 'utf8'), 'B\n');
    checkToolCalls(t, watch);
  });
});

t.test('modify_with_editor writes the edited content', async (t) => {
  const srv = await startServer(t);
  const forms: [string, (id: string) => Record<string, unknown>][] = [
    [
      'proto3 JSON form',
      (id) => ({ tool_call_id: id, selected_option_id: 'modify_with_editor', file_details: { new_content: 'edited\n' } }),
    ],
    [
      'nested modified_details form',
      (id) => ({
        tool_call_id: id,
        selected_option_id: 'modify_with_editor',
        modified_details: { file_details: { new_content: 'edited\n' } },
      }),
    ],
    ['lowerCamelCase form', (id) => ({ toolCallId: id, selectedOptionId: 'modify_with_editor', fileDetails: { newContent: 'edited\n' } })],
    [
      'lowerCamelCase nested form',
      (id) => ({ toolCallId: id, selectedOptionId: 'modify_with_editor', modifiedDetails: { fileDetails: { newContent: 'edited\n' } } }),
    ],
  ];
  for (const [name, conf] of forms) {
    await t.test(name, async (t) => {
      const ws = await startServer(t);
      const { watch, cards } = await startPaused(t, ws, 'write a greeting');
      const id = cards[0].tool_call_id;
      const done = watch.take(await confirm(ws, watch, conf(id)));
      expectApprovedWrite(t, done, id, 'edited\n');
      t.equal(dataOf(done[0]).input_parameters?.content, 'edited\n', 'EXECUTING shows the edited input');
      t.equal(readFileSync(hello(ws), 'utf8'), 'edited\n', 'the edited content was written');
      checkToolCalls(t, watch);
    });
  }
  await t.test('an empty edit writes an empty file', async (t) => {
    const { watch, cards } = await startPaused(t, srv, 'write a greeting');
    const id = cards[0].tool_call_id;
    const done = watch.take(
      await confirm(srv, watch, { tool_call_id: id, selected_option_id: 'modify_with_editor', file_details: { new_content: '' } }),
    );
    t.equal(done.at(-1).status.state, 'completed');
    t.equal(dataOf(done[1]).status, 'SUCCEEDED');
    t.equal(readFileSync(hello(srv), 'utf8'), '');
    checkToolCalls(t, watch);
  });
});

t.test('cancel: CANCELLED, then completed, nothing written', async (t) => {
  const srv = await startServer(t);
  const { watch, cards } = await startPaused(t, srv, 'write a greeting');
  const id = cards[0].tool_call_id;
  const done = watch.take(await confirm(srv, watch, { tool_call_id: id, selected_option_id: 'cancel' }));
  t.same(shape(done), [
    ['TOOL_CALL_UPDATE', 'CANCELLED', false],
    ['TEXT_CONTENT', 'working', false],
    ['TEXT_CONTENT', 'working', false],
    ['STATE_CHANGE', 'completed', true],
  ]);
  t.equal(dataOf(done[0]).tool_call_id, id);
  t.equal(dataOf(done[0]).error?.type, 'declined');
  t.notOk(existsSync(hello(srv)), 'the file was not written');
  t.equal((await getTask(srv, watch.taskId)).status.state, 'completed');
  t.same(checkToolCalls(t, watch).get(id), ['PENDING', 'CANCELLED']);
  refused(t, await confirm(srv, watch, { tool_call_id: id, selected_option_id: 'proceed_once' }), /already answered/, /cancel/);
});

t.test('proceed_always trusts the tool for the rest of the context', async (t) => {
  const srv = await startServer(t);
  const first = await startPaused(t, srv, 'write a greeting');
  const id = first.cards[0].tool_call_id;
  const done = first.watch.take(await confirm(srv, first.watch, { tool_call_id: id, selected_option_id: 'proceed_always' }));
  expectApprovedWrite(t, done, id);
  t.equal(readFileSync(hello(srv), 'utf8'), 'hello world\n');
  checkToolCalls(t, first.watch);

  await t.test('a new task in the same context runs write_file without asking', async (t) => {
    const watch = new TaskWatch();
    const ev = watch.take(
      await rpc(srv.url, 'message/stream', { message: userMessage('write it again', { contextId: first.watch.contextId }) }),
    );
    t.equal(watch.contextId, first.watch.contextId, 'same context');
    t.not(watch.taskId, first.watch.taskId, 'a new task');
    t.same(shape(ev), [
      ['task', 'submitted', null],
      ['STATE_CHANGE', 'working', false],
      ['TOOL_CALL_UPDATE', 'PENDING', false],
      ['TOOL_CALL_UPDATE', 'EXECUTING', false],
      ['TOOL_CALL_UPDATE', 'SUCCEEDED', false],
      ['TEXT_CONTENT', 'working', false],
      ['TEXT_CONTENT', 'working', false],
      ['STATE_CHANGE', 'completed', true],
    ]);
    const pending = dataOf(ev[2]);
    t.equal(pending.tool_name, 'write_file');
    t.notOk('confirmation_request' in pending, 'PENDING without confirmation_request');
    t.ok(
      ev.every((r) => r.status?.state !== 'input-required'),
      'never input-required',
    );
    t.equal(dataOf(ev[4]).tool_call_id, pending.tool_call_id);
    checkToolCalls(t, watch);
  });

  await t.test('another tool in the same context still asks', async (t) => {
    const shell = await startPaused(t, srv, 'shell fail', { contextId: first.watch.contextId });
    t.equal(shell.watch.contextId, first.watch.contextId);
    t.equal(shell.cards[0].tool_name, 'run_shell_command');
    checkToolCalls(t, shell.watch, false);
  });

  await t.test('a new context still asks', async (t) => {
    const other = await startPaused(t, srv, 'write a greeting');
    t.not(other.watch.contextId, first.watch.contextId);
    t.equal(other.cards[0].tool_name, 'write_file');
    t.ok(other.cards[0].confirmation_request.options.some((o: any) => o.id === 'proceed_always'));
    checkToolCalls(t, other.watch, false);
  });
});

t.test('the extension URI keys every event metadata; a pause adds its inputSchema', async (t) => {
  const srv = await startServer(t);
  const { watch, cards } = await startPaused(t, srv, 'write a greeting');
  watch.take(await confirm(srv, watch, { tool_call_id: cards[0].tool_call_id, selected_option_id: 'proceed_once' }));
  for (const r of watch.results) {
    const paused = r.status?.state === 'input-required';
    t.same(Object.keys(r.metadata ?? {}), paused ? [URI, 'inputSchema'] : [URI], 'metadata is keyed by the extension URI only');
    t.equal(r.metadata[URI].model, 'scripted-test');
  }
});
