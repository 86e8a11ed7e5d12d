/** Group commit: order, batching under load, and isolation of a bad write. */
import t from 'tap';
import type { TaskStore, WriteBatch } from '../../../src/agent/task-store.js';
import { rejectedByDatabase, WriteQueue } from '../../../src/agent/runtime/write-queue.js';
import type { WriteOp, WriteOwner } from '../../../src/agent/runtime/write-queue.js';
import type { Task } from '@a2a-js/sdk';
import { MemoryTaskStore } from '../../../src/store/memory-store.js';
import { isStaleWrite } from '../../../src/protocol/errors.js';
import { makeCall, makeTask, seedTask, statusEvent } from '../../store/fixtures/builders.js';

/** Records batches; gives seqs per task; can be told to fail on an audit entry. */
function recordingStore(opts: { delayMs?: number; failOn?: string; dropOn?: string } = {}) {
  const batches: WriteBatch[] = [];
  const seqs = new Map<string, number>();
  const store = {
    async commit(batch: WriteBatch): Promise<number[]> {
      await new Promise((r) => setTimeout(r, opts.delayMs ?? 1));
      if (batch.audit.some((a) => a.decision === opts.failOn)) {
        // As drizzle reports a PostgreSQL error: a DrizzleQueryError whose cause carries the SQLSTATE.
        throw new Error('constraint violated', {
          cause: Object.assign(new Error('insert or update violates foreign key'), { code: '23503' }),
        });
      }
      if (batch.audit.some((a) => a.decision === opts.dropOn))
        throw Object.assign(new Error('write CONNECTION_CLOSED'), { code: 'CONNECTION_CLOSED' });
      batches.push(batch);
      return batch.events.map((e) => {
        const next = (seqs.get(e.taskId) ?? 0) + 1;
        seqs.set(e.taskId, next);
        return next;
      });
    },
  } as unknown as TaskStore;
  return { store, batches };
}

const logger = { warn() {}, error() {} };
const event = (taskId: string): WriteOp => ({ kind: 'event', taskId, status: undefined, response: { payload: undefined }, final: false });
const audit = (decision: string): WriteOp => ({ kind: 'audit', entry: { taskId: 't', contextId: 'c', decision } }) as unknown as WriteOp;

/** Resolves after the queue has started the commit of what was pushed before. */
const nextTurn = () => new Promise((r) => setImmediate(r));

t.test('the writes queued together share a commit; what arrives while it runs goes in the next', async (t) => {
  const { store, batches } = recordingStore({ delayMs: 5 });
  const q = new WriteQueue(store, logger);
  const step = [q.push(event('a')), q.push(event('a')), q.push(event('b'))];
  await nextTurn();
  const later = [q.push(event('a')), q.push(event('b'))];
  const results = await Promise.all([...step, ...later]);
  t.same(results, [1, 2, 1, 3, 2], 'seqs come back to each write, per task, in order');
  t.same(
    batches.map((b) => b.events.length),
    [3, 2],
    'one commit for what was queued together, then what queued meanwhile',
  );
  t.same(q.stats, { commits: 2, writes: 5 });
});

t.test('kinds go to their batch fields in order', async (t) => {
  const { store, batches } = recordingStore();
  const q = new WriteQueue(store, logger);
  await Promise.all([
    q.push({ kind: 'history', contextId: 'c', contents: [{ role: 'user', parts: [{ text: 'hi' }] }] }),
    q.push({ kind: 'trust', contextId: 'c', toolName: 'write_file' }),
    q.push(audit('proposed')),
  ]);
  const all = batches.flatMap((b) => [...b.history.map(() => 'history'), ...b.trust.map(() => 'trust'), ...b.audit.map(() => 'audit')]);
  t.same(all.sort(), ['audit', 'history', 'trust']);
});

t.test('one bad write fails alone; the others of its batch still commit', async (t) => {
  const { store, batches } = recordingStore({ delayMs: 5, failOn: 'bad' });
  const q = new WriteQueue(store, logger);
  const first = q.push(event('a')); // commits alone while the next three queue up
  await nextTurn();
  const rest = [q.push(event('a')), q.push(audit('bad')), q.push(event('a'))].map((p) =>
    p.then(
      (v) => ({ ok: v }),
      (e: Error) => ({ err: e.message }),
    ),
  );
  t.equal(await first, 1);
  t.same(await Promise.all(rest), [{ ok: 2 }, { err: 'constraint violated' }, { ok: 3 }]);
  t.equal(batches.length, 3, 'the failed batch was retried write by write');
});

