/**
 * The gemini-cli dialect's event sequences, event by event, against the transcripts recorded from
 * @google/gemini-cli-a2a-server 0.25.2 (test/fixtures/legacy/, see record.ts there). Each flow
 * runs here with the model answers the recording's fake Gemini API gave (the real @google/genai
 * client against test/support/fake-gemini.ts), and each stream is reduced to its signature: per
 * event its kind, coderAgent kind, task state, ToolCall status (calls named c1, c2 … in order of
 * appearance) and `final`; a run of artifact updates (live output, sent at this server's pace)
 * counts as one. Where this server fixes a defect of the original (docs/gemini-cli.md, "What
 * differs"), the recorded sequence is edited by a named step that says which, and the edit is
 * checked to have changed something.
 */
import t from 'tap';
import type { Test } from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startGeminiServer } from '../support/gemini-server.js';
import type { GeminiServer } from '../support/gemini-server.js';
import { candidateChunk } from '../support/fake-gemini.js';
import { coderAgent, fixture, legacyCard, legacyMessage, results, stream } from '../support/legacy-client.js';
import { rpc } from '../support/sse.js';

type Parts = Array<Record<string, unknown>>;

/** Labels calls c1, c2 … by first appearance, across the streams of one flow. */
class Signer {
  private readonly labels = new Map<string, string>();

  sign(events: any[]): string[] {
    const out: string[] = [];
    for (const e of events) {
      const r = e?.result ?? e;
      if (r?.hung === true) out.push('hung');
      else if (r.kind === 'task') out.push('task');
      else if (r.kind === 'artifact-update') {
        if (out.at(-1) !== 'artifact') out.push('artifact');
      } else out.push(this.update(r));
    }
    return out;
  }

  private update(r: any): string {
    const data = r.status?.message?.parts?.[0]?.data;
    let s = `${r.metadata?.coderAgent?.kind} ${r.status?.state}`;
    if (data?.request?.callId !== undefined) {
      const id = String(data.request.callId);
      if (!this.labels.has(id)) this.labels.set(id, `c${this.labels.size + 1}`);
      s += ` ${this.labels.get(id)}:${data.status}`;
    }
    return r.final === true ? `${s} final` : s;
  }
}

/** The recorded flow's signature, stream by stream. */
function recorded(name: string): Record<string, string[]> {
  const signer = new Signer();
  return Object.fromEntries(Object.entries(fixture(name)).map(([step, events]) => [step, signer.sign(events)]));
}

/** The model answers of a recorded flow, as record.ts gave them to its fake Gemini API. */
function answer(fake: GeminiServer['fake'], ...chunks: Parts[]): void {
  fake.enqueue({ chunks: chunks.map((parts, i) => candidateChunk(parts, i === chunks.length - 1 ? 'STOP' : undefined)) });
}
const fc = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });

const lastTask = new WeakMap<GeminiServer, string>();
/** The task of the flow `ours` ran last on `srv`. */
const taskIdOf = (srv: GeminiServer): string => lastTask.get(srv) as string;

/** Runs one flow's streams here; `steps` send the messages in order, each given the streams so far. */
async function ours(
  srv: GeminiServer,
  steps: Array<(prev: Array<any[]>, task: { taskId: string; contextId: string }) => Record<string, unknown>>,
  names: string[],
): Promise<Record<string, string[]>> {
  const signer = new Signer();
  const streams: Array<any[]> = [];
  let task = { taskId: '', contextId: '' };
  for (const step of steps) {
    const events = await stream(srv.url, step(streams, task));
    if (streams.length === 0) task = { taskId: events[0].id, contextId: events[0].contextId };
    streams.push(events);
  }
  lastTask.set(srv, task.taskId);
  return Object.fromEntries(streams.map((events, i) => [names[i], signer.sign(events)]));
}

const callIdOf = (events: any[], status = 'awaiting_approval', nth = 0): string => {
  const cards = events.map((e) => e.status?.message?.parts?.[0]?.data).filter((d) => d?.status === status);
  return cards[nth]?.request?.callId;
};
const prompt =
  (text: string, workspace: string, extra: Record<string, unknown> = {}) =>
  () =>
    legacyMessage(text, { metadata: coderAgent(workspace, extra) });
