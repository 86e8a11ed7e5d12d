/**
 * Answers that meet on one copy of a task (resume-handler.ts, LiveTask.answering), as a hostile or
 * unlucky client, the supervisor or another instance can order them: a second answer waits for the
 * first one's claim and is judged on what it did (a call it took, a card its run re-proposed);
 * a message that is no answer while a call runs is refused as to a working task; the copy an
 * answer is decided on stays the one in memory (leased, in line); an expiry or a reminder leaves a
 * task to the answer under way; a reminder is not logged after a claim, nor from a copy behind the
 * store; an answer to one card while another card's call runs here is not refused as behind, and
 * the approved call runs once however many runners reach it. Each ends with every call run or
 * closed exactly once and the task at its end — none stranded claimed under this process's lease.
 * Every wait is bounded.
 */
import t from 'tap';
import type { Message } from '@a2a-js/sdk';
import { applyResume } from '../../../src/agent/requests/resume-handler.js';
import type { Claimer, ResumePlan } from '../../../src/agent/requests/resume-handler.js';
import type { LiveTask, TurnCall } from '../../../src/agent/runtime/live-task.js';
import { Supervisor } from '../../../src/agent/runtime/supervisor.js';
import { cancelTask, refusedHere } from '../../../src/agent/runtime/task-lifecycle.js';
import type { ToolProposal, ToolResult } from '../../../src/tools/tool.js';
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
import { confirmation, planFor, routeMessage } from '../../support/resume.js';

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

/**
 * A task paused on `sedit`, an edit whose card shows a file's content hash; `fileChanges()` changes
 * that file, so an approved `sedit` is re-proposed with a new card (new id) before it runs.
 */
