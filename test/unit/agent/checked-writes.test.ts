/**
 * Checked writes (WriteBatch.expect, LiveTask.expectation): a copy of a task that another
 * instance moved on writes nothing — not the supervisor's `Interrupted` after the task's real end
 * (the race its version read cannot close), not a running copy's next event after another
 * instance failed the task — and the copy stops instead of failing the task again. A cancel lands
 * over another instance's appends, but not over its pause. And the `executed` audit row of a call
 * is committed before the tool starts. Two MemoryTaskStore connections play two instances.
 */
import t from 'tap';
import type { ToolResult } from '../../../src/tools/tool.js';
import { Supervisor } from '../../../src/agent/runtime/supervisor.js';
import { cancelTask, endTurn, failTask, pauseTask } from '../../../src/agent/runtime/task-lifecycle.js';
import type { LiveTask } from '../../../src/agent/runtime/live-task.js';
import { MemoryTaskStore } from '../../../src/store/memory-store.js';
import { fakeTool, logOf, makeCore, runTurn, shape, startTask, storedState } from '../../support/core.js';
import type { Core } from '../../support/core.js';
import { makeTask, statusEvent } from '../../store/fixtures/builders.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const LEASE_MS = 200;

/** A database, and instance B's core on its own connection. */
async function twoInstances(t: Test, a: MemoryTaskStore) {
  const bConn = a.connect();
  t.teardown(() => bConn.close());
  const b = await makeCore(t, { store: bConn, instanceId: 'B', leaseMs: LEASE_MS });
  return b;
}

t.test('the supervisor fails no task that another instance ended after the supervisor read its version', async (t) => {
  const db = new MemoryTaskStore();
  t.teardown(() => db.close());
  // What the supervisor reads through: right after its version read, instance B ends the task.
  const race: { meanwhile?: () => Promise<void> } = {};
  const racing = Object.assign(Object.create(db) as MemoryTaskStore, {
    loadVersion: async (id: string) => {
      const version = await db.loadVersion(id);
      const meanwhile = race.meanwhile;
      race.meanwhile = undefined;
      await meanwhile?.();
      return version;
    },
  });
  const a = await makeCore(t, { store: db, instanceId: 'A', leaseMs: LEASE_MS });
  const supervisor = new Supervisor({ store: racing, cache: a.cache, loop: a.loop, logger: a.logger, instanceId: 'A', leaseMs: LEASE_MS });
  t.teardown(() => supervisor.stop());
  const b = await twoInstances(t, db);
  const started = await startTask(a, { text: 'look' });
  await started.flush();
  const taskId = started.id;
  await db.leaseTasks([taskId], 'B', new Date(Date.now() - 1_000)); // B's lease looks lapsed (B is slow, not dead)
  race.meanwhile = async () => {
    const copy = (await b.cache.get(taskId))!;
    copy.publish({ type: 'text', delta: 'B answers' });
    endTurn(copy, { state: 'completed' });
    await copy.flush();
  };

  await supervisor.sweep();
  const log = shape(await logOf(db, taskId));
  t.same(log.slice(-2), ['text:B answers', 'completed!'], 'the task ends as B ended it');
  t.notOk(log.includes('failed!'), 'no Interrupted after the end');
  t.equal(await storedState(db, taskId), 'completed');
  t.equal(a.cache.peek(taskId), undefined, "A's overtaken copy left memory");
  t.ok(
    a.logger.warnings().some((w) => w.msg.startsWith('another process moved this task on')),
    'A logs why it stopped',
  );
  t.same(a.logger.errors(), [], 'and nothing failed');
});

