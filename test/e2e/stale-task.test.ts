/**
 * A task whose process died while the model was answering (no tool call, so no call lease)
 * must not stay `working` forever: once its task lease lapses, a supervisor ends it
 * `failed` with the reason in a text part. A live task lease is never touched.
 */
import t from 'tap';
import { randomUUID } from 'node:crypto';
import { Role } from '@a2a-js/sdk';
import { newTask, STATE_TO_V1 } from '../../src/protocol/a2a.js';
import { rpc } from '../support/sse.js';
import { sharedStore, startServer, textOf } from '../support/server.js';

async function seedWorkingTask(leaseUntil?: Date): Promise<string> {
  const store = await sharedStore();
  const contextId = randomUUID();
  const taskId = randomUUID();
  await store.createContext({ id: contextId, workspace: '/tmp' });
  const message = {
    messageId: randomUUID(),
    contextId,
    taskId,
    role: Role.ROLE_USER,
    parts: [],
    metadata: undefined,
    extensions: [],
    referenceTaskIds: [],
  };
  const task = newTask(taskId, contextId, message);
  await store.createTask(task);
  task.status = { state: STATE_TO_V1.working, message: undefined, timestamp: new Date().toISOString() };
  await store.appendEvent(task, { payload: { $case: 'task', value: task } }, false);
  if (leaseUntil) await store.leaseTasks([taskId], 'a-live-peer', leaseUntil);
  return taskId;
}

t.test('a working task with a lapsed lease ends failed; a leased one is left alone', async (t) => {
  const dead = await seedWorkingTask(new Date(Date.now() - 1000));
  const live = await seedWorkingTask(new Date(Date.now() + 60_000));
  const srv = await startServer(t, { app: { sweepMs: 100 } });
  let state = '';
  let last: any;
  for (let i = 0; i < 100 && state !== 'failed'; i++) {
    last = (await rpc(srv.url, 'tasks/get', { id: dead })).json.result;
    state = last.status.state;
    if (state !== 'failed') await new Promise((r) => setTimeout(r, 100));
  }
  t.equal(state, 'failed', 'the orphaned task ends failed');
  t.match(textOf({ status: last.status }), /Interrupted: the server stopped while the model was answering/);
  const replay = await rpc(srv.url, 'tasks/resubscribe', { id: dead }, { headers: { 'Last-Event-ID': '1' } });
  const final = replay.events!.at(-1)!;
  t.equal(final.data.result.final, true);
  t.equal(final.data.result.status.state, 'failed');
  t.equal((await rpc(srv.url, 'tasks/get', { id: live })).json.result.status.state, 'working', "a live peer's task is untouched");
});