t.test('a batch whose outcome is unknown (connection lost) is not retried: no event is stored twice', async (t) => {
  const { store, batches } = recordingStore({ delayMs: 5, dropOn: 'drop' });
  const q = new WriteQueue(store, logger);
  const first = q.push(event('a'));
  await nextTurn();
  const rest = [q.push(event('a')), q.push(audit('drop')), q.push(event('a'))].map((p) =>
    p.then(
      (v) => ({ ok: v }),
      (e: Error) => ({ err: e.message }),
    ),
  );
  t.equal(await first, 1);
  t.same(await Promise.all(rest), [
    { err: 'write CONNECTION_CLOSED' },
    { err: 'write CONNECTION_CLOSED' },
    { err: 'write CONNECTION_CLOSED' },
  ]);
  t.equal(batches.length, 1, 'only the first commit landed; nothing was retried');
});

t.test("checked writes: each owner's events carry what it expects; a refused batch is retried one owner at a time", async (t) => {
  const db = new MemoryTaskStore();
  const other = db.connect();
  t.teardown(async () => {
    await other.close();
    await db.close();
  });
  const [a, b] = [await seedTask(db), await seedTask(db)];
  const ownerA: WriteOwner = { id: a.id, lastSeq: 0, expectation: () => ({ lastSeq: ownerA.lastSeq }) };
  const ownerB: WriteOwner = { id: b.id, lastSeq: 0, expectation: () => ({ lastSeq: ownerB.lastSeq }) };
  const ev = (task: Task, n: number): WriteOp => ({
    kind: 'event',
    taskId: task.id,
    task: makeTask(task.contextId, 'TASK_STATE_WORKING', n, task.id),
    response: statusEvent(task, n),
    final: false,
  });
  const q = new WriteQueue(db, logger);
  t.same(await Promise.all([q.push(ev(a, 1), ownerA), q.push(ev(b, 1), ownerB)]), [1, 1], 'current owners write');
  t.equal(ownerA.lastSeq, 1, "the queue advances an owner's last seq as its events commit");
  await other.commit({
    events: [{ taskId: b.id, task: makeTask(b.contextId, 'TASK_STATE_WORKING', 9, b.id), response: statusEvent(b, 9), final: false }],
    calls: [],
    history: [],
    trust: [],
    audit: [],
  });

  const call = makeCall(b.id);
  const outcome = (p: Promise<number>) =>
    p.then(
      (seq) => ({ seq }),
      (err: unknown) => ({ stale: isStaleWrite(err) }),
    );
  const results = await Promise.all([
    outcome(q.push(ev(a, 2), ownerA)),
    outcome(q.push({ kind: 'call', call }, ownerB)),
    outcome(q.push({ kind: 'audit', entry: { taskId: b.id, contextId: b.contextId, decision: 'interrupted' } }, ownerB)),
    outcome(q.push(ev(b, 2), ownerB)),
    outcome(q.push(ev(a, 3), ownerA)),
  ]);
  t.same(
    results,
    [{ seq: 2 }, { stale: true }, { stale: true }, { stale: true }, { seq: 3 }],
    "the owner behind the store is refused whole; the other's writes land",
  );
  t.equal(await db.loadCall(call.id), undefined, "the stale owner's call row was not stored");
  t.same(await db.listAudit({ taskId: b.id }), [], 'nor its audit entry');
  t.equal((await db.loadTask(b.id))?.lastSeq, 2, "task b keeps the other writer's event as its last");
  t.same([ownerA.lastSeq, ownerB.lastSeq], [3, 1]);
});

t.test('rejectedByDatabase', async (t) => {
  t.ok(rejectedByDatabase(Object.assign(new Error('x'), { code: '23505' })));
  t.ok(rejectedByDatabase(new Error('wrapped', { cause: Object.assign(new Error('x'), { code: '40001' }) })));
  t.notOk(rejectedByDatabase(Object.assign(new Error('x'), { code: '08006' })), 'connection failure: unknown outcome');
  t.notOk(rejectedByDatabase(Object.assign(new Error('x'), { code: 'ECONNRESET' })));
  t.notOk(rejectedByDatabase(new Error('plain')));
  t.notOk(rejectedByDatabase(undefined));
});