t.test('a running copy whose task another instance failed writes nothing more: it stops, and does not fail the task again', async (t) => {
  const db = new MemoryTaskStore();
  t.teardown(() => db.close());
  const a = await makeCore(t, { store: db, instanceId: 'A', leaseMs: LEASE_MS });
  const overtaken: LiveTask[] = [];
  a.deps.onOvertaken = (task) => overtaken.push(task);
  const b = await twoInstances(t, db);
  const running = await startTask(a, { text: 'look' }); // a bare copy: not in A's cache, so only its own write can tell it
  running.publish({ type: 'text', delta: 'A works' });
  await running.flush();

  const copy = (await b.cache.get(running.id))!;
  failTask(copy, 'Interrupted: test');
  await copy.flush();
  running.publish({ type: 'text', delta: 'A goes on' });
  endTurn(running, { state: 'completed' });
  await running.flush();

  t.same(shape(await logOf(db, running.id)).slice(-2), ['text:A works', 'failed!'], 'nothing after B’s failure');
  t.same(overtaken, [running], 'the copy was told, once');
  t.ok(running.halted && running.overtaken, 'it publishes nothing more');
  t.ok(running.abort.signal.aborted, 'what ran for it was aborted');
  t.same(a.logger.errors(), [], 'no write failure: the task is not failed again');
});

t.test('a cancel from another instance lands over its appends, not over its pause', async (t) => {
  const db = new MemoryTaskStore();
  t.teardown(() => db.close());
  const a = await makeCore(t, { store: db, instanceId: 'A', leaseMs: LEASE_MS });
  const b = await twoInstances(t, db);

  await t.test('A streams while B cancels: the cancel lands after A’s events', async (t) => {
    const running = await startTask(a, { text: 'look' });
    await running.flush();
    const copy = (await b.cache.get(running.id))!;
    running.publish({ type: 'text', delta: 'A streams' });
    await running.flush();
    cancelTask(copy, undefined);
    await copy.flush();
    t.notOk(copy.overtaken);
    t.same(shape(await logOf(db, running.id)).slice(-2), ['text:A streams', 'canceled!']);
    running.publish({ type: 'text', delta: 'late' });
    await running.flush();
    t.equal(shape(await logOf(db, running.id)).at(-1), 'canceled!', 'nothing follows the cancel');
  });

  await t.test('A paused after B read the task: B’s cancel is refused, B’s copy is overtaken', async (t) => {
    const running = await startTask(a, { text: 'look' });
    await running.flush();
    const copy = (await b.cache.get(running.id))!;
    pauseTask(running, []);
    await running.flush();
    cancelTask(copy, undefined);
    await copy.flush();
    t.ok(copy.overtaken, 'refused: the task is not in the state B saw');
    t.equal(await storedState(db, running.id), 'input-required');
    t.equal(b.cache.peek(running.id), undefined, 'B reads it afresh next time');
  });
});

t.test("a call's executed audit row is committed before its tool starts", async (t) => {
  const seen: string[][] = [];
  const look = fakeTool({
    name: 'look',
    kind: 'read',
    run: async (): Promise<ToolResult> => {
      seen.push((await core.store.listAudit({})).map((r) => r.decision));
      return { llmContent: 'looked', display: { type: 'text', text: 'looked' } };
    },
  });
  const core: Core = await makeCore(t, { tools: [look] });
  const task = await startTask(core, { text: 'look' });
  await runTurn(core, task);
  t.equal(seen.length, 1, 'the tool ran once');
  t.ok(seen[0]?.includes('executed'), `the store had the executed row when the tool started (${seen.join(', ')})`);
  t.equal(await storedState(core.store, task.id), 'completed');
});

t.test('a re-prompt of a task that ended elsewhere (its calls still stored waiting) is refused, not thrown', async (t) => {
  const db = new MemoryTaskStore();
  t.teardown(() => db.close());
  const a = await makeCore(t, { store: db, instanceId: 'A', leaseMs: LEASE_MS });
  const task = await startTask(a, { text: 'edit' });
  await runTurn(a, task);
  const [waiting] = task.awaiting();
  t.ok(waiting, 'paused on the edit card');
  // Another instance's end that left the call row as it was (only the task's state moved).
  const ended = makeTask(task.task.contextId, 'TASK_STATE_FAILED', 9, task.id);
  await db.commit({
    events: [{ taskId: task.id, task: ended, response: statusEvent(ended, 9), final: true }],
    calls: [],
    history: [],
    trust: [],
    audit: [],
  });
  const seqs = await task.publishWhileAwaiting([waiting.snapshot.id], [{ type: 'tool-call', call: structuredClone(waiting.snapshot) }]);
  t.equal(seqs, undefined, 'refused: the caller says the task is no longer waiting');
  t.equal(shape(await logOf(db, task.id)).at(-1), 'failed!', 'nothing after the end');
});
