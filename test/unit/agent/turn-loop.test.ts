/**
 * The model loop (turn-loop.ts) in process: streaming, calls that run at once, pauses, the
 * turn settling and the model going on, model errors and retries, the step guard, slash
 * commands' direct turns, and errors inside a detached run, which fail only their task.
 */
import t from 'tap';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { answerGrants, approveCall } from '../../../src/agent/runtime/call-lifecycle.js';
import { cancelTask, failTask } from '../../../src/agent/runtime/task-lifecycle.js';
import type { LiveTask } from '../../../src/agent/runtime/live-task.js';
import { ModelError } from '../../../src/agent/model/model-client.js';
import type { ModelChunk } from '../../../src/agent/model/model-client.js';
import type { ContextSettings } from '../../../src/agent/task-store.js';
import { Toolbox } from '../../../src/agent/runtime/toolbox.js';
import type { ToolSet } from '../../../src/agent/runtime/toolbox.js';
import { splitThought } from '../../../src/agent/runtime/turn-loop.js';
import { MemoryTaskStore } from '../../../src/store/memory-store.js';
import {
  fakeTools,
  FnModel,
  gate,
  logOf,
  makeCore,
  runTurn,
  settled,
  shape,
  SLASH,
  startTask,
  storedState,
  until,
  watchRejections,
} from '../../support/core.js';
import type { Core } from '../../support/core.js';
import { DatabaseBlip, faultyStore } from '../../support/faulty-store.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

/** A run's failure as its task shows it: a bug, or (a DatabaseBlip) the store out of reach, which the client may retry. */
const INTERNAL =
  /^(?:Internal error|The task store became unavailable) while (.+) \(reference ([0-9a-f]{8}) in the server log\); the task cannot go on\.(?: Send the message again in a moment\.)?$/;

/** Approves every waiting call as the resume handler does (claim in the store first), then runs them. */
async function approveAll(core: Core, task: LiveTask, option = 'proceed_once'): Promise<void> {
  const waiting = task.awaiting();
  // As the resume handler does: what an answer grants is judged before the claim.
  const grants = new Map(await Promise.all(waiting.map(async (c) => [c, await answerGrants(task, c, option)] as const)));
  const claimed = await core.store.claimCalls(
    task.id,
    waiting.map((c) => ({ id: c.snapshot.id, answer: option })),
    core.instanceId,
    new Date(Date.now() + core.leaseMs),
  );
  if (!claimed.ok) throw new Error('claim lost');
  task.setState('working');
  task.holdWrites(); // as startApproved: the answers commit with the first EXECUTING card
  for (const call of waiting) approveCall(task, call, option, undefined, undefined, { grants: grants.get(call) ?? [] });
  core.loop.runApproved(task, waiting);
  await settled(core, task);
}

/** The last event's text, for failed tasks. */
const lastText = async (core: Core, task: LiveTask) => (await logOf(core.store, task.id)).at(-1)!.text;

async function* chunks(...texts: string[]): AsyncGenerator<ModelChunk> {
  for (const text of texts) yield { parts: [{ text }] };
}

/** A model answer that fails with `err` before any part. */
async function* fails(err: Error): AsyncGenerator<ModelChunk> {
  await Promise.resolve();
  if (err) throw err;
  yield { parts: [] };
}

t.test('text and thoughts stream as they come; a turn without calls completes', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core, { text: 'think about it' });
  await runTurn(core, task);
  const log = await logOf(core.store, task.id);
  t.same(shape(log), ['task', 'working', 'thought', 'text:Hel', 'text:lo', 'completed!']);
  t.same(log[2].thought, { subject: 'Planning', description: 'the answer' }, 'a "**Subject** text" thought is split');
  t.equal(log[2].kind, 'THOUGHT');
  t.ok(
    log.slice(1).every((e) => e.call === undefined),
    'no tool calls',
  );
  const stored = (await core.store.loadTask(task.id))!.task;
  const texts = stored.history.map((m) => m.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join(''));
  t.same(texts, ['think about it', 'Hello'], 'the task history keeps the user message and the answer, deltas folded into one message');
  const history = (await core.store.loadContext(task.context.id))!.history;
  t.same(history, [
    { role: 'user', parts: [{ text: 'think about it' }] },
    { role: 'model', parts: [{ text: '**Planning** the answer', thought: true }, { text: 'Hel' }, { text: 'lo' }] },
  ]);
  t.equal(task.modelRunning, false);
  t.ok(task.idle);
});

