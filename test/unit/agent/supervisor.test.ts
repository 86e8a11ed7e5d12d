/**
 * The supervisor (supervisor.ts), one sweep at a time: two MemoryTaskStore connections play
 * two instances on one database. Lapsed leases are marked interrupted, stale tasks fail, a
 * live peer's work is left alone, unanswered calls expire and the turn goes on, reminders go
 * out once per call, and a sweep that fails is logged and followed by one that works.
 */
import t from 'tap';
import { cancelTask } from '../../../src/agent/runtime/task-lifecycle.js';
import type { LiveTask } from '../../../src/agent/runtime/live-task.js';
import { Supervisor } from '../../../src/agent/runtime/supervisor.js';
import type { NewTaskOptions, StoredCall, WriteBatch } from '../../../src/agent/task-store.js';
import { StreamResponse } from '@a2a-js/sdk';
import type { Task } from '@a2a-js/sdk';
import { MemoryTaskStore } from '../../../src/store/memory-store.js';
import type { ModelScript } from '../../../src/agent/model/scripted-model-client.js';
import {
  auditOf,
  fakeTool,
  fcall,
  hangingTool,
  lapsedCall,
  logOf,
  makeCore,
  runTurn,
  say,
  settled,
  shape,
  startTask,
  storedState,
  until,
  watchRejections,
} from '../../support/core.js';
import type { Core, CoreOptions } from '../../support/core.js';
import { DatabaseBlip, faultyStore } from '../../support/faulty-store.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const LEASE_MS = 200;

/** Instance A: a core and its supervisor (never started: the test calls sweep()). */
async function instanceA(
  t: Test,
  opts: CoreOptions & Pick<ConstructorParameters<typeof Supervisor>[0], 'reminderMs' | 'exclusiveStore' | 'killProcessGroup'> = {},
) {
  const core = await makeCore(t, { instanceId: 'A', leaseMs: LEASE_MS, ...opts });
  const supervisor = new Supervisor({
    store: opts.loopStore ?? core.store,
    cache: core.cache,
    loop: core.loop,
    logger: core.logger,
    instanceId: 'A',
    leaseMs: LEASE_MS,
    reminderMs: opts.reminderMs,
    exclusiveStore: opts.exclusiveStore,
    killProcessGroup: opts.killProcessGroup,
  });
  t.teardown(() => supervisor.stop());
  return { core, supervisor };
}

/** A working task that instance `dead` started (its LiveTask is dropped: that process is gone) and whose task lease lapsed. */
async function deadInstanceTask(core: Core): Promise<string> {
  const task = await startTask(core, { text: 'look' });
  await task.flush();
  await core.store.leaseTasks([task.id], 'dead', new Date(Date.now() - 1_000));
  return task.id;
}

t.test('a call whose lease lapsed is marked FAILED interrupted, and its task fails', async (t) => {
  const { core, supervisor } = await instanceA(t);
  const peer = core.store.connect(); // what the dead instance wrote went through its own connection
  t.teardown(() => peer.close());
  const taskId = await deadInstanceTask(core);
  const call = lapsedCall(taskId);
  await peer.saveCalls([call]);
  const before = (await logOf(core.store, taskId)).length;

  await supervisor.sweep();
  await core.runs.drain();

  const stored = await core.store.loadCall(call.id);
  t.equal(stored?.phase, 'done');
  t.equal(stored?.snapshot.status, 'FAILED');
  t.match(stored?.snapshot.error, { type: 'interrupted', message: /lease of dead lapsed/ });
  const log = await logOf(core.store, taskId, before);
  t.same(shape(log), ['look:FAILED', 'failed!']);
  t.equal(log.at(-1)!.text, 'Interrupted: the server stopped while look ran; the task cannot go on.');
  t.equal(await storedState(core.store, taskId), 'failed');
  t.same(
    (await auditOf(core.store, taskId)).map((a) => [a.decision, a.toolCallId, a.detail]),
    [['interrupted', call.id, { leaseOwner: 'dead' }]],
  );
  t.match(core.logger.warnings(), [{ obj: { taskId, calls: [call.id] }, msg: 'marked interrupted tool calls failed' }]);
  t.strictSame(
    core.logger.warnings().map((w) => w.obj.calls),
    [[call.id]],
    'one warning, naming only that call',
  );
  t.same(await core.store.findInterrupted(new Date()), [], 'nothing is left to recover');

  await supervisor.sweep();
  t.equal((await logOf(core.store, taskId)).length, before + 2, 'a second sweep changes nothing');
});