const reply =
  (outcome: string, pick: (prev: Array<any[]>) => string, extra: Record<string, unknown> = {}) =>
  (prev: Array<any[]>, task: { taskId: string }) =>
    legacyMessage(undefined, { taskId: task.taskId, parts: [{ kind: 'data', data: { callId: pick(prev), outcome, ...extra } }] });
const followUp = (text: string) => (_prev: Array<any[]>, task: { taskId: string }) => legacyMessage(text, { taskId: task.taskId });
const lastCard = (prev: Array<any[]>) => callIdOf(prev.at(-1) as any[]);

/**
 * The task's log replayed from its start (`tasks/resubscribe`, Last-Event-ID 0), signed like the
 * live streams: what a client that reconnects is sent (the resubscription's own Task first).
 */
async function replayed(srv: GeminiServer, taskId: string): Promise<string[]> {
  const res = await rpc(srv.url, 'tasks/resubscribe', { id: taskId }, { headers: { 'last-event-id': '0' } });
  return new Signer().sign(results(res).slice(1));
}

/** Applies a documented difference to a recorded sequence; the edit must change it. */
function fix(t: Test, what: string, before: string[], edit: (seq: string[]) => string[]): string[] {
  const after = edit([...before]);
  t.notSame(after, before, `the recording shows the original's behaviour this server fixes: ${what}`);
  return after;
}

async function server(t: Test): Promise<GeminiServer> {
  return startGeminiServer(t);
}

t.test('write_file: card, proceed_once, result, then a follow-up in the same task — as recorded', async (t) => {
  const srv = await server(t);
  const file = path.join(srv.workspace, 'hello.txt');
  answer(srv.fake, [fc('write_file', { file_path: file, content: 'hello\n' })]);
  answer(srv.fake, [{ text: 'Wrote ' }], [{ text: 'hello.txt.' }]);
  answer(srv.fake, [{ text: 'Sure, again.' }]);
  const got = await ours(
    srv,
    [prompt('create hello.txt', srv.workspace), reply('proceed_once', (p) => callIdOf(p[0])), followUp('thanks')],
    ['prompt', 'confirm', 'followUp'],
  );
  t.same(got, recorded('write-file'));
  t.equal(readFileSync(file, 'utf8'), 'hello\n');
  t.same(await replayed(srv, taskIdOf(srv)), Object.values(got).flat(), 'a replay of the log sends the same sequence');
});

t.test('shell with output: scheduled, executing, live output, success, working, text — as recorded', async (t) => {
  const srv = await server(t);
  answer(srv.fake, [fc('run_shell_command', { command: 'echo one; sleep 0.3; echo two', description: 'two lines' })]);
  answer(srv.fake, [{ text: 'Ran it.' }]);
  const got = await ours(srv, [prompt('run it', srv.workspace), reply('proceed_once', lastCard)], ['prompt', 'confirm']);
  t.same(got, recorded('shell'));
  t.same(await replayed(srv, taskIdOf(srv)), Object.values(got).flat(), 'a replay of the log sends the same sequence');
});

t.test('a thought, then text — as recorded', async (t) => {
  const srv = await server(t);
  answer(srv.fake, [{ text: '**Planning**\nI will answer briefly.', thought: true }], [{ text: 'Hi.' }]);
  t.same(await ours(srv, [prompt('hello', srv.workspace)], ['prompt']), recorded('thought'));
});

t.test('proceed_always, then a call the grant covers runs without a card — as recorded', async (t) => {
  const srv = await server(t);
  answer(srv.fake, [fc('write_file', { file_path: path.join(srv.workspace, 'always1.txt'), content: 'one\n' })]);
  answer(srv.fake, [{ text: 'First.' }]);
  answer(srv.fake, [fc('write_file', { file_path: path.join(srv.workspace, 'always2.txt'), content: 'two\n' })]);
  answer(srv.fake, [{ text: 'Second.' }]);
  const got = await ours(
    srv,
    [prompt('always', srv.workspace), reply('proceed_always', lastCard), followUp('again')],
    ['prompt', 'confirm', 'covered'],
  );
  t.same(got, recorded('always'));
});

