/**
 * Answers that meet on one copy of a task (resume-handler.ts, LiveTask.answering): a second
 * answer, an expiry or a reminder that arrives while an answer's claim is being decided waits for
 * it and is judged on what it did; an answer to one card while another card's call runs here is
 * not refused as behind; a reminder another instance found before an answer's claim is not logged
 * after it. Each ends with every call run or closed exactly once and the task at its end — none
 * stranded claimed under this process's lease.
 */
import t from 'tap';
import type { Message } from '@a2a-js/sdk';
import { applyResume } from '../../../src/agent/requests/resume-handler.js';
import type { Claimer } from '../../../src/agent/requests/resume-handler.js';
import type { LiveTask, TurnCall } from '../../../src/agent/runtime/live-task.js';
import { Supervisor } from '../../../src/agent/runtime/supervisor.js';
import type { ToolResult } from '../../../src/tools/tool.js';
import {
  answer,
  FAKE_SCRIPT,
  fakeTool,
  fcall,
  logOf,
  makeCore,
  runTurn,
  say,
  settled,
  shape,
  startTask,
  storedState,
  until,
} from '../../support/core.js';
import type { Core, RunLog } from '../../support/core.js';
import { confirmation, planFor } from '../../support/resume.js';

/** The router's claim terms; `checkSeq` as on its first try (the copy is the one kept in memory). */
const claimer = (core: Core, checkSeq = false): Claimer => ({
  owner: core.instanceId,
  leaseUntil: () => new Date(Date.now() + 30_000),
  checkSeq,
});

/** Applies `message` to `task` as the router does: planned on the copy now, then applied. */
function apply(core: Core, task: LiveTask, message: Message, checkSeq = false): Promise<number> {
  return applyResume(task, planFor(core, task, message), core.loop, message, 'alice', claimer(core, checkSeq));
}

/**
 * A task paused on the calls the prompt's script proposes, as the router answers it: the copy
 * the task cache gives (a sweep of the supervisor gets the same one).
 */
async function pausedHere(core: Core, prompt: string): Promise<{ task: LiveTask; calls: TurnCall[] }> {
  const started = await startTask(core, { text: prompt, viaCache: true });
  await runTurn(core, started);
  const task = await core.cache.get(started.id);
  if (task === undefined) throw new Error('the task did not load');
  return { task, calls: task.awaiting() };
}

/** A gate the test opens. */
function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  const wait = new Promise<void>((resolve) => (open = resolve));
  return { wait, open };
}

/** Settles `p` or gives up after `ms` (a promise that waits as it should); true when it settled. */
async function settlesWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let done = false;
  await Promise.race([
    p.then(
      () => (done = true),
      () => (done = true),
    ),
    new Promise((r) => setTimeout(r, ms)),
  ]);
  return done;
}

/** The store decides `claimCalls` at once, but its reply waits for `reply` (the claim's reply is on its way). */
function holdClaimReplies(core: Core, reply: Promise<void>): { decided: () => number } {
  let decided = 0;
  const claimCalls = core.store.claimCalls.bind(core.store);
  core.store.claimCalls = async (...args) => {
    const result = await claimCalls(...args);
    decided++;
    await reply;
    return result;
  };
  return { decided: () => decided };
}

/** The claims that carry an answer's writes (claimAndCommit) reach the store only once `send` resolves. */
function holdClaimStatements(core: Core, send: Promise<void>): { sent: () => number } {
  let sent = 0;
  const claimAndCommit = core.store.claimAndCommit.bind(core.store);
  core.store.claimAndCommit = async (...args) => {
    sent++;
    await send;
    return claimAndCommit(...args);
  };
  return { sent: () => sent };
}