t.test('splitThought', async (t) => {
  t.same(splitThought('**Subject** more\nlines'), { subject: 'Subject', description: 'more\nlines' });
  t.same(splitThought('  plain thought '), { subject: '', description: 'plain thought' });
});

t.test('reads run at once, and the model goes on with their results', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core, { text: 'look around' });
  await runTurn(core, task);
  const log = await logOf(core.store, task.id);
  t.same(shape(log), ['task', 'working', 'look:PENDING', 'look:EXECUTING', 'look:SUCCEEDED', 'text:Looked.', 'completed!']);
  t.equal(log[2].call.confirmation_request, undefined, 'a read is not put to a person');
  t.same(core.toolRuns, [['look', { path: 'a' }]]);
  const history = (await core.store.loadContext(task.context.id))!.history;
  t.same(
    history.map((c) => [c.role, c.parts.map((p) => Object.keys(p).join('+')).join(',')]),
    [
      ['user', 'text'],
      ['model', 'functionCall'],
      ['user', 'functionResponse'],
      ['model', 'text'],
    ],
    'each function call is followed by its response in the conversation',
  );
  t.same(history[2].parts[0].functionResponse?.response, { output: 'ran look' });
  t.equal(await core.store.closeTurn(task.id, 0), false, 'the finished turn was closed by the run');
});

t.test('a call that needs approval pauses the task input-required; the answer settles the turn and the model completes', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core, { text: 'edit the file' });
  await runTurn(core, task);
  const paused = await logOf(core.store, task.id);
  t.same(shape(paused), ['task', 'working', 'edit:PENDING', 'input-required!']);
  t.match(paused.at(-1)!.text, /^Waiting for approval of a tool call: edit \(tc_[0-9a-f-]+\): edit .*Reply "yes" to allow it/);
  t.same(core.toolRuns, [], 'nothing ran');
  t.equal(await storedState(core.store, task.id), 'input-required');
  t.ok(task.idle, 'nothing runs while it waits');

  await approveAll(core, task);
  const rest = await logOf(core.store, task.id, paused.length);
  t.same(shape(rest), ['edit:EXECUTING', 'edit:SUCCEEDED', 'text:Edited.', 'completed!']);
  t.same(core.toolRuns, [['edit', { path: 'a', content: 'A' }]]);
  t.equal(await core.store.closeTurn(task.id, 0), false, 'the turn was closed once, by this run');
  await core.loop.settle(task);
  await settled(core, task);
  t.equal((await logOf(core.store, task.id)).length, paused.length + 4, 'settling a finished task does nothing');
});

t.test('two calls: the turn goes on only when the last one has a result', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core, { text: 'two edits' });
  await runTurn(core, task);
  const [a, b] = task.awaiting();
  const claim = async (id: string) =>
    core.store.claimCalls(task.id, [{ id, answer: 'proceed_once' }], core.instanceId, new Date(Date.now() + 30_000));
  await claim(b.snapshot.id);
  task.setState('working');
  approveCall(task, b, 'proceed_once', undefined);
  core.loop.runApproved(task, [b]);
  await settled(core, task);
  t.same(
    shape(await logOf(core.store, task.id)).slice(-3),
    ['edit:EXECUTING', 'edit:SUCCEEDED', 'input-required!'],
    'pauses again for the other',
  );
  t.match((await logOf(core.store, task.id)).at(-1)!.text, new RegExp(`${a.snapshot.id}`));
  await claim(a.snapshot.id);
  task.setState('working');
  approveCall(task, a, 'proceed_once', undefined);
  core.loop.runApproved(task, [a]);
  await settled(core, task);
  t.same(shape(await logOf(core.store, task.id)).slice(-4), ['edit:EXECUTING', 'edit:SUCCEEDED', 'text:Both done.', 'completed!']);
  const history = (await core.store.loadContext(task.context.id))!.history;
  t.same(
    history[2].parts.map((p) => p.functionResponse?.name),
    ['edit', 'edit'],
    "both responses go to the model in one message, in the model's order",
  );
});