t.test('the process group an interrupted call left running is killed first, and the card says so', async (t) => {
  const killed: Array<{ pgid: number; stamp: string }> = [];
  const { core, supervisor } = await instanceA(t, { killProcessGroup: (g) => (killed.push(g), g.pgid === 4242) });
  const running = lapsedCall(await deadInstanceTask(core), { processGroup: { pgid: 4242, stamp: 'boot:1' } });
  const gone = lapsedCall(await deadInstanceTask(core), { processGroup: { pgid: 77, stamp: 'boot:2' } });
  await core.store.saveCalls([running, gone]);
  await supervisor.sweep();
  await core.runs.drain();
  t.same(
    [...killed].sort((a, b) => a.pgid - b.pgid),
    [
      { pgid: 77, stamp: 'boot:2' },
      { pgid: 4242, stamp: 'boot:1' },
    ],
    'each recorded group is offered to the kill',
  );
  t.match((await core.store.loadCall(running.id))?.snapshot.error, {
    type: 'interrupted',
    message: /were killed \(process group 4242\)/,
  });
  t.notMatch((await core.store.loadCall(gone.id))?.snapshot.error?.message, /killed/, 'a group that was not killed is not claimed to be');
  t.same((await auditOf(core.store, running.taskId)).at(-1)?.detail, { leaseOwner: 'dead', killedGroup: 4242 });
  t.ok(
    core.logger.warnings().some((w) => w.obj?.pgid === 4242 && /killed the process group/.test(w.msg)),
    'the kill is logged',
  );
});

t.test('exclusive store: the boot pass ends running calls and working tasks at once, live leases or not', async (t) => {
  const { core, supervisor } = await instanceA(t, { exclusiveStore: true, killProcessGroup: () => false });
  const withCall = await deadInstanceTask(core);
  const modelOnly = await deadInstanceTask(core);
  const future = new Date(Date.now() + 60_000);
  await core.store.leaseTasks([withCall, modelOnly], 'previous-boot', future);
  const call = lapsedCall(withCall, { leaseOwner: 'previous-boot', leaseUntil: future });
  await core.store.saveCalls([call]);
  t.same(await core.store.findInterrupted(new Date()), [], 'the leases are live');

  await supervisor.start();
  await core.runs.drain();
  t.equal(await storedState(core.store, withCall), 'failed', 'no wait for the lease');
  t.equal(await storedState(core.store, modelOnly), 'failed');
  t.match((await core.store.loadCall(call.id))?.snapshot.error, { type: 'interrupted' });
});

t.test('a shared store: the boot pass leaves live leases alone', async (t) => {
  const { core, supervisor } = await instanceA(t);
  const taskId = await deadInstanceTask(core);
  const future = new Date(Date.now() + 60_000);
  await core.store.leaseTasks([taskId], 'peer', future);
  await core.store.saveCalls([lapsedCall(taskId, { leaseOwner: 'peer', leaseUntil: future })]);
  await supervisor.start();
  await core.runs.drain();
  t.equal(await storedState(core.store, taskId), 'working');
});

t.test('a stale working task (lease lapsed, no call) fails', async (t) => {
  const { core, supervisor } = await instanceA(t);
  const taskId = await deadInstanceTask(core);
  t.same(await core.store.findStaleTasks(new Date()), [taskId]);
  await supervisor.sweep();
  const log = await logOf(core.store, taskId);
  t.same(shape(log).slice(-1), ['failed!']);
  t.equal(log.at(-1)!.text, 'Interrupted: the server stopped while the model was answering; the task cannot go on.');
  t.equal(await storedState(core.store, taskId), 'failed');
});