t.test("a held owner's writes wait for its release and then share one commit; other owners' go on", async (t) => {
  const { store, batches } = recordingStore();
  const q = new WriteQueue(store, logger);
  const held: WriteOwner = { id: 'h', lastSeq: 0, expectation: () => ({ lastSeq: held.lastSeq }) };
  const other: WriteOwner = { id: 'o', lastSeq: 0, expectation: () => ({ lastSeq: other.lastSeq }) };
  q.hold(held);
  const first = q.push(event('h'), held);
  await nextTurn();
  const free = q.push(event('o'), other);
  t.equal(await free, 1, 'another owner commits meanwhile');
  t.same(
    batches.map((b) => b.events.map((e) => e.taskId)),
    [['o']],
    "the held owner's write is not in it",
  );
  const second = q.push(event('h'), held);
  q.release(held);
  t.same(await Promise.all([first, second]), [1, 2]);
  t.same(
    batches.at(-1)?.events.map((e) => e.taskId),
    ['h', 'h'],
    'released: both in one commit, in order',
  );
  q.hold(held);
  const late = q.push(event('h'), held);
  await q.flushed();
  t.equal(await late, 3, 'flushed() ends every hold (shutdown)');
});

/** A store whose commits wait until the test lets them end; records each batch's tasks as it starts. */
function gatedStore() {
  const started: string[][] = [];
  const gates: Array<() => void> = [];
  const seqs = new Map<string, number>();
  let inFlight = 0;
  let most = 0;
  const store = {
    async commit(batch: WriteBatch): Promise<number[]> {
      started.push(batch.events.map((e) => e.taskId));
      most = Math.max(most, ++inFlight);
      await new Promise<void>((r) => gates.push(r));
      inFlight--;
      return batch.events.map((e) => {
        const next = (seqs.get(e.taskId) ?? 0) + 1;
        seqs.set(e.taskId, next);
        return next;
      });
    },
  } as unknown as TaskStore;
  /** Ends the oldest commit still waiting. */
  const release = () => gates.shift()?.();
  return { store, started, release, most: () => most };
}

const ownerOf = (id: string): WriteOwner => {
  const o: WriteOwner = { id, lastSeq: 0, expectation: () => ({ lastSeq: o.lastSeq }) };
  return o;
};

t.test("lanes: other tasks' writes commit beside a commit in flight; a task's own wait for it", async (t) => {
  const { store, started, release, most } = gatedStore();
  const q = new WriteQueue(store, logger, undefined, 2);
  const [a, b, c] = ['a', 'b', 'c'].map(ownerOf) as [WriteOwner, WriteOwner, WriteOwner];
  const a1 = q.push(event('a'), a);
  await nextTurn();
  t.same(started, [['a']], 'the first commit runs');
  const a2 = q.push(event('a'), a);
  const b1 = q.push(event('b'), b);
  await nextTurn();
  t.same(started, [['a'], ['b']], "b's write takes the second lane at once; a's second write waits for a's first commit");
  const c1 = q.push(event('c'), c);
  await nextTurn();
  t.equal(started.length, 2, 'both lanes taken: c waits');
  release(); // a's first commit ends
  t.equal(await a1, 1);
  await nextTurn();
  t.same(started[2], ['a', 'c'], 'the freed lane takes what waited, in the order it was queued');
  release();
  release();
  t.same(await Promise.all([b1, a2, c1]), [1, 2, 1], "each task's seqs in its own order");
  t.equal(a.lastSeq, 2);
  t.equal(most(), 2, 'never more than two commits at once');
  t.same(q.stats, { commits: 3, writes: 4 });
});

t.test('lanes: two copies of one task (same id) never commit side by side', async (t) => {
  const { store, started, release } = gatedStore();
  const q = new WriteQueue(store, logger, undefined, 4);
  const [kept, fresh] = [ownerOf('x'), ownerOf('x')];
  const first = q.push(event('x'), kept);
  await nextTurn();
  const second = q.push(event('x'), fresh);
  await nextTurn();
  t.same(started, [['x']], "the fresh copy's write waits for the kept copy's commit");
  release();
  await first;
  await nextTurn();
  t.same(started, [['x'], ['x']]);
  release();
  t.equal(await second, 2);
});

t.test('lanes: flushed() waits for every lane, and a refused batch in one lane leaves the other alone', async (t) => {
  const { store, batches } = recordingStore({ delayMs: 5, failOn: 'bad' });
  const q = new WriteQueue(store, logger, undefined, 2);
  const [a, b] = [ownerOf('a'), ownerOf('b')];
  const a1 = q.push(event('a'), a);
  await nextTurn();
  const bad = q.push(audit('bad'), b).then(
    () => 'stored',
    (e: Error) => e.message,
  );
  const a2 = q.push(event('a'), a);
  await q.flushed();
  t.equal(await a1, 1);
  t.equal(await a2, 2, "a's later write committed after its first");
  t.equal(await bad, 'constraint violated', "b's bad write failed alone");
  t.same(
    batches.map((x) => x.events.map((e) => e.taskId)),
    [['a'], ['a']],
  );
});

