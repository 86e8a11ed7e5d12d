/**
 * foldEvent on recorded streams: the scripted model's scenarios played against the real server
 * (v0.3 and v1.0), replays from the event log, and gemini-cli's own legacy-dialect frames
 * (test/fixtures/legacy/, recorded from its server). The fold is pure (it runs on frozen views),
 * ignores an item it already applied, and a replay from the log rebuilds the live view.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import { emptyView, foldEvent } from '../../src/client/index.js';
import type { StreamItem, TaskView } from '../../src/client/index.js';
import { CLIENT_SCRIPT, firstMessage, idsOf, playTask, record } from '../support/client-streams.js';
import { startServer } from '../support/server.js';

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const v of Object.values(value)) deepFreeze(v);
  }
  return value;
}

/** Folds the items on frozen views: a fold that mutated its input would throw. */
function fold(items: StreamItem[], from: TaskView = emptyView()): TaskView {
  return items.reduce((view, item) => foldEvent(deepFreeze(view), item), from);
}

/** What a person sees, without the ids that differ between two runs of a scenario. */
function shape(view: TaskView) {
  return {
    state: view.state,
    final: view.final,
    text: view.text,
    thoughts: view.thoughts,
    cards: view.cards.map((c) => ({
      tool: c.toolName,
      status: c.status,
      history: c.history.map((h) => h.status),
      waiting: c.waiting,
      result: c.result,
      failureReason: c.failureReason,
    })),
    transcript: view.transcript.map((e) =>
      e.role === 'user'
        ? { role: e.role, kind: e.kind, ...(e.kind === 'text' ? { text: e.text } : { optionId: e.optionId }) }
        : e.kind === 'card'
          ? { role: e.role, kind: e.kind }
          : e,
    ),
  };
}

