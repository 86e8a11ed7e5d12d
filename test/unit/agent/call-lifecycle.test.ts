/**
 * The tool call's life (call-lifecycle.ts), in process: every move of a call, checked on the
 * committed event log and the audit log, not only on the objects in memory.
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import {
  abandonTurn,
  answerGrants,
  approveCall,
  commandSummary,
  declineCall,
  interruptCall,
  pausePrompt,
  proposeCall,
  requestApproval,
  runCall,
  showCall,
} from '../../../src/agent/runtime/call-lifecycle.js';
import { cancelTask, failTask } from '../../../src/agent/runtime/task-lifecycle.js';
import type { LiveTask, TurnCall } from '../../../src/agent/runtime/live-task.js';
import { ToolFailure } from '../../../src/tools/tool.js';
import type { AnyTool } from '../../../src/tools/tool.js';
import { auditOf, fakeTool, hangingTool, logOf, makeCore, shape, SLASH, startTask, storedState } from '../../support/core.js';
import type { Core } from '../../support/core.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** Opens a model turn of `calls` as the turn loop does: propose all, ask where needed, then show every card. */
async function openTurn(task: LiveTask, calls: Array<[string, Record<string, unknown>]>, approvalTimeoutMs?: number): Promise<TurnCall[]> {
  task.turnNo += 1;
  task.turn = [];
  for (const [i, [name, args]] of calls.entries())
    task.turn.push(await proposeCall(task, { id: `model-${i}`, name, args }, i, task.context.tools));
  for (const call of task.turn) await requestApproval(task, call, approvalTimeoutMs);
  for (const call of task.turn) showCall(task, call);
  await task.flush();
  return task.turn;
}

/** A core with the default fake tools plus `extra`. */
const coreWith = (t: Test, ...extra: AnyTool[]): Promise<Core> => makeCore(t, { extraTools: extra });

const decisions = async (core: Core, task: LiveTask) => (await auditOf(core.store, task.id)).map((a) => a.decision);

t.test('proposing an unknown tool records unknown_tool; running it fails with that error and runs nothing', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  const [call] = await openTurn(task, [['frobnicate', { x: 1 }]]);
  t.equal(call.tool, undefined);
  t.equal(call.phase, 'ready', 'nothing to approve: it fails when run');
  t.match(call.snapshot.error, {
    type: 'unknown_tool',
    message: /^Unknown tool "frobnicate"\. Available tools: look, edit, exec, poke, broken, crash$/,
  });
  await runCall(task, call);
  await task.flush();
  t.same(shape(await logOf(core.store, task.id)), ['task', 'working', 'frobnicate:PENDING', 'frobnicate:EXECUTING', 'frobnicate:FAILED']);
  const failed = (await logOf(core.store, task.id)).at(-1)!;
  t.equal(failed.call.error.type, 'unknown_tool');
  t.match(failed.text, /frobnicate failed: Unknown tool/, 'the reason reaches text-only clients');
  t.same(await decisions(core, task), ['executed', 'failed']);
  t.same(core.toolRuns, [], 'no tool ran');
  t.match(call.response, {
    functionResponse: { id: 'model-0', name: 'frobnicate', response: { error: /Unknown tool/, error_type: 'unknown_tool' } },
  });
});

t.test('proposing with invalid arguments records the validation error; running it fails with that error', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  const [call] = await openTurn(task, [['poke', { bad: true }]]);
  t.equal(call.args, undefined, 'no validated arguments');
  t.same(call.snapshot.error, { message: 'poke: argument "bad" is not allowed', type: 'invalid_args' });
  t.equal(call.phase, 'ready', 'an invalid call is not put to a person');
  t.equal(call.snapshot.confirmation, undefined);
  await runCall(task, call);
  await task.flush();
  const log = await logOf(core.store, task.id);
  t.same(shape(log).slice(2), ['poke:PENDING', 'poke:EXECUTING', 'poke:FAILED']);
  t.equal(log.at(-1)!.call.error.type, 'invalid_args');
  t.same(core.toolRuns, [], 'the tool never ran');
  t.equal((await core.store.loadCall(call.snapshot.id))?.phase, 'done');
});

