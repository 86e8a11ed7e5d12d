/**
 * Answers to waiting calls (resume-handler.ts): planResume refuses every malformed or
 * ambiguous answer before anything changes; applyResume claims in the store first, and only
 * a won claim changes the task (approve, decline, run, edits, "always" grants).
 */
import t from 'tap';
import { createHash } from 'node:crypto';
import type { Message } from '@a2a-js/sdk';
import type { LiveTask } from '../../../src/agent/runtime/live-task.js';
import { applyResume, planResume } from '../../../src/agent/requests/resume-handler.js';
import { carriesAnswer, namedCallIds } from '../../../src/agent/wire/wire-decoder.js';
import type { Claimer, ResumePlan } from '../../../src/agent/requests/resume-handler.js';
import type { ClaimTerms, WriteBatch } from '../../../src/agent/task-store.js';
import { Toolbox } from '../../../src/agent/runtime/toolbox.js';
import type { ToolSet } from '../../../src/agent/runtime/toolbox.js';
import {
  answer,
  auditOf,
  FAKE_SCRIPT,
  fakeTool,
  fakeTools,
  fcall,
  logOf,
  makeCore,
  runTurn,
  say,
  settled,
  shape,
  startTask,
  storedState,
} from '../../support/core.js';
import type { Core, RunLog } from '../../support/core.js';
import { confirmation, decoded, pausedOn, planFor } from '../../support/resume.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const paused = pausedOn;
const plan = planFor;
const conf = confirmation;

/**
 * This process's claim terms, as the router gives them; what each claim statement (the claim and
 * the writes that follow it) claimed is recorded in `claimed`.
 */
function storeClaim(core: Core, _task: LiveTask, claimed: string[][] = []): Claimer {
  onClaim(core, (terms) => claimed.push(terms.claims.map((c) => c.id)));
  // A claim that goes alone (an "always" grant, or another call runs in the copy).
  const store = core.store;
  const claimCalls = store.claimCalls.bind(store);
  store.claimCalls = async (taskId, claims, ...rest) => {
    claimed.push(claims.map((c) => c.id));
    return claimCalls(taskId, claims, ...rest);
  };
  return { owner: core.instanceId, leaseUntil: () => new Date(Date.now() + core.leaseMs), checkSeq: false };
}

/** Calls `seen` with each claim statement the store receives, before the store decides it. */
function onClaim(core: Core, seen: (terms: ClaimTerms, batch: WriteBatch) => void): void {
  const store = core.store;
  const claimAndCommit = store.claimAndCommit.bind(store);
  store.claimAndCommit = async (terms, batch) => {
    seen(terms, batch);
    return claimAndCommit(terms, batch);
  };
}

/** Applies an answer the way the router does, then waits for the runs it started. */
async function resume(core: Core, task: LiveTask, message: Message, principal?: string, claimed?: string[][]): Promise<void> {
  await applyResume(task, plan(core, task, message), core.loop, message, principal, storeClaim(core, task, claimed));
  await settled(core, task);
}

