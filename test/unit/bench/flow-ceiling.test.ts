/**
 * The bench's flow ceiling (scripts/bench/flow-ceiling.ts): the bare Fastify process serves
 * captured frames so that the bench client's flow — with its order, id and SSE-id checks —
 * passes through the same phases as the real server; and the shares it prints.
 */
import t from 'tap';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { captureFlow, flowCeiling, shareOfCeiling } from '../../../scripts/bench/flow-ceiling.js';
import type { FlowFrames } from '../../../scripts/bench/flow-ceiling.js';
import { BenchClient } from '../../../scripts/bench/sse-client.js';
import type { SequentialResult, ThroughputResult } from '../../../scripts/bench/phases.js';
import { summarize } from '../../../scripts/bench/stats.js';

const EXT = 'https://example.test/ext';
let sseId = 0;
const frame = (result: Record<string, unknown>) => `id: ${++sseId}\ndata: ${JSON.stringify({ jsonrpc: '2.0', id: 1, result })}\n\n`;
const update = (state: string, kind: string, status?: string, final = false) =>
  frame({
    kind: 'status-update',
    taskId: 't1',
    contextId: 'c1',
    final,
    metadata: { [EXT]: { kind } },
    status: { state, message: status ? { parts: [{ kind: 'data', data: { tool_call_id: 'call-1', status } }] } : undefined },
  });

/** The 9 frames of an Appendix A confirm flow, as the server sends them (SSE ids 1..9 across both streams). */
function appendixAFrames(): FlowFrames {
  sseId = 0;
  const first = [
    frame({ kind: 'task', id: 't1', contextId: 'c1', status: { state: 'submitted' } }),
    update('working', 'STATE_CHANGE'),
    update('working', 'TOOL_CALL_UPDATE', 'PENDING'),
    update('input-required', 'STATE_CHANGE', undefined, true),
  ];
  const confirm = [
    update('working', 'TOOL_CALL_UPDATE', 'EXECUTING'),
    update('working', 'TOOL_CALL_UPDATE', 'SUCCEEDED'),
    update('working', 'TEXT_CONTENT'),
    update('working', 'TEXT_CONTENT'),
    update('completed', 'STATE_CHANGE', undefined, true),
  ];
  return { first, confirm };
}

t.test('captureFlow keeps the raw frames of a flow that passed, by stream', async (t) => {
  const frames = appendixAFrames();
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      const confirm = (JSON.parse(body) as { params: { message: { taskId?: string } } }).params.message.taskId !== undefined;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end((confirm ? frames.confirm : frames.first).join(''));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const client = new BenchClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}/`, 1);
  const { result, frames: got } = await captureFlow(client);
  client.destroy();
  t.ok(result.ok, result.error ?? 'the flow passed');
  t.same(got, frames, 'the 4 + 5 blocks, verbatim');
});

t.test('bare Fastify in its own process serves the frames through the client checks and the phases', async (t) => {
  const frames = appendixAFrames();
  let pid: number | undefined;
  const c = await flowCeiling(frames, {
    warmupSamples: 1,
    samples: 5,
    clients: [4],
    warmupS: 0.1,
    durationS: 0.4,
    log: () => {},
    onSpawn: (child) => (pid = child.pid),
  });
  t.match(c.fastify, /^5\./, 'the Fastify the server runs');
  t.equal(c.frames, 9);
  t.equal(c.bytes, [...frames.first, ...frames.confirm].join('').length);
  t.equal(c.failed, 0, c.examples.join('; ') || 'no flow failed');
  t.equal(c.first.samples.n, 5);
  t.equal(c.flow.samples.n, 5);
  t.equal(c.runs.length, 1);
  t.ok(c.runs[0].flows > 0, 'flows completed in the window');
  t.ok(pid !== undefined && !alive(pid), 'the ceiling process has ended');
});

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

const seq = (ms: number[]): SequentialResult => ({ samples: summarize(ms), errors: 0, firstFlowMs: ms[0] });
const run = (clients: number, flowsPerS: number, p99: number) => ({ clients, flowsPerS, latency: summarize([p99]) }) as ThroughputResult;

t.test('shareOfCeiling: flows/s as ours / ceiling, latencies as ceiling / ours, only client counts both ran', async (t) => {
  const shares = shareOfCeiling(
    { first: seq([4]), flow: seq([20]), runs: [run(50, 100, 800), run(200, 208, 1000)] },
    { first: seq([1]), flow: seq([2]), runs: [run(200, 2900, 250)] },
  );
  t.same(
    shares.map((s) => [s.key, s.ours, s.ceiling, Math.round(s.pct * 100) / 100]),
    [
      ['fe50', 4, 1, 25],
      ['cf50', 20, 2, 10],
      ['run200-fps', 208, 2900, 7.17],
      ['run200-p99', 1000, 250, 25],
    ],
  );
});
