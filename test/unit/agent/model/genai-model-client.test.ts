import t from 'tap';
import { GenaiModelClient } from '../../../../src/agent/model/genai-model-client.js';
import { ModelError } from '../../../../src/agent/model/model-client.js';
import type { ModelChunk, ModelRequest } from '../../../../src/agent/model/model-client.js';
import { candidateChunk, fnCallChunk, startFakeGemini, textChunk } from '../../../support/fake-gemini.js';
import type { FakeGemini } from '../../../support/fake-gemini.js';

const API_KEY = 'test-key-SECRET-1234';
const MODEL = 'gemini-test';

const request: ModelRequest = {
  systemInstruction: 'You are a test agent.',
  contents: [{ role: 'user', parts: [{ text: 'hello' }] }],
  tools: [
    {
      name: 'read_file',
      description: 'Reads a file',
      parameters: { type: 'object', properties: { file_path: { type: 'string' } }, required: ['file_path'] },
    },
  ],
};

async function collect(stream: AsyncIterable<ModelChunk>): Promise<ModelChunk[]> {
  const out: ModelChunk[] = [];
  for await (const chunk of stream) out.push(chunk);
  return out;
}

async function failure(stream: AsyncIterable<ModelChunk>): Promise<Error> {
  try {
    await collect(stream);
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected the stream to fail');
}

let fake: FakeGemini;
t.before(async () => {
  fake = await startFakeGemini();
});
t.teardown(() => fake.close());

function client(includeThoughts = false): GenaiModelClient {
  return new GenaiModelClient({ model: MODEL, apiKey: API_KEY, baseUrl: fake.url, includeThoughts });
}

t.test('streams text in several chunks and sends the request the API expects', async (t) => {
  const before = fake.requests.length;
  fake.enqueue({ chunks: [textChunk('Hel'), textChunk('lo, '), textChunk('world', { finishReason: 'STOP' })] });
  const chunks = await collect(client().generate(request, new AbortController().signal));
  t.same(chunks, [{ parts: [{ text: 'Hel' }] }, { parts: [{ text: 'lo, ' }] }, { parts: [{ text: 'world' }] }]);

  t.equal(fake.requests.length, before + 1, 'one HTTP request, no retry');
  const sent = fake.requests[before];
  t.equal(sent.url, `/v1beta/models/${MODEL}:streamGenerateContent?alt=sse`);
  t.equal(sent.headers['x-goog-api-key'], API_KEY);
  const body = sent.body as Record<string, any>;
  t.same(body.contents, [{ role: 'user', parts: [{ text: 'hello' }] }]);
  t.same(body.systemInstruction.parts, [{ text: 'You are a test agent.' }]);
  t.equal(body.tools[0].functionDeclarations[0].name, 'read_file');
  t.same(body.tools[0].functionDeclarations[0].parametersJsonSchema, request.tools[0].parameters);
  t.notOk(body.generationConfig?.thinkingConfig, 'no thinkingConfig unless asked');
});

t.test('maps a function call with args and id', async (t) => {
  fake.enqueue({ chunks: [fnCallChunk('read_file', { file_path: 'a.txt' }, 'call-1', { finishReason: 'STOP' })] });
  const chunks = await collect(client().generate(request, new AbortController().signal));
  t.same(chunks, [{ parts: [{ functionCall: { id: 'call-1', name: 'read_file', args: { file_path: 'a.txt' } } }] }]);
});

t.test('passes thought parts through and asks for them with includeThoughts', async (t) => {
  const before = fake.requests.length;
  fake.enqueue({
    chunks: [
      textChunk('**Thinking** about it', { thought: true }),
      candidateChunk([{ text: 'Answer' }, { functionCall: { name: 'read_file', args: {} } }], 'STOP'),
    ],
  });
  const chunks = await collect(client(true).generate(request, new AbortController().signal));
  t.same(chunks, [
    { parts: [{ text: '**Thinking** about it', thought: true }] },
    { parts: [{ text: 'Answer' }, { functionCall: { name: 'read_file', args: {} } }] },
  ]);
  const body = fake.requests[before].body as Record<string, any>;
  t.same(body.generationConfig.thinkingConfig, { includeThoughts: true });
});

t.test('passes thoughtSignature through and echoes it back in history', async (t) => {
  fake.enqueue({
    chunks: [fnCallChunk('read_file', { file_path: 'x' }, undefined, { thoughtSignature: 'c2lnLTE=', finishReason: 'STOP' })],
  });
  const chunks = await collect(client().generate(request, new AbortController().signal));
  t.same(chunks, [{ parts: [{ thoughtSignature: 'c2lnLTE=', functionCall: { name: 'read_file', args: { file_path: 'x' } } }] }]);

  const before = fake.requests.length;
  fake.enqueue({ chunks: [textChunk('ok', { finishReason: 'STOP' })] });
  const history: ModelRequest = {
    ...request,
    contents: [
      ...request.contents,
      { role: 'model', parts: chunks[0].parts },
      { role: 'user', parts: [{ functionResponse: { name: 'read_file', response: { output: 'data' } } }] },
    ],
  };
  await collect(client().generate(history, new AbortController().signal));
  const body = fake.requests[before].body as Record<string, any>;
  t.equal(body.contents[1].parts[0].thoughtSignature, 'c2lnLTE=');
  t.same(body.contents[2].parts[0].functionResponse, { name: 'read_file', response: { output: 'data' } });
});

t.test('skips empty chunks; one that carries only token counts is kept for them', async (t) => {
  fake.enqueue({
    chunks: [
      textChunk('a'),
      candidateChunk([]),
      textChunk(''),
      { usageMetadata: { totalTokenCount: 3 } },
      textChunk('b', { finishReason: 'STOP' }),
    ],
  });
  const chunks = await collect(client().generate(request, new AbortController().signal));
  t.same(chunks, [
    { parts: [{ text: 'a' }] },
    { parts: [], usage: { promptTokenCount: 0, candidatesTokenCount: 0, totalTokenCount: 3, cachedContentTokenCount: 0 } },
    { parts: [{ text: 'b' }] },
  ]);
});

t.test("usageMetadata: each chunk's counts, named as the API names them", async (t) => {
  const usage = { promptTokenCount: 11, candidatesTokenCount: 5, totalTokenCount: 16, cachedContentTokenCount: 4 };
  fake.enqueue({ chunks: [{ ...textChunk('x', { finishReason: 'STOP' }), usageMetadata: { ...usage, thoughtsTokenCount: 2 } }] });
  const chunks = await collect(client().generate(request, new AbortController().signal));
  t.same(chunks, [{ parts: [{ text: 'x' }], usage }]);
});

const statusCases = [
  { status: 429, apiStatus: 'RESOURCE_EXHAUSTED', retryable: true, phrase: /quota exhausted/ },
  { status: 500, apiStatus: 'INTERNAL', retryable: true, phrase: /unavailable or failed/ },
  { status: 503, apiStatus: 'UNAVAILABLE', retryable: true, phrase: /unavailable or failed/ },
  { status: 400, apiStatus: 'INVALID_ARGUMENT', retryable: false, phrase: /rejected the request as invalid/ },
  { status: 401, apiStatus: 'UNAUTHENTICATED', retryable: false, phrase: /rejected the API key/ },
  { status: 403, apiStatus: 'PERMISSION_DENIED', retryable: false, phrase: /rejected the API key \(HTTP 403/ },
  { status: 404, apiStatus: 'NOT_FOUND', retryable: false, phrase: /model "gemini-test" was not found/ },
];

for (const c of statusCases) {
  t.test(`HTTP ${c.status} → ModelError retryable=${c.retryable}`, async (t) => {
    const before = fake.requests.length;
    const apiMessage = `The fake says ${c.apiStatus} for key ${API_KEY}`;
    fake.enqueue({ status: c.status, error: { code: c.status, message: apiMessage, status: c.apiStatus } });
    const err = await failure(client().generate(request, new AbortController().signal));
    t.ok(err instanceof ModelError, 'is a ModelError');
    const me = err as ModelError;
    t.equal(me.retryable, c.retryable);
    t.equal(me.status, c.status);
    t.equal(me.code, 'AGENT_ERR_MODEL_CALL');
    t.match(me.message, c.phrase);
    t.match(me.message, `HTTP ${c.status} ${c.apiStatus}`);
    t.match(me.message, 'The fake says', "includes the API's own message");
    t.notMatch(me.message, API_KEY, 'never includes the API key');
    t.equal(fake.requests.length, before + 1, 'the SDK did not retry');
  });
}

t.test('a 400 about the API key is reported as a key problem', async (t) => {
  fake.enqueue({
    status: 400,
    error: { code: 400, message: 'API key not valid. Please pass a valid API key.', status: 'INVALID_ARGUMENT' },
  });
  const err = (await failure(client().generate(request, new AbortController().signal))) as ModelError;
  t.equal(err.retryable, false);
  t.match(err.message, /rejected the API key \(HTTP 400 INVALID_ARGUMENT\): API key not valid/);
});

t.test('a refused connection is a retryable network failure', async (t) => {
  const dead = await startFakeGemini();
  const url = dead.url;
  await dead.close();
  const c = new GenaiModelClient({ model: MODEL, apiKey: API_KEY, baseUrl: url });
  const err = (await failure(c.generate(request, new AbortController().signal))) as ModelError;
  t.ok(err instanceof ModelError);
  t.equal(err.retryable, true);
  t.match(
    err.message,
    /Network failure talking to the Gemini API at http:\/\/127\.0\.0\.1:\d+ \(ECONNREFUSED\): fetch failed: connect ECONNREFUSED/,
  );
});

t.test('a connection dropped mid-stream is retryable, after the chunks already received', async (t) => {
  fake.enqueue({ chunks: [textChunk('partial'), textChunk('never')], destroyAfter: 1 });
  const got: ModelChunk[] = [];
  let caught: unknown;
  try {
    for await (const chunk of client().generate(request, new AbortController().signal)) got.push(chunk);
  } catch (err) {
    caught = err;
  }
  t.same(got, [{ parts: [{ text: 'partial' }] }]);
  t.ok(caught instanceof ModelError);
  t.equal((caught as ModelError).retryable, true);
  t.match((caught as ModelError).message, /Network failure .*UND_ERR_SOCKET.*terminated: other side closed/);
});

t.test('a prompt blocked for safety is a non-retryable ModelError naming the reason', async (t) => {
  fake.enqueue({ chunks: [{ promptFeedback: { blockReason: 'PROHIBITED_CONTENT' } }] });
  const err = (await failure(client().generate(request, new AbortController().signal))) as ModelError;
  t.ok(err instanceof ModelError);
  t.equal(err.retryable, false);
  t.match(err.message, /blocked the prompt.*PROHIBITED_CONTENT/);
});

t.test('an answer withheld with finishReason SAFETY and no content is a ModelError', async (t) => {
  fake.enqueue({
    chunks: [
      {
        candidates: [
          {
            finishReason: 'SAFETY',
            index: 0,
            safetyRatings: [{ category: 'HARM_CATEGORY_DANGEROUS_CONTENT', probability: 'HIGH', blocked: true }],
          },
        ],
      },
    ],
  });
  const err = (await failure(client().generate(request, new AbortController().signal))) as ModelError;
  t.ok(err instanceof ModelError);
  t.equal(err.retryable, false);
  t.match(err.message, /finishReason SAFETY.*HARM_CATEGORY_DANGEROUS_CONTENT/);
});

t.test('aborting while the API hangs ends promptly with AbortError', async (t) => {
  fake.enqueue({ hang: true });
  const controller = new AbortController();
  const started = Date.now();
  setTimeout(() => controller.abort(), 100);
  const err = await failure(client().generate(request, controller.signal));
  t.equal(err.name, 'AbortError');
  t.notOk(err instanceof ModelError, 'not wrapped as a ModelError');
  t.ok(Date.now() - started < 2000, `finished in ${Date.now() - started} ms`);
});

t.test('aborting mid-stream ends with AbortError', async (t) => {
  fake.enqueue({ chunks: [textChunk('one'), textChunk('two'), textChunk('three')], delayMs: 200 });
  const controller = new AbortController();
  const got: ModelChunk[] = [];
  let caught: unknown;
  try {
    for await (const chunk of client().generate(request, controller.signal)) {
      got.push(chunk);
      controller.abort();
    }
  } catch (err) {
    caught = err;
  }
  t.equal(got.length, 1);
  t.equal((caught as Error).name, 'AbortError');
});

t.test('an already aborted signal fails before any request', async (t) => {
  const before = fake.requests.length;
  const controller = new AbortController();
  controller.abort();
  const err = await failure(client().generate(request, controller.signal));
  t.equal(err.name, 'AbortError');
  t.equal(fake.requests.length, before);
});

t.test('the fake answers 500 with a clear message when nothing is queued', async (t) => {
  const err = (await failure(client().generate(request, new AbortController().signal))) as ModelError;
  t.equal(err.retryable, true);
  t.match(err.message, /nothing queued/);
});

t.test('needs an API key unless vertexai is set', async (t) => {
  t.throws(() => new GenaiModelClient({ model: MODEL }), /apiKey is required/);
});
