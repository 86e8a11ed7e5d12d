/**
 * The pure half of the group commit (src/store/batch-plan.ts): lock order, seq offsets,
 * deduplication, and the notification payload's parser.
 */
import t from 'tap';
import { byCodeUnits, parseNotification, planBatch, seqsOf } from '../../src/store/batch-plan.js';
import { makeCall, makeTask, statusEvent } from './fixtures/builders.js';
import { batchOf } from './fixtures/commit-contract.js';

t.test('tasks are bumped in code-unit order; each event knows its distance from the last seq', async (t) => {
  const [x, y] = [makeTask('ctx', 'TASK_STATE_WORKING', 0, 'b-task'), makeTask('ctx', 'TASK_STATE_WORKING', 0, 'B-task')];
  const done = makeTask('ctx', 'TASK_STATE_COMPLETED', 9, 'b-task');
  const plan = planBatch(batchOf({
    events: [
      { task: x, response: statusEvent(x), final: false },
      { task: y, response: statusEvent(y), final: false },
      { task: done, response: statusEvent(done), final: true },
    ],
  }));
  t.same(plan.tasks.map((k) => [k.id, k.count, k.state, k.final]), [['B-task', 1, 'working', false], ['b-task', 2, 'completed', true]]);
  t.match(plan.tasks[1].snapshot, { metadata: { n: 9 } }, 'the snapshot of the task’s last event');
  t.same(plan.events.map((e) => [e.task_id, e.back]), [['b-task', 1], ['B-task', 0], ['b-task', 0]]);
  t.same(seqsOf(plan, new Map([['b-task', 7], ['B-task', 1]])), [6, 1, 7]);
  t.equal(plan.empty, false);
});

t.test('calls: last entry per id wins; history merged per context; first grant per tool', async (t) => {
  const [c1, c2] = [makeCall('t', { id: 'z' }), makeCall('t', { id: 'a' })];
  const c1b = { ...c1, phase: 'done' as const };
  const text = (s: string) => ({ role: 'user' as const, parts: [{ text: s }] });
  const plan = planBatch(batchOf({
    calls: [c1, c2, c1b],
    history: [{ contextId: 'k2', contents: [text('1')] }, { contextId: 'k1', contents: [] }, { contextId: 'k2', contents: [text('2')] }],
    trust: [{ contextId: 'k', toolName: 'x', principal: 'alice' }, { contextId: 'k', toolName: 'x', principal: 'bob' }, { contextId: 'a', toolName: 'x' }],
  }));
  t.same(plan.calls, [c2, c1b]);
  t.same(plan.history, [{ contextId: 'k2', contents: [text('1'), text('2')] }], 'empty entries vanish');
  t.same(plan.trust, [{ contextId: 'a', toolName: 'x' }, { contextId: 'k', toolName: 'x', principal: 'alice' }]);
  t.equal(planBatch(batchOf({ history: [{ contextId: 'k', contents: [] }] })).empty, true);
});

t.test('byCodeUnits is a total order independent of locale', async (t) => {
  t.same(['b', 'B', 'a', 'b'].sort(byCodeUnits), ['B', 'a', 'b', 'b']);
});

t.test('parseNotification: <taskId>:<seq>:<0|1>, task ids may hold colons; malformed → undefined', async (t) => {
  t.same(parseNotification('t-1:12:1'), { taskId: 't-1', seq: 12, final: true });
  t.same(parseNotification('a:b:3:0'), { taskId: 'a:b', seq: 3, final: false });
  t.same(parseNotification(':5:0'), undefined, 'an empty task id is not one');
  for (const bad of ['', 't', 't:1', 't:x:1', 't:1:2', 't:1:', 't::1', 't:-1:0', 't:1.5:0']) t.equal(parseNotification(bad), undefined, JSON.stringify(bad));
});