async function pausedOnEdit(t: Parameters<typeof makeCore>[0]) {
  const runs: RunLog = [];
  let base = 'h0';
  const sedit = fakeTool(
    {
      name: 'sedit',
      kind: 'edit',
      propose: async (): Promise<ToolProposal> => ({
        type: 'edit',
        change: { fileName: 'x', filePath: 'x', newContent: 'X', formattedDiff: `+X over ${base}`, baseHash: base },
      }),
    },
    runs,
  );
  const script = { ...FAKE_SCRIPT, scripts: [{ when: '^sedit', steps: [{ chunks: [[fcall('sedit', {})]] }, say('Done.')] }] };
  const core = await makeCore(t, { extraTools: [sedit], script });
  const { task, calls } = await pausedHere(core, 'sedit');
  return { core, task, calls, runs, fileChanges: () => void (base = 'h1') };
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

/** Waits for the detached runs and the task's writes, but gives up after `ms` (a hang is a failure, not a stuck test). */
async function settledWithin(core: Core, task: LiveTask, ms = 3_000): Promise<boolean> {
  return settlesWithin(settled(core, task), ms);
}

/** A read-only tool (runs without a card) that runs until `finish` opens. */
function gatedReader(name: string, runs: RunLog) {
  const running = gate();
  const finish = gate();
  const tool = fakeTool(
    {
      name,
      kind: 'read',
      run: async (): Promise<ToolResult> => {
        running.open();
        await finish.wait;
        return { llmContent: `${name} done`, display: { type: 'text', text: `${name} done` } };
      },
    },
    runs,
  );
  return { tool, running, finish };
}

/** Applies a plan made earlier (the router plans on the copy before it waits for the copy's answers). */
function applyPlan(core: Core, task: LiveTask, plan: ResumePlan, message: Message, checkSeq = false): Promise<number> {
  return applyResume(task, plan, core.loop, message, 'alice', claimer(core, checkSeq));
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

t.test(
  'an expiry found while an answer is being claimed here leaves the task to the answer: the answer runs, nothing expires',
  async (t) => {
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
    t.ok(await settlesWithin(sweep, 2_000), "the sweep does not wait for the answer's claim");
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
  },
);

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

t.test(
  'a message that is no answer, queued behind an answer that took every waiting call, is refused as to a working task: no pause over the running call (its stream does not end early)',
  async (t) => {
    const runs: RunLog = [];
    const slow = fakeTool(
      {
        name: 'slowedit',
        kind: 'edit',
        run: async (): Promise<ToolResult> => {
          await slowFinish.wait;
          return { llmContent: 'ok', display: { type: 'text', text: 'ok' } };
        },
      },
      runs,
    );
    const slowFinish = gate();
    const script = { ...FAKE_SCRIPT, scripts: [{ when: '^slowedit', steps: [{ chunks: [[fcall('slowedit', {})]] }, say('Done.')] }] };
    const core = await makeCore(t, { extraTools: [slow], script });
    const { task, calls } = await pausedHere(core, 'slowedit');
    const id = calls[0].snapshot.id;
    // The client answers, and (a second tab, or a confused model) also sends a text that is no answer.
    // The router plans both on the copy while the card waits, then each waits for the copy's answers.
    const yes = answer(task, confirmation(id, 'proceed_once'));
    const chatter = answer(task, 'what does this do?');
    const repromptPlan = planFor(core, task, chatter);
    t.equal(repromptPlan.kind, 'reprompt');
    const answered = apply(core, task, yes);
    const reprompted = applyPlan(core, task, repromptPlan, chatter);
    const from = await answered;
    await reprompted.catch(() => undefined);
    await until('the approved call to run', () => runs.length === 1 || undefined, 2_000);
    // While the approved call runs, the task must not show a pause (a pause is final: it ends the
    // answer's stream and tells every reader the task waits for a person).
    const during = await logOf(core.store, task.id, from);
    t.same(
      during.filter((e) => e.final).map((e) => `${e.state}:${e.text}`),
      [],
      'no final event (pause) is logged while the answered call runs',
    );
    t.equal(await storedState(core.store, task.id), 'working', 'the stored task is working while its call runs');
    slowFinish.open();
    t.ok(await settledWithin(core, task), 'the task settles');
    t.equal(await storedState(core.store, task.id), 'completed');
  },
);

t.test(
  'a message that is no answer while a call of the same turn runs here (mixed turn) is refused as to a working task: no pause over the running call',
  async (t) => {
    const runs: RunLog = [];
    const reader = gatedReader('slowlook', runs);
    const script = {
      ...FAKE_SCRIPT,
      scripts: [
        { when: '^mixed', steps: [{ chunks: [[fcall('slowlook', {}), fcall('edit', { path: 'b', content: 'B' })]] }, say('Both.')] },
      ],
    };
    const core = await makeCore(t, { extraTools: [reader.tool], script });
    const task = await startTask(core, { text: 'mixed', viaCache: true });
    core.loop.startTurn(task, [{ text: 'mixed' }]);
    await reader.running.wait;
    await task.flush().catch(() => undefined);
    // The edit's card is committed (with the reader's EXECUTING card): a client sees it, the task works.
    const waiting = await until(
      'the edit card to be committed',
      async () => (await core.store.loadTurn(task.id)).some((c) => c.phase === 'awaiting') || undefined,
    );
    t.ok(waiting);
    t.equal(task.awaiting().length, 1, 'the copy has the edit waiting (the router plans an answer or a re-prompt)');
    const before = (await logOf(core.store, task.id)).at(-1)!.seq;
    const chatter = answer(task, 'hurry up');
    await applyPlan(core, task, planFor(core, task, chatter), chatter).catch(() => undefined);
    const logged = await logOf(core.store, task.id, before);
    t.same(
      logged.filter((e) => e.final).map((e) => e.state),
      [],
      'no pause is logged while the reader (approved by policy) still runs',
    );
    t.equal(await storedState(core.store, task.id), 'working');
    reader.finish.open();
    await until('the task to pause on the edit', () => task.state === 'input-required' || undefined, 2_000).catch(() => undefined);
    t.ok(await settledWithin(core, task), 'settles');
  },
);

t.test(
  'a refused message while an answer is being claimed leaves the copy in memory: the copy that runs the call is leased, and no sweep of ours interrupts it',
  async (t) => {
    const runs: RunLog = [];
    const finish = gate();
    const running = gate();
    const slow = fakeTool(
      {
        name: 'slowedit',
        kind: 'edit',
        run: async (): Promise<ToolResult> => {
          running.open();
          await finish.wait;
          return { llmContent: 'ok', display: { type: 'text', text: 'ok' } };
        },
      },
      runs,
    );
    const script = { ...FAKE_SCRIPT, scripts: [{ when: '^slowedit', steps: [{ chunks: [[fcall('slowedit', {})]] }, say('Done.')] }] };
    const leaseMs = 300;
    const core = await makeCore(t, { extraTools: [slow], script, leaseMs });
    const supervisor = new Supervisor({
      store: core.store,
      cache: core.cache,
      loop: core.loop,
      logger: core.logger,
      instanceId: core.instanceId,
      leaseMs,
    });
    t.teardown(() => supervisor.stop());
    const { task, calls } = await pausedHere(core, 'slowedit');
    const id = calls[0].snapshot.id;
    const reply = gate();
    const held = holdClaimReplies(core, reply.wait);
    const leased: Claimer = { owner: core.instanceId, leaseUntil: () => new Date(Date.now() + leaseMs), checkSeq: true };
    // "always": the claim goes alone; the copy stays paused and idle until it is won.
    const yes = answer(task, confirmation(id, 'proceed_always'));
    const answered = applyResume(task, planFor(core, task, yes), core.loop, yes, 'alice', leased);
    await until('the claim to be decided in the store', () => held.decided() === 1 || undefined, 2_000);
    // Meanwhile a hostile client sends a message the router refuses (e.g. an answer naming a made-up
    // call): MessageRouter.continueLoaded calls refusedHere(copy, worked=true) on the same copy.
    refusedHere(task, true);
    reply.open();
    await answered;
    await running.wait;
    t.equal(core.cache.peek(task.id), task, 'the copy that runs the approved call is the one in the cache');
    t.ok(core.cache.busyIds().includes(task.id), "the running task's leases are renewed by the sweep");
    // Let a few sweeps run past the lease while the tool runs.
    for (let i = 0; i < 4; i++) {
      await new Promise((r) => setTimeout(r, leaseMs / 2));
      await supervisor.sweep();
    }
    t.not(await storedState(core.store, task.id), 'failed', 'the task is not failed as interrupted while its call runs here');
    t.notOk(
      (await logOf(core.store, task.id)).some((e) => e.call?.error?.type === 'interrupted' || /Interrupted/.test(e.text)),
      'no call is marked interrupted',
    );
    finish.open();
    t.ok(await settledWithin(core, task), 'settles');
  },
);

t.test(
  'an answer to the waiting card of a mixed turn while the model loop runs the other call: the answered call runs once, the task completes',
  async (t) => {
    const runs: RunLog = [];
    const reader = gatedReader('slowlook', runs);
    let proposals = 0;
    const rejudged = gate();
    const rejudging = gate();
    const sedit = fakeTool(
      {
        name: 'sedit',
        kind: 'edit',
        propose: async (): Promise<ToolProposal> => {
          proposals++;
          if (proposals === 2) {
            // The answer's runReady judges the approved edit again: held here.
            rejudging.open();
            await rejudged.wait;
          }
          return {
            type: 'edit',
            change: { fileName: 'x', filePath: 'x', newContent: 'X', formattedDiff: '+X', baseHash: 'h0' },
          };
        },
      },
      runs,
    );
    const script = {
      ...FAKE_SCRIPT,
      scripts: [{ when: '^mixed', steps: [{ chunks: [[fcall('slowlook', {}), fcall('sedit', {})]] }, say('Both.')] }],
    };
    const core = await makeCore(t, { extraTools: [reader.tool, sedit], script });
    const task = await startTask(core, { text: 'mixed', viaCache: true });
    core.loop.startTurn(task, [{ text: 'mixed' }]);
    await reader.running.wait;
    await until(
      'the sedit card to be committed',
      async () => (await core.store.loadTurn(task.id)).some((c) => c.phase === 'awaiting') || undefined,
    );
    const id = task.awaiting()[0].snapshot.id;
    await t.resolves(apply(core, task, answer(task, confirmation(id, 'proceed_once'))), 'the answer is accepted');
    await until("the answer's run to judge the edit again", async () => (await settlesWithin(rejudging.wait, 10)) || undefined, 2_000);
    // The model loop's own runReady now reaches the edit: it is `ready` (approved), not yet executing.
    reader.finish.open();
    await new Promise((r) => setTimeout(r, 50));
    rejudged.open();
    t.ok(await settledWithin(core, task), 'settles');
    t.same(runs.filter(([n]) => n === 'sedit').length, 1, 'the approved edit ran exactly once');
    t.equal(await storedState(core.store, task.id), 'completed', 'the task completes (not failed by a second run of the call)');
    t.same(
      (await core.store.loadTurn(task.id)).filter((c) => c.phase !== 'done').map((c) => c.id),
      [],
      'nothing stranded',
    );
  },
);

t.test(
  "a reminder from a copy that missed another instance's re-prompt logs nothing and stops that copy: an answer's claim on it is refused as behind, and the re-prompt's message stays",
  async (t) => {
    const core = await makeCore(t, { approvalTimeoutMs: 60_000 });
    const peer = await makeCore(t, { store: core.store.connect(), instanceId: 'peer', approvalTimeoutMs: 60_000 });
    const { task, calls } = await pausedHere(core, 'edit');
    const id = calls[0].snapshot.id;
    // Another instance takes a message that is no answer: it re-prompts (the user's message joins the history).
    const copy = (await peer.cache.get(task.id))!;
    const chatter = answer(copy, 'what does this do?');
    await applyResume(copy, planFor(peer, copy, chatter), peer.loop, chatter, 'alice', claimer(peer));
    await until(
      "the peer's re-prompt to be stored",
      async () =>
        (await core.store.loadTask(task.id))!.task.history.some((m) => JSON.stringify(m).includes('what does this do?')) || undefined,
    );
    // This process's copy (in memory since a request or a sweep loaded it) is behind now.
    const stored = await core.store.loadVersion(task.id);
    t.ok(stored!.lastSeq > task.lastSeq, 'the copy here is behind the store');
    const supervisor = new Supervisor({
      store: core.store,
      cache: core.cache,
      loop: core.loop,
      logger: core.logger,
      instanceId: core.instanceId,
      leaseMs: core.leaseMs,
      reminderMs: 120_000,
    });
    t.teardown(() => supervisor.stop());
    // (Without this sweep the claim below is refused as behind, as it should be.)
    await supervisor.sweep();
    // The router's first try: the copy in memory, whose claim checks its last seq.
    const yes = answer(task, confirmation(id, 'proceed_once'));
    const tried = await apply(core, task, yes, true).then(
      () => 'accepted',
      (err: Error) => err.name,
    );
    t.equal(tried, 'CopyBehind', "the stale copy's claim is refused as behind (the router retries on a fresh copy)");
    await settledWithin(core, task);
    const history = JSON.stringify((await core.store.loadTask(task.id))!.task.history);
    t.ok(history.includes('what does this do?'), "the stored history keeps the peer's re-prompt message");
  },
);

t.test(
  "a retried answer to a card that the first answer's run re-proposed (the file changed) does not approve the new card nobody saw",
  async (t) => {
    const { core, task, calls, runs, fileChanges } = await pausedOnEdit(t);
    const call = calls[0];
    const oldId = call.snapshot.id;
    // The file changes after the card was shown: the approved edit is re-proposed with a new card (new id).
    fileChanges();
    // The client sends its answer, and retries it (a timeout, a second tab): the router plans both on the copy.
    const first = answer(task, confirmation(oldId, 'proceed_once'));
    const retry = answer(task, confirmation(oldId, 'proceed_once'));
    const firstPlan = planFor(core, task, first);
    const retryPlan = planFor(core, task, retry);
    const a = applyPlan(core, task, firstPlan, first);
    const b = applyPlan(core, task, retryPlan, retry);
    const outcomes = await Promise.all(
      [a, b].map((p) =>
        p.then(
          () => 'accepted',
          (err: Error) => `refused: ${err.message}`,
        ),
      ),
    );
    await settledWithin(core, task);
    t.equal(outcomes[0], 'accepted', 'the first answer is accepted');
    t.match(outcomes[1], /^refused/, 'the retry (an answer to the old card) is refused');
    t.same(
      runs.map(([n]) => n),
      [],
      'the edit did not run: nobody approved the re-proposed card',
    );
    const turn = await core.store.loadTurn(task.id);
    t.same(
      turn.map((c) => [c.phase, c.id === oldId ? 'old' : 'new']),
      [['awaiting', 'new']],
      'the re-proposed card waits for a person',
    );
    t.equal(await storedState(core.store, task.id), 'input-required');
    t.notOk(
      (await core.store.listAudit({ taskId: task.id })).some((r) => r.decision === 'executed'),
      'nothing was audited as executed',
    );
  },
);

t.test(
  'tasks/cancel while an answer applied ahead waits for its claim statement: the task ends canceled, nothing runs, nothing hangs',
  async (t) => {
    const core = await makeCore(t);
    const { task, calls } = await pausedHere(core, 'edit');
    const id = calls[0].snapshot.id;
    const statement = gate();
    let sent = 0;
    const claimAndCommit = core.store.claimAndCommit.bind(core.store);
    core.store.claimAndCommit = async (...args) => {
      sent++;
      await statement.wait;
      return claimAndCommit(...args);
    };
    const answered = apply(core, task, answer(task, confirmation(id, 'proceed_once')));
    await until('the claim statement to be sent', () => sent === 1 || undefined, 2_000);
    // The request handler's cancel: on the same copy, without waiting for its answers.
    cancelTask(task, 'alice');
    const flushed = task.flush();
    statement.open();
    t.ok(await settlesWithin(answered, 2_000), 'the answer settles');
    t.ok(await settlesWithin(flushed, 2_000), "the cancel's writes settle");
    t.ok(await settledWithin(core, task), 'settles');
    const state = await storedState(core.store, task.id);
    t.ok(state === 'canceled' || state === 'completed', `the task reached an end (${state})`);
    const turn = await core.store.loadTurn(task.id);
    t.same(
      turn.filter((c) => c.phase !== 'done').map((c) => c.id),
      [],
      'no call is left claimed',
    );
    if (state === 'canceled') t.same(core.toolRuns, [], 'a canceled task ran nothing');
  },
);

t.test(
  "an expiry and a reminder found while an answer's claim is slow leave the task to the answer: the sweep does not wait for it, nothing expires",
  async (t) => {
    const core = await makeCore(t, { approvalTimeoutMs: 0 });
    const supervisor = new Supervisor({
      store: core.store,
      cache: core.cache,
      loop: core.loop,
      logger: core.logger,
      instanceId: core.instanceId,
      leaseMs: core.leaseMs,
      reminderMs: 60_000,
    });
    t.teardown(() => supervisor.stop());
    const { task, calls } = await pausedHere(core, 'two edits');
    const [a, b] = calls.map((c) => c.snapshot.id) as [string, string];
    await until('the calls to be past their expiry', () => Date.now() > calls[1].expiresAt!.getTime() || undefined);
    const reply = gate();
    holdClaimReplies(core, reply.wait);
    // "always" on a: covers b too; the claim goes alone and its reply is slow.
    const answered = apply(core, task, answer(task, confirmation(a, 'proceed_always')));
    const sweep = supervisor.sweep();
    t.ok(await settlesWithin(sweep, 2_000), 'the sweep leaves the task to the answer under way, without waiting for it');
    reply.open();
    t.ok(await settlesWithin(answered, 2_000), 'the answer settles');
    t.ok(await settledWithin(core, task), 'settles');
    t.same(
      core.toolRuns.map(([n, args]) => `${n}:${String(args.path)}`),
      ['edit:a', 'edit:b'],
    );
    t.equal(await storedState(core.store, task.id), 'completed');
    t.notOk(
      (await logOf(core.store, task.id)).some((e) => e.call?.error?.type === 'approval_timeout' || /^Reminder:/.test(e.text)),
      'nothing expired, no reminder after the answer',
    );
    void b;
  },
);

t.test(
  'a refused message while an "always" claim is decided puts no second copy of the task in this process: the next answer waits in line on the same copy, nothing is stranded',
  async (t) => {
    const core = await makeCore(t);
    const { task: first, calls } = await pausedHere(core, 'edit and exec');
    const [editId, execId] = calls.map((c) => c.snapshot.id) as [string, string];
    const reply = gate();
    const held = holdClaimReplies(core, reply.wait);
    // Answer 1 on the copy in memory: "always" for the edit (claims alone; the copy stays paused and idle).
    const yes = answer(first, confirmation(editId, 'proceed_always'));
    const answered1 = applyResume(first, planFor(core, first, yes), core.loop, yes, 'alice', claimer(core, true));
    await until('the claim to be decided in the store', () => held.decided() === 1 || undefined, 2_000);
    // A message the router refuses drops that copy from the cache (MessageRouter.continueLoaded → refusedHere).
    refusedHere(first, true);
    // Answer 2, to the other card, gets a second copy from the cache (TaskCache.get loads it afresh).
    const second = (await core.cache.get(first.id))!;
    t.equal(second, first, 'the copy an answer is decided on stays the one in memory');
    const reply2 = answer(second, confirmation(execId, 'proceed_once'));
    const answered2 = applyResume(second, planFor(core, second, reply2), core.loop, reply2, 'alice', claimer(core, true));
    t.notOk(await settlesWithin(answered2, 100), 'the answer to the other card waits in line');
    reply.open();
    t.same(await Promise.all([outcome(answered1), outcome(answered2)]), ['accepted', 'accepted']);
    await settledWithin(core, first);
    await settledWithin(core, second);
    const turn = await core.store.loadTurn(first.id);
    t.same(
      turn.filter((c) => c.phase === 'ready' || c.phase === 'executing').map((c) => `${c.toolName}:${c.phase}`),
      [],
      'no call is left claimed under this process with nobody running it',
    );
    t.same(
      core.toolRuns.map(([n]) => n),
      ['edit', 'exec'],
      'each answered call ran once',
    );
    t.equal(await storedState(core.store, first.id), 'completed');
  },
);

/** A message to a task, as message/stream routes it: the app's MessageRouter for this core (its copy from the cache, a retry on a fresh read when that copy was behind). */
const route = (core: Core, message: Message): Promise<unknown> => routeMessage(core, message);

/** A task paused here on the calls the prompt's script proposes, and a second instance (`peer`) on the same store. */
async function pausedWithPeer(t: Parameters<typeof makeCore>[0], prompt: string) {
  const core = await makeCore(t);
  const peer = await makeCore(t, { store: core.store.connect(), instanceId: 'peer' });
  return { core, peer, ...(await pausedHere(core, prompt)) };
}

/** The peer takes a message that is no answer to the task: it re-prompts; a copy kept elsewhere does not hear of it. */
async function peerReprompts(peer: Core, taskId: string): Promise<void> {
  const copy = (await peer.cache.get(taskId))!;
  const chatter = answer(copy, 'what does this do?');
  await applyResume(copy, planFor(peer, copy, chatter), peer.loop, chatter, 'bob', claimer(peer));
}

const outcome = (p: Promise<unknown>) =>
  p.then(
    () => 'accepted',
    (err: Error) => `refused: ${err.message}`,
  );

t.test(
  "two answers at once to a copy behind the store (another instance re-prompted): the first one's claim stops that copy, so no retry claims on it without the seq check or stores its history over the peer's",
  async (t) => {
    const { core, peer, task, calls } = await pausedWithPeer(t, 'two edits');
    const [a, b] = calls.map((c) => c.snapshot.id) as [string, string];
    await peerReprompts(peer, task.id);
    const version = await core.store.loadVersion(task.id);
    t.ok(version!.lastSeq > task.lastSeq, 'the copy here is behind the store');
    // The client answers both cards with "always" at once (two messages): both reach this process.
    const m1 = answer(task, confirmation(a, 'proceed_always'));
    const m2 = answer(task, confirmation(b, 'proceed_always'));
    const r1 = route(core, m1);
    const r2 = route(core, m2);
    const [o1, o2] = await Promise.all([outcome(r1), outcome(r2)]);
    t.ok(await settledWithin(core, task), 'settles');
    t.comment(`outcomes: ${o1} | ${o2}`);
    t.ok(o1 === 'accepted' || o2 === 'accepted', 'one of the answers is accepted');
    const stored = (await core.store.loadTask(task.id))!;
    const history = JSON.stringify(stored.task.history);
    t.ok(
      history.includes('what does this do?'),
      "the stored history keeps the peer's re-prompt message (no stale copy stored its history over it)",
    );
    t.equal(await storedState(core.store, task.id), 'completed');
  },
);

t.test("control: the same two answers one after the other keep the peer's re-prompt message (the retry loads a fresh copy)", async (t) => {
  const { core, peer, task, calls } = await pausedWithPeer(t, 'two edits');
  const [a] = calls.map((c) => c.snapshot.id) as [string, string];
  await peerReprompts(peer, task.id);
  t.equal(await outcome(route(core, answer(task, confirmation(a, 'proceed_always')))), 'accepted');
  const fresh = core.cache.peek(task.id)!;
  t.not(fresh, task, 'the answer ran on a fresh copy');
  t.ok(await settledWithin(core, fresh), 'settles');
  t.ok(JSON.stringify((await core.store.loadTask(task.id))!.task.history).includes('what does this do?'));
  t.equal(await storedState(core.store, task.id), 'completed');
});

t.test(
  'a call re-proposed by the run of an answer (its file changed), then answered on its NEW card: it runs once, the task completes',
  async (t) => {
    const { core, task, calls, runs, fileChanges } = await pausedOnEdit(t);
    const oldId = calls[0].snapshot.id;
    fileChanges();
    t.equal(await outcome(route(core, answer(task, confirmation(oldId, 'proceed_once')))), 'accepted');
    const live = core.cache.peek(task.id) ?? task;
    t.ok(await settledWithin(core, live), 'settles after the re-proposal');
    const again = (await core.cache.get(task.id))!;
    const waiting = again.awaiting();
    t.equal(waiting.length, 1, 'the re-proposed card waits');
    const newId = waiting[0].snapshot.id;
    t.not(newId, oldId);
    t.equal(waiting[0].runner, undefined, 'no runner left on the call');
    t.equal(await outcome(route(core, answer(again, confirmation(newId, 'proceed_once')))), 'accepted');
    t.ok(await settledWithin(core, core.cache.peek(task.id) ?? again), 'settles');
    t.same(
      runs.map(([n]) => n),
      ['sedit'],
      'the edit ran once, on the new card',
    );
    t.equal(await storedState(core.store, task.id), 'completed');
    t.same(
      (await core.store.loadTurn(task.id)).filter((c) => c.phase !== 'done').map((c) => c.id),
      [],
      'nothing stranded',
    );
  },
);

t.test(
  'an answer to a copy behind the store with a text message queued behind it: the answer is applied once more to a fresh copy, and accepted',
  async (t) => {
    const { core, peer, task, calls } = await pausedWithPeer(t, 'edit');
    const id = calls[0].snapshot.id;
    await peerReprompts(peer, task.id);
    // "always" (its claim goes alone, checked at the copy's last seq) and, at once, a text that is no answer.
    const r1 = route(core, answer(task, confirmation(id, 'proceed_always')));
    const r2 = route(core, answer(task, 'and please hurry'));
    const [o1, o2] = await Promise.all([outcome(r1), outcome(r2)]);
    t.comment(`outcomes: ${o1} | ${o2}`);
    const live = core.cache.peek(task.id) ?? task;
    t.ok(await settledWithin(core, live), 'settles');
    t.equal(o1, 'accepted', 'the answer is accepted: the router applies it once more to a fresh copy, as for a lone answer');
    t.equal(await storedState(core.store, task.id), 'completed');
  },
);

t.test(
  'two instances each take a message that is no answer to the same paused task at once: both are re-prompted, neither stores its history over the other, the card still waits once',
  async (t) => {
    const { core, peer, task, calls } = await pausedWithPeer(t, 'edit');
    const id = calls[0].snapshot.id;
    // Both instances hold a copy at the same seq (the peer loads its own now).
    t.ok(await peer.cache.get(task.id), 'the peer holds a copy');
    const here = route(core, answer(task, 'what does this do?'));
    const there = route(peer, answer(task, 'and is it safe?'));
    const [o1, o2] = await Promise.all([outcome(here), outcome(there)]);
    t.comment(`outcomes: ${o1} | ${o2}`);
    t.same([o1, o2], ['accepted', 'accepted'], 'both messages are re-prompted (the one found behind is applied once more to a fresh copy)');
    for (const c of [core, peer]) {
      const live = c.cache.peek(task.id);
      if (live) t.ok(await settledWithin(c, live), 'settles');
    }
    const stored = (await core.store.loadTask(task.id))!;
    const history = JSON.stringify(stored.task.history);
    t.ok(history.includes('what does this do?') && history.includes('and is it safe?'), 'the stored history keeps both messages');
    t.equal(await storedState(core.store, task.id), 'input-required', 'the task still waits for its answer');
    const waiting = (await core.store.loadTurn(task.id)).filter((c) => c.phase === 'awaiting');
    t.same(
      waiting.map((c) => c.id),
      [id],
      'the card waits once, unchanged',
    );
    // The answer, through either instance, runs the call once.
    t.equal(await outcome(route(core, answer(task, confirmation(id, 'proceed_once')))), 'accepted');
    t.ok(await settledWithin(core, core.cache.peek(task.id)!), 'settles');
    t.same(
      core.toolRuns.map(([n]) => n),
      ['edit'],
      'the edit ran once',
    );
    t.equal(peer.toolRuns.length, 0, 'nothing ran on the peer');
    t.equal(await storedState(core.store, task.id), 'completed');
  },
);
