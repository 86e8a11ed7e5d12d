/**
 * Detached work has an owner (lib/background.ts, agent/runtime/task-runs.ts): runs are tracked until
 * they settle, an error goes to the owner's handler instead of becoming an unhandled
 * rejection, and an error in a task's run fails that task with a reference to the log.
 */
import t from 'tap';
import { proposeCall, requestApproval, showCall } from '../../../src/agent/runtime/call-lifecycle.js';
import { TaskRuns } from '../../../src/agent/runtime/task-runs.js';
import { Background } from '../../../src/lib/background.js';
import { MemoryTaskStore } from '../../../src/store/memory-store.js';
import { gate, logOf, makeCore, recordingLogger, shape, startTask, storedState, until, watchRejections } from '../../support/core.js';

const REF = /^Internal error while (.+) \(reference ([0-9a-f]{8}) in the server log\); the task cannot go on\.$/;

t.test('Background: run returns at once, counts what runs, and drain waits for it all', async (t) => {
  const errors: Array<[unknown, string]> = [];
  const bg = new Background((err, what) => void errors.push([err, what]));
  const g = gate();
  const order: string[] = [];
  bg.run('first', async () => {
    await g.wait();
    order.push('first');
    bg.run('started meanwhile', async () => {
      await Promise.resolve();
      order.push('second');
    });
  });
  t.equal(bg.size, 1, 'run returned before the work ended');
  const drained = bg.drain().then(() => order.push('drained'));
  g.open();
  await drained;
  t.same(order, ['first', 'second', 'drained'], 'drain waits for runs started while it waited');
  t.equal(bg.size, 0);
  t.same(errors, []);
  await bg.drain();
  t.pass('drain with nothing running resolves');
});

t.test('Background: an error goes to the handler with the name of the run, never to the caller', async (t) => {
  const rejections = watchRejections(t);
  const errors: Array<[string, string]> = [];
  const bg = new Background((err, what) => void errors.push([(err as Error).message, what]));
  bg.run('the sync thrower', () => {
    throw new Error('sync');
  });
  bg.run('the async thrower', async () => {
    throw new Error('async');
  });
  await t.resolves(
    bg.settle('settled work', async () => Promise.reject(new Error('settled'))),
    'settle resolves',
  );
  await bg.drain();
  t.same(errors.sort(), [
    ['async', 'the async thrower'],
    ['settled', 'settled work'],
    ['sync', 'the sync thrower'],
  ]);
  t.same(rejections, []);
});

t.test('Background: a handler that throws is contained', async (t) => {
  const rejections = watchRejections(t);
  const bg = new Background(() => {
    throw new Error('the logger broke');
  });
  bg.run('x', async () => {
    throw new Error('first');
  });
  await bg.drain();
  await t.resolves(bg.settle('y', async () => Promise.reject(new Error('second'))));
  await new Promise((r) => setImmediate(r));
  t.same(rejections, []);
  t.equal(bg.size, 0);
});

t.test('TaskRuns.detach: a run that throws fails its task with a reference, logs the error, and nothing escapes', async (t) => {
  const rejections = watchRejections(t);
  const core = await makeCore(t);
  const task = await startTask(core);
  const other = await startTask(core);
  const g = gate();
  let otherDone = false;
  core.runs.detach(other, 'the other run', async () => {
    await g.wait();
    otherDone = true;
  });
  core.runs.detach(task, 'reading the workspace', async () => {
    throw Object.assign(new Error("EACCES: permission denied, open '/secret/db.key'"), { code: 'EACCES' });
  });
  await until('the task to fail', () => task.state === 'failed');
  await task.flush();
  t.notOk(otherDone, 'the other run still waits');
  g.open();
  await core.runs.drain();
  t.ok(otherDone, "the other task's run went on");

  const log = await logOf(core.store, task.id);
  t.same(shape(log), ['task', 'working', 'failed!']);
  const m = REF.exec(log.at(-1)!.text);
  t.ok(m, log.at(-1)!.text);
  t.equal(m?.[1], 'reading the workspace');
  t.equal(log.at(-1)!.error, log.at(-1)!.text, "the event's error says the same");
  t.notMatch(log.at(-1)!.text, /secret|EACCES/, 'the client does not see the error itself');
  const [entry] = core.logger.errors();
  t.match(entry, { level: 'error', msg: 'reading the workspace failed; the task fails', obj: { taskId: task.id, ref: m?.[2] } });
  t.match((entry?.obj.err as Error).message, /EACCES/, 'the log keeps the error');
  t.equal(core.logger.errors().length, 1);
  t.equal(await storedState(core.store, other.id), 'working', 'the other task is untouched');
  t.same(rejections, []);
});