t.test('an unknown tool: only its error, then the model again — as recorded', async (t) => {
  const srv = await server(t);
  answer(srv.fake, [fc('no_such_tool', { x: 1 })]);
  answer(srv.fake, [{ text: 'That tool does not exist.' }]);
  t.same(await ours(srv, [prompt('unknown', srv.workspace)], ['prompt']), recorded('unknown-tool'));
});

t.test('a shell command that fails — as recorded, but its card says error', async (t) => {
  const srv = await server(t);
  answer(srv.fake, [fc('run_shell_command', { command: 'echo out; echo err >&2; exit 3' })]);
  answer(srv.fake, [{ text: 'It failed.' }]);
  const got = await ours(srv, [prompt('fail', srv.workspace), reply('proceed_once', lastCard)], ['prompt', 'confirm']);
  const theirs = recorded('shell-fails');
  const confirm = fix(t, 'a command that exits non-zero is error, not success', theirs.confirm, (seq) =>
    seq.map((s) => s.replace('c1:success', 'c1:error')),
  );
  t.same(got, { ...theirs, confirm });
});

t.test('cancel: the cancelled card, then (unlike the original) the model is told and the turn goes on', async (t) => {
  const srv = await server(t);
  answer(srv.fake, [fc('run_shell_command', { command: 'rm -rf build' })]);
  answer(srv.fake, [{ text: 'Not run.' }]);
  const got = await ours(srv, [prompt('clean', srv.workspace), reply('cancel', lastCard)], ['prompt', 'confirm']);
  const theirs = recorded('cancel');
  const confirm = fix(t, 'a declined call is told to the model and the turn goes on', theirs.confirm, (seq) => [
    ...seq.slice(0, -1),
    'state-change working',
    'text-content working',
    'state-change input-required final',
  ]);
  t.same(got, { ...theirs, confirm });
});

t.test('two calls answered one by one: every card at once, and a finished call reported once', async (t) => {
  const srv = await server(t);
  answer(srv.fake, [fc('run_shell_command', { command: 'echo first' }), fc('run_shell_command', { command: 'echo second' })]);
  answer(srv.fake, [{ text: 'Both ran.' }]);
  const got = await ours(
    srv,
    [
      prompt('two in turn', srv.workspace),
      reply('proceed_once', (p) => callIdOf(p[0], 'awaiting_approval', 0)),
      reply('proceed_once', (p) => callIdOf(p[0], 'awaiting_approval', 1)),
    ],
    ['prompt', 'first', 'second'],
  );
  const theirs = recorded('two-calls-answered');
  const seen = new Set<string>();
  const once = (seq: string[]) =>
    seq.filter((s) => {
      if (!/:(success|error|cancelled)$/.test(s)) return true;
      const first = !seen.has(s);
      seen.add(s);
      return first;
    });
  const first = fix(t, "a finished call's update is sent once (the original repeats it)", theirs.first, once);
  const second = fix(t, "a finished call's update is sent once (the original repeats it)", theirs.second, once);
  // The original shows c2's card only after c1 ran; here both wait at once, in the first stream.
  const card2 = 'tool-call-confirmation input-required c2:awaiting_approval';
  const firstFixed = fix(t, 'several waiting calls are shown at once', first, (seq) => seq.filter((s) => s !== card2));
  const promptFixed = fix(t, 'several waiting calls are shown at once', theirs.prompt, (seq) => {
    const at = seq.indexOf('tool-call-confirmation working c1:awaiting_approval');
    seq.splice(at + 1, 0, 'tool-call-confirmation working c2:awaiting_approval');
    return seq;
  });
  t.same(got, { prompt: promptFixed, first: firstFixed, second });
});

