/**
 * TaskCache: a task that pauses stays parked in memory and is taken back on the next message
 * without a read; an event another process commits drops it, and a change the hub has not heard
 * of yet is caught by the claim the message makes (behind: nothing claimed). A copy a refused
 * message touched is not kept.
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

t.test('a paused task is parked and taken back without reading the store', async (t) => {
  const core = await makeCore(t);
  const task = await parkedTask(core);
  const reads: string[] = [];
  for (const name of ['loadTask', 'loadVersion', 'loadTurn', 'loadContext'] as const) {
    const read = core.store[name].bind(core.store) as (id: string) => Promise<unknown>;
    Object.assign(core.store, { [name]: (id: string) => (reads.push(name), read(id)) });
  }
  t.equal(await core.cache.get(task.id), task, 'the same copy');
  t.same(reads, [], 'nothing read: not the task, its version, its turn or its context');
  t.equal(core.cache.peek(task.id), task, 'worked on here again');
});

t.test('an event another process commits drops the parked copy: the next message reloads the task', async (t) => {
  const core = await makeCore(t);
  const task = await parkedTask(core);
  const peer = core.store.connect();
  t.teardown(() => peer.close());
  await peer.appendEvent(structuredClone(task.task), { payload: undefined }, false);
  await until('dropped', () => core.cache.known(task.id) === undefined);
  const again = await core.cache.get(task.id);
  t.not(again, task, 'reloaded');
  t.equal(again?.lastSeq, task.lastSeq + 1);
});

t.test('a parked copy the hub has not heard about yet is caught by its claim: behind, nothing claimed', async (t) => {
  const core = await makeCore(t);
  const task = await parkedTask(core);
  const call = task.awaiting()[0];
  // Logged through this process's own connection: the hub takes it for its own and drops nothing.
  await core.store.appendEvent(structuredClone(task.task), { payload: undefined }, false);
  t.equal(await core.cache.get(task.id), task, 'the copy is still taken back');
  const lease = new Date(Date.now() + 60_000);
  const claim = [{ id: call.snapshot.id, answer: 'proceed_once' }];
  t.same(await core.store.claimCalls(task.id, claim, 'me', lease, task.lastSeq), { ok: false, notAwaiting: [], behind: task.lastSeq + 1 });
  t.equal((await core.store.loadCall(call.snapshot.id))?.phase, 'awaiting', 'nothing claimed');
  t.match(await core.store.claimCalls(task.id, claim, 'me', lease, task.lastSeq + 1), { ok: true }, 'a current copy claims');
});

t.test("a claim elsewhere (no event logged yet): the kept copy's own claim loses the call", async (t) => {
  const core = await makeCore(t);
  const task = await parkedTask(core);
  const call = task.awaiting()[0];
  const lease = new Date(Date.now() + 60_000);
  t.ok((await core.store.claimCalls(task.id, [{ id: call.snapshot.id, answer: 'proceed_once' }], 'other', lease)).ok);
  t.equal(await core.cache.get(task.id), task, 'taken back unchecked');
  t.same(await core.store.claimCalls(task.id, [{ id: call.snapshot.id, answer: 'cancel' }], 'me', lease, task.lastSeq), {
    ok: false,
    notAwaiting: [call.snapshot.id],
  });
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
