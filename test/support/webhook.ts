/**
 * A real webhook receiver for push-notification tests: Fastify on 127.0.0.1, an ephemeral
 * port that stays the same across stop()/start() (a receiver that goes down and comes back),
 * every request recorded with its headers, raw body and parsed JSON. It answers 200 by
 * default; it can be told to answer another status or to hold its answers (a slow or hung
 * receiver).
 */
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import type { IncomingHttpHeaders } from 'node:http';

interface Teardown {
  teardown(fn: () => unknown): void;
}

/** One request the receiver got. */
export interface Delivery {
  /** Arrival order across the receiver's life (0-based). */
  n: number;
  /** Date.now() at arrival. */
  at: number;
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as received (UTF-8). */
  raw: string;
  /** The body parsed as JSON (undefined when it is not JSON). */
  json: any;
  /** The X-A2A-Event-Id header. */
  eventId?: string;
  /** The status answered; undefined while held, 0 when the connection was gone before the answer. */
  status?: number;
  /** Date.now() when it was answered (or found gone). */
  answeredAt?: number;
}

/**
 * How the receiver answers: a status (200 = accepted), or a status per request, after
 * `delayMs` (Infinity: hold until released or stopped).
 */
export interface Behaviour {
  status: number | ((d: Delivery) => number);
  delayMs: number;
}

export interface WaitOptions {
  /** Only requests to this path (e.g. one config's URL). */
  path?: string;
  /** Bounded wait, ms (default 15 s). */
  timeoutMs?: number;
}

const accepted = (d: Delivery) => d.status !== undefined && d.status >= 200 && d.status < 300;

export class WebhookReceiver {
  /** Every request, in arrival order (accepted or not). */
  readonly requests: Delivery[] = [];
  private app?: FastifyInstance;
  private behaviour: Behaviour = { status: 200, delayMs: 0 };
  private readonly listeners = new Set<() => void>();
  private readonly held = new Set<() => void>();

  private constructor(public port: number) {}

  /** Starts a receiver on a fresh ephemeral port; teardown stops it. */
  static async start(t: Teardown): Promise<WebhookReceiver> {
    const r = new WebhookReceiver(0);
    await r.start();
    t.teardown(() => r.stop());
    return r;
  }

  /** The URL of `path` on this receiver. */
  url(path = '/hook'): string {
    return `http://127.0.0.1:${this.port}${path}`;
  }

  get listening(): boolean {
    return this.app !== undefined;
  }

  /** Requests answered 2xx, optionally to one path. */
  delivered(path?: string): Delivery[] {
    return this.requests.filter((d) => accepted(d) && (path === undefined || d.path === path));
  }

  /** Every request to one path (or all). */
  to(path?: string): Delivery[] {
    return this.requests.filter((d) => path === undefined || d.path === path);
  }

  /**
   * Answer every request from now on with `status` after `delayMs`. Requests held so far are
   * released at once unless `releaseHeld` is false (then they finish their own delay).
   */
  answer(status: number, delayMs = 0, releaseHeld = true): void {
    this.behaviour = { status, delayMs };
    if (releaseHeld) this.release();
  }

  /** Answer each request with the status `pick` chooses for it (e.g. by d.eventId), at once. */
  answerWith(pick: (d: Delivery) => number): void {
    this.behaviour = { status: pick, delayMs: 0 };
    this.release();
  }

  /** Answer 200 at once (the default). */
  ok(): void {
    this.answer(200, 0);
  }

  /** Lets every held request be answered now (with the behaviour it arrived under). */
  release(): void {
    for (const go of [...this.held]) go();
  }