t.test('a valid proposal keeps the validated arguments and the description; reads never wait', async (t) => {
  const core = await makeCore(t);
  for (const approvalMode of ['DEFAULT', 'AUTO_EDIT', 'YOLO'] as const) {
    const task = await startTask(core, { settings: { approvalMode } });
    const [call] = await openTurn(task, [['look', { path: 'x' }]], 1000);
    t.same(call.args, { path: 'x' });
    t.equal(call.snapshot.description, 'look {"path":"x"}');
    t.equal(call.phase, 'ready', `${approvalMode}: a read runs at once`);
    t.equal(call.expiresAt, undefined, 'a call that does not wait does not expire');
    t.same(await decisions(core, task), [], 'nothing proposed to a person, nothing audited');
  }
});

t.test('DEFAULT: edits, shell commands and other tools wait with a card, the hash of what was shown and an expiry', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  const calls = await openTurn(
    task,
    [
      ['edit', { path: 'a', content: 'A' }],
      ['exec', { command: 'echo hi' }],
      ['poke', {}],
    ],
    60_000,
  );
  t.same(
    calls.map((c) => c.phase),
    ['awaiting', 'awaiting', 'awaiting'],
  );
  const options = (c: TurnCall) => c.snapshot.confirmation?.options.map((o) => o.id);
  t.same(options(calls[0]), ['proceed_once', 'proceed_always', 'modify_with_editor', 'cancel'], 'an editable tool offers modify');
  t.same(options(calls[1]), ['proceed_once', 'proceed_always', 'cancel'], 'a shell tool offers "always" for its roots');
  t.same(options(calls[2]), ['proceed_once', 'proceed_always', 'cancel']);
  for (const c of calls) {
    t.equal(c.expiresAt?.getTime(), c.proposedAt.getTime() + 60_000, 'expires APPROVAL_TIMEOUT after it was proposed');
  }
  const log = await logOf(core.store, task.id);
  t.same(shape(log).slice(2), ['edit:PENDING', 'exec:PENDING', 'poke:PENDING']);
  t.ok(
    log.slice(2).every((e) => e.call.confirmation_request !== undefined),
    'every card carries its confirmation request',
  );
  const sha256 = (card: unknown) => createHash('sha256').update(JSON.stringify(card)).digest('hex');
  t.strictSame(
    calls.map((c) => c.shownHash),
    log.slice(2).map((e) => sha256(e.call)),
    'the hash is of each card as its stream sends it',
  );
  const audit = await auditOf(core.store, task.id);
  t.same(
    audit.map((a) => [a.decision, a.toolCallId, a.shownHash]),
    calls.map((c) => ['proposed', c.snapshot.id, c.shownHash]),
    'each waiting call is audited as proposed, with the hash of its card',
  );
  const stored = await core.store.loadTurn(task.id);
  t.same(
    stored.map((c) => c.phase),
    ['awaiting', 'awaiting', 'awaiting'],
    'the rows are stored before the cards are seen',
  );
  t.same(
    stored.map((c) => c.leaseOwner),
    [undefined, undefined, undefined],
    'a waiting call holds no lease',
  );
});

