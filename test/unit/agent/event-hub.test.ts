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

/** A store whose log the test writes; it never notifies (the tests hand events over with published()). */
function fakeStore(log: StoredEvent[]): { store: TaskStore; reads: number[] } {
  const reads: number[] = [];
  const store = {
    subscribe: async () => async () => {},
    eventsAfter: async (_taskId: string, after: number) => {
      reads.push(after);
      return log.filter((e) => e.seq > after);
    },
  } as unknown as TaskStore;
  return { store, reads };
}

const big = (seq: number, size: number, key?: string, final = false): StoredEvent => ({
  seq,
  final,
  response: { payload: { $case: 'message', value: { messageId: 'x'.repeat(size) } } } as unknown as StoredEvent['response'],
  ...(key !== undefined ? { key } : {}),
});

t.test('a follower that is not read holds at most its byte budget, then reads the compacted log', async (t) => {
  const log: StoredEvent[] = [];
  const { store, reads } = fakeStore(log);
  const hub = new EventHub(store, 60_000, 10_000);
  await hub.start();
  const follower = hub.follow('t1', 0);
  log.push(big(1, 10));
  hub.published('t1', log[0]);
  t.equal((await follower.next()).value?.seq, 1, 'the first event, read from the log');
  // The consumer stops reading; 100 events of ~1 KB each are committed and handed over.
  for (let seq = 2; seq <= 101; seq++) {
    const ev = big(seq, 1000, seq === 101 ? undefined : 'card', seq === 101);
    // The log compacts keyed events: only the newest 'card' stays.
    const i = log.findIndex((e) => ev.key !== undefined && e.key === ev.key);
    if (i >= 0) log.splice(i, 1);
    log.push(ev);
    hub.published('t1', ev);
  }
  t.ok(hub.stats.overflows >= 1, 'the budget was hit: what it held was dropped');
  const rest: number[] = [];
  for (let r = await follower.next(); !r.done; r = await follower.next()) rest.push(r.value.seq);
  t.same(rest, [100, 101], 'then the log: the latest card and the end, no gap in meaningful state, no duplicate');
  t.same(reads.slice(-1), [1], 'read from the store after the last event it yielded');
  await hub.stop();
});

t.test('handed-over events: superseded keyed ones are skipped, the seqs of a store read may have gaps', async (t) => {
  const log: StoredEvent[] = [];
  const { store } = fakeStore(log);
  const hub = new EventHub(store, 60_000);
  await hub.start();
  const follower = hub.follow('t1', 0);
  log.push(big(1, 1));
  t.equal((await follower.next()).value?.seq, 1);
  // Handed over while the consumer was busy: three cards of one call, another call's card, a text.
  for (const ev of [big(2, 1, 'a'), big(3, 1, 'b'), big(4, 1, 'a'), big(5, 1, 'a'), big(6, 1)]) hub.published('t1', ev);
  const seen: number[] = [];
  for (let i = 0; i < 3; i++) seen.push((await follower.next()).value!.seq);
  t.same(seen, [3, 5, 6], "a's cards 2 and 4 superseded by 5; b's card and the text kept");
  // A log with gaps (compacted seqs): read as it is.
  log.push(big(8, 1), big(10, 1, undefined, true));
  hub.published('t1', big(10, 1, undefined, true)); // 7..9 were not handed over: the store is read
  const after: number[] = [];
  for (let r = await follower.next(); !r.done; r = await follower.next()) after.push(r.value.seq);
  t.same(after, [8, 10]);
  await hub.stop();
});

