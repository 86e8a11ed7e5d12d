/**
 * The pure half of the group commit (src/store/batch-plan.ts): lock order, seq offsets,
 * deduplication, and the notification payload's parser.
 */
import t from 'tap';
import { byCodeUnits, MAX_RUN, parseNotification, planBatch, seqsOf } from '../../src/store/batch-plan.js';
import { Task, TaskStatus } from '@a2a-js/sdk';
import { makeCall, makeStatus, makeTask, statusEvent, withHistory } from './fixtures/builders.js';
import { batchOf } from './fixtures/commit-contract.js';
import { deltaEvent } from './fixtures/text-run-contract.js';

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

t.test('text runs: a task’s consecutive deltas are one stored row; other events, keys, finals and gaps end a run', async (t) => {
  const [a, b] = [makeTask('ctx', 'TASK_STATE_WORKING', 0, 'a'), makeTask('ctx', 'TASK_STATE_WORKING', 0, 'b')];
  const keyed = (n: number) => ({ ...deltaEvent(a, n), key: 'k' });
  const finalDelta = { ...deltaEvent(a, 9), final: true };
  const plan = planBatch(
    batchOf({
      events: [
        deltaEvent(a, 1),
        deltaEvent(b, 1),
        deltaEvent(a, 2), // b's delta between: still a's run
        { taskId: a.id, task: a, response: statusEvent(a, 3), final: false }, // not text alone: ends the run
        deltaEvent(a, 4),
        keyed(5), // superseded below: a seq gap, so 4 and 6 are two runs
        deltaEvent(a, 6),
        keyed(7),
        deltaEvent(a, 8),
        finalDelta,
      ],
    }),
  );
  t.same(
    plan.events.map((e) => [e.task_id, e.back, e.span]),
    [
      ['a', 8, 1],
      ['b', 0, 1],
      ['a', 7, 1],
      ['a', 6, 1],
      ['a', 5, 1],
      ['a', 4, 1],
      ['a', 3, 1],
      ['a', 2, 1],
      ['a', 1, 1],
      ['a', 0, 1],
    ],
    'every event still takes a seq of its own',
  );
  const tags = (payload: unknown) =>
    (Array.isArray(payload) ? payload : [payload]).map((p) => (p as { statusUpdate: { metadata: { n: number } } }).statusUpdate.metadata.n);
  t.same(
    plan.stored.map((e) => [e.task_id, e.back, e.span, e.key, e.final, tags(e.payload)]),
    [
      ['a', 7, 2, null, false, [1, 2]],
      ['b', 0, 1, null, false, [1]],
      ['a', 6, 1, null, false, [3]],
      ['a', 5, 1, null, false, [4]],
      ['a', 3, 1, null, false, [6]],
      ['a', 2, 1, 'k', false, [7]],
      ['a', 1, 1, null, false, [8]],
      ['a', 0, 1, null, true, [9]],
    ],
  );
  t.same(
    seqsOf(
      plan,
      new Map([
        ['a', 20],
        ['b', 5],
      ]),
    ),
    [12, 5, 13, 14, 15, 16, 17, 18, 19, 20],
  );
  t.equal(Array.isArray(plan.events[0].payload), false, 'the plan’s per-event rows are left as they were');
});

t.test('text runs: at most MAX_RUN deltas a row (a page read inside a run reads little)', async (t) => {
  const a = makeTask('ctx', 'TASK_STATE_WORKING', 0, 'a');
  const n = 2 * MAX_RUN + 5;
  const plan = planBatch(batchOf({ events: Array.from({ length: n }, (_, i) => deltaEvent(a, i)) }));
  t.same(
    plan.stored.map((e) => [e.back, e.span]),
    [
      [n - MAX_RUN, MAX_RUN],
      [n - 2 * MAX_RUN, MAX_RUN],
      [0, 5],
    ],
  );
});