t.test(
  'an "always" answer whose claim is decided but not yet back: a second answer to that call waits for it, then is refused',
  async (t) => {
    const core = await makeCore(t);
    const { task, calls } = await pausedHere(core, 'two edits');
    const [a, b] = calls.map((c) => c.snapshot.id) as [string, string];
    const reply = gate();
    const held = holdClaimReplies(core, reply.wait);
    // The "always" grant claims alone (it changes the context only once won), and covers b.
    const always = apply(core, task, answer(task, confirmation(a, 'proceed_always')));
    await until('the claim to be decided in the store', () => held.decided() === 1);
    const once = apply(core, task, answer(task, confirmation(a, 'proceed_once')));
    t.notOk(await settlesWithin(once, 100), 'the second answer waits for the first one to be decided');
    reply.open();
    await always;
    await t.rejects(once, { message: `tool call ${a} was already answered (another answer arrived first)` });
    await settled(core, task);
    t.same(
      core.toolRuns.map(([name, args]) => [name, args.path]),
      [
        ['edit', 'a'],
        ['edit', 'b'],
      ],
      'the winning answer ran both calls, once each',
    );
    t.equal(await storedState(core.store, task.id), 'completed');
    t.same(
      (await core.store.loadTurn(task.id)).filter((c) => c.phase !== 'done').map((c) => c.id),
      [],
      'no call is left claimed',
    );
    t.same((await core.store.loadCall(b))?.answer, 'proceed_always', 'b ran on the grant that covered it');
  },
);

t.test("an answer to one card while another answer's claim waits for its statement: it waits, then runs", async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await pausedHere(core, 'two edits');
  const [a, b] = calls.map((c) => c.snapshot.id) as [string, string];
  const statement = gate();
  const held = holdClaimStatements(core, statement.wait);
  // a: nothing else runs in the copy, so the answer is applied ahead and its claim carries its writes.
  const first = apply(core, task, answer(task, confirmation(a, 'proceed_once')));
  await until("a's claim statement to be sent", () => held.sent() === 1);
  const second = apply(core, task, answer(task, confirmation(b, 'proceed_once')));
  t.notOk(await settlesWithin(second, 100), "the answer to b waits for a's claim to be decided");
  statement.open();
  await first;
  await t.resolves(second, 'then b is answered: it was never answered before');
  await settled(core, task);
  t.same(
    core.toolRuns.map(([, args]) => args.path),
    ['a', 'b'],
  );
  t.equal(await storedState(core.store, task.id), 'completed');
});

t.test('an answer to a card while a call of the same turn runs here, its writes landed but not yet acknowledged', async (t) => {
  const runs: RunLog = [];
  // Once the call runs, each commit with events lands in the store, but its reply waits for `acknowledge`.
  let holding = false;
  let landed = 0;
  const acknowledge = gate();
  const running = gate();
  const finish = gate();
  const slow = fakeTool(
    {
      name: 'slow',
      kind: 'edit',
      run: async (_args, ctx): Promise<ToolResult> => {
        holding = true;
        ctx.onLiveOutput?.('working…');
        running.open();
        await finish.wait;
        return { llmContent: 'slow done', display: { type: 'text', text: 'slow done' } };
      },
    },
    runs,
  );
  const script = {
    ...FAKE_SCRIPT,
    scripts: [
      { when: '^slow and edit', steps: [{ chunks: [[fcall('slow', {}), fcall('edit', { path: 'b', content: 'B' })]] }, say('Both.')] },
    ],
  };
  const core = await makeCore(t, { extraTools: [slow], script });
  const commit = core.store.commit.bind(core.store);
  core.store.commit = async (batch) => {
    const seqs = await commit(batch);
    if (holding && batch.events.length > 0) {
      landed++;
      await acknowledge.wait;
    }
    return seqs;
  };
  const { task, calls } = await pausedHere(core, 'slow and edit');
  const [slowId, editId] = calls.map((c) => c.snapshot.id) as [string, string];
  await apply(core, task, answer(task, confirmation(slowId, 'proceed_once')));
  await running.wait;
  // The running call's live output is committed, but its reply has not reached this process yet:
  // the copy's last seq trails the store's.
  await until('a write of the running call to land in the store', () => landed > 0 || undefined);
  t.ok((await logOf(core.store, task.id)).at(-1)!.seq > task.lastSeq, "the store is ahead of the copy's last seq");
  // The router's first try: the copy in memory, whose claim would check its last seq.
  await t.resolves(apply(core, task, answer(task, confirmation(editId, 'proceed_once')), true), 'not refused as behind');
  t.equal(core.cache.peek(task.id), task, 'the copy that runs the calls stays the one in memory');
  acknowledge.open();
  finish.open();
  await settled(core, task);
  t.same(
    runs.map(([name]) => name),
    ['slow'],
  );
  t.same(
    core.toolRuns.map(([name]) => name),
    ['edit'],
  );
  t.equal(await storedState(core.store, task.id), 'completed');
  t.same(
    (await core.store.loadTurn(task.id)).filter((c) => c.phase !== 'done'),
    [],
    'no call is left claimed or running',
  );
  t.same(
    shape(await logOf(core.store, task.id))
      .filter((s) => s.endsWith(':SUCCEEDED'))
      .sort(),
    ['edit:SUCCEEDED', 'slow:SUCCEEDED'],
  );
});

