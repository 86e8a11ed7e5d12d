/**
 * The pure half of the group commit (src/store/batch-plan.ts): lock order, seq offsets,
 * deduplication, and the notification payload's parser.
 */
import t from 'tap';
import { byCodeUnits, parseNotification, planBatch, seqsOf } from '../../src/store/batch-plan.js';
import { Task, TaskStatus } from '@a2a-js/sdk';
import { makeCall, makeStatus, makeTask, statusEvent, withHistory } from './fixtures/builders.js';
import { batchOf } from './fixtures/commit-contract.js';

t.test('tasks are bumped in code-unit order; each event knows its distance from the last seq', async (t) => {
  const [x, y] = [makeTask('ctx', 'TASK_STATE_WORKING', 0, 'b-task'), makeTask('ctx', 'TASK_STATE_WORKING', 0, 'B-task')];
  const done = makeTask('ctx', 'TASK_STATE_COMPLETED', 9, 'b-task');
  const plan = planBatch(
    batchOf({
      events: [
        { taskId: x.id, task: x, response: statusEvent(x), final: false },
        { taskId: y.id, task: y, response: statusEvent(y), final: false },
        { taskId: done.id, task: done, response: statusEvent(done), final: true },
      ],
    }),
  );
  t.same(
    plan.tasks.map((k) => [k.id, k.count, k.state, k.final]),
    [
      ['B-task', 1, 'working', false],
      ['b-task', 2, 'completed', true],
    ],
  );
  t.match(plan.tasks[1].snapshot, { metadata: { n: 9 } }, 'the snapshot of the task’s last event');
  t.same(
    plan.events.map((e) => [e.task_id, e.back]),
    [
      ['b-task', 1],
      ['B-task', 0],
      ['b-task', 0],
    ],
  );
  t.same(
    seqsOf(
      plan,
      new Map([
        ['b-task', 7],
        ['B-task', 1],
      ]),
    ),
    [6, 1, 7],
  );
  t.equal(plan.empty, false);
});

t.test('status-only events: the status goes onto the batch’s latest whole snapshot, else onto the stored one', async (t) => {
  const whole = withHistory(makeTask('ctx', 'TASK_STATE_WORKING', 1, 'w'), ['h1', 'h2']);
  const other = makeTask('ctx', 'TASK_STATE_WORKING', 2, 'f');
  const [working, paused] = [makeStatus('TASK_STATE_WORKING', 2), makeStatus('TASK_STATE_INPUT_REQUIRED', 3)];
  const only = (taskId: string, status = working) => ({ taskId, status, response: statusEvent(whole), final: false });
  const plan = planBatch(
    batchOf({
      events: [
        only('s'),
        { taskId: 'w', task: whole, response: statusEvent(whole), final: false },
        only('s', paused),
        only('w'),
        { taskId: 'f', task: other, response: statusEvent(other), final: true },
        only('w', paused),
      ],
    }),
  );
  t.same(
    plan.tasks.map((k) => [k.id, k.count, k.state, k.final]),
    [
      ['f', 1, 'working', true],
      ['s', 2, 'input-required', false],
      ['w', 3, 'input-required', false],
    ],
  );
  const [f, s, w] = plan.tasks;
  t.same(f.snapshot, Task.toJSON(other), 'a whole last event: its snapshot');
  t.equal(f.status, undefined);
  t.equal(s.snapshot, undefined, 'no whole snapshot in the batch: the status alone');
  t.same(s.status, TaskStatus.toJSON(paused), 'the last status');
  t.same(
    w.snapshot,
    { ...(Task.toJSON(whole) as object), status: TaskStatus.toJSON(paused) },
    'after a whole snapshot: it, with the last status',
  );
  t.equal(w.status, undefined);
  t.same((Task.toJSON(whole) as { status: unknown }).status, TaskStatus.toJSON(whole.status!), 'both paths store the same status JSON');
  t.same(
    plan.events.map((e) => [e.task_id, e.back]),
    [
      ['s', 1],
      ['w', 2],
      ['s', 0],
      ['w', 1],
      ['f', 0],
      ['w', 0],
    ],
  );
  const last = planBatch(batchOf({ events: [only('w', paused), { taskId: 'w', task: whole, response: statusEvent(whole), final: false }] }))
    .tasks[0];
  t.same([last.snapshot, last.status, last.state], [Task.toJSON(whole), undefined, 'working'], 'status-only then whole: the whole one');
  t.throws(() => planBatch(batchOf({ events: [{ taskId: 'w', response: statusEvent(whole), final: false }] })), /neither task nor status/);
  t.throws(
    () => planBatch(batchOf({ events: [{ taskId: 'x', task: whole, response: statusEvent(whole), final: false }] })),
    /snapshot of task w/,
  );
});

t.test('calls: last entry per id wins; history merged per context; first grant per tool', async (t) => {
  const [c1, c2] = [makeCall('t', { id: 'z' }), makeCall('t', { id: 'a' })];
  const c1b = { ...c1, phase: 'done' as const };
  const text = (s: string) => ({ role: 'user' as const, parts: [{ text: s }] });
  const plan = planBatch(
    batchOf({
      calls: [c1, c2, c1b],
      history: [
        { contextId: 'k2', contents: [text('1')] },
        { contextId: 'k1', contents: [] },
        { contextId: 'k2', contents: [text('2')] },
      ],
      trust: [
        { contextId: 'k', toolName: 'x', principal: 'alice' },
        { contextId: 'k', toolName: 'x', principal: 'bob' },
        { contextId: 'a', toolName: 'x' },
      ],
    }),
  );
  t.same(plan.calls, [c2, c1b]);
  t.same(plan.history, [{ contextId: 'k2', contents: [text('1'), text('2')] }], 'empty entries vanish');
  t.same(plan.trust, [
    { contextId: 'a', toolName: 'x' },
    { contextId: 'k', toolName: 'x', principal: 'alice' },
  ]);
  t.equal(planBatch(batchOf({ history: [{ contextId: 'k', contents: [] }] })).empty, true);
});

t.test('byCodeUnits is a total order independent of locale', async (t) => {
  t.same(['b', 'B', 'a', 'b'].sort(byCodeUnits), ['B', 'a', 'b', 'b']);
});

t.test('parseNotification: <taskId>:<seq>:<0|1>, task ids may hold colons; malformed → undefined', async (t) => {
  t.same(parseNotification('t-1:12:1'), { taskId: 't-1', seq: 12, final: true });
  t.same(parseNotification('a:b:3:0'), { taskId: 'a:b', seq: 3, final: false });
  t.same(parseNotification(':5:0'), undefined, 'an empty task id is not one');
  for (const bad of ['', 't', 't:1', 't:x:1', 't:1:2', 't:1:', 't::1', 't:-1:0', 't:1.5:0'])
    t.equal(parseNotification(bad), undefined, JSON.stringify(bad));
});
