/**
 * What a queued event stores with it: a status-only event (a text delta) keeps the status the
 * task had when it was published — changed in place later (setState) before the write queue
 * commits it, the stored snapshot is still the published one. (LiveTask copies the status only
 * shallowly: encode() puts a new status on the task for every event.)
 */
import t from 'tap';
import { makeCore, startTask, storedState } from '../../support/core.js';

t.test('a text delta stores the status it was published with, whatever setState does before the commit', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  task.setState('working');
  task.publish({ type: 'state', state: 'working' });
  await task.flush();
  task.publish({ type: 'text', delta: 'hello' });
  task.setState('input-required'); // in place, before the queued delta is committed (a microtask later)
  await task.flush();
  t.equal(await storedState(core.store, task.id), 'working', 'the stored snapshot is the one the delta was published with');
  t.equal(task.state, 'input-required', 'the live copy moved on');
});
