/**
 * What the agent core tells its Metrics (lib/metrics.ts), each at the owner of the state: the
 * call lifecycle (cards shown and closed, runs, final statuses), the task's committed ends, the
 * write queue's commits, and the supervisor's takeovers of lapsed leases and expiries. A hand-written
 * recording Metrics; the real core on a MemoryTaskStore.
 */
import t from 'tap';
import { Supervisor } from '../../../src/agent/runtime/supervisor.js';
import type { Metrics } from '../../../src/lib/metrics.js';
import { applyResume } from '../../../src/agent/requests/resume-handler.js';
import type { Claimer } from '../../../src/agent/requests/resume-handler.js';
import { answer, lapsedCall, makeCore, runTurn, settled, startTask, storedState, until } from '../../support/core.js';
import { confirmation, planFor } from '../../support/resume.js';
import type { Core, CoreOptions } from '../../support/core.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** Every call made to it, in order: [method, ...arguments]. */
class RecordingMetrics implements Metrics {
  readonly calls: unknown[][] = [];
  private record =
    (name: string) =>
    (...args: unknown[]) =>
      void this.calls.push([name, ...args]);
  taskEnded = this.record('taskEnded');
  callEnded = this.record('callEnded');
  toolRan = this.record('toolRan');
  cardShown = this.record('cardShown');
  cardClosed = this.record('cardClosed');
  committed = this.record('committed');
  sseOpened = this.record('sseOpened');
  sseClosed = this.record('sseClosed');
  pushDelivered = this.record('pushDelivered');
  pushRetried = this.record('pushRetried');
  leaseTakenOver = this.record('leaseTakenOver');
  staleCopyRetried = this.record('staleCopyRetried');

  /** The calls of the named methods, without the ones whose arguments vary (durations, dates). */
  named(...names: string[]): unknown[][] {
    return this.calls.filter((c) => names.includes(c[0] as string)).map((c) => c.filter((a) => typeof a === 'string'));
  }
}

const LEASE_MS = 200;

/** This process's claim terms, as the router gives them for a copy read afresh. */
const claimer = (core: Core): Claimer => ({ owner: core.instanceId, leaseUntil: () => new Date(Date.now() + 30_000), checkSeq: false });

async function instance(t: Test, opts: CoreOptions = {}): Promise<{ core: Core; metrics: RecordingMetrics; supervisor: Supervisor }> {
  const metrics = new RecordingMetrics();
  const core = await makeCore(t, { instanceId: 'A', leaseMs: LEASE_MS, metrics, ...opts });
  const supervisor = new Supervisor({
    store: core.store,
    cache: core.cache,
    loop: core.loop,
    logger: core.logger,
    instanceId: 'A',
    leaseMs: LEASE_MS,
    metrics,
  });
  t.teardown(() => supervisor.stop());
  return { core, metrics, supervisor };
}

t.test('a confirm flow: card shown, closed approved, run timed, SUCCEEDED, task completed, commits counted', async (t) => {
  const { core, metrics } = await instance(t);
  const task = await startTask(core, { text: 'edit' });
  await runTurn(core, task);
  const [card] = task.awaiting();
  t.same(metrics.named('cardShown', 'cardClosed'), [['cardShown', card.snapshot.id]], 'the card is shown, still open');
  const message = answer(task, confirmation(card.snapshot.id, 'proceed_once'));
  await applyResume(task, planFor(core, task, message), core.loop, message, undefined, claimer(core));
  await settled(core, task);
  t.equal(await storedState(core.store, task.id), 'completed');
  t.same(metrics.named('cardShown', 'cardClosed', 'toolRan', 'callEnded', 'taskEnded'), [
    ['cardShown', card.snapshot.id],
    ['cardClosed', card.snapshot.id, 'approved'],
    ['toolRan', 'edit'],
    ['callEnded', 'edit', 'SUCCEEDED'],
    ['taskEnded', 'completed'],
  ]);
  const ran = metrics.calls.find((c) => c[0] === 'toolRan');
  t.ok(typeof ran?.[2] === 'number' && ran[2] >= 0, 'the run has a duration in seconds');
  const commits = metrics.calls.filter((c) => c[0] === 'committed');
  t.equal(commits.length, core.writes.stats.commits, 'one observation per commit');
  t.equal(
    commits.reduce((n, c) => n + (c[2] as number), 0),
    core.writes.stats.writes,
    'their sizes add up to the writes committed',
  );
});

t.test("an answer whose claim another answer won closes no card: the winner's flow is the one counted", async (t) => {
  const { core, metrics } = await instance(t);
  const task = await startTask(core, { text: 'edit' });
  await runTurn(core, task);
  const [card] = task.awaiting();
  const peer = core.store.connect();
  t.teardown(() => peer.close());
  t.match(await peer.claimCalls(task.id, [{ id: card.snapshot.id, answer: 'cancel' }], 'peer', new Date(Date.now() + 30_000)), {
    ok: true,
  });
  // Applied ahead of its claim on this copy (nothing else runs in it), then lost.
  const message = answer(task, confirmation(card.snapshot.id, 'proceed_once'));
  await t.rejects(applyResume(task, planFor(core, task, message), core.loop, message, undefined, claimer(core)), {
    message: /already answered \(another answer arrived first\)/,
  });
  await settled(core, task);
  t.same(
    metrics.named('cardShown', 'cardClosed', 'toolRan', 'callEnded'),
    [['cardShown', card.snapshot.id]],
    'no card closed, nothing ran',
  );
});

t.test('a running call whose lease lapsed: the supervisor takes the task over (interrupted), the call FAILED', async (t) => {
  const { core, metrics, supervisor } = await instance(t);
  const task = await startTask(core, { text: 'look' });
  await task.flush();
  core.cache.forget(task); // the process that ran it is gone
  await core.store.leaseTasks([task.id], 'dead', new Date(Date.now() - 1_000));
  const call = lapsedCall(task.id);

  await core.store.saveCalls([call]);
  await supervisor.sweep();
  await core.runs.drain();
  t.equal(await storedState(core.store, task.id), 'failed');
  t.same(metrics.named('leaseTakenOver', 'callEnded', 'taskEnded'), [
    ['callEnded', 'look', 'FAILED'],
    ['leaseTakenOver', 'interrupted'],
    ['taskEnded', 'failed'],
  ]);
  await supervisor.sweep();
  t.equal(metrics.named('leaseTakenOver').length, 1, 'a second sweep takes nothing over');
});

t.test('an unanswered card expires: closed expired, the call CANCELLED', async (t) => {
  const { core, metrics, supervisor } = await instance(t, { approvalTimeoutMs: 0 });
  const task = await startTask(core, { text: 'edit', viaCache: true });
  await runTurn(core, task);
  const [waiting] = await core.store.loadTurn(task.id);
  await until('the call to be past its expiry', () => Date.now() > waiting.expiresAt!.getTime());
  await supervisor.sweep();
  await core.runs.drain();
  await until('the task to end', async () => (await storedState(core.store, task.id)) === 'completed');
  t.same(metrics.named('cardShown', 'cardClosed', 'callEnded', 'leaseTakenOver'), [
    ['cardShown', waiting.id],
    ['cardClosed', waiting.id, 'expired'],
    ['callEnded', 'edit', 'CANCELLED'],
  ]);
});