t.test('a copy of a stale task that is behind the store is dropped, not failed: the next sweep reads the task afresh', async (t) => {
  const { core, supervisor } = await instanceA(t);
  const task = await startTask(core, { text: 'look', viaCache: true }); // A keeps its copy in memory
  await task.flush();
  const taskId = task.id;
  const stale = core.cache.peek(taskId);
  t.ok(stale, "A's copy of the task");
  // Another instance moves the task on (its turn goes on), then its lease lapses too.
  const bConn = core.store.connect();
  t.teardown(() => bConn.close());
  const b = await makeCore(t, { store: bConn, instanceId: 'B', leaseMs: LEASE_MS });
  const moved = (await b.cache.get(taskId))!;
  moved.publish({ type: 'text', delta: 'B goes on' });
  await moved.flush();
  await core.store.leaseTasks([taskId], 'dead', new Date(Date.now() - 1_000));
  const before = await logOf(core.store, taskId);

  await supervisor.sweep();
  t.same(await logOf(core.store, taskId), before, 'nothing appended from the copy that missed B’s event');
  t.not(core.cache.peek(taskId), stale, 'the stale copy left memory');

  await supervisor.sweep();
  const log = await logOf(core.store, taskId);
  t.same(shape(log).slice(-2), [shape(before).at(-1), 'failed!'], 'the next sweep, on a fresh copy, ends the task after B’s event');
});

/** True when a batch logs a pause (input-required). */
const logsPause = (batch: WriteBatch) =>
  batch.events.some((e) => JSON.stringify(StreamResponse.toJSON(e.response)).includes('TASK_STATE_INPUT_REQUIRED'));

/**
 * A turn with a call that runs without asking (look) and one that waits (edit): its cards commit
 * first, the pause only once look ran (a turn whose calls all wait commits its cards and pause
 * together, so only such a turn can be stranded between them).
 */
const MIXED_TURN: ModelScript = {
  model: 'fake-model',
  scripts: [
    { when: '^edit', steps: [{ chunks: [[fcall('look', { path: 'a' }), fcall('edit', { path: 'a', content: 'A' })]] }, say('Done.')] },
  ],
};

/**
 * A working task whose dead instance stored the turn's cards but never its pause: that instance's
 * commit that logs the pause never completes. The task's lease has lapsed.
 */
async function strandedTask(
  t: Test,
  core: Core,
  opts: CoreOptions = {},
  principal?: string,
): Promise<{ taskId: string; card: StoredCall }> {
  const deadConn = core.store.connect();
  let held: ((err: Error) => void) | undefined;
  const hold = (batch: WriteBatch, commit: () => Promise<number[]>) =>
    logsPause(batch) ? new Promise<number[]>((_resolve, reject) => (held = reject)) : commit();
  const dying = Object.assign(Object.create(deadConn) as MemoryTaskStore, {
    commit: (batch: WriteBatch) => hold(batch, () => deadConn.commit(batch)),
    createTask: (task: Task, _principal?: string, o?: NewTaskOptions) => deadConn.createTask(task, principal, o),
  });
  t.teardown(async () => {
    held?.(new Error('the process is gone'));
    await deadConn.close();
  });
  const dead = await makeCore(t, { store: dying, instanceId: 'dead', leaseMs: 30_000, script: MIXED_TURN, ...opts });
  const task = await startTask(dead, { text: 'edit' });
  dead.loop.startTurn(task, [{ text: 'edit' }]);
  await until('the pause commit to be reached', () => held !== undefined);
  const card = (await core.store.loadTurn(task.id)).find((c) => c.toolName === 'edit')!;
  await core.store.leaseTasks([task.id], 'dead', new Date(Date.now() - 1_000));
  return { taskId: task.id, card };
}

