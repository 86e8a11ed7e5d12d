// The flow ceiling's server (scripts/bench/flow-ceiling.ts starts it as a child process with an IPC
// channel, as the bench starts the real server): bare Fastify — the version the server runs, from
// this repository's node_modules — with no logger, no store and no model. POST / parses the
// JSON-RPC body as the server's route does, then answers as the server's SSE writer
// (src/transport/http/sse.ts) does: hijack, the same head, one write per frame, end. A message
// without a taskId gets the first stream's frames (the new task up to input-required), one with a
// taskId the confirm stream's (EXECUTING up to completed): the frames the bench captured from the
// real server's confirm flow, replayed verbatim. Plain JavaScript, so no TypeScript loader runs here.
import process from 'node:process';
import Fastify from 'fastify';

const HEAD = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  connection: 'keep-alive',
  'x-accel-buffering': 'no',
};

/** Waits for the frames ({ first, confirm }: raw SSE blocks), then listens on a free loopback port. */
process.once('message', async (frames) => {
  const app = Fastify({ logger: false });
  app.post('/', async (request, reply) => {
    const taskId = request.body?.params?.message?.taskId;
    reply.hijack();
    const res = reply.raw;
    res.writeHead(200, HEAD);
    for (const frame of taskId === undefined ? frames.first : frames.confirm) res.write(frame);
    res.end();
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  process.send({ port: app.server.address().port, fastify: app.version });
  process.once('message', () => void app.close().then(() => process.exit(0)));
});