t.test('a turn another process closed first is not continued here', async (t) => {
  const model = new FnModel(async function* () {
    yield { parts: [{ functionCall: { name: 'look', args: {} } }] };
  });
  const core = await makeCore(t, { model });
  const task = await startTask(core);
  // (A real peer closes a turn only once every call of it is done in the store, and this call's
  // result is in the very batch that closes the turn here: a peer cannot get there first.)
  t.equal(await core.store.connect().closeTurn(task.id, 0), true, 'a peer closed turn 0');
  await runTurn(core, task);
  t.same(
    shape(await logOf(core.store, task.id)).slice(2),
    ['look:PENDING', 'look:EXECUTING'],
    'the result and the close are refused together',
  );
  t.equal(model.calls, 1, 'the model was not called again here');
  t.ok(task.isBehind, 'this copy stops: the store is ahead of it');
  t.notOk(
    (await core.store.loadContext(task.context.id))!.history.some((h) => h.parts.some((p) => p.functionResponse)),
    'no response appended',
  );
});

t.test('settling a turn whose calls all ran here reads nothing: results, close and the next model turn commit together', async (t) => {
  const core = await makeCore(t);
  const task = await startTask(core, { text: 'look first' });
  const reads: string[] = [];
  const settleTurn = core.store.settleTurn.bind(core.store);
  core.store.settleTurn = (...args) => (reads.push('settleTurn'), settleTurn(...args));
  const commits: number[] = [];
  const commit = core.store.commit.bind(core.store);
  core.store.commit = (batch) => (commits.push(batch.closeTurns?.length ?? 0), commit(batch));
  await runTurn(core, task);
  t.same(reads, [], 'no turn read');
  t.equal(await storedState(core.store, task.id), 'completed');
  t.ok(commits.includes(1), 'one commit closed the turn');
  t.equal(await core.store.connect().closeTurn(task.id, 0), false, 'and it is closed in the store');
});

t.test('model errors', async (t) => {
  t.test('a retryable error before anything streamed is retried', async (t) => {
    const model = new FnModel(async function* (_req, n) {
      if (n === 1) throw new ModelError('overloaded', true, 503);
      yield* chunks('fine');
    });
    const core = await makeCore(t, { model });
    const task = await startTask(core);
    await runTurn(core, task);
    t.same(shape(await logOf(core.store, task.id)), ['task', 'working', 'text:fine', 'completed!']);
    t.equal(model.calls, 2);
    t.match(core.logger.warnings(), [{ obj: { taskId: task.id, attempt: 1, err: 'overloaded' }, msg: 'model call failed; retrying' }]);
    t.equal(core.logger.warnings().length, 1, 'one retry, one warning');
  });

  t.test('a non-retryable error fails the task with "Model call failed", without a retry', async (t) => {
    const model = new FnModel(() => fails(new ModelError('API key not valid', false, 400)));
    const core = await makeCore(t, { model });
    const task = await startTask(core);
    await runTurn(core, task);
    const log = await logOf(core.store, task.id);
    t.same(shape(log), ['task', 'working', 'failed!']);
    t.equal(log.at(-1)!.text, 'Model call failed: API key not valid');
    t.equal(log.at(-1)!.error, 'Model call failed: API key not valid');
    t.equal(model.calls, 1);
    t.same(core.logger.errors(), [], "a model failure is the model's reason, not an internal error");
  });

  t.test('retryable errors give up after the attempts, saying how many', async (t) => {
    const model = new FnModel(() => fails(new ModelError('quota', true, 429)));
    const core = await makeCore(t, { model });
    const task = await startTask(core);
    await runTurn(core, task);
    t.equal(await lastText(core, task), 'Model call failed: quota (after 3 attempts)');
    t.equal(model.calls, 3);
  });

  t.test('an error after something streamed is not retried (the answer would repeat)', async (t) => {
    const model = new FnModel(async function* () {
      yield* chunks('partial ');
      throw new ModelError('stream reset', true);
    });
    const core = await makeCore(t, { model });
    const task = await startTask(core);
    await runTurn(core, task);
    t.same(shape(await logOf(core.store, task.id)), ['task', 'working', 'text:partial ', 'failed!']);
    t.equal(await lastText(core, task), 'Model call failed: stream reset');
    t.equal(model.calls, 1);
  });

  t.test('an error that is not a ModelError is a non-retryable model failure', async (t) => {
    const model = new FnModel(() => fails(new TypeError('fetch failed')));
    const core = await makeCore(t, { model });
    const task = await startTask(core);
    await runTurn(core, task);
    t.equal(await lastText(core, task), 'Model call failed: fetch failed');
    t.equal(model.calls, 1);
  });
});