t.test('planResume refuses, with the field and the reason, and changes nothing', async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'two edits');
  const [a, b] = calls.map((c) => c.snapshot.id) as [string, string];
  const logBefore = (await logOf(core.store, task.id)).length;
  const cases: Array<[string, Message, RegExp]> = [
    [
      'an unknown tool_call_id',
      answer(task, conf('tc_nope', 'proceed_once')),
      new RegExp(`^message\\.parts\\[0\\]\\.data\\.tool_call_id: task ${task.id} has no tool call "tc_nope" \\(waiting: ${a}, ${b}\\)$`),
    ],
    [
      'an option that was not offered',
      answer(task, conf(a, 'proceed_always_server')),
      /selected_option_id: "proceed_always_server" was not offered for .* \(offered: proceed_once, proceed_always, modify_with_editor, cancel\)/,
    ],
    [
      'modify_with_editor without content',
      answer(task, conf(a, 'modify_with_editor')),
      /file_details\.new_content: modify_with_editor needs the edited content/,
    ],
    [
      'content without modify_with_editor',
      answer(task, conf(a, 'proceed_once', { file_details: { new_content: 'x' } })),
      /file_details: modified content is only accepted with selected_option_id "modify_with_editor"/,
    ],
    [
      'the same id twice',
      answer(task, conf(a, 'proceed_once'), conf(a, 'cancel')),
      new RegExp(`^message\\.parts\\[1\\]\\.data\\.tool_call_id: ${a} is answered twice in this message$`),
    ],
    [
      'confirmations and a yes/no together',
      answer(task, conf(a, 'proceed_once'), { confirmation: 'yes' }),
      /^message\.parts\[1\]\.data: send either ToolCallConfirmations or a yes\/no answer, not both$/,
    ],
    [
      'a yes/no before the confirmations',
      answer(task, { confirmation: 'no' }, conf(b, 'cancel')),
      /^message\.parts\[0\]\.data: send either/,
    ],
    [
      '{"confirmation":"maybe"}',
      answer(task, { confirmation: 'maybe' }),
      /^message\.parts\[0\]\.data\.confirmation must be "yes" or "no"$/,
    ],
    ['{"confirmation":true}', answer(task, { confirmation: true }), /confirmation must be "yes" or "no"/],
    [
      'a malformed confirmation',
      answer(task, { tool_call_id: 42, selected_option_id: 'proceed_once' }),
      /tool_call_id must be a non-empty string/,
    ],
    ['an unknown field', answer(task, conf(a, 'proceed_once', { approved: true })), /approved is not a field of ToolCallConfirmation/],
  ];
  for (const [name, message, expected] of cases) {
    t.throws(() => plan(core, task, message), { message: expected }, name);
  }
  t.equal(task.awaiting().length, 2, 'both calls still wait');
  t.equal((await logOf(core.store, task.id)).length, logBefore, 'nothing was published');
  t.same(
    (await core.store.loadTurn(task.id)).map((c) => c.phase),
    ['awaiting', 'awaiting'],
  );
});

t.test('a yes/no answer: exact tokens only, and only when exactly one call waits', async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'edit');
  const id = calls[0].snapshot.id;
  const decided = (message: Message) => {
    const p = plan(core, task, message);
    return p.kind === 'decisions' ? p.decisions.map((d) => [d.call.snapshot.id, d.option]) : p.reason;
  };
  t.same(decided(answer(task, 'yes')), [[id, 'proceed_once']], '"yes" allows once');
  t.same(decided(answer(task, ' no ')), [[id, 'cancel']], '" no " rejects (surrounding space ignored)');
  t.same(decided(answer(task, { confirmation: 'yes' })), [[id, 'proceed_once']], '{"confirmation":"yes"}');
  t.same(decided(answer(task, { confirmation: ' no ' })), [[id, 'cancel']]);
  t.same(decided(answer(task, 'YES')), 'That reply is not an answer to the waiting tool call.', '"YES" is not the token');
  t.same(decided(answer(task, 'yes please')), 'That reply is not an answer to the waiting tool call.', '"yes please" is not the token');
  t.same(decided(answer(task, 'y')), 'That reply is not an answer to the waiting tool call.');
  t.same(decided(answer(task, conf(id, 'proceed_once'), 'no')), [[id, 'proceed_once']], 'text beside a confirmation is not an answer');

  const two = await paused(core, 'two edits');
  const p = plan(core, two.task, answer(two.task, 'yes'));
  t.same(p, { kind: 'reprompt', reason: '"yes" is ambiguous: 2 tool calls are waiting.' });
  t.same(plan(core, two.task, answer(two.task, { confirmation: 'no' })), {
    kind: 'reprompt',
    reason: '"no" is ambiguous: 2 tool calls are waiting.',
  });
});

t.test('an earlier call, or one that needed no answer, is refused as already answered', async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'edit');
  await resume(core, task, answer(task, 'yes'));
  t.equal(task.state, 'completed');
  const done = calls[0];
  t.throws(
    () => planResume(task, decoded(core, answer(task, conf(done.snapshot.id, 'proceed_once'))), new Map([[done.snapshot.id, done]])),
    {
      message: new RegExp(`tool_call_id: tool call ${done.snapshot.id} was already answered \\(proceed_once; status SUCCEEDED\\)`),
    },
  );
  const read = await startTask(core, { text: 'look' });
  await runTurn(core, read);
  const ran = (await core.store.loadTurn(read.id))[0];
  const asKnown = core.cache.fromStored(ran, read.context);
  t.throws(() => planResume(read, decoded(core, answer(read, conf(ran.id, 'proceed_once'))), new Map([[ran.id, asKnown]])), {
    message: /needed no answer \(it ran without asking; status SUCCEEDED\)/,
  });
});