/** gatedStore with claims: claimAndCommit (the claim with its writes) and claimCalls (alone), each won unless told. */
function claimingStore(lose = false) {
  const gated = gatedStore();
  const calls: string[] = [];
  const claimed = (terms: { taskId: string }) => {
    calls.push(`claim ${terms.taskId}`);
    return lose ? { ok: false as const, notAwaiting: ['call-1'] } : { ok: true as const, lastSeq: 7 };
  };
  Object.assign(gated.store, {
    async claimAndCommit(terms: { taskId: string }, batch: WriteBatch) {
      const won = claimed(terms);
      calls.push(`with ${batch.events.length} events, ${batch.audit.length} audit`);
      return won.ok ? { ...won, seqs: batch.events.map((_, i) => won.lastSeq + 1 + i) } : won;
    },
    async claimCalls(taskId: string) {
      calls.push('alone');
      return claimed({ taskId });
    },
  });
  return { ...gated, calls };
}

const terms = (taskId: string) => ({ taskId, claims: [{ id: 'call-1', answer: 'proceed_once' }], owner: 'me', leaseUntil: new Date() });

t.test('a claim on a quiet queue carries its writes: one statement, and nothing of them before it', async (t) => {
  const { store, calls, started } = claimingStore();
  const q = new WriteQueue(store, logger);
  const a = ownerOf('a');
  const decided = q.claimWith(a, terms('a'));
  const writes = [q.push(event('a'), a), q.push(audit('authorized'), a), q.push(event('a'), a)];
  await nextTurn();
  t.same(calls, [], 'held until released');
  q.release(a);
  t.same(await decided, { ok: true, lastSeq: 7 });
  t.same(await Promise.all(writes), [8, 0, 9], 'the writes land with the claim, after the seq it found');
  t.same(calls, ['claim a', 'with 2 events, 1 audit']);
  t.same(started, [], 'no group commit');
  t.equal(a.lastSeq, 9);
});

t.test('a claim while a group commit is in flight goes alone; once won its writes join the next group commit', async (t) => {
  const { store, calls, started, release } = claimingStore();
  const q = new WriteQueue(store, logger);
  const [a, b] = [ownerOf('a'), ownerOf('b')];
  const b1 = q.push(event('b'), b);
  await nextTurn();
  t.same(started, [['b']], "b's commit is in flight");
  const decided = q.claimWith(a, terms('a'));
  const a1 = q.push(event('a'), a);
  q.release(a);
  t.same(await decided, { ok: true, lastSeq: 7 }, 'decided beside the commit in flight');
  t.same(calls, ['alone', 'claim a']);
  t.equal(a.lastSeq, 7, "the copy follows what the claim found before its writes' expectation is read");
  release();
  await b1;
  await nextTurn();
  t.same(started, [['b'], ['a']], "a's writes went into the next group commit");
  release();
  t.equal(await a1, 1);
});

t.test('a claim not won refuses its writes, and every later write of that copy', async (t) => {
  const { store, started } = claimingStore(true);
  const q = new WriteQueue(store, logger);
  const a = ownerOf('a');
  const decided = q.claimWith(a, terms('a'));
  const a1 = q.push(event('a'), a);
  q.release(a);
  t.same(await decided, { ok: false, notAwaiting: ['call-1'] });
  await t.rejects(a1, { name: 'ClaimNotWon' });
  await t.rejects(q.push(event('a'), a), { name: 'ClaimNotWon' }, 'the copy writes nothing more');
  await nextTurn();
  t.same(started, [], 'nothing was committed');
});

t.test('a claim withdrawn before it was sent rejects with the reason, and its writes with ClaimNotWon', async (t) => {
  const { store, calls } = claimingStore();
  const q = new WriteQueue(store, logger);
  const a = ownerOf('a');
  const decided = q.claimWith(a, terms('a'));
  const a1 = q.push(event('a'), a);
  q.dropClaim(a, new Error('applying the answer failed'));
  await t.rejects(decided, { message: 'applying the answer failed' });
  await t.rejects(a1, { name: 'ClaimNotWon' });
  t.same(calls, [], 'no claim was sent');
});