t.test('a read-only tool runs without asking: the sequence of a call no person needs to approve', async (t) => {
  const srv = await server(t);
  writeFileSync(path.join(srv.workspace, 'notes.txt'), 'alpha\nbeta\n');
  answer(srv.fake, [fc('read_file', { file_path: path.join(srv.workspace, 'notes.txt') })]);
  answer(srv.fake, [{ text: 'It says alpha.' }]);
  const got = await ours(srv, [prompt('read notes', srv.workspace)], ['prompt']);
  // The original asks for read_file too; a call no person needs to approve is what its "always" grant shows.
  const theirs = recorded('read-only').prompt;
  const covered = recorded('always').covered.map((s) => s.replace('c2:', 'c1:'));
  t.same(theirs.slice(1, 4), covered.slice(0, 3), 'both start alike in the original');
  t.same(got.prompt, ['task', ...covered]);
});

t.test('autoExecute: no confirmation card for a call that will not wait', async (t) => {
  const srv = await server(t);
  answer(srv.fake, [fc('write_file', { file_path: path.join(srv.workspace, 'auto.txt'), content: 'auto\n' })]);
  answer(srv.fake, [{ text: 'Done without asking.' }]);
  const got = await ours(srv, [prompt('write auto', srv.workspace, { autoExecute: true })], ['prompt']);
  const theirs = recorded('auto-execute');
  const fixed = fix(t, 'a call that runs without asking gets no confirmation card', theirs.prompt, (seq) =>
    seq.filter((s) => !s.includes(':awaiting_approval')),
  );
  t.same(got, { prompt: fixed });
});

t.test('modify_with_editor with the edited content: the approved sequence (the original fails to open an editor)', async (t) => {
  const srv = await server(t);
  const file = path.join(srv.workspace, 'modify.txt');
  answer(srv.fake, [fc('write_file', { file_path: file, content: 'model\n' })]);
  answer(srv.fake, [{ text: 'Modified.' }]);
  const got = await ours(
    srv,
    [prompt('modify', srv.workspace), reply('modify_with_editor', lastCard, { newContent: 'person\n' })],
    ['prompt', 'confirm'],
  );
  const theirs = recorded('modify');
  t.same(got.prompt, theirs.prompt, 'the card as recorded');
  t.same(got.confirm, recorded('always').confirm, 'then the sequence of an approved write');
  t.equal(readFileSync(file, 'utf8'), 'person\n', "the person's content is written");
  t.ok(legacyCard(fixture('modify').confirm, 'awaiting_approval') === undefined);
});

t.test('replace with newContent and proceed_once: the card as recorded, then (the original wedges) the approved sequence', async (t) => {
  const srv = await server(t);
  const file = path.join(srv.workspace, 'notes.txt');
  writeFileSync(file, 'alpha\nbeta\n');
  answer(srv.fake, [fc('replace', { file_path: file, old_string: 'beta', new_string: 'gamma', instruction: 'rename' })]);
  answer(srv.fake, [{ text: 'Edited.' }]);
  const got = await ours(
    srv,
    [prompt('edit notes', srv.workspace), reply('proceed_once', lastCard, { newContent: 'alpha\nEDITED\n' })],
    ['prompt', 'confirm'],
  );
  const theirs = recorded('replace-new-content');
  t.same(got.prompt, theirs.prompt, 'the card as recorded');
  t.same(theirs.confirm, ['hung'], 'the original never answers');
  t.same(got.confirm, recorded('always').confirm, 'here: the approved sequence');
  t.equal(readFileSync(file, 'utf8'), 'alpha\nEDITED\n');
});

t.test('two calls in one answer of the model: both validating, then every card at once', async (t) => {
  const srv = await server(t);
  answer(srv.fake, [fc('run_shell_command', { command: 'echo a' }), fc('run_shell_command', { command: 'echo b' })]);
  const got = await ours(srv, [prompt('two', srv.workspace)], ['prompt']);
  const theirs = recorded('two-calls');
  const fixed = fix(t, 'several waiting calls are shown at once', theirs.prompt, (seq) => {
    seq.splice(
      seq.indexOf('tool-call-confirmation working c1:awaiting_approval') + 1,
      0,
      'tool-call-confirmation working c2:awaiting_approval',
    );
    return seq;
  });
  t.same(got.prompt, fixed);
  t.same(theirs.unknownCallId, ['hung'], 'the original hangs on an unknown callId (here: a JSON-RPC error, legacy-wire.test.ts)');
});