  /** (Re)opens the receiver, on the same port once it has one. */
  async start(): Promise<void> {
    if (this.app) return;
    const app = Fastify({ logger: false, forceCloseConnections: true });
    app.removeAllContentTypeParsers();
    app.addContentTypeParser('*', { parseAs: 'string' }, (_req, body, done) => done(null, body));
    app.all('/*', async (request, reply) => {
      const raw = typeof request.body === 'string' ? request.body : '';
      let json: unknown;
      try {
        json = raw === '' ? undefined : JSON.parse(raw);
      } catch {
        json = undefined;
      }
      const header = request.headers['x-a2a-event-id'];
      const d: Delivery = {
        n: this.requests.length,
        at: Date.now(),
        path: request.url.split('?')[0],
        headers: { ...request.headers },
        raw,
        json,
        eventId: Array.isArray(header) ? header[0] : header,
      };
      this.requests.push(d);
      const { status: pick, delayMs } = this.behaviour;
      const status = typeof pick === 'function' ? pick(d) : pick;
      if (delayMs > 0) await this.hold(delayMs);
      if (request.raw.socket === null || request.raw.socket.destroyed) {
        d.status = 0; // the sender gave up (timeout) or the receiver was stopped
        d.answeredAt = Date.now();
        this.notify();
        return reply.hijack();
      }
      d.status = status;
      d.answeredAt = Date.now();
      this.notify();
      return reply.code(status).send({ ok: status < 300 });
    });
    // A port that was free a moment ago can be taken in between; retry briefly.
    for (let attempt = 0; ; attempt++) {
      try {
        await app.listen({ host: '127.0.0.1', port: this.port });
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt >= 50) throw err;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const address = app.server.address();
    this.port = typeof address === 'object' && address ? address.port : this.port;
    this.app = app;
  }

  /** Closes the port (connections are cut; held requests are dropped). The port is kept for start(). */
  async stop(): Promise<void> {
    const app = this.app;
    if (!app) return;
    this.app = undefined;
    const closing = app.close();
    this.release();
    await closing;
  }

  /**
   * Waits until `count` requests to `path` were accepted (2xx); returns them. Bounded: rejects
   * with what arrived so far.
   */
  waitForDeliveries(count: number, opts: WaitOptions = {}): Promise<Delivery[]> {
    return this.waitUntil(() => this.delivered(opts.path).length >= count, `${count} deliveries`, opts).then(() =>
      this.delivered(opts.path),
    );
  }

  /** Waits until an accepted request to `path` satisfies `pred`; returns it. */
  waitForDelivery(pred: (d: Delivery) => boolean, opts: WaitOptions = {}): Promise<Delivery> {
    const find = () => this.delivered(opts.path).find(pred);
    return this.waitUntil(() => find() !== undefined, 'a matching delivery', opts).then(() => find() as Delivery);
  }

  /** Waits until `count` requests to `path` arrived (whatever they were answered). */
  waitForRequests(count: number, opts: WaitOptions = {}): Promise<Delivery[]> {
    return this.waitUntil(() => this.to(opts.path).length >= count, `${count} requests`, opts).then(() => this.to(opts.path));
  }

  private waitUntil(done: () => boolean, what: string, opts: WaitOptions): Promise<void> {
    if (done()) return Promise.resolve();
    const timeoutMs = opts.timeoutMs ?? 15_000;
    return new Promise((resolve, reject) => {
      const check = () => {
        if (!done()) return;
        cleanup();
        resolve();
      };
      const timer = setTimeout(() => {
        cleanup();
        const seen = this.to(opts.path).map((d) => `${d.eventId ?? '?'}:${d.status ?? 'held'}`);
        reject(
          new Error(
            `webhook: no ${what}${opts.path ? ` on ${opts.path}` : ''} within ${timeoutMs} ms (requests so far: ${seen.join(' ') || 'none'})`,
          ),
        );
      }, timeoutMs);
      const cleanup = () => {
        clearTimeout(timer);
        this.listeners.delete(check);
      };
      this.listeners.add(check);
    });
  }

  private notify(): void {
    for (const l of [...this.listeners]) l();
  }

  private hold(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const go = () => {
        clearTimeout(timer);
        this.held.delete(go);
        resolve();
      };
      const timer = Number.isFinite(ms) ? setTimeout(go, ms) : undefined;
      this.held.add(go);
    });
  }
}