t.test('YOLO: nothing waits; AUTO_EDIT: edits run, shell and other tools still wait', async (t) => {
  const core = await makeCore(t);
  const yolo = await startTask(core, { settings: { approvalMode: 'YOLO' } });
  const y = await openTurn(yolo, [
    ['edit', { path: 'a', content: 'A' }],
    ['exec', { command: 'rm -rf /' }],
    ['poke', {}],
  ]);
  t.same(
    y.map((c) => c.phase),
    ['ready', 'ready', 'ready'],
  );
  t.ok(
    y.every((c) => c.snapshot.confirmation === undefined && c.shownHash === undefined),
    'no card asks',
  );
  t.same(await decisions(core, yolo), []);
  const stored = await core.store.loadTurn(yolo.id);
  t.ok(
    stored.every((c) => c.phase === 'ready' && c.leaseOwner === core.instanceId && c.leaseUntil !== undefined),
    "a call about to run is stored under this instance's lease",
  );

  const auto = await startTask(core, { settings: { approvalMode: 'AUTO_EDIT' } });
  const a = await openTurn(auto, [
    ['edit', { path: 'a', content: 'A' }],
    ['exec', { command: 'echo hi' }],
    ['poke', {}],
  ]);
  t.same(
    a.map((c) => c.phase),
    ['ready', 'awaiting', 'awaiting'],
  );
  t.same(await decisions(core, auto), ['proposed', 'proposed']);

  const allowed = await startTask(core, { settings: { allowedTools: ['poke', 'exec(echo)'] } });
  const l = await openTurn(allowed, [
    ['poke', {}],
    ['exec', { command: 'echo hi' }],
    ['exec', { command: 'ls' }],
  ]);
  t.same(
    l.map((c) => c.phase),
    ['ready', 'ready', 'awaiting'],
    'allowed_tools: a name, and a shell prefix',
  );
});

t.test('a proposal that cannot be prepared fails the call before anyone is asked', async (t) => {
  const refusing = fakeTool({
    name: 'refuse',
    kind: 'edit',
    propose: async () => {
      throw new ToolFailure({ message: 'old_string not found', type: 'edit_no_match' });
    },
  });
  const buggy = fakeTool({
    name: 'buggy',
    kind: 'edit',
    propose: async () => {
      throw new Error('stat failed');
    },
  });
  const core = await coreWith(t, refusing, buggy);
  const task = await startTask(core);
  const [r, b] = await openTurn(task, [
    ['refuse', {}],
    ['buggy', {}],
  ]);
  t.same(r.snapshot.error, { message: 'old_string not found', type: 'edit_no_match' }, 'a ToolFailure keeps its error');
  t.same(b.snapshot.error, { message: 'Could not prepare buggy: stat failed', type: 'proposal_failed' });
  for (const c of [r, b]) {
    t.equal(c.phase, 'ready');
    t.equal(c.args, undefined, 'it cannot run as proposed');
    t.equal(c.snapshot.confirmation, undefined, 'nobody is asked');
  }
  t.same(await decisions(core, task), [], 'nothing proposed');
  await runCall(task, r);
  await runCall(task, b);
  await task.flush();
  t.same(shape(await logOf(core.store, task.id)).slice(-4), ['refuse:EXECUTING', 'refuse:FAILED', 'buggy:EXECUTING', 'buggy:FAILED']);
  t.same(core.toolRuns, [], 'neither tool ran');
});

t.test('approve once: audited with principal, option and hash; nothing trusted; it runs and succeeds', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  const [call] = await openTurn(task, [['edit', { path: 'a', content: 'A' }]]);
  approveCall(task, call, 'proceed_once', 'alice');
  t.equal(call.phase, 'ready');
  t.equal(call.answer, 'proceed_once');
  t.same([...task.context.trustedTools], [], 'a one-off answer trusts nothing');
  await runCall(task, call);
  await task.flush();
  t.same(shape(await logOf(core.store, task.id)).slice(2), ['edit:PENDING', 'edit:EXECUTING', 'edit:SUCCEEDED']);
  const audit = await auditOf(core.store, task.id);
  t.same(
    audit.map((a) => a.decision),
    ['proposed', 'authorized', 'executed', 'succeeded'],
  );
  t.match(audit[1], { principal: 'alice', optionId: 'proceed_once', shownHash: call.shownHash, toolCallId: call.snapshot.id });
  t.match(audit[2], { optionId: 'proceed_once', shownHash: call.shownHash });
  t.same((await core.store.loadContext(task.context.id))?.trustedTools, []);
});