t.test('a stale task whose cards were stored but not its pause (the process died in between) pauses on them', async (t) => {
  const { core, supervisor } = await instanceA(t);
  const { taskId, card } = await strandedTask(t, core);
  t.match(card, { phase: 'awaiting', toolName: 'edit' }, 'the card is stored, waiting');
  t.equal(await storedState(core.store, taskId), 'working', 'the pause is not');

  await supervisor.sweep();
  await core.runs.drain();

  t.equal(await storedState(core.store, taskId), 'input-required', 'paused on the stored card, not failed');
  t.same(shape(await logOf(core.store, taskId)).slice(-2), ['look:SUCCEEDED', 'input-required!']);
  t.match((await core.store.loadCall(card.id))?.phase, 'awaiting', 'the card still waits for its answer');
  t.ok(
    core.logger.warnings().some((r) => r.msg === 'paused a task whose process died before its pause was stored'),
    'and the operator is told',
  );
});

t.test('a stranded task is not recovered when its pause cannot be known or answered, nor failed while a call is live', async (t) => {
  await t.test('claimed by another instance during the sweep (after it found the task stale): left to it, not failed', async (t) => {
    const db = new MemoryTaskStore();
    t.teardown(() => db.close());
    const race: { meanwhile?: () => Promise<unknown> } = {};
    const racing = Object.assign(Object.create(db) as MemoryTaskStore, {
      findStaleTasks: async (before: Date) => {
        const ids = await db.findStaleTasks(before);
        await race.meanwhile?.();
        return ids;
      },
    });
    const { core, supervisor } = await instanceA(t, { store: db, loopStore: racing });
    const { taskId, card } = await strandedTask(t, core);
    race.meanwhile = () => db.claimCalls(taskId, [{ id: card.id, answer: 'proceed_once' }], 'C', new Date(Date.now() + 30_000));
    await supervisor.sweep();
    await core.runs.drain();
    t.equal(await storedState(core.store, taskId), 'working', 'not failed');
    t.equal((await core.store.loadCall(card.id))?.phase, 'ready', "C's claim stands, for C to run");
  });
  await t.test(
    "an authenticated principal's task: which pause (input- or auth-required) is not known, so it fails as before",
    async (t) => {
      const { core, supervisor } = await instanceA(t);
      const { taskId } = await strandedTask(t, core, {}, 'alice');
      await supervisor.sweep();
      await core.runs.drain();
      t.equal(await storedState(core.store, taskId), 'failed');
    },
  );
  await t.test('every waiting call past its approval time: nobody to answer, it fails as before', async (t) => {
    const { core, supervisor } = await instanceA(t);
    const { taskId } = await strandedTask(t, core, { approvalTimeoutMs: 1 });
    await new Promise((resolve) => setTimeout(resolve, 5));
    await supervisor.sweep();
    await core.runs.drain();
    t.equal(await storedState(core.store, taskId), 'failed');
  });
});

t.test("a live peer's running call and working task are left alone; its own leases are not renewed by A", async (t) => {
  const { core, supervisor } = await instanceA(t);
  const { tool: hang, started } = hangingTool('hang');
  const peerStore = core.store.connect();
  t.teardown(() => peerStore.close());
  const peer = await makeCore(t, { store: peerStore, instanceId: 'peer', leaseMs: 30_000, extraTools: [hang] });
  const task: LiveTask = await startTask(peer, { text: 'hang on' });
  peer.loop.startTurn(task, [{ text: 'hang on' }]);
  await started;
  await task.flush();
  t.teardown(async () => {
    cancelTask(task, undefined); // the peer's own cancel lets its tool return
    await settled(peer, task);
  });
  const [running] = await core.store.loadTurn(task.id);
  t.match(running, { phase: 'executing', leaseOwner: 'peer' });
  const before = (await logOf(core.store, task.id)).length;
  const auditBefore = await auditOf(core.store, task.id);

  await supervisor.sweep();
  await supervisor.sweep();

  const after = await core.store.loadCall(running.id);
  t.equal(after?.phase, 'executing', 'still running');
  t.equal(after?.leaseOwner, 'peer');
  t.same(after?.leaseUntil, running.leaseUntil, 'A does not renew a lease it does not hold');
  t.equal(await storedState(core.store, task.id), 'working');
  t.equal((await logOf(core.store, task.id)).length, before, 'nothing was published for it');
  t.same(await auditOf(core.store, task.id), auditBefore, 'nothing audited by A');
  t.equal(core.cache.size, 0, 'A did not even load it');
});