t.test('a long log is replayed page by page, every event once, in order', async (t) => {
  const log = Array.from({ length: 100 }, (_, i) => big(i + 1, 1));
  const { store, reads } = fakeStore(log);
  const paged = {
    ...store,
    eventsAfter: async (taskId: string, after: number, limit?: number) => (await store.eventsAfter(taskId, after)).slice(0, limit),
  };
  const hub = new EventHub(paged, 60_000);
  await hub.start();
  const seen: number[] = [];
  for await (const ev of hub.follow('t1', 0, { untilFinal: false })) seen.push(ev.seq);
  t.same(
    seen,
    Array.from({ length: 100 }, (_, i) => i + 1),
  );
  t.ok(reads.length >= 4, `read in pages (${reads.length} reads)`);
  await hub.stop();
});

/** A store whose log the test writes and whose notifications the test sends. */
function notifyingStore(log: StoredEvent[]) {
  const reads: number[] = [];
  let listener: ((taskId: string, seq: number, final: boolean, local?: boolean) => void) | undefined;
  const store = {
    subscribe: async (l: typeof listener) => {
      listener = l;
      return async () => {};
    },
    eventsAfter: async (_taskId: string, after: number) => {
      reads.push(after);
      return log.filter((e) => e.seq > after);
    },
  } as unknown as TaskStore;
  return { store, reads, notify: (seq: number, final: boolean, local: boolean) => listener?.('t1', seq, final, local) };
}

/** Commits `ev` as this process does: into the log, handed over, and notified back as local. */
function commitHere(hub: EventHub, log: StoredEvent[], notify: (seq: number, final: boolean, local: boolean) => void, ev: StoredEvent) {
  log.push(ev);
  notify(ev.seq, ev.final, true);
  hub.published('t1', ev);
}

t.test("events this process committed reach its followers without a read; another process's make them read", async (t) => {
  const log: StoredEvent[] = [];
  const { store, reads, notify } = notifyingStore(log);
  const hub = new EventHub(store, 60_000);
  await hub.start();
  commitHere(hub, log, notify, big(1, 1));
  commitHere(hub, log, notify, big(2, 1));
  const follower = hub.follow('t1', 0);
  t.same([(await follower.next()).value?.seq, (await follower.next()).value?.seq], [1, 2], 'started after local commits: from memory');
  commitHere(hub, log, notify, big(3, 1));
  t.equal((await follower.next()).value?.seq, 3);
  t.same(reads, [], 'no read of the log for events committed here, their own notifications included');
  log.push(big(4, 1, undefined, true));
  notify(4, true, false); // committed by another process
  t.equal((await follower.next()).value?.seq, 4, "another process's event, read from the log");
  t.same(reads, [3]);
  t.ok((await follower.next()).done, 'ended at the final event');
  await hub.stop();
});

t.test('a follower starts from the log when this process does not know the whole tail', async (t) => {
  const log: StoredEvent[] = [];
  const { store, reads, notify } = notifyingStore(log);
  const hub = new EventHub(store, 60_000);
  await hub.start();
  for (let seq = 1; seq <= 12; seq++) commitHere(hub, log, notify, big(seq, 1));
  const early = hub.follow('t1', 0, { untilFinal: false });
  t.equal((await early.next()).value?.seq, 1, 'older than the kept tail: read');
  t.same(reads, [0]);
  await early.return();
  log.push(big(13, 1));
  notify(13, false, false); // another process's event: the tail here is no longer whole
  commitHere(hub, log, notify, big(14, 1));
  const late = hub.follow('t1', 12, { untilFinal: false });
  t.same([(await late.next()).value?.seq, (await late.next()).value?.seq], [13, 14]);
  t.same(reads, [0, 12], 'read, because seq 13 was never committed here');
  await late.return();
  const current = hub.follow('t1', 14, { untilFinal: false });
  t.ok((await current.next()).done, 'nothing after the newest known seq: no read for a replay that has nothing to send');
  const unknown = hub.follow('t1', 20, { untilFinal: false });
  t.ok((await unknown.next()).done);
  t.same(reads, [0, 12, 20], 'a cursor past what this process knows reads the log');
  commitHere(hub, log, notify, big(13, 1)); // older than what is known (a late hand-over): the tail stays
  await hub.stop();
});