t.test('carriesAnswer and namedCallIds', async (t) => {
  const core = await makeCore(t);
  const { task } = await paused(core, 'edit');
  const carries = (m: Message) => carriesAnswer(decoded(core, m));
  t.ok(carries(answer(task, { confirmation: 'yes' })));
  t.ok(carries(answer(task, { toolCallId: 'x' })));
  t.notOk(carries(answer(task, 'yes')), 'a text token is not a data answer');
  t.notOk(carries(answer(task, { other: 1 })));
  t.strictSame(
    namedCallIds(decoded(core, answer(task, conf('a', 'cancel'), { tool_call_id: 7 }, conf('b', 'proceed_once')))),
    ['a', 'b'],
    'well-formed ones only',
  );
});

t.test('a re-prompt re-sends the waiting cards and the pause with the reason; nothing is claimed', async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'edit');
  const before = (await logOf(core.store, task.id)).length;
  const claimed: string[][] = [];
  const message = answer(task, 'what does it do?');
  await resume(core, task, message, undefined, claimed);
  const log = await logOf(core.store, task.id, before);
  t.same(shape(log), ['edit:PENDING', 'input-required!']);
  t.equal(log[0].call.tool_call_id, calls[0].snapshot.id);
  t.ok(log[0].call.confirmation_request, 'the card still asks');
  t.match(log[1].text, /^That reply is not an answer to the waiting tool call\. Waiting for approval of a tool call: edit/);
  t.same(claimed, [], 'no claim');
  t.equal(calls[0].phase, 'awaiting');
  t.equal(task.task.history.at(-2)?.messageId, message.messageId, 'the message is kept in the task history');
  t.equal(await storedState(core.store, task.id), 'input-required');
});

t.test('a lost claim: the answer is refused and nothing changes', async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'edit');
  const call = calls[0];
  const before0 = (await core.store.loadTask(task.id))?.lastSeq;
  const peer = core.store.connect(); // another process answered first
  t.teardown(() => peer.close());
  t.same(await peer.claimCalls(task.id, [{ id: call.snapshot.id, answer: 'cancel' }], 'peer', new Date(Date.now() + 30_000)), {
    ok: true,
    lastSeq: before0,
  });

  const before = { log: (await logOf(core.store, task.id)).length, history: task.task.history.length, args: structuredClone(call.args) };
  const message = answer(task, conf(call.snapshot.id, 'modify_with_editor', { file_details: { new_content: 'LOSER' } }));
  await t.rejects(applyResume(task, plan(core, task, message), core.loop, message, 'alice', storeClaim(core, task)), {
    message: `tool call ${call.snapshot.id} was already answered (another answer arrived first)`,
  });
  await settled(core, task);
  // The copy applied the answer while its claim was decided (the claim carries what that wrote):
  // lost, nothing of it was stored, and the copy stops; the next request reads the task afresh.
  t.ok(task.halted, 'the copy that applied the losing answer stops');
  t.equal((await core.store.loadCall(call.snapshot.id))?.args?.content, before.args?.content, 'the losing edit was not stored');
  t.equal((await core.store.loadTask(task.id))?.task.history.length, before.history, 'the message was not recorded');
  t.equal((await logOf(core.store, task.id)).length, before.log, 'nothing was published');
  t.same(
    (await auditOf(core.store, task.id)).map((a) => a.decision),
    ['proposed'],
    'nothing authorized',
  );
  t.same(core.toolRuns, []);
  const stored = await core.store.loadCall(call.snapshot.id);
  t.match(stored, { phase: 'ready', answer: 'cancel', leaseOwner: 'peer' }, "the winner's claim stands");
});