t.test('A renews the leases of what it runs, so its own work never looks interrupted', async (t) => {
  const { tool: hang, started } = hangingTool('hang');
  const { core, supervisor } = await instanceA(t, { extraTools: [hang] });
  const task = await startTask(core, { text: 'hang on', viaCache: true });
  core.loop.startTurn(task, [{ text: 'hang on' }]);
  await started;
  await task.flush();
  t.teardown(async () => {
    cancelTask(task, undefined);
    await settled(core, task);
  });
  const [running] = await core.store.loadTurn(task.id);
  // Wait for the call's first lease to lapse in wall-clock time, as a stalled renewal would let it.
  await until('the first lease to lapse', () => Date.now() > running.leaseUntil!.getTime());
  t.same(
    (await core.store.findInterrupted(new Date())).map((c) => c.id),
    [running.id],
    'unrenewed, it would look interrupted',
  );
  await supervisor.sweep();
  const renewed = await core.store.loadCall(running.id);
  t.equal(renewed?.phase, 'executing', 'not interrupted');
  t.ok(renewed!.leaseUntil!.getTime() > Date.now(), 'the sweep renewed the lease first');
  t.same(await core.store.findStaleTasks(new Date()), [], 'the busy task is leased too');
});

t.test('an unanswered call expires: CANCELLED approval_timeout, audited expired, and the turn goes on', async (t) => {
  const { core, supervisor } = await instanceA(t, { approvalTimeoutMs: 0 });
  const task = await startTask(core, { text: 'edit', viaCache: true });
  await runTurn(core, task);
  t.equal(core.cache.size, 0, 'the paused task left memory');
  const [waiting] = await core.store.loadTurn(task.id);
  await until('the call to be past its expiry', () => Date.now() > waiting.expiresAt!.getTime());
  const before = (await logOf(core.store, task.id)).length;

  await supervisor.sweep();
  await core.runs.drain();
  await until('the task to end', async () => (await storedState(core.store, task.id)) === 'completed');

  const log = await logOf(core.store, task.id, before);
  t.same(shape(log), ['edit:CANCELLED', 'text:Edited.', 'completed!']);
  t.same(log[0].call.error, { message: 'Nobody answered within APPROVAL_TIMEOUT; the call was cancelled.', type: 'approval_timeout' });
  t.same(
    (await auditOf(core.store, task.id)).map((a) => [a.decision, a.optionId]),
    [
      ['proposed', undefined],
      ['expired', 'cancel'],
    ],
  );
  t.match(await core.store.loadCall(waiting.id), { phase: 'done', answer: 'cancel' });
  t.same(core.toolRuns, [], 'the expired call did not run');
  const history = (await core.store.loadContext(task.context.id))!.history;
  t.match(history[2].parts[0].functionResponse?.response, { error: /Nobody answered within APPROVAL_TIMEOUT/ }, 'the model was told');
});

t.test('an expiry that lost to an answer does nothing', async (t) => {
  const { core, supervisor } = await instanceA(t, { approvalTimeoutMs: 0 });
  const task = await startTask(core, { text: 'edit', viaCache: true });
  await runTurn(core, task);
  const [waiting] = await core.store.loadTurn(task.id);
  await until('the call to be past its expiry', () => Date.now() > waiting.expiresAt!.getTime());
  const peer = core.store.connect();
  t.teardown(() => peer.close());
  const expired = await core.store.findExpired(new Date());
  t.same(
    expired.map((c) => c.id),
    [waiting.id],
  );
  // An answer lands on another instance between the find and the claim: simulated by a store whose find is stale.
  await peer.claimCalls(task.id, [{ id: waiting.id, answer: 'proceed_once' }], 'peer', new Date(Date.now() + 30_000));
  let staleFinds = 0;
  const stale = new Proxy(core.store, {
    get: (target, prop, receiver) => (prop === 'findExpired' ? async () => (staleFinds++, expired) : Reflect.get(target, prop, receiver)),
  });
  const sup = new Supervisor({ store: stale, cache: core.cache, loop: core.loop, logger: core.logger, instanceId: 'A', leaseMs: LEASE_MS });
  const before = (await logOf(core.store, task.id)).length;
  await sup.sweep();
  t.equal(staleFinds, 1, 'the sweep read the stale find');
  await supervisor.sweep(); // the real find no longer lists it
  t.equal((await logOf(core.store, task.id)).length, before, 'nothing published');
  t.match(await core.store.loadCall(waiting.id), { phase: 'ready', answer: 'proceed_once', leaseOwner: 'peer' }, 'the answer stands');
});