t.test('the step guard: a model that keeps calling tools fails the task after maxModelSteps, leaving a valid conversation', async (t) => {
  const model = new FnModel(async function* () {
    yield { parts: [{ functionCall: { name: 'look', args: {} } }] };
  });
  const core = await makeCore(t, { model, maxModelSteps: 2 });
  const task = await startTask(core);
  await runTurn(core, task);
  t.equal(model.calls, 2);
  t.equal(await lastText(core, task), 'Model call failed: the model made more than 2 steps for one message; stopped');
  const history = (await core.store.loadContext(task.context.id))!.history;
  t.same(
    history.map((c) => c.role),
    ['user', 'model', 'user', 'model', 'user'],
  );
  t.ok(
    history.at(-1)!.parts.every((p) => p.functionResponse !== undefined),
    'the last model turn has its responses',
  );
});

t.test('cancel while the model streams: the model is aborted and nothing follows `canceled`', async (t) => {
  const hold = gate();
  const model = new FnModel(async function* (_req, _n, signal) {
    yield* chunks('thinking…');
    await hold.wait(signal);
    yield* chunks('never shown');
  });
  const core = await makeCore(t, { model });
  const task = await startTask(core);
  core.loop.startTurn(task, [{ text: 'go' }]);
  await until('the first text', async () => (await logOf(core.store, task.id)).some((e) => e.text === 'thinking…'));
  cancelTask(task, undefined);
  await settled(core, task);
  t.same(shape(await logOf(core.store, task.id)), ['task', 'working', 'text:thinking…', 'canceled!']);
  t.equal(task.modelRunning, false);
});

t.test("the workspace's GEMINI.md joins the system instruction", async (t) => {
  const model = new FnModel(async function* () {
    yield* chunks('ok');
  });
  const core = await makeCore(t, { model });
  writeFileSync(path.join(core.workspace, 'GEMINI.md'), 'Use tabs.\n');
  const task = await startTask(core);
  await runTurn(core, task);
  t.match(
    model.requests[0].systemInstruction,
    /^test\n\nThe project's context file GEMINI\.md .*\n--- GEMINI\.md ---\nUse tabs\.\n--- end of GEMINI\.md ---$/s,
  );
  t.same(
    model.requests[0].tools.map((d) => d.name),
    ['look', 'edit', 'exec', 'poke', 'broken', 'crash'],
    "the context's tools are declared",
  );
});

t.test("slash commands: a direct turn runs the server's own calls, approved like any, and completes without the model", async (t) => {
  const model = new FnModel(() => fails(new Error('the model must not be called')));
  const core = await makeCore(t, { model });

  const task = await startTask(core, { metadata: SLASH('/memory add'), text: '/memory add use tabs' });
  await core.loop.startDirectTurn(task, [{ name: 'edit', args: { path: 'GEMINI.md', content: 'use tabs' } }]);
  t.equal(task.awaiting().length, 1, 'the card is out when startDirectTurn resolves');
  await settled(core, task);
  t.same(shape(await logOf(core.store, task.id)), ['task', 'working', 'edit:PENDING', 'input-required!']);
  await approveAll(core, task);
  const log = await logOf(core.store, task.id);
  t.same(shape(log).slice(-3), ['edit:EXECUTING', 'edit:SUCCEEDED', 'completed!']);
  t.equal(log.at(-1)!.text, '/memory add: done: edit {"path":"GEMINI.md","content":"use tabs"}');
  t.same((await core.store.loadContext(task.context.id))!.history, [], 'a direct turn stays out of the model conversation');

  const read = await startTask(core, { metadata: SLASH('/peek') });
  await core.loop.startDirectTurn(read, [{ name: 'look', args: {} }]);
  await settled(core, read);
  t.same(shape(await logOf(core.store, read.id)).slice(2), ['look:PENDING', 'look:EXECUTING', 'look:SUCCEEDED', 'completed!']);
  t.equal(model.calls, 0);
});