t.test('approve always: the grant is kept for the context (stored), and covers the next call of that tool', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  const [edit, exec] = await openTurn(task, [
    ['edit', { path: 'a', content: 'A' }],
    ['exec', { command: 'echo hi && ls' }],
  ]);
  approveCall(task, edit, 'proceed_always', undefined, undefined, { grants: await answerGrants(task, edit, 'proceed_always') });
  approveCall(task, exec, 'proceed_always', undefined, undefined, { grants: await answerGrants(task, exec, 'proceed_always') });
  t.same([...task.context.trustedTools].sort(), ['edit', 'exec(echo)', 'exec(ls)'], 'a tool; for shell, each root command');
  await task.flush();
  t.same((await core.store.loadContext(task.context.id))?.trustedTools.sort(), ['edit', 'exec(echo)', 'exec(ls)'], 'grants are stored');
  const again = { ...edit, phase: 'awaiting' as const };
  approveCall(task, again, 'proceed_always', undefined, undefined, { grants: await answerGrants(task, again, 'proceed_always') });
  t.equal(task.context.trustedTools.size, 3, 'a grant already held is not added twice');
  const next = await openTurn(task, [
    ['edit', { path: 'b', content: 'B' }],
    ['exec', { command: 'echo again' }],
    ['exec', { command: 'pwd' }],
  ]);
  t.same(
    next.map((c) => c.phase),
    ['ready', 'ready', 'awaiting'],
    'trusted: the tool, and echo, not pwd',
  );
});

t.test('a run streams live output, then its result replaces it; the model is told the output', async (t) => {
  const live = fakeTool({
    name: 'tail',
    kind: 'read',
    run: async (_args, ctx) => {
      ctx.onLiveOutput?.('line1');
      ctx.onLiveOutput?.('line1'); // unchanged: not published again
      ctx.onLiveOutput?.('line1\nline2');
      return { llmContent: 'line1\nline2', display: { type: 'text', text: 'line1\nline2' } };
    },
  });
  const core = await coreWith(t, live);
  const task = await startTask(core);
  const [call] = await openTurn(task, [['tail', {}]]);
  await runCall(task, call);
  await task.flush();
  const log = (await logOf(core.store, task.id)).slice(2);
  // The stored log keeps a call's latest EXECUTING card only (compaction); the update after
  // 'line1' came within the live-output interval and the result came first, so it was dropped.
  t.same(shape(log), ['tail:PENDING', 'tail:EXECUTING', 'tail:SUCCEEDED']);
  t.same(
    log.map((e) => e.call.live_content),
    [undefined, 'line1', undefined],
    'the latest live_content, and the final card drops it',
  );
  t.same(log.at(-1)!.call.output, { text: 'line1\nline2' });
  t.same(call.response, { functionResponse: { id: 'model-0', name: 'tail', response: { output: 'line1\nline2' } } });
  const stored = await core.store.loadCall(call.snapshot.id);
  t.equal(stored?.phase, 'done');
  t.equal(stored?.snapshot.status, 'SUCCEEDED');
  t.equal(stored?.leaseOwner, undefined, 'a finished call holds no lease');
  t.same(await decisions(core, task), ['executed', 'succeeded']);
});

t.test('a tool error fails the call with its reason; the model gets the reason, its type and the output', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  const [call] = await openTurn(task, [['broken', {}]]);
  await runCall(task, call);
  await task.flush();
  const last = (await logOf(core.store, task.id)).at(-1)!;
  t.equal(last.call.status, 'FAILED');
  t.same(last.call.error, { message: 'disk on fire', type: 'tool_failed' });
  t.equal(last.text, 'broken failed: disk on fire');
  t.same(call.response?.functionResponse?.response, { error: 'disk on fire', error_type: 'tool_failed', output: 'partial output' });
  const audit = await auditOf(core.store, task.id);
  t.same(
    audit.map((a) => a.decision),
    ['executed', 'failed'],
  );
  t.same(audit[1].detail, { error: { message: 'disk on fire', type: 'tool_failed' } });
});