t.test('reminders: once per call, shortly before it expires; the task keeps waiting', async (t) => {
  const { core, supervisor } = await instanceA(t, { approvalTimeoutMs: 60_000, reminderMs: 120_000 });
  const task = await startTask(core, { text: 'two edits', viaCache: true });
  await runTurn(core, task);
  const calls = await core.store.loadTurn(task.id);
  const before = (await logOf(core.store, task.id)).length;

  await supervisor.sweep();
  const log = await logOf(core.store, task.id, before);
  t.same(shape(log), ['input-required!'], 'one reminder for both calls of the task');
  t.match(
    log[0].text,
    new RegExp(
      `^Reminder: edit \\(${calls[0].id}\\), edit \\(${calls[1].id}\\) will be cancelled in about (59|60) s \\(at .+Z\\) unless answered\\. Waiting for approval of 2 tool calls`,
    ),
  );
  await supervisor.sweep();
  t.equal((await logOf(core.store, task.id)).length, before + 1, 'no second reminder for the same calls');
  t.equal(await storedState(core.store, task.id), 'input-required');
  t.same(
    (await core.store.loadTurn(task.id)).map((c) => c.phase),
    ['awaiting', 'awaiting'],
  );
  const peerStore = core.store.connect();
  t.teardown(() => peerStore.close());
  t.same(await peerStore.claimReminders(new Date(Date.now() + 120_000), new Date()), [], 'another instance does not remind again either');
});

t.test(
  'a reminder due while a call of the turn still runs here is given by a later sweep, once the run ended and the card still waits',
  async (t) => {
    let finish!: () => void;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    let running = false;
    const slowRead = fakeTool({
      name: 'slowread',
      kind: 'read',
      run: async () => {
        running = true;
        await finished;
        return { llmContent: 'read', display: { type: 'text', text: 'read' } };
      },
    });
    const script: ModelScript = {
      model: 'scripted',
      scripts: [
        {
          when: '^read and edit',
          steps: [{ chunks: [[fcall('slowread', {}), fcall('edit', { path: 'a', content: 'A' })]] }, say('Done.')],
        },
      ],
    };
    const { core, supervisor } = await instanceA(t, { approvalTimeoutMs: 60_000, reminderMs: 120_000, extraTools: [slowRead], script });
    const task = await startTask(core, { text: 'read and edit', viaCache: true });
    const turn = runTurn(core, task);
    await until('the read to run (it needs no card)', () => running || undefined);
    t.comment(`state while the read runs: ${task.state}, idle: ${task.idle}`);
    const edit = (await core.store.loadTurn(task.id)).find((c) => c.toolName === 'edit')!;
    t.equal(edit.phase, 'awaiting', 'the edit waits for its answer');
    await task.flush();
    const before = (await logOf(core.store, task.id)).length;
    await supervisor.sweep();
    t.same(shape(await logOf(core.store, task.id, before)), [], 'no reminder while the read runs here');
    finish();
    await turn;
    await settled(core, task);
    t.equal(task.state, 'input-required', 'the task waits for the edit once the read ended');
    const waited = (await logOf(core.store, task.id)).length;
    await supervisor.sweep();
    const log = await logOf(core.store, task.id, waited);
    t.same(shape(log), ['input-required!'], 'the reminder the first sweep could not give');
    t.match(log[0].text, new RegExp(`^Reminder: edit \\(${edit.id}\\) will be cancelled in about \\d+ s`));
    await supervisor.sweep();
    t.equal((await logOf(core.store, task.id)).length, waited + 1, 'once');
  },
);

