/**
 * Feedback with an answer (ToolCallConfirmation.feedback): where planResume reads it from (the
 * DataPart's field, or a text part beside one answer), what it refuses (both at once, a text
 * part beside several answers, too long, control characters), and what becomes of it: the
 * model is told (in the functionResponse of that call, on decline and beside a result), the
 * audit entry of the answer holds it, and the card stays as it was.
 */
import t from 'tap';
import type { Message } from '@a2a-js/sdk';
import type { LiveTask, TurnCall } from '../../../src/agent/runtime/live-task.js';
import { applyResume } from '../../../src/agent/requests/resume-handler.js';
import { MAX_FEEDBACK_CHARS } from '../../../src/protocol/answer-feedback.js';
import type { ModelScript } from '../../../src/agent/model/scripted-model-client.js';
import { answer, auditOf, FAKE_SCRIPT, fakeTool, fcall, logOf, makeCore, say, settled } from '../../support/core.js';
import type { Core } from '../../support/core.js';
import { confirmation, pausedOn, planFor } from '../../support/resume.js';

async function paused(core: Core, prompt: string): Promise<{ task: LiveTask; ids: string[] }> {
  const { task, calls } = await pausedOn(core, prompt);
  return { task, ids: calls.map((c) => c.snapshot.id) };
}

const plan = planFor;
const conf = confirmation;

/** [call id, option, feedback] of each decision; a re-prompt's reason. */
function decided(core: Core, task: LiveTask, message: Message) {
  const p = plan(core, task, message);
  return p.kind === 'decisions' ? p.decisions.map((d) => [d.call.snapshot.id, d.option, d.feedback]) : p.reason;
}

async function resume(core: Core, task: LiveTask, message: Message, principal?: string): Promise<void> {
  await applyResume(task, plan(core, task, message), core.loop, message, principal, {
    owner: core.instanceId,
    leaseUntil: () => new Date(Date.now() + core.leaseMs),
    checkSeq: false,
  });
  await settled(core, task);
}

/** The functionResponse the model was told for `call`: its position in the content that answers its turn. */
async function toldModel(core: Core, task: LiveTask, call: TurnCall): Promise<Record<string, unknown> | undefined> {
  const history = (await core.store.loadContext(task.context.id))?.history ?? [];
  const answers = history.find((c) => c.role === 'user' && c.parts.some((p) => p.functionResponse));
  const part = answers?.parts[call.position]?.functionResponse;
  return part?.name === call.snapshot.toolName ? part.response : undefined;
}

t.test('where feedback is read from', async (t) => {
  const core = await makeCore(t);
  const { task, ids } = await paused(core, 'edit');
  const [id] = ids as [string];
  t.same(
    decided(core, task, answer(task, conf(id, 'cancel', { feedback: 'wrong file' }))),
    [[id, 'cancel', 'wrong file']],
    'the DataPart field',
  );
  t.same(
    decided(core, task, answer(task, conf(id, 'modify_with_editor', { file_details: { new_content: 'x' }, feedback: 'tidied' }))),
    [[id, 'modify_with_editor', 'tidied']],
    'beside edited content',
  );
  t.same(
    decided(core, task, answer(task, conf(id, 'cancel'), '  use notes/ instead\n')),
    [[id, 'cancel', 'use notes/ instead']],
    'a text part beside the one DataPart (trimmed)',
  );
  t.same(
    decided(core, task, answer(task, 'first line', conf(id, 'proceed_once'), 'second line')),
    [[id, 'proceed_once', 'first line\nsecond line']],
    'several text parts are joined by line breaks',
  );
  t.same(
    decided(core, task, answer(task, { confirmation: 'no' }, 'not this file')),
    [[id, 'cancel', 'not this file']],
    'beside {"confirmation": "no"}',
  );
  t.same(decided(core, task, answer(task, conf(id, 'cancel', { feedback: '' }), '   ')), [[id, 'cancel', undefined]], 'empty: none');
  t.same(decided(core, task, answer(task, 'no')), [[id, 'cancel', undefined]], 'a text token is the answer, not feedback');
  t.same(
    decided(core, task, answer(task, 'no, use notes/ instead')),
    'That reply is not an answer to the waiting tool call.',
    'text alone stays a re-prompt',
  );
  const limit = 'x'.repeat(MAX_FEEDBACK_CHARS - 1) + '\u{1F600}';
  t.same(
    decided(core, task, answer(task, conf(id, 'cancel', { feedback: limit }))),
    [[id, 'cancel', limit]],
    'the limit counts characters',
  );
  t.same(
    decided(core, task, answer(task, conf(id, 'cancel', { feedback: 'a\tb\r\nc' }))),
    [[id, 'cancel', 'a\tb\r\nc']],
    'tabs, line breaks',
  );
});

t.test('several answers: each its own feedback; a text part beside them is refused', async (t) => {
  const core = await makeCore(t);
  const { task, ids } = await paused(core, 'two edits');
  const [a, b] = ids as [string, string];
  t.same(decided(core, task, answer(task, conf(a, 'cancel', { feedback: 'not a' }), conf(b, 'proceed_once', { feedback: 'b is fine' }))), [
    [a, 'cancel', 'not a'],
    [b, 'proceed_once', 'b is fine'],
  ]);
  t.throws(() => plan(core, task, answer(task, conf(a, 'cancel'), conf(b, 'cancel'), 'neither')), {
    message:
      /^message: a text part beside 2 confirmations is ambiguous; put each answer's note in the "feedback" field of its own DataPart$/,
  });
});

