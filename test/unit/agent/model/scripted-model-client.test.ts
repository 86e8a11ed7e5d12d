import t from 'tap';
import {
  DEMO_SCRIPT_FILE,
  loadDemoScript,
  loadModelScript,
  locatePrompt,
  parseModelScript,
  ScriptedModelClient,
  SCRIPT_FINISHED_TEXT,
  NO_SCRIPT_MATCH_TEXT,
} from '../../../../src/agent/model/scripted-model-client.js';
import type { ModelScript } from '../../../../src/agent/model/scripted-model-client.js';
import type { ModelChunk, ModelContent, ModelRequest } from '../../../../src/agent/model/model-client.js';

async function collect(stream: AsyncIterable<ModelChunk>): Promise<ModelChunk[]> {
  const out: ModelChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

const user = (text: string): ModelContent => ({ role: 'user', parts: [{ text }] });
const model = (text: string): ModelContent => ({ role: 'model', parts: [{ text }] });
const toolCall = (name: string): ModelContent => ({ role: 'model', parts: [{ functionCall: { name, args: {} } }] });
const toolResult = (name: string): ModelContent => ({ role: 'user', parts: [{ functionResponse: { name, response: { output: 'ok' } } }] });
const req = (...contents: ModelContent[]): ModelRequest => ({ contents, tools: [] });
const never = new AbortController().signal;

const script: ModelScript = {
  scripts: [
    { when: '^echo', steps: [{ echo: true }] },
    {
      when: 'weather',
      steps: [
        {
          chunks: [
            [{ text: 'Checking', thought: true }],
            [{ text: 'Let me look.' }, { functionCall: { id: 'w1', name: 'get_weather', args: { city: 'Paris' } } }],
          ],
        },
        { chunks: [[{ text: 'It is ' }], [{ text: 'sunny.' }]] },
      ],
    },
    { steps: [{ chunks: [[{ text: 'step 0' }]] }, { chunks: [[{ text: 'step 1' }]] }] },
  ],
};

t.test('picks the step from the number of model turns after the latest prompt', async (t) => {
  const client = new ScriptedModelClient(script);
  t.equal(client.model, 'scripted');
  t.same(await collect(client.generate(req(user('what is the weather')), never)), [
    { parts: [{ text: 'Checking', thought: true }] },
    { parts: [{ text: 'Let me look.' }, { functionCall: { id: 'w1', name: 'get_weather', args: { city: 'Paris' } } }] },
  ]);
  const afterTool = req(user('what is the weather'), toolCall('get_weather'), toolResult('get_weather'));
  t.same(await collect(client.generate(afterTool, never)), [{ parts: [{ text: 'It is ' }] }, { parts: [{ text: 'sunny.' }] }]);
});

t.test('a new prompt restarts the count, and `when` picks the entry', async (t) => {
  const client = new ScriptedModelClient(script);
  const history = req(user('weather?'), toolCall('get_weather'), toolResult('get_weather'), model('It is sunny.'), user('thanks'));
  t.same(await collect(client.generate(history, never)), [{ parts: [{ text: 'step 0' }] }]);
  t.same(locatePrompt(history.contents), { text: 'thanks', stepIndex: 0 });
  t.same(locatePrompt([...history.contents, model('x')]), { text: 'thanks', stepIndex: 1 });
  t.same(locatePrompt([]), { text: '', stepIndex: 0 });
});

t.test('echo answers with the latest user text', async (t) => {
  const client = new ScriptedModelClient(script);
  t.same(await collect(client.generate(req(user('first'), model('step 0'), user('echo this please')), never)), [
    { parts: [{ text: 'You said: echo this please' }] },
  ]);
});

t.test('past the last step the script says it has finished', async (t) => {
  const client = new ScriptedModelClient(script);
  const history = req(user('hi'), model('step 0'), model('step 1'));
  t.same(await collect(client.generate(history, never)), [{ parts: [{ text: SCRIPT_FINISHED_TEXT }] }]);
  t.equal(SCRIPT_FINISHED_TEXT, '(script finished)');
});

t.test('no matching entry yields an explanatory text', async (t) => {
  const client = new ScriptedModelClient({ model: 'm1', scripts: [{ when: 'never-matches', steps: [] }] });
  t.equal(client.model, 'm1');
  t.same(await collect(client.generate(req(user('hi')), never)), [{ parts: [{ text: NO_SCRIPT_MATCH_TEXT }] }]);
});

t.test('is stateless: interleaved conversations each get their own step', async (t) => {
  const client = new ScriptedModelClient({
    scripts: [{ steps: [{ chunks: [[{ text: 'a' }], [{ text: 'b' }]], delayMs: 5 }, { chunks: [[{ text: 'second' }]] }] }],
  });
  const one = client.generate(req(user('one')), never)[Symbol.asyncIterator]();
  const two = client.generate(req(user('two'), model('ab')), never)[Symbol.asyncIterator]();
  const three = client.generate(req(user('three')), never)[Symbol.asyncIterator]();
  t.same((await one.next()).value, { parts: [{ text: 'a' }] });
  t.same((await two.next()).value, { parts: [{ text: 'second' }] });
  t.same((await three.next()).value, { parts: [{ text: 'a' }] });
  t.same((await one.next()).value, { parts: [{ text: 'b' }] });
  t.equal((await two.next()).done, true);
  t.same((await three.next()).value, { parts: [{ text: 'b' }] });
  t.equal((await one.next()).done, true);
  const all = await Promise.all(
    [0, 1, 2, 3].map((i) => collect(client.generate(req(user(`c${i}`), ...(i % 2 ? [model('x')] : [])), never))),
  );
  t.same(
    all.map((c) => c.map((ch) => ch.parts[0].text).join('')),
    ['ab', 'second', 'ab', 'second'],
  );
});

t.test('yields copies: mutating a chunk does not change the script', async (t) => {
  const client = new ScriptedModelClient(script);
  const [first] = await collect(client.generate(req(user('echo x')), never));
  first.parts[0].text = 'mutated';
  const chunks = await collect(client.generate(req(user('weather')), never));
  (chunks[1].parts[1].functionCall!.args as Record<string, unknown>).city = 'Rome';
  const again = await collect(client.generate(req(user('weather')), never));
  t.same(again[1].parts[1].functionCall!.args, { city: 'Paris' });
});

t.test('honours delayMs and aborts promptly during a delay', async (t) => {
  const client = new ScriptedModelClient({ scripts: [{ steps: [{ chunks: [[{ text: 'a' }], [{ text: 'b' }]], delayMs: 5000 }] }] });
  const controller = new AbortController();
  const started = Date.now();
  setTimeout(() => controller.abort(), 50);
  await t.rejects(collect(client.generate(req(user('x')), controller.signal)), { name: 'AbortError' });
  t.ok(Date.now() - started < 1000, 'stopped during the delay');

  const aborted = new AbortController();
  aborted.abort();
  await t.rejects(collect(client.generate(req(user('x')), aborted.signal)), { name: 'AbortError' });

  const paced = new ScriptedModelClient({ scripts: [{ steps: [{ chunks: [[{ text: 'a' }], [{ text: 'b' }]], delayMs: 30 }] }] });
  const t0 = Date.now();
  await collect(paced.generate(req(user('x')), never));
  t.ok(Date.now() - t0 >= 55, 'waited before each chunk');
});

t.test('aborting between chunks stops the stream', async (t) => {
  const client = new ScriptedModelClient({ scripts: [{ steps: [{ chunks: [[{ text: 'a' }], [{ text: 'b' }]] }] }] });
  const controller = new AbortController();
  const got: string[] = [];
  await t.rejects(
    async () => {
      for await (const chunk of client.generate(req(user('x')), controller.signal)) {
        got.push(chunk.parts[0].text!);
        controller.abort();
      }
    },
    { name: 'AbortError' },
  );
  t.same(got, ['a']);
});

t.test('parseModelScript names the bad field', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    [[], /^src\.json: \(root\): must be an object$/],
    [{}, /^src\.json: scripts: must be an array$/],
    [{ scripts: [] }, /scripts: must hold at least one entry/],
    [{ scripts: [{ steps: [] }], modle: 'x' }, /^src\.json: modle: unknown field/],
    [{ model: 3, scripts: [{ steps: [] }] }, /^src\.json: model: must be a non-empty string$/],
    [{ scripts: [{ when: '(', steps: [] }] }, /scripts\[0\]\.when: not a valid regular expression/],
    [{ scripts: [{ when: 1, steps: [] }] }, /scripts\[0\]\.when: must be a string/],
    [{ scripts: [{}] }, /scripts\[0\]\.steps: must be an array/],
    [{ scripts: [{ steps: [{}] }] }, /scripts\[0\]\.steps\[0\]: needs "chunks"/],
    [{ scripts: [{ steps: [{ echo: false }] }] }, /scripts\[0\]\.steps\[0\]\.echo: must be true/],
    [{ scripts: [{ steps: [{ chunks: [[]] }] }] }, /scripts\[0\]\.steps\[0\]\.chunks\[0\]: must hold at least one part/],
    [
      { scripts: [{ steps: [{ chunks: [[{ text: 'a' }]], delayMs: -1 }] }] },
      /scripts\[0\]\.steps\[0\]\.delayMs: must be a non-negative number/,
    ],
    [{ scripts: [{ steps: [{ chunks: [[{ text: 1 }]] }] }] }, /scripts\[0\]\.steps\[0\]\.chunks\[0\]\[0\]\.text: must be a string/],
    [{ scripts: [{ steps: [{ chunks: [[{ thought: true }]] }] }] }, /chunks\[0\]\[0\]: a part needs "text" or "functionCall"/],
    [{ scripts: [{ steps: [{ chunks: [[{ text: 'a', thought: 'yes' }]] }] }] }, /chunks\[0\]\[0\]\.thought: must be a boolean/],
    [{ scripts: [{ steps: [{ chunks: [[{ functionCal: {} }]] }] }] }, /chunks\[0\]\[0\]\.functionCal: unknown field/],
    [
      { scripts: [{ steps: [{ chunks: [[{ text: 'a' }], [{ functionCall: { args: {} } }]] }] }] },
      /^src\.json: scripts\[0\]\.steps\[0\]\.chunks\[1\]\[0\]\.functionCall\.name: must be a non-empty string$/,
    ],
    [{ scripts: [{ steps: [{ chunks: [[{ functionCall: { name: 'f', args: [] } }]] }] }] }, /functionCall\.args: must be an object/],
  ];
  for (const [json, pattern] of cases) t.throws(() => parseModelScript(json, 'src.json'), pattern, JSON.stringify(json));
  t.same(parseModelScript({ scripts: [{ steps: [{ echo: true, delayMs: 1 }] }] }, 's'), {
    scripts: [{ steps: [{ echo: true, delayMs: 1 }] }],
  });
});