t.test('a tool that throws fails the call tool_crashed; runCall itself never throws', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  const [call] = await openTurn(task, [['crash', {}]]);
  await t.resolves(runCall(task, call));
  await task.flush();
  const last = (await logOf(core.store, task.id)).at(-1)!;
  t.same(last.call.error, { message: 'Tool crash crashed: boom', type: 'tool_crashed' });
  t.same(await decisions(core, task), ['executed', 'failed']);
  t.equal(task.state, 'working', 'the task goes on');
});

t.test('decline, by type: the call is CANCELLED with that type, the model is told, the audit says why', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  const calls = await openTurn(task, [
    ['poke', { n: 1 }],
    ['poke', { n: 2 }],
    ['poke', { n: 3 }],
    ['poke', { n: 4 }],
  ]);
  calls[0].answer = 'cancel';
  declineCall(task, calls[0], { principal: 'alice' });
  declineCall(task, calls[1], { type: 'cancelled', reason: 'The task was canceled.' });
  declineCall(task, calls[2], { type: 'approval_timeout', reason: 'Nobody answered.' });
  declineCall(task, calls[3], { type: 'declined', reason: 'Not now.', principal: 'bob' });
  await task.flush();
  const cancelled = (await logOf(core.store, task.id)).slice(-4);
  t.same(shape(cancelled), ['poke:CANCELLED', 'poke:CANCELLED', 'poke:CANCELLED', 'poke:CANCELLED']);
  t.same(
    cancelled.map((e) => e.call.error),
    [
      { message: 'The user declined this tool call.', type: 'declined' },
      { message: 'The task was canceled.', type: 'cancelled' },
      { message: 'Nobody answered.', type: 'approval_timeout' },
      { message: 'Not now.', type: 'declined' },
    ],
  );
  t.ok(
    cancelled.every((e) => e.call.confirmation_request === undefined),
    'a closed card asks nothing',
  );
  t.same(calls[2].response?.functionResponse?.response, { error: 'Nobody answered. Do not retry it unless the user asks.' });
  const audit = (await auditOf(core.store, task.id)).filter((a) => a.decision !== 'proposed');
  t.same(
    audit.map((a) => [a.decision, a.toolCallId, a.principal, a.optionId]),
    [
      ['declined', calls[0].snapshot.id, 'alice', 'cancel'],
      ['cancelled', calls[1].snapshot.id, undefined, undefined],
      ['expired', calls[2].snapshot.id, undefined, undefined],
      ['declined', calls[3].snapshot.id, 'bob', undefined],
    ],
  );
  t.ok(
    audit.every((a, i) => a.shownHash === calls[i].shownHash),
    'each decision names the card it was about',
  );
  t.same(
    (await core.store.loadTurn(task.id)).map((c) => c.phase),
    ['done', 'done', 'done', 'done'],
  );
  t.equal(task.state, 'working', 'declining a call does not end the task');
});

t.test('interrupt: a call whose process died is FAILED interrupted, naming the lapsed lease; audited', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  const [a, b] = await openTurn(task, [
    ['look', {}],
    ['look', {}],
  ]);
  // Both are still `ready` here: a started one is named so by its caller (the stored phase was executing).
  interruptCall(task, a, 'peer-1', undefined, undefined, true);
  interruptCall(task, b, undefined);
  await task.flush();
  const log = (await logOf(core.store, task.id)).slice(-2);
  t.same(shape(log), ['look:FAILED', 'look:FAILED']);
  t.equal(log[0].call.error.type, 'interrupted');
  t.match(log[0].call.error.message, /^The server stopped while look was running \(lease of peer-1 lapsed\); it may not have finished\.$/);
  t.match(
    log[1].call.error.message,
    /^look never started \(lease of unknown instance lapsed\); it did not run\.$/,
    'a ready call never started',
  );
  const audit = await auditOf(core.store, task.id);
  t.same(
    audit.map((x) => [x.decision, x.detail]),
    [
      ['interrupted', { leaseOwner: 'peer-1' }],
      ['interrupted', {}],
    ],
  );
});