/** A toolbox whose forContext throws while `broken` is set (an MCP layer bug, say). */
class FlakyToolbox extends Toolbox {
  broken = false;
  override async forContext(ctx: { id: string; workspace: string; settings: ContextSettings }): Promise<ToolSet> {
    if (this.broken) throw new Error('tool resolution exploded');
    return super.forContext(ctx);
  }
}

/** Checks the run failed only `task`, with a reference that names the logged error. */
function checkInternalFailure(t: Test, core: Core, text: string, task: LiveTask, what: string, err: RegExp): void {
  const m = INTERNAL.exec(text);
  t.ok(m, `the task fails with an internal error and a reference: ${text}`);
  t.equal(m?.[1], what, `it names what failed: ${what}`);
  const logged = core.logger.errors().find((e) => e.obj.ref === m?.[2]);
  t.ok(logged, 'the error is logged under the same reference');
  t.equal(logged?.obj.taskId, task.id);
  t.match((logged?.obj.err as Error | undefined)?.message, err, 'the log has the error itself');
  t.equal(logged?.msg, `${what} failed; the task fails`);
  t.notMatch(text, err, 'the client does not see the error itself');
}

t.test('an unexpected error inside a run fails only that task, rejects nowhere, and the next task works', async (t) => {
  const rejections = watchRejections(t);

  t.test('the store loses the commit that settles the turn', async (t) => {
    const inner = new MemoryTaskStore();
    t.teardown(() => inner.close());
    const faulty = faultyStore(inner);
    const core = await makeCore(t, { store: faulty.store as unknown as MemoryTaskStore });
    const task = await startTask(core, { text: 'look first' });
    // Commit 1: the user's turn; 2: the model's answer, its card and EXECUTING; 3: the result, the turn's close, the model's turn.
    faulty.failAt(3, 'commit');
    await runTurn(core, task);
    t.strictSame(faulty.fired, ['commit'], 'the fault fired');
    const log = await logOf(core.store, task.id);
    t.same(shape(log), ['task', 'working', 'look:PENDING', 'look:EXECUTING', 'failed!']);
    checkInternalFailure(t, core, log.at(-1)!.text, task, 'saving its events', /connection to the database was lost during commit/);
    t.ok(core.logger.errors().some((e) => e.obj.err instanceof DatabaseBlip));

    // The lost batch held the call's response: the conversation's next turn answers the call first.
    const next = await startTask(core, { text: 'look again', contextId: task.context.id });
    await runTurn(core, next);
    t.equal(await storedState(core.store, next.id), 'completed', 'the next task in the same conversation completes');
    const history = (await core.store.loadContext(task.context.id))!.history;
    const at = history.findIndex((h) => h.role === 'model' && h.parts.some((p) => p.functionCall));
    t.ok(
      history[at + 1]?.role === 'user' && history[at + 1].parts.every((p) => p.functionResponse !== undefined),
      'the unanswered call got its response before the next message',
    );
  });

  t.test('tool resolution throws at the start of a model step', async (t) => {
    const logger = { warn() {} };
    const toolbox = new FlakyToolbox({ builtin: fakeTools([]), defaultCwd: process.cwd(), logger });
    const core = await makeCore(t, { toolbox });
    const task = await startTask(core, { text: 'look' });
    toolbox.broken = true;
    await runTurn(core, task);
    const log = await logOf(core.store, task.id);
    t.same(shape(log), ['task', 'working', 'failed!']);
    checkInternalFailure(t, core, log.at(-1)!.text, task, 'running the model', /tool resolution exploded/);
    t.equal(task.modelRunning, false);

    toolbox.broken = false;
    const next = await startTask(core, { text: 'look' });
    await runTurn(core, next);
    t.equal(await storedState(core.store, next.id), 'completed');
  });

  t.test("the store loses the commit of approved calls' results", async (t) => {
    const inner = new MemoryTaskStore();
    t.teardown(() => inner.close());
    const faulty = faultyStore(inner);
    const core = await makeCore(t, { store: faulty.store as unknown as MemoryTaskStore });
    const task = await startTask(core, { text: 'edit' });
    await runTurn(core, task);
    // Commit 1: the answer and EXECUTING; commit 2: the result, the turn's close, the model's turn.
    faulty.failAt(2, 'commit');
    await approveAll(core, task);
    t.strictSame(faulty.fired, ['commit'], 'the fault fired');
    const log = await logOf(core.store, task.id);
    t.same(shape(log).slice(-2), ['edit:EXECUTING', 'failed!']);
    checkInternalFailure(t, core, log.at(-1)!.text, task, 'saving its events', /during commit/);
  });

  t.test('a slash command whose tools cannot be resolved fails its task; startDirectTurn resolves', async (t) => {
    const toolbox = new FlakyToolbox({ builtin: fakeTools([]), defaultCwd: process.cwd(), logger: { warn() {} } });
    const core = await makeCore(t, { toolbox });
    const task = await startTask(core, { metadata: SLASH('/memory add') });
    toolbox.broken = true;
    await t.resolves(core.loop.startDirectTurn(task, [{ name: 'edit', args: {} }]));
    await settled(core, task);
    const log = await logOf(core.store, task.id);
    t.same(shape(log), ['task', 'working', 'failed!']);
    checkInternalFailure(t, core, log.at(-1)!.text, task, "opening the command's tool calls", /exploded/);
    t.equal(task.modelRunning, false);
  });

  t.test('no unhandled rejection', async (t) => {
    await new Promise((r) => setImmediate(r));
    t.same(rejections, []);
  });
});