t.test('a sweep whose store rejects is logged; the next sweep works; nothing rejects anywhere', async (t) => {
  const rejections = watchRejections(t);
  const inner = new MemoryTaskStore();
  t.teardown(() => inner.close());
  const faulty = faultyStore(inner);
  const { core, supervisor } = await instanceA(t, { store: inner, loopStore: faulty.store });
  const taskId = await deadInstanceTask(core);
  const call = lapsedCall(taskId);
  await inner.saveCalls([call]);

  faulty.failAt(1, 'renewLeases');
  await t.resolves(supervisor.sweep(), 'a failed sweep resolves');
  t.strictSame(faulty.fired, ['renewLeases'], 'the fault fired');
  const logged = core.logger.errors().find((e) => e.msg === 'supervisor sweep failed');
  t.ok(logged, 'the failure is logged');
  t.ok(logged?.obj.err instanceof DatabaseBlip);
  t.equal((await inner.loadCall(call.id))?.phase, 'executing', 'nothing was done in the failed pass');

  faulty.failAt(1, 'findInterrupted');
  await supervisor.sweep();
  t.strictSame(faulty.fired, ['renewLeases', 'findInterrupted'], 'the second fault fired');
  t.equal(core.logger.errors().filter((e) => e.msg === 'supervisor sweep failed').length, 2);

  await supervisor.sweep();
  t.equal((await inner.loadCall(call.id))?.phase, 'done', 'the next sweep marked the call');
  t.equal(await storedState(inner, taskId), 'failed');
  t.same(rejections, [], 'no unhandled rejection');
});

t.test("a failure inside one task's action fails that task, and the sweep goes on to the next", async (t) => {
  const rejections = watchRejections(t);
  const inner = new MemoryTaskStore();
  t.teardown(() => inner.close());
  const faulty = faultyStore(inner);
  const { core, supervisor } = await instanceA(t, { store: inner, loopStore: faulty.store, approvalTimeoutMs: 0 });
  const tasks: LiveTask[] = [];
  for (let i = 0; i < 2; i++) {
    const task = await startTask(core, { text: 'edit', viaCache: true });
    await runTurn(core, task);
    tasks.push(task);
  }
  const expiries = (await inner.findExpired(new Date(Date.now() + 1))).map((c) => c.taskId);
  await until('both calls to be past their expiry', async () => (await inner.findExpired(new Date())).length === 2);
  const [early, late] = expiries as [string, string]; // the sweep handles tasks in this order
  // The first expiry's settle loses the database (a settle of calls all done here reads nothing:
  // the blip is thrown where its commit would be).
  const fired: string[] = [];
  const settle = core.loop.settle.bind(core.loop);
  core.loop.settle = async (task) => {
    if (fired.length > 0) return settle(task);
    fired.push(task.id);
    throw new DatabaseBlip('settle');
  };

  await t.resolves(supervisor.sweep());
  await core.runs.drain();
  t.strictSame(fired, [early], 'the fault fired');
  await until('the second task to complete', async () => (await storedState(inner, late)) === 'completed');

  const failed = (await logOf(inner, early)).at(-1)!;
  t.equal(failed.state, 'failed', 'the first task fails');
  // The injected fault is a lost connection (DatabaseBlip): the task says the store was out of reach.
  t.match(failed.text, /^The task store became unavailable while expiring unanswered calls \(reference [0-9a-f]{8} in the server log\)/);
  t.same(
    shape(await logOf(inner, late)).slice(-3),
    ['edit:CANCELLED', 'text:Edited.', 'completed!'],
    'the second task was expired and went on',
  );
  t.ok(core.logger.errors().some((e) => e.msg === 'expiring unanswered calls failed; the task fails' && e.obj.taskId === early));
  t.same(rejections, []);
});

t.test('start sweeps at once (boot recovery); stop waits for a running sweep', async (t) => {
  const { core, supervisor } = await instanceA(t);
  const taskId = await deadInstanceTask(core);
  await supervisor.start();
  t.equal(await storedState(core.store, taskId), 'failed', 'recovered at boot');
  await supervisor.stop();
  await supervisor.stop();
  t.pass('stop is idempotent');
});