t.test('foldEvent on recorded streams', async (t) => {
  const srv = await startServer(t, { script: CLIENT_SCRIPT });

  t.test('a write: the card waits with its options and diff, then runs; the transcript keeps the order', async (t) => {
    const items = await record(srv.url, 'message/stream', { message: firstMessage('write it', srv.workspace) });
    const paused = fold(items);
    t.equal(paused.state, 'input-required');
    t.equal(paused.final, true);
    t.equal(paused.lastEventId, items.at(-1)?.id);
    t.equal(paused.model, 'scripted-client');
    const [card] = paused.cards;
    t.equal(card?.toolName, 'write_file');
    t.equal(card?.status, 'PENDING');
    t.equal(card?.waiting, true);
    t.same(card?.args, { file_path: 'hello.txt', content: 'hello world\n' });
    t.same(
      card?.options.map((o) => o.id),
      ['proceed_once', 'proceed_always', 'modify_with_editor', 'cancel'],
    );
    t.equal(card?.options[0]?.label, 'Allow once');
    t.match(card?.diff, { path: `${srv.workspace}/hello.txt`, unified: /\+hello world/, newContent: 'hello world\n' });
    t.ok(paused.inputSchema?.oneOf, 'the pause carries the schema of its answer');
    t.match(paused.statusMessage, /Waiting for approval/);

    const all = await playTask(srv.url, 'write it again', srv.workspace);
    const done = fold(all);
    t.equal(done.state, 'completed');
    t.equal(done.text, 'Wrote hello.txt.');
    t.same(
      done.cards[0]?.history.map((h) => h.status),
      ['PENDING', 'EXECUTING', 'SUCCEEDED'],
    );
    t.ok(
      done.cards[0]?.history.every((h) => typeof h.at === 'string'),
      'each status has its time',
    );
    t.equal(done.cards[0]?.waiting, false);
    t.same(done.cards[0]?.options, []);
    t.match(done.cards[0]?.result?.diff, { unified: /\+hello world/ });
    t.same(
      done.transcript.map((e) => `${e.role}:${e.kind}`),
      ['user:text', 'agent:card', 'agent:text'],
      'answers sent on other streams are not in the live stream: the session folds its own',
    );
    t.equal(done.error, undefined);
  });

  t.test('each item once: repeated and replayed items change nothing', async (t) => {
    const items = await playTask(srv.url, 'write twice', srv.workspace);
    const once = fold(items);
    t.same(fold([...items, ...items]), once, 'the whole stream again');
    t.same(fold([...items.slice(0, 6), ...items.slice(2)]), once, 'an overlap, as after a resume with an older Last-Event-ID');
    const view = fold(items.slice(0, 4));
    t.equal(foldEvent(view, items[2]), view, 'an applied item returns the same view');
  });

  t.test('a replay from the log (resubscribe, Last-Event-ID 0) rebuilds the live view, answers included', async (t) => {
    const items = await playTask(srv.url, 'mixed turn', srv.workspace);
    const live = fold(items);
    const { taskId } = idsOf(items);
    const replay = await record(srv.url, 'tasks/resubscribe', { id: taskId }, { headers: { 'Last-Event-ID': '0' } });
    t.equal(replay[0]?.id, undefined, 'the replay starts with the current snapshot');
    const rebuilt = fold(replay);
    const withoutAnswers = (v: TaskView) => ({ ...shape(v), transcript: shape(v).transcript.filter((e) => e.kind !== 'answer') });
    t.same(withoutAnswers(rebuilt), withoutAnswers(live), 'same cards, text, thoughts and state');
    t.same(
      rebuilt.transcript.filter((e) => e.role === 'user').map((e) => (e.kind === 'answer' ? e.optionId : e.kind)),
      ['text', 'proceed_once', 'proceed_once'],
      'the answers, which only the snapshot shows, are placed at the turns they started',
    );
    t.same(rebuilt.transcript.map((e) => `${e.role}:${e.kind}`).slice(0, 5), [
      'user:text',
      'agent:thought',
      'agent:card',
      'agent:card',
      'agent:card',
    ]);
    t.same(rebuilt.thoughts, [{ subject: 'Looking', description: 'at the files first' }]);
    const read = rebuilt.cards.find((c) => c.toolName === 'read_file');
    t.same(
      read?.history.map((h) => h.status),
      ['PENDING', 'EXECUTING', 'FAILED'],
      'seed.txt is missing',
    );
    t.match(read?.failureReason, /seed\.txt/);
    const shell = rebuilt.cards.find((c) => c.toolName === 'run_shell_command');
    t.equal(shell?.command, 'echo ran');
    t.match(shell?.result?.text, /ran/);

    const snapshotOnly = fold(replay.slice(0, 1));
    t.equal(snapshotOnly.state, 'completed', 'a snapshot alone gives the state');
    const statuses = (v: TaskView) => v.cards.map((c) => `${c.id} ${c.status}`).sort();
    t.same(statuses(snapshotOnly), statuses(live), 'and the cards as the history holds them');
    t.same(fold(replay.slice(0, 1), live).transcript, live.transcript, 'a snapshot does not redraw a view that has events');
  });

  t.test('v1.0 streams fold to the same view as v0.3', async (t) => {
    const v03 = fold(await playTask(srv.url, 'write in either', srv.workspace));
    const v10items = await playTask(srv.url, 'write in either', srv.workspace, { version: '1.0' });
    t.ok((v10items[1]?.event as any).statusUpdate, 'the v1.0 wire');
    const v10 = fold(v10items);
    t.same(shape(v10), shape(v03));
    t.equal(v10.state, 'completed');
  });

  t.test('shell: live output grows while it runs, then the result', async (t) => {
    const items = await playTask(srv.url, 'shell slow', srv.workspace);
    const views = items.reduce<TaskView[]>((acc, item) => [...acc, foldEvent(acc.at(-1) ?? emptyView(), item)], []);
    const outputs = views.map((v) => v.cards[0]?.liveOutput).filter((o): o is string => o !== undefined);
    t.ok(new Set(outputs).size >= 2, 'several live outputs');
    t.ok(
      outputs.every((o, i) => i === 0 || o.startsWith(outputs[i - 1])),
      'each one extends the last',
    );
    const done = views.at(-1) as TaskView;
    t.match(done.cards[0]?.liveOutput, /line5/);
    t.match(done.cards[0]?.result?.text, /line1[\s\S]*line5/);
    t.equal(done.cards[0]?.status, 'SUCCEEDED');
  });

  t.test('a failed call carries its reason; a declined one is CANCELLED', async (t) => {
    const failed = fold(await playTask(srv.url, 'shell fail', srv.workspace));
    t.equal(failed.cards[0]?.status, 'FAILED');
    t.match(failed.cards[0]?.failureReason, /exit|3|oops/);
    const declined = fold(await playTask(srv.url, 'write declined', srv.workspace, { option: 'cancel' }));
    t.same(
      declined.cards[0]?.history.map((h) => h.status),
      ['PENDING', 'CANCELLED'],
    );
    t.equal(declined.cards[0]?.failureReason, undefined);
  });

  t.test('artifacts: chunks append; a rejected task ends with its reason', async (t) => {
    const reportItems = await playTask(srv.url, 'report', srv.workspace);
    const chunks = reportItems.map((i) => i.event as any).filter((e) => e.kind === 'artifact-update');
    t.same(
      chunks.map((e) => e.artifact.parts.length),
      [1, 2],
      'each chunk carries its own parts',
    );
    const report = fold(reportItems);
    t.same(report.artifacts, [{ artifactId: 'report', name: 'report.txt', text: 'part one, part two', data: [{ rows: 2 }] }]);
    t.equal(report.text, 'Here is the report.');
    const rejected = fold(await playTask(srv.url, 'reject this', srv.workspace));
    t.equal(rejected.state, 'rejected');
    t.equal(rejected.final, true);
    t.equal(rejected.statusMessage, 'not doing that');
  });

  t.test('an MCP-less generic task of another conversation starts a view of its own', async (t) => {
    const first = fold(await playTask(srv.url, 'write one', srv.workspace));
    const second = await playTask(srv.url, 'write two', srv.workspace);
    const view = fold(second, first);
    t.equal(view.taskId, idsOf(second).taskId);
    t.same(shape(view), shape(fold(second)));
  });
});