t.test(
  'a tool that throws in validate fails the task and still leaves every function call of the conversation answered',
  async (t: Test) => {
    const rejections = watchRejections(t);
    const throwing = fakeTools([])[0];
    const buggy = {
      ...throwing,
      name: 'buggy',
      validate: () => {
        throw new Error('validator bug');
      },
    };
    const model = new FnModel(async function* (req) {
      const last = req.contents.at(-1)!;
      if (last.parts.some((p) => p.text === 'call the buggy tool'))
        yield { parts: [{ functionCall: { id: 'fc-1', name: 'buggy', args: {} } }] };
      else yield* chunks('ok');
    });
    const core = await makeCore(t, { model, extraTools: [buggy] });
    const task = await startTask(core, { text: 'call the buggy tool' });
    await runTurn(core, task);
    const text = (await logOf(core.store, task.id)).at(-1)!.text;
    checkInternalFailure(t, core, text, task, 'running the model', /validator bug/);
    t.same(rejections, []);
    const history = (await core.store.loadContext(task.context.id))!.history;
    const calls = history.flatMap((c) => c.parts.filter((p) => p.functionCall).map((p) => p.functionCall!.id));
    const responses = history.flatMap((c) => c.parts.filter((p) => p.functionResponse).map((p) => p.functionResponse!.id));
    t.same(responses, calls, 'every function call in the conversation has its response');
    t.equal(history.at(-1)?.role, 'user', 'the conversation does not end on an unanswered model function call');
  },
);

t.test('a task failed or canceled while a step holds its writes commits its end at once (a hold never keeps an end back)', async (t) => {
  const core = await makeCore(t);
  for (const end of ['failed', 'canceled'] as const) {
    const task = await startTask(core, { viaCache: true });
    await task.flush();
    task.holdWrites();
    if (end === 'failed') failTask(task, 'broken');
    else cancelTask(task, undefined);
    await until(`the ${end} end committed`, async () => (await storedState(core.store, task.id)) === end);
    t.pass(`${end}: committed without a flush`);
  }
});