t.test('a won claim: approve once runs the call and the model goes on', async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'edit');
  const before = (await logOf(core.store, task.id)).length;
  const message = answer(task, conf(calls[0].snapshot.id, 'proceed_once'));
  await resume(core, task, message, 'alice');
  t.same(shape(await logOf(core.store, task.id, before)), ['edit:EXECUTING', 'edit:SUCCEEDED', 'text:Edited.', 'completed!']);
  t.same(
    (await auditOf(core.store, task.id)).map((a) => [a.decision, a.principal, a.optionId]),
    [
      ['proposed', undefined, undefined],
      ['authorized', 'alice', 'proceed_once'],
      ['executed', undefined, 'proceed_once'],
      ['succeeded', undefined, undefined],
    ],
  );
  t.ok(
    task.task.history.some((m) => m.messageId === message.messageId),
    'the answer is in the task history',
  );
  t.equal(await storedState(core.store, task.id), 'completed');
});

t.test('a won claim: "no" declines the call, the model is told and goes on', async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'edit');
  const before = (await logOf(core.store, task.id)).length;
  await resume(core, task, answer(task, 'no'), 'bob');
  t.same(shape(await logOf(core.store, task.id, before)), ['edit:CANCELLED', 'text:Edited.', 'completed!']);
  t.same(core.toolRuns, [], 'the declined call did not run');
  const audit = await auditOf(core.store, task.id);
  t.match(audit.at(-1), {
    decision: 'declined',
    principal: 'bob',
    optionId: 'cancel',
    toolCallId: calls[0].snapshot.id,
    shownHash: calls[0].shownHash,
  });
  const history = (await core.store.loadContext(task.context.id))!.history;
  t.match(history[2].parts[0].functionResponse?.response, { error: /declined this tool call\. Do not retry it unless the user asks\./ });
});

t.test('one message answering two calls differently', async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'two edits');
  const [a, b] = calls.map((c) => c.snapshot.id) as [string, string];
  const claimed: string[][] = [];
  await resume(core, task, answer(task, conf(b, 'cancel'), conf(a, 'proceed_once')), undefined, claimed);
  t.same(claimed, [[b, a]], 'one claim for both, all or none');
  t.same(core.toolRuns, [['edit', { path: 'a', content: 'A' }]]);
  t.equal(task.state, 'completed');
});

t.test('an "always" answer covers the waiting siblings it grants, and only those', async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'two edits');
  const [a, b] = calls.map((c) => c.snapshot.id) as [string, string];
  const claimed: string[][] = [];
  await resume(core, task, answer(task, conf(a, 'proceed_always')), 'alice', claimed);
  t.same(claimed, [[a, b]], 'the covered sibling is claimed with the answered call');
  t.same(
    core.toolRuns.map(([, args]) => args.path),
    ['a', 'b'],
    'both ran',
  );
  t.same(
    (await auditOf(core.store, task.id)).filter((x) => x.decision === 'authorized').map((x) => [x.toolCallId, x.optionId, x.principal]),
    [
      [a, 'proceed_always', 'alice'],
      [b, 'proceed_always', 'alice'],
    ],
  );
  t.same((await core.store.loadContext(task.context.id))?.trustedTools, ['edit']);
  t.equal(task.state, 'completed');
  t.equal(calls[0].approvedCard, calls[0].shownHash, 'the answered call runs as its card showed');
  t.equal(calls[1].approvedCard, undefined, 'the covered sibling was judged again when it ran (no answer named its card)');

  const mixed = await paused(core, 'edit and exec');
  const [edit, exec] = mixed.calls.map((c) => c.snapshot.id) as [string, string];
  const claimedMixed: string[][] = [];
  await resume(core, mixed.task, answer(mixed.task, conf(edit, 'proceed_always')), undefined, claimedMixed);
  t.same(claimedMixed, [[edit]], 'a grant for edit does not cover exec');
  t.equal(mixed.task.state, 'input-required', 'exec still waits');
  t.same(
    mixed.task.awaiting().map((c) => c.snapshot.id),
    [exec],
  );
});