t.test('a failed task: the reason from the state change', async (t) => {
  const srv = await startServer(t, {
    model: {
      model: 'broken',
      // eslint-disable-next-line require-yield
      async *generate() {
        throw new Error('the model is gone');
      },
    },
  });
  const view = fold(await playTask(srv.url, 'anything', srv.workspace));
  t.equal(view.state, 'failed');
  t.equal(view.final, true);
  t.type(view.error, 'string');
  t.ok((view.error ?? '').length > 0, `reason: ${view.error}`);
});

t.test('the legacy coderAgent dialect, as gemini-cli’s own server sent it', async (t) => {
  const fixture = (name: string): StreamItem[] => {
    const steps = JSON.parse(readFileSync(new URL(`../fixtures/legacy/${name}.json`, import.meta.url), 'utf8')) as Record<string, unknown>;
    return Object.values(steps)
      .flatMap((frames) => (Array.isArray(frames) ? frames : []))
      .filter((frame: any) => frame.result !== undefined)
      .map((frame: any) => ({ event: frame.result }));
  };
  const write = fold(fixture('write-file'));
  t.equal(write.dialect, 'legacy');
  const card = write.cards[0];
  t.equal(card?.toolName, 'write_file');
  t.ok(card?.history.some((h) => h.status === 'PENDING'));
  t.equal(card?.history.at(-1)?.status, 'SUCCEEDED');
  t.ok(card?.diff?.unified.length, 'the edit’s diff');
  t.equal(card?.checkpoint, '2026-11-25T10-54-49_822Z-hello.txt-write_file', 'request.checkpoint: what restore takes');

  const card2 = fold(fixture('two-calls'));
  const waiting = card2.cards.find((c) => c.waiting);
  t.ok(waiting, 'an awaiting_approval card waits');
  t.ok(waiting?.options.some((o) => o.id === 'proceed_once'));
  t.equal(card2.state, 'input-required');

  const shell = fold(fixture('shell'));
  const run = shell.cards.find((c) => c.toolName === 'run_shell_command');
  t.ok(run?.liveOutput !== undefined && run.liveOutput.length > 0, 'shell output from its artifact');
  t.ok(fold(fixture('thought')).thoughts.length > 0, 'thoughts');
  t.equal(fold(fixture('cancel')).cards[0]?.status, 'CANCELLED');
});

t.test('messages, and what the fold leaves alone', async (t) => {
  const base = { ...emptyView(), taskId: 't1', contextId: 'c1', state: 'completed' as const, final: true };
  const user = foldEvent(base, {
    event: { kind: 'message', role: 'user', messageId: 'u1', taskId: 't1', parts: [{ kind: 'text', text: 'again' }] },
  });
  t.same(user.transcript, [{ role: 'user', kind: 'text', text: 'again', messageId: 'u1' }]);
  t.equal(
    foldEvent(user, { event: { kind: 'message', role: 'user', messageId: 'u1', parts: [{ kind: 'text', text: 'again' }] } }),
    user,
    'the same message once',
  );
  const answer = foldEvent(base, {
    event: {
      role: 'ROLE_USER',
      messageId: 'u2',
      parts: [{ data: { tool_call_id: 'tc1', selected_option_id: 'cancel', feedback: 'too risky' } }],
    },
  });
  t.same(answer.transcript, [
    { role: 'user', kind: 'answer', toolCallId: 'tc1', optionId: 'cancel', feedback: 'too risky', messageId: 'u2' },
  ]);
  const textFeedback = foldEvent(base, {
    event: {
      kind: 'message',
      role: 'user',
      messageId: 'u3',
      parts: [
        { kind: 'text', text: 'not now' },
        { kind: 'data', data: { callId: 'c9', outcome: 'cancel' } },
      ],
    },
  });
  t.match(textFeedback.transcript, [{ kind: 'answer', toolCallId: 'c9', optionId: 'cancel', feedback: 'not now' }]);
  t.equal(textFeedback.transcript.length, 1, 'one entry: the answer');
  const agent = foldEvent(emptyView(), {
    event: { message: { role: 'ROLE_AGENT', messageId: 'a1', contextId: 'c2', parts: [{ text: 'Hi.' }] } },
  });
  t.equal(agent.text, 'Hi.');
  t.equal(agent.final, true, 'a Message answers on its own');
  t.equal(foldEvent(base, { id: '3', event: { something: 'else' } }).lastEventId, '3', 'an unknown result counts as applied');
  t.equal(foldEvent(base, { event: null }), base);
  t.equal(foldEvent(base, { id: 'x', event: 42 }), base, 'an id that is not a sequence number is not kept');
});