t.test(
  'failTask: waiting calls CANCELLED, running ones FAILED, the turn abandoned, `failed` published once and nothing after',
  async (t) => {
    const { tool: hang, started } = hangingTool('hang');
    const core = await coreWith(t, hang);
    const task = await startTask(core);
    const [done, , running] = await openTurn(task, [
      ['look', {}],
      ['edit', { path: 'a', content: 'A' }],
      ['hang', {}],
    ]);
    await runCall(task, done);
    const run = runCall(task, running);
    await started;
    const historyBefore = task.context.history.length;

    failTask(task, 'the store went away');
    t.ok(task.abort.signal.aborted, 'whatever still runs for it is aborted');
    await run; // the hanging tool answers once aborted: the late result is dropped
    task.publish({ type: 'text', delta: 'too late' });
    failTask(task, 'again');
    await task.flush();

    const log = await logOf(core.store, task.id);
    t.same(shape(log).slice(2), [
      'look:PENDING',
      'edit:PENDING',
      'hang:PENDING',
      'look:EXECUTING',
      'look:SUCCEEDED',
      'hang:EXECUTING',
      'edit:CANCELLED',
      'hang:FAILED',
      'failed!',
    ]);
    const [cancelled, failed, end] = log.slice(-3);
    t.same(cancelled.call.error, { message: 'The task failed before this call finished: the store went away', type: 'cancelled' });
    t.same(failed.call.error, { message: 'The task failed before this call finished: the store went away', type: 'task_failed' });
    t.equal(end.text, 'the store went away', 'the reason is the text');
    t.equal(end.error, 'the store went away', "and the event's error");
    t.equal(log.filter((e) => e.state === 'failed').length, 1, 'failed once; nothing after it');
    t.equal(await storedState(core.store, task.id), 'failed');

    t.equal(task.context.history.length, historyBefore + 1, 'one message closes the turn');
    t.same(
      task.context.history.at(-1)!.parts.map((p) => [p.functionResponse?.id, Object.keys(p.functionResponse?.response ?? {})]),
      [
        ['model-0', ['output']],
        ['model-1', ['error']],
        ['model-2', ['error']],
      ],
      'every function call of the turn has its response, in order',
    );
    t.same(task.turn, [], 'the turn is over');
    t.same((await core.store.loadContext(task.context.id))?.history.at(-1), task.context.history.at(-1), 'the closing message is stored');
    t.same(
      (await auditOf(core.store, task.id)).map((a) => a.decision),
      ['proposed', 'executed', 'succeeded', 'executed', 'cancelled', 'failed'],
    );
    t.equal(task.modelRunning, false);
  },
);

t.test('cancelTask: open calls CANCELLED, `canceled` published, a late result is dropped', async (t) => {
  const { tool: hang, started } = hangingTool('hang');
  const core = await coreWith(t, hang);
  const task = await startTask(core);
  const [waiting, running] = await openTurn(task, [
    ['edit', { path: 'a', content: 'A' }],
    ['hang', {}],
  ]);
  const run = runCall(task, running);
  await started;
  cancelTask(task, 'alice');
  await run;
  await task.flush();
  const log = await logOf(core.store, task.id);
  t.same(shape(log).slice(2), ['edit:PENDING', 'hang:PENDING', 'hang:EXECUTING', 'edit:CANCELLED', 'hang:CANCELLED', 'canceled!']);
  t.match(log.at(-1)!.text, /canceled by the client/);
  t.equal(running.snapshot.status, 'CANCELLED', 'the late success did not overwrite the record');
  t.equal((await core.store.loadCall(running.snapshot.id))?.snapshot.status, 'CANCELLED');
  const audit = await auditOf(core.store, task.id);
  t.same(
    audit.map((a) => [a.decision, a.principal]),
    [
      ['proposed', undefined],
      ['executed', undefined],
      ['cancelled', 'alice'],
      ['cancelled', 'alice'],
    ],
    'no succeeded after the cancel',
  );
  t.equal(waiting.phase, 'done');
  t.equal(await storedState(core.store, task.id), 'canceled');
  t.same(task.context.history.at(-1)?.parts.length, 2, 'the turn is abandoned with a response per call');
});