t.test('an answer read on a copy that shows an earlier card of the call is refused: the call was re-proposed meanwhile', async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'edit');
  const id = calls[0].snapshot.id;
  // Elsewhere: the call was approved, judged again before it ran, and asks again with a new card.
  const until = new Date(Date.now() + core.leaseMs);
  t.same(await core.store.claimCalls(task.id, [{ id, answer: 'proceed_once' }], 'elsewhere', until), { ok: true, lastSeq: task.lastSeq });
  const stored = (await core.store.loadCall(id))!;
  t.ok(await core.store.reopenCall({ ...stored, shownHash: 'f'.repeat(64) }, 'elsewhere'));
  await t.rejects(applyResume(task, plan(core, task, answer(task, 'yes')), core.loop, answer(task, 'yes'), 'bob', storeClaim(core, task)), {
    message: new RegExp(`tool call ${id} was already answered`),
  });
  t.same(core.toolRuns, [], 'the call did not run on an answer to a card that is no longer shown');
  t.match(await core.store.loadCall(id), { phase: 'awaiting', shownHash: 'f'.repeat(64) }, 'it still waits for an answer to its new card');
});

t.test('modify_with_editor: the claim carries the edit and its EXECUTING card, and the edit runs only once the claim is won', async (t) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'edit');
  const call = calls[0];
  const message = answer(task, conf(call.snapshot.id, 'modify_with_editor', { file_details: { new_content: 'EDITED' } }));
  const p: ResumePlan = plan(core, task, message);
  t.equal(call.args?.content, 'A', 'planning changes nothing');
  let ranAtClaim: unknown;
  let statements = 0;
  onClaim(core, (terms, batch) => {
    statements++;
    ranAtClaim = structuredClone(core.toolRuns);
    t.match(
      terms.claims,
      [{ id: call.snapshot.id, answer: 'modify_with_editor', args: { content: 'EDITED' }, snapshot: { input: { content: 'EDITED' } } }],
      'the claim carries the edit',
    );
    t.equal(terms.claims.length, 1, 'one claim');
    const cards = batch.events.map((e) => JSON.stringify(e.response));
    t.ok(
      cards.some((c) => c.includes('EXECUTING') && c.includes(call.snapshot.id)),
      "the claim's statement carries the call's EXECUTING card",
    );
    t.match(batch.audit, [{ decision: 'authorized' }, { decision: 'executed' }], 'and its audit');
  });
  await applyResume(task, p, core.loop, message, undefined, storeClaim(core, task));
  await settled(core, task);
  t.equal(statements, 1, 'one claim statement');
  t.same(ranAtClaim, [], 'nothing ran before the claim was decided');
  t.same(core.toolRuns, [['edit', { path: 'a', content: 'EDITED' }]], 'the edit ran');
  t.equal(call.snapshot.input.content, 'EDITED', 'the card shows what ran');
  t.equal((await core.store.loadCall(call.snapshot.id))?.args?.content, 'EDITED');
  // The record ties the answer to the card shown and to the content the person wrote instead.
  const authorized = (await auditOf(core.store, task.id)).find((a) => a.decision === 'authorized');
  t.equal(authorized?.optionId, 'modify_with_editor');
  t.equal(
    (authorized?.detail as { editedInputHash?: string } | undefined)?.editedInputHash,
    createHash('sha256')
      .update(JSON.stringify({ path: 'a', content: 'EDITED' }))
      .digest('hex'),
    'the audit names what ran',
  );
});

t.test('a re-prompt on a stale copy must not reopen a call another process claimed', async (t: Test) => {
  const core = await makeCore(t);
  const { task, calls } = await paused(core, 'edit');
  const id = calls[0].snapshot.id;
  const peer = core.store.connect();
  t.teardown(() => peer.close());
  const lease = () => new Date(Date.now() + 30_000);
  const before = { log: await logOf(core.store, task.id), history: task.task.history.length };
  t.match(
    await peer.claimCalls(task.id, [{ id, answer: 'proceed_once' }], 'peer', lease()),
    { ok: true },
    'another process claimed the call',
  );
  // This process still holds the task as it was before the claim, and gets a message that is no answer.
  await t.rejects(
    resume(core, task, answer(task, 'hmm?')),
    { message: /changed while this message was applied/ },
    'refused like a message to a working task',
  );
  t.same(await logOf(core.store, task.id), before.log, 'no card re-sent as waiting, no pause logged');
  t.equal(task.task.history.length, before.history, 'the message was not recorded');
  t.equal(task.state, 'input-required', 'the copy is unchanged');
  t.equal((await core.store.loadCall(id))?.phase, 'ready', 'the claimed row stays claimed');
  t.same(
    await core.store.claimCalls(task.id, [{ id, answer: 'proceed_once' }], core.instanceId, lease()),
    { ok: false, notAwaiting: [id] },
    'a second claim of the same call loses',
  );
});

