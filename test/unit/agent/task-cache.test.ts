/**
 * TaskCache: a task that pauses stays parked in memory and is taken back on the next message
 * when the store still matches it (its last seq, its context's version, its turn's calls);
 * anything changed elsewhere makes it reload. A copy a refused message touched is not kept.
 */
import t from 'tap';
import { makeCore, runTurn, startTask, until } from '../../support/core.js';
import type { Core } from '../../support/core.js';
import type { LiveTask } from '../../../src/agent/runtime/live-task.js';

/** A task paused on one `edit` call, parked by the cache. */
async function parkedTask(core: Core): Promise<LiveTask> {
  const task = await startTask(core, { text: 'edit', viaCache: true });
  await runTurn(core, task);
  t.equal(task.state, 'input-required');
  await until('parked', () => core.cache.peek(task.id) === undefined && core.cache.known(task.id) === task);
  return task;
}

t.test('a paused task is parked and taken back while nothing changed in the store', async (t) => {
  const core = await makeCore(t);
  const task = await parkedTask(core);
  const loads: string[] = [];
  const loadTask = core.store.loadTask.bind(core.store);
  core.store.loadTask = (id) => (loads.push(id), loadTask(id));
  t.equal(await core.cache.get(task.id), task, 'the same copy');
  t.same(loads, [], 'not reloaded');
  t.equal(core.cache.peek(task.id), task, 'worked on here again');
});

t.test('a change of the context elsewhere makes the next message reload the task', async (t) => {
  const core = await makeCore(t);
  const task = await parkedTask(core);
  await core.store.updateContextSettings(task.task.contextId, { approvalMode: 'AUTO_EDIT' });
  const again = await core.cache.get(task.id);
  t.not(again, task, 'reloaded');
  t.equal(again?.context.settings.approvalMode, 'AUTO_EDIT', 'with the settings stored meanwhile');
});

t.test('a claim elsewhere (no event logged yet) makes the next message reload the task', async (t) => {
  const core = await makeCore(t);
  const task = await parkedTask(core);
  const call = task.awaiting()[0];
  const claimed = await core.store.claimCalls(
    task.id,
    [{ id: call.snapshot.id, answer: 'proceed_once' }],
    'other',
    new Date(Date.now() + 60_000),
  );
  t.ok(claimed.ok);
  const again = await core.cache.get(task.id);
  t.not(again, task, 'reloaded');
  t.equal(again?.turn[0]?.phase, 'ready');
  t.equal(again?.turn[0]?.elsewhere, true, "the other instance's to run");
});

t.test('an event logged elsewhere makes the next message reload the task', async (t) => {
  const core = await makeCore(t);
  const task = await parkedTask(core);
  await core.store.appendEvent(structuredClone(task.task), { payload: undefined }, false);
  const again = await core.cache.get(task.id);
  t.not(again, task, 'reloaded');
  t.equal(again?.lastSeq, task.lastSeq + 1);
});

t.test('a copy a refused message touched is dropped, not parked; forget and detachAll drop parked copies', async (t) => {
  const core = await makeCore(t);
  const task = await parkedTask(core);
  t.equal(await core.cache.get(task.id), task);
  core.cache.release(task, false);
  t.equal(core.cache.known(task.id), undefined, 'not kept');
  const other = await parkedTask(core);
  core.cache.forget(other);
  t.equal(core.cache.known(other.id), undefined, 'forgotten');
  const third = await parkedTask(core);
  core.cache.detachAll();
  t.equal(core.cache.known(third.id), undefined, 'detached at shutdown');
});