t.test('an expiry found while an answer is being claimed here waits for it: the answer runs, nothing expires', async (t) => {
  const core = await makeCore(t, { approvalTimeoutMs: 0 });
  const supervisor = new Supervisor({
    store: core.store,
    cache: core.cache,
    loop: core.loop,
    logger: core.logger,
    instanceId: core.instanceId,
    leaseMs: core.leaseMs,
  });
  t.teardown(() => supervisor.stop());
  const { task, calls } = await pausedHere(core, 'edit');
  const [call] = calls;
  const id = call.snapshot.id;
  await until('the call to be past its expiry', () => Date.now() > call.expiresAt!.getTime());
  const statement = gate();
  const held = holdClaimStatements(core, statement.wait);
  const answered = apply(core, task, answer(task, confirmation(id, 'proceed_once')));
  await until("the answer's claim statement to be sent", () => held.sent() === 1);
  const sweep = supervisor.sweep();
  t.notOk(await settlesWithin(sweep, 100), "the expiry waits for the answer's claim");
  statement.open();
  await answered;
  await sweep;
  await settled(core, task);
  t.same(
    core.toolRuns.map(([name]) => name),
    ['edit'],
    'the answered call ran',
  );
  t.equal(await storedState(core.store, task.id), 'completed');
  t.match(await core.store.loadCall(id), { phase: 'done', answer: 'proceed_once' });
  t.notOk(
    (await logOf(core.store, task.id)).some((e) => e.call?.error?.type === 'approval_timeout'),
    'nothing was expired',
  );
});

t.test("a reminder another instance found before an answer's claim is not logged after it: the answer's writes land", async (t) => {
  const core = await makeCore(t, { approvalTimeoutMs: 60_000 });
  const peer = await makeCore(t, { store: core.store.connect(), instanceId: 'peer', approvalTimeoutMs: 60_000 });
  const { task, calls } = await pausedHere(core, 'edit');
  const id = calls[0].snapshot.id;
  // The peer found the call due for its reminder and read the task, both before this answer's claim.
  const due = await peer.store.claimReminders(new Date(Date.now() + 120_000), new Date());
  t.same(
    due.map((c) => c.id),
    [id],
  );
  const copy = await peer.cache.get(task.id);
  t.equal(copy?.awaiting().length, 1, "the peer's copy has the call waiting");
  const stale = Object.assign(Object.create(peer.store) as typeof peer.store, { claimReminders: async () => due });
  const peerSupervisor = new Supervisor({
    store: stale,
    cache: peer.cache,
    loop: peer.loop,
    logger: peer.logger,
    instanceId: 'peer',
    leaseMs: peer.leaseMs,
    reminderMs: 120_000,
  });
  t.teardown(() => peerSupervisor.stop());
  const reply = gate();
  const held = holdClaimReplies(core, reply.wait);
  // An "always" answer: its claim goes alone, and its writes follow once it is won.
  const answered = apply(core, task, answer(task, confirmation(id, 'proceed_always')));
  await until('the claim to be decided in the store', () => held.decided() === 1);
  await peerSupervisor.sweep();
  reply.open();
  await answered;
  await settled(core, task);
  t.same(
    core.toolRuns.map(([name]) => name),
    ['edit'],
  );
  t.equal(await storedState(core.store, task.id), 'completed');
  t.notOk(
    (await logOf(core.store, task.id)).some((e) => /^Reminder:/.test(e.text ?? '')),
    'no reminder was logged',
  );
});