t.test(
  'a copy loaded after another process claimed a call is not busy here: a refused message leaves nothing in memory',
  async (t: Test) => {
    const core = await makeCore(t);
    const { task, calls } = await paused(core, 'edit');
    const id = calls[0].snapshot.id;
    core.cache.release(task);
    t.equal(core.cache.peek(task.id), undefined, 'paused: not in memory');
    const peer = core.store.connect();
    t.teardown(() => peer.close());
    t.match(await peer.claimCalls(task.id, [{ id, answer: 'proceed_once' }], 'peer', new Date(Date.now() + 30_000)), { ok: true });
    // Loaded between the peer's claim and its `working` event: stored input-required, the call claimed.
    const copy = await core.cache.get(task.id);
    if (!copy) throw new Error('the task did not load');
    t.equal(copy.turn[0]?.phase, 'ready');
    t.ok(copy.idle, "the peer's claimed call does not make this copy busy");
    t.same(core.cache.busyIds(), [], 'so this process does not lease the task');
    core.cache.release(copy);
    t.equal(core.cache.peek(task.id), undefined, 'released: tasks/get here reads the store, not a stale copy');
  },
);

/**
 * A core whose model calls `srv__poke`, a tool served by an MCP server (it waits for a person),
 * and whose toolbox records, in `order` beside each claim statement, every time it resolves the
 * context's tools: re-resolving is what may start an MCP server.
 */
async function mcpCore(t: Test, order: string[]): Promise<Core> {
  const runs: RunLog = [];
  const poke = { ...fakeTool({ name: 'srv__poke', kind: 'other' }, runs), mcp: { serverName: 'srv', toolName: 'poke' } };
  class RecordingToolbox extends Toolbox {
    override async forContext(ctx: Parameters<Toolbox['forContext']>[0]): Promise<ToolSet> {
      order.push('tools');
      return super.forContext(ctx);
    }
  }
  const logger = { warn() {} };
  const toolbox = new RecordingToolbox({ builtin: [...fakeTools(runs), poke], defaultCwd: process.cwd(), logger });
  const script = { ...FAKE_SCRIPT, scripts: [{ when: '^poke', steps: [{ chunks: [[fcall('srv__poke', {})]] }, say('Poked.')] }] };
  const core = await makeCore(t, { toolbox, script });
  core.toolRuns = runs;
  onClaim(core, () => order.push('claim'));
  return core;
}

t.test("an MCP call's tools are re-resolved (which may start its server) only once the answer's claim is won", async (t) => {
  await t.test('won: the claim is decided first, then the tools, then the call runs', async (t) => {
    const order: string[] = [];
    const core = await mcpCore(t, order);
    const { task, calls } = await paused(core, 'poke');
    order.length = 0;
    const message = answer(task, conf(calls[0].snapshot.id, 'proceed_once'));
    await applyResume(task, plan(core, task, message), core.loop, message, 'alice', storeClaim(core, task));
    await settled(core, task);
    t.same(order.slice(0, 2), ['claim', 'tools'], 'the claim went before the tools were resolved again');
    t.same(core.toolRuns, [['srv__poke', {}]]);
    t.equal(await storedState(core.store, task.id), 'completed');
  });

  await t.test('lost: nothing is resolved, nothing runs', async (t) => {
    const order: string[] = [];
    const core = await mcpCore(t, order);
    const { task, calls } = await paused(core, 'poke');
    const id = calls[0].snapshot.id;
    order.length = 0;
    t.match(await core.store.claimCalls(task.id, [{ id, answer: 'cancel' }], 'peer', new Date(Date.now() + 30_000)), { ok: true });
    const message = answer(task, conf(id, 'proceed_once'));
    await t.rejects(applyResume(task, plan(core, task, message), core.loop, message, 'alice', storeClaim(core, task)), {
      message: `tool call ${id} was already answered (another answer arrived first)`,
    });
    await settled(core, task);
    t.same(order, ['claim'], "the losing answer's claim, and no tool resolution after it");
    t.same(core.toolRuns, []);
  });
});