t.test('loadModelScript reports missing files and bad JSON by name', async (t) => {
  const dir = t.testdir({
    'bad.json': '{ "scripts": [',
    'good.json': JSON.stringify({ scripts: [{ steps: [{ echo: true }] }] }),
    'wrong.json': '{"scripts": 1}',
  });
  t.throws(() => loadModelScript(`${dir}/missing.json`), /Cannot read model script .*missing\.json: file not found/);
  t.throws(() => loadModelScript(`${dir}/bad.json`), /Model script .*bad\.json is not valid JSON/);
  t.throws(() => loadModelScript(`${dir}/wrong.json`), /wrong\.json: scripts: must be an array/);
  t.same(loadModelScript(`${dir}/good.json`), { scripts: [{ steps: [{ echo: true }] }] });
});

t.test('the bundled demo script parses and plays list → write → summary', async (t) => {
  t.match(DEMO_SCRIPT_FILE, /demo-script\.json$/);
  const client = new ScriptedModelClient(loadDemoScript());
  t.equal(client.model, 'scripted');
  const step0 = await collect(client.generate(req(user('anything at all')), never));
  t.same(step0[0].parts, [{ text: '**Planning** Writing a notes file', thought: true }]);
  t.same(step0[1].parts[1].functionCall, { name: 'list_directory', args: { dir_path: '.' } });

  const h1 = req(user('anything at all'), { role: 'model', parts: step0.flatMap((c) => c.parts) }, toolResult('list_directory'));
  const step1 = await collect(client.generate(h1, never));
  t.same(step1[0].parts[1].functionCall, {
    name: 'write_file',
    args: { file_path: 'NOTES.md', content: '# Notes\n\nWritten by the demo agent (scripted model).\n' },
  });

  const h2 = req(...h1.contents, { role: 'model', parts: step1[0].parts }, toolResult('write_file'));
  const step2 = await collect(client.generate(h2, never));
  t.ok(step2.length >= 2 && step2.length <= 3, 'final text in 2-3 chunks');
  t.equal(
    step2.map((c) => c.parts[0].text).join(''),
    'Done: NOTES.md is written. This was the scripted demo model; set GEMINI_API_KEY to use Gemini.',
  );

  const step3 = await collect(client.generate(req(...h2.contents, model('done')), never));
  t.same(step3, [{ parts: [{ text: SCRIPT_FINISHED_TEXT }] }]);
});
