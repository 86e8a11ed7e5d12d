/**
 * A pause's inputSchema (runtime/pause.ts) and the resume handler agree: over a corpus of
 * ToolCallConfirmations (real ids and made-up ones, every option, with and without edited
 * content, with and without feedback of every kind, extra keys, wrong types), the JSON Schema validator (ajv, draft 2020-12) accepts
 * exactly the answers planResume accepts. An auth-required pause accepts only declines,
 * which is what the router lets a principal without an approver role send.
 */
import t from 'tap';
import { Ajv2020 } from 'ajv/dist/2020.js';
import type { LiveTask } from '../../../src/agent/runtime/live-task.js';
import { answerSchema, INPUT_SCHEMA_DIALECT, pauseEvent } from '../../../src/agent/runtime/pause.js';
import { planResume } from '../../../src/agent/requests/resume-handler.js';
import { ConfirmationOptionId } from '../../../src/protocol/extension.js';
import { answer, makeCore, runTurn, startTask } from '../../support/core.js';
import { decoded } from '../../support/resume.js';
import type { Core } from '../../support/core.js';

type Test = Parameters<Parameters<typeof t.test>[0]>[0];

const OPTIONS = [...Object.values(ConfirmationOptionId), 'bogus', ''];
const EXTRAS: Array<Record<string, unknown>> = [
  {},
  { file_details: { new_content: 'edited' } },
  { file_details: { new_content: '' } },
  { file_details: { new_content: 5 } },
  { file_details: {} },
  { file_details: { new_content: 'x', other: 1 } },
  { note: 'an unknown key' },
  { feedback: 'use src/ instead' },
  { feedback: '' },
  { feedback: 5 },
  { feedback: null },
  { feedback: 'two lines\r\nand a\ttab' },
  { feedback: 'a bell \u0007' },
  { feedback: 'a C1 control \u0085' },
  { feedback: 'DEL \u007f' },
  { feedback: 'x'.repeat(4096) },
  { feedback: 'x'.repeat(4097) },
  { feedback: '\u{1F600}'.repeat(4096) },
  { file_details: { new_content: 'edited' }, feedback: 'tidied the edit' },
];

/** Every candidate answer: the waiting ids and made-up ones × every option × every extra. */
function corpus(ids: string[]): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const id of [...ids, 'tc_nope', '']) {
    for (const option of OPTIONS) for (const extra of EXTRAS) out.push({ tool_call_id: id, selected_option_id: option, ...extra });
  }
  out.push({ tool_call_id: ids[0] }, { selected_option_id: 'cancel' }, { tool_call_id: 7, selected_option_id: 'cancel' });
  return out;
}

/** Does planResume take this one ToolCallConfirmation as a decision (no invalidParams)? */
function handlerAccepts(core: Core, task: LiveTask, data: Record<string, unknown>): { ok: boolean; options: string[] } {
  try {
    const plan = planResume(task, decoded(core, answer(task, data)), new Map(task.turn.map((c) => [c.snapshot.id, c])));
    return plan.kind === 'decisions' ? { ok: true, options: plan.decisions.map((d) => d.option) } : { ok: false, options: [] };
  } catch {
    return { ok: false, options: [] };
  }
}

async function pausedTask(t: Test) {
  const core = await makeCore(t);
  const task = await startTask(core, { text: 'edit and exec' });
  await runTurn(core, task);
  t.equal(task.state, 'input-required');
  return { core, task };
}

t.test('the logged pause carries the schema of the waiting calls', async (t) => {
  const { core, task } = await pausedTask(t);
  const events = await core.store.eventsAfter(task.id, 0);
  const pause = events.at(-1)?.response.payload;
  t.equal(pause?.$case, 'statusUpdate');
  const metadata = pause?.$case === 'statusUpdate' ? pause.value.metadata : undefined;
  const schema = answerSchema(task.awaiting().map((c) => c.snapshot));
  t.same(metadata?.inputSchema, schema, 'the schema of the calls that wait');
  t.equal(schema.$schema, INPUT_SCHEMA_DIALECT);
  t.same((schema.properties as Record<string, unknown>).tool_call_id, { enum: task.awaiting().map((c) => c.snapshot.id) });
});

t.test('input-required: the schema accepts exactly what the resume handler accepts', async (t) => {
  const { core, task } = await pausedTask(t);
  const ajv = new Ajv2020({ strict: true });
  const validate = ajv.compile(schemaOf(pauseEvent(task, task.awaiting())));
  const ids = task.awaiting().map((c) => c.snapshot.id);
  let valid = 0;
  for (const data of corpus(ids)) {
    const schemaSays = validate(data);
    const handler = handlerAccepts(core, task, data);
    if (schemaSays) valid++;
    t.equal(handler.ok, schemaSays, `${label(data)}: schema ${schemaSays}, handler ${handler.ok}`);
  }
  // edit: proceed_once, proceed_always, cancel and modify_with_editor (2 contents); exec: its offered options
  t.ok(valid >= 6, `${valid} valid answers in the corpus`);
});

t.test('auth-required: the schema accepts exactly the declines the handler accepts', async (t) => {
  const { core, task } = await pausedTask(t);
  task.pauseAuthority = { mayApprove: false, approverRoles: ['approver'] };
  const event = pauseEvent(task, task.awaiting());
  t.match(event, { type: 'state', state: 'auth-required', text: /Approving needs role approver/ });
  const validate = new Ajv2020({ strict: true }).compile(schemaOf(event));
  let valid = 0;
  for (const data of corpus(task.awaiting().map((c) => c.snapshot.id))) {
    const schemaSays = validate(data);
    const handler = handlerAccepts(core, task, data);
    // The router refuses a non-approver's decisions other than cancel (-32010).
    const routerAccepts = handler.ok && handler.options.every((o) => o === ConfirmationOptionId.cancel);
    if (schemaSays) valid++;
    t.equal(routerAccepts, schemaSays, `${label(data)}: schema ${schemaSays}, handler ${routerAccepts}`);
  }
  // Per waiting call: cancel without feedback, and with each of the 5 acceptable feedbacks of EXTRAS.
  t.equal(valid, 12, 'cancels only, with and without feedback');
});

/** The answer as JSON, long strings cut short. */
function label(data: Record<string, unknown>): string {
  const json = JSON.stringify(data);
  return json.length > 200 ? `${json.slice(0, 200)}… (${json.length} characters)` : json;
}

function schemaOf(event: ReturnType<typeof pauseEvent>): Record<string, unknown> {
  if (event.type !== 'state' || event.inputSchema === undefined) throw new Error('not a pause with a schema');
  return event.inputSchema;
}