t.test('TaskRuns.guard resolves when its work fails, after failing the task', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  await t.resolves(
    core.runs.guard(task, 'leasing the task', async () => {
      throw new Error('lease refused');
    }),
  );
  t.equal(task.state, 'failed', 'the task failed before guard resolved');
  let ran = false;
  await core.runs.guard(task, 'a good step', async () => {
    ran = true;
  });
  t.ok(ran, 'work that succeeds just runs');
  await task.flush();
  t.equal((await logOf(core.store, task.id)).filter((e) => e.state === 'failed').length, 1);
});

t.test('TaskRuns.fail closes the open calls of the turn: waiting ones CANCELLED, ready ones FAILED', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  task.turnNo = 0;
  task.turn = [
    await proposeCall(task, { id: 'm0', name: 'edit', args: { path: 'a', content: 'A' } }, 0, task.context.tools),
    await proposeCall(task, { id: 'm1', name: 'look', args: {} }, 1, task.context.tools),
  ];
  for (const c of task.turn) await requestApproval(task, c, undefined);
  for (const c of task.turn) showCall(task, c);
  core.runs.fail(task, 'running tool calls', new Error('bug'));
  await task.flush();
  const log = await logOf(core.store, task.id);
  t.same(shape(log).slice(-3), ['edit:CANCELLED', 'look:FAILED', 'failed!']);
  t.match(
    log.at(-3)!.call.error.message,
    /^The task failed before this call finished: Internal error while running tool calls \(reference [0-9a-f]{8}/,
  );
  t.strictSame(
    core.logger.errors().map((e) => e.msg),
    ['running tool calls failed; the task fails'],
  );

  core.runs.fail(task, 'again', new Error('later'));
  await task.flush();
  t.equal((await logOf(core.store, task.id)).length, log.length, 'a failed task is not failed twice');
  t.equal(core.logger.errors().length, 2, 'but the error is still logged');
});

t.test("a write the store refuses fails its task through TaskRuns; the failure's own writes land", async (t) => {
  const store = new MemoryTaskStore();
  t.teardown(() => store.close());
  const real = store.commit.bind(store);
  let refusals = 0;
  store.commit = async (batch) => {
    const doomed = batch.events.some((e) => JSON.stringify(e.response).includes('doomed'));
    if (doomed) {
      refusals++;
      throw Object.assign(new Error('value too long for type character varying'), { code: '22001' });
    }
    return real(batch);
  };
  const core = await makeCore(t, { store });
  const task = await startTask(core);
  await task.flush();
  task.publish({ type: 'text', delta: 'doomed' });
  await task.flush();
  await core.runs.drain();
  await task.flush();
  t.equal(refusals, 1);
  const log = await logOf(store, task.id);
  t.same(shape(log), ['task', 'working', 'failed!'], 'the refused event is not there; the failure is');
  t.match(log.at(-1)!.text, /^Internal error while saving its events \(reference [0-9a-f]{8} in the server log\)/);
  t.strictSame(
    core.logger.errors().map((e) => e.msg),
    ['store write failed: event', 'saving its events failed; the task fails'],
  );
});

t.test('a TaskRuns with a throwing logger lets nothing escape', async (t) => {
  const rejections = watchRejections(t);
  const core = await makeCore(t);
  const task = await startTask(core);
  const runs = new TaskRuns({
    warn: () => undefined,
    error: () => {
      throw new Error('logger down');
    },
  });
  runs.detach(task, 'a step', async () => {
    throw new Error('bug');
  });
  await runs.drain();
  await new Promise((r) => setImmediate(r));
  t.same(rejections, []);
  const logger = recordingLogger();
  const fine = new TaskRuns(logger);
  await fine.drain();
  t.same(logger.entries, []);
});