t.test('a move the table does not allow throws', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  const [ready, waiting] = await openTurn(task, [
    ['look', {}],
    ['edit', { path: 'a', content: 'A' }],
  ]);
  t.throws(() => approveCall(task, ready, 'proceed_once', undefined), { message: /cannot move from ready to ready/ });
  await t.rejects(runCall(task, waiting), { message: /cannot move from awaiting to executing/ });
  await runCall(task, ready);
  t.throws(() => declineCall(task, ready), { message: /cannot move from done to done/ });
  t.throws(() => interruptCall(task, ready, 'x'), { message: /cannot move from done to done/ });
  await t.rejects(runCall(task, ready), { message: /cannot move from done to executing/ });
  t.equal(waiting.phase, 'awaiting', 'a refused move changes nothing');
});

t.test('an "always" answer approved without its grants (judged before the claim) throws, changing nothing', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core);
  const [edit] = await openTurn(task, [['edit', { path: 'a', content: 'A' }]]);
  t.throws(() => approveCall(task, edit, 'proceed_always', undefined), { message: /needs its grants/ });
  t.equal(edit.phase, 'awaiting', 'the call still waits');
  t.equal(task.context.trustedTools.size, 0, 'nothing granted');
  approveCall(task, edit, 'proceed_always', undefined, undefined, { grants: await answerGrants(task, edit, 'proceed_always') });
  t.same([...task.context.trustedTools], ['edit'], 'with them, the grant is kept');
});

t.test("abandonTurn leaves a slash command's own turn (no model) out of the conversation", async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core, { metadata: SLASH('/memory add') });
  await openTurn(task, [['edit', { path: 'a', content: 'A' }]]);
  const before = task.context.history.length;
  abandonTurn(task, 'x');
  t.equal(task.context.history.length, before);
});

t.test('pausePrompt and commandSummary', async (t) => {
  const one = [{ snapshot: { id: 'tc_1', toolName: 'edit', status: 'PENDING' as const, input: {}, description: 'edit a' } }];
  t.equal(
    pausePrompt(one),
    'Waiting for approval of a tool call: edit (tc_1): edit a. Reply "yes" to allow it or "no" to reject it, or send a ToolCallConfirmation.',
  );
  t.match(
    pausePrompt([...one, { snapshot: { ...one[0].snapshot, id: 'tc_2' } }]),
    /^Waiting for approval of 2 tool calls: .*Send a ToolCallConfirmation for each/,
  );
  t.equal(
    commandSummary('/memory add', [
      { id: '1', toolName: 'a', status: 'SUCCEEDED', input: {}, description: 'wrote' },
      { id: '2', toolName: 'b', status: 'CANCELLED', input: {}, error: { message: 'no', type: 'declined' } },
      { id: '3', toolName: 'c', status: 'CANCELLED', input: {}, error: { message: 'x', type: 'approval_timeout' } },
      { id: '4', toolName: 'd', status: 'FAILED', input: {}, error: { message: 'disk', type: 'x' } },
    ]),
    '/memory add: done: wrote; not done (declined): b; not done (cancelled): c; failed: d (disk)',
  );
});
