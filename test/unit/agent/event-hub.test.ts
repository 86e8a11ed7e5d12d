/** EventHub: a follower re-reads the log when a notification never comes (LISTEN reconnects lose them). */
import t from 'tap';
import { EventHub } from '../../../src/agent/runtime/event-hub.js';
import type { StoredEvent, TaskStore } from '../../../src/agent/task-store.js';

t.test('a lost notification does not stall a follower', async (t) => {
  const log: StoredEvent[] = [];
  const store = {
    subscribe: async () => async () => {}, // never notifies
    eventsAfter: async (_taskId: string, after: number) => log.filter((e) => e.seq > after),
  } as unknown as TaskStore;
  const hub = new EventHub(store, 50);
  const alive = setInterval(() => {}, 1000); // the hub's timers are unref'd (a server keeps the loop alive)
  t.teardown(() => clearInterval(alive));
  await hub.start();
  const ev = (seq: number, final = false): StoredEvent => ({ seq, final, response: { payload: undefined } });
  log.push(ev(1));
  const seen: number[] = [];
  const done = (async () => {
    for await (const e of hub.follow('t1', 0)) seen.push(e.seq);
  })();
  await new Promise((r) => setTimeout(r, 20));
  t.same(seen, [1]);
  log.push(ev(2), ev(3, true)); // committed elsewhere; the notification was lost
  const started = Date.now();
  await done;
  t.same(seen, [1, 2, 3], 'picked up by the periodic re-read, up to the final event');
  t.ok(Date.now() - started < 1000, 'within the recheck interval');
  await hub.stop();
});
