/**
 * Liveness and readiness for an orchestrator: `GET /healthz` and `GET /readyz`, JSON, no
 * authentication (they carry no data of anyone's), cheap, and outside the approval gate.
 *
 * - `/healthz` — the process is alive and its event loop responsive. That it answers at all says
 *   the loop runs; it is 503 when the loop was blocked for longer than `maxLoopDelayMs` in the
 *   last window (a stall the orchestrator should see even if this probe slipped through).
 * - `/readyz` — this instance should get traffic: the store answers one round trip within
 *   `storeTimeoutMs` (its migrations were applied when it opened), and the server is not
 *   shutting down. 503 with the reason otherwise.
 */
import { monitorEventLoopDelay } from 'node:perf_hooks';
import type { FastifyInstance } from 'fastify';

export interface HealthRoutesOptions {
  /** One round trip to the store; rejects when it cannot be reached. */
  pingStore: () => Promise<void>;
  /** True once the server has begun to shut down. */
  draining: () => boolean;
  /** Readiness fails when the store has not answered within this long (default 2 s). */
  storeTimeoutMs?: number;
  /** Liveness fails when the event loop was blocked longer than this in the last window (default 5 s). */
  maxLoopDelayMs?: number;
}

/** How often the event-loop delay window starts afresh. */
const WINDOW_MS = 10_000;

const NO_STORE = 'no-store';

/** `promise`, or a rejection naming what did not answer within `ms`. */
async function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** The loop-delay histogram of the current window, and of the one before (so a fresh window is never blind). */
function loopDelayMonitor(app: FastifyInstance): () => { maxMs: number; p99Ms: number } {
  const histogram = monitorEventLoopDelay({ resolution: 20 });
  histogram.enable();
  let previousMax = 0;
  const rotate = setInterval(() => {
    previousMax = histogram.max / 1e6;
    histogram.reset();
  }, WINDOW_MS);
  rotate.unref();
  app.addHook('onClose', async () => {
    clearInterval(rotate);
    histogram.disable();
  });
  return () => {
    const max = histogram.count > 0 ? histogram.max / 1e6 : 0;
    const p99 = histogram.count > 0 ? histogram.percentile(99) / 1e6 : 0;
    return { maxMs: Math.round(Math.max(max, previousMax)), p99Ms: Math.round(p99) };
  };
}

export async function healthRoutes(app: FastifyInstance, opts: HealthRoutesOptions): Promise<void> {
  const storeTimeoutMs = opts.storeTimeoutMs ?? 2_000;
  const maxLoopDelayMs = opts.maxLoopDelayMs ?? 5_000;
  const loopDelay = loopDelayMonitor(app);

  app.get('/healthz', async (_request, reply) => {
    const delay = loopDelay();
    reply.header('cache-control', NO_STORE);
    if (delay.maxMs > maxLoopDelayMs) {
      return reply.code(503).send({
        status: 'unhealthy',
        reason: `the event loop was blocked for ${delay.maxMs} ms (more than ${maxLoopDelayMs} ms) in the last ${WINDOW_MS / 1000} s`,
        eventLoopDelayMs: delay,
      });
    }
    return { status: 'ok', eventLoopDelayMs: delay };
  });

  app.get('/readyz', async (_request, reply) => {
    reply.header('cache-control', NO_STORE);
    if (opts.draining()) return reply.code(503).send({ status: 'unavailable', reason: 'shutting down' });
    const started = performance.now();
    try {
      await within(storeTimeoutMs, 'the store', opts.pingStore());
    } catch (err) {
      // The reason names what failed, never the database's address or credentials.
      const detail = err instanceof Error && /did not answer within/.test(err.message) ? err.message : 'the store cannot be reached';
      return reply.code(503).send({ status: 'unavailable', reason: detail });
    }
    return { status: 'ready', storeMs: Math.round((performance.now() - started) * 10) / 10 };
  });
}