t.test('refusals name the field and the limit, and change nothing', async (t) => {
  const core = await makeCore(t);
  const { task, ids } = await paused(core, 'edit');
  const [id] = ids as [string];
  const before = (await logOf(core.store, task.id)).length;
  const cases: Array<[string, Message, RegExp]> = [
    [
      'both a field and a text part',
      answer(task, conf(id, 'cancel', { feedback: 'one' }), 'two'),
      /^message\.parts\[0\]\.data\.feedback: the message also has a text part; send the feedback once, in one of the two$/,
    ],
    [
      'too long, in the field',
      answer(task, conf(id, 'cancel', { feedback: 'x'.repeat(MAX_FEEDBACK_CHARS + 1) })),
      /^message\.parts\[0\]\.data\.feedback is 4097 characters long; feedback may be at most 4096 characters$/,
    ],
    [
      'too long, as text',
      answer(task, conf(id, 'cancel'), 'y'.repeat(MAX_FEEDBACK_CHARS + 5)),
      /^message text \(the feedback of the answer beside it\) is 4101 characters long; feedback may be at most 4096 characters$/,
    ],
    [
      'a control character',
      answer(task, conf(id, 'proceed_once', { feedback: 'ring \u0007' })),
      /^message\.parts\[0\]\.data\.feedback contains a control character \(U\+0007\); feedback may hold text, tabs and line breaks only$/,
    ],
    [
      'a C1 control character as text',
      answer(task, { confirmation: 'yes' }, 'next \u0085 line'),
      /^message text \(the feedback of the answer beside it\) contains a control character \(U\+0085\)/,
    ],
    ['not a string', answer(task, conf(id, 'cancel', { feedback: ['why'] })), /^message\.parts\[0\]\.data\.feedback must be a string$/],
  ];
  for (const [name, message, expected] of cases) t.throws(() => plan(core, task, message), { message: expected }, name);
  t.equal(task.awaiting().length, 1, 'the call still waits');
  t.equal((await logOf(core.store, task.id)).length, before, 'nothing was published');
});

t.test('a decline with feedback: the model is told why, the audit keeps it, the card is unchanged', async (t) => {
  const core = await makeCore(t);
  const { task } = await paused(core, 'edit');
  const call = task.awaiting()[0];
  const before = (await logOf(core.store, task.id)).length;
  await resume(core, task, answer(task, conf(call.snapshot.id, 'cancel', { feedback: 'Write it to docs/ instead.' })), 'bob');
  t.same(await toldModel(core, task, call), { error: 'The user declined this tool call. Their feedback: Write it to docs/ instead.' });
  const card = (await logOf(core.store, task.id, before)).find((e) => e.call?.status === 'CANCELLED')?.call;
  t.same(card?.error, { message: 'The user declined this tool call.', type: 'declined' }, 'the card carries no feedback');
  t.notMatch(JSON.stringify(await logOf(core.store, task.id)), /docs\//, 'no event carries it');
  t.match((await auditOf(core.store, task.id)).at(-1), {
    decision: 'declined',
    principal: 'bob',
    detail: { feedback: 'Write it to docs/ instead.' },
  });
  t.equal(task.state, 'completed', 'the turn went on');
});

t.test('an approval with feedback: the note goes to the model beside the result, and into the audit', async (t) => {
  const core = await makeCore(t);
  const { task } = await paused(core, 'edit');
  const call = task.awaiting()[0];
  await resume(core, task, answer(task, conf(call.snapshot.id, 'proceed_once'), 'Keep it short next time.'), 'alice');
  t.same(await toldModel(core, task, call), { output: 'ran edit', user_feedback: 'Keep it short next time.' });
  const audit = await auditOf(core.store, task.id);
  t.match(
    audit.find((a) => a.decision === 'authorized'),
    { principal: 'alice', optionId: 'proceed_once', detail: { feedback: 'Keep it short next time.' } },
  );
  t.notOk(audit.find((a) => a.decision === 'succeeded')?.detail, 'only the answer carries it');
  t.notMatch(JSON.stringify(await logOf(core.store, task.id)), /Keep it short/, 'no event carries it');
});

t.test('without feedback nothing changes: no detail, the plain decline', async (t) => {
  const core = await makeCore(t);
  const { task } = await paused(core, 'two edits');
  const [a, b] = task.awaiting() as [TurnCall, TurnCall];
  await resume(core, task, answer(task, conf(a.snapshot.id, 'cancel'), conf(b.snapshot.id, 'proceed_once')));
  t.same(await toldModel(core, task, a), { error: 'The user declined this tool call. Do not retry it unless the user asks.' });
  t.same(await toldModel(core, task, b), { output: 'ran edit' });
  t.ok((await auditOf(core.store, task.id)).every((e) => e.detail === undefined));
});

t.test('an approved call that fails: the note goes beside the error', async (t) => {
  const script: ModelScript = {
    ...FAKE_SCRIPT,
    scripts: [{ when: '^brittle', steps: [{ chunks: [[fcall('brittle', {})]] }, say('Noted.')] }, ...FAKE_SCRIPT.scripts],
  };
  const brittle = fakeTool({
    name: 'brittle',
    kind: 'edit',
    run: async () => ({ isError: true, error: { message: 'disk full', type: 'tool_failed' }, llmContent: 'wrote half' }),
  });
  const core = await makeCore(t, { script, extraTools: [brittle] });
  const { task } = await paused(core, 'brittle');
  const call = task.awaiting()[0];
  await resume(core, task, answer(task, conf(call.snapshot.id, 'proceed_once', { feedback: 'Tell me if it fails.' })));
  t.same(await toldModel(core, task, call), {
    error: 'disk full',
    error_type: 'tool_failed',
    output: 'wrote half',
    user_feedback: 'Tell me if it fails.',
  });
});
