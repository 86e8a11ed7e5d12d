/**
 * Delivers task events to registered webhooks, from the durable outbox (the task's event
 * log plus each config's cursor, see push-store.ts). Per config, events go out in order,
 * one at a time; a failed attempt is retried with backoff up to a bounded number of
 * attempts, then that event is given up on (counted in `dropped`) and the next one goes.
 * A 4xx answer other than 408/425/429 gives up on the event at once (the receiver refused it).
 * Deliveries run beside the SSE streams and never hold them up: a slow or dead receiver
 * only delays its own config.
 *
 * Each POST carries `X-A2A-Event-Id` (the event's sequence number, the SSE `id:`), the
 * config's token (`X-A2A-Notification-Token`), its Authorization credentials if any, and a
 * JWT signed with the server's key (`Authorization: Bearer`, or `X-A2A-Notification-JWT`
 * when the config brings its own Authorization). The URL is checked against the SSRF guard
 * before every attempt and the connection goes to the address that was checked.
 */
import { Background } from '../lib/background.js';
import http from 'node:http';
import https from 'node:https';
import type { LookupFunction } from 'node:net';
import type { Part, StreamResponse, Task } from '@a2a-js/sdk';
import { V1PushNotificationSerializer } from '@a2a-js/sdk/server';
import { V03PushNotificationSerializer } from '@a2a-js/sdk/compat/v0_3/server';
import { stateName } from '../protocol/a2a.js';
import { isPaused } from '../protocol/task-states.js';
import type { PushSigner } from './push-signer.js';
import type { PushConfigRecord, PushStore } from './push-store.js';
import { backoffDelay, isRetryableStatus, PUSH_MAX_ATTEMPTS, PUSH_RETRY_BASE_MS, PUSH_RETRY_MAX_MS } from './retry-policy.js';
import { checkPushUrl, type LookupFn } from './ssrf-guard.js';
import { NO_METRICS, type Metrics } from '../lib/metrics.js';

/** A pause's push carries the waiting cards (auth-required is a pause too: the owner may decline). */

/** An event of the task log (TaskStore.eventsAfter's shape). */
export interface LoggedEvent {
  seq: number;
  response: StreamResponse;
  final: boolean;
}

/** What the dispatcher reads besides the push tables. */
export interface PushSources {
  eventsAfter(taskId: string, afterSeq: number): Promise<LoggedEvent[]>;
  loadTask(taskId: string): Promise<{ task: Task } | undefined>;
  /** The DataParts of the ToolCalls that were waiting at event `seq` (an input-required push carries them). */
  pendingParts(taskId: string, seq: number): Promise<Part[]>;
}

export interface PushLogger {
  info(obj: object, msg: string): void;
  warn(obj: object, msg: string): void;
}

export interface PushDispatcherOptions {
  store: PushStore;
  sources: PushSources;
  signer: PushSigner;
  /** Lease owner name of this process. */
  owner: string;
  allowPrivate: boolean;
  logger: PushLogger;
  maxAttempts?: number;
  retryBaseMs?: number;
  retryMaxMs?: number;
  /** Per-POST timeout, ms. */
  timeoutMs?: number;
  /** How often the outbox is polled without a kick, ms. */
  pollMs?: number;
  /** Configs worked on at once. */
  concurrency?: number;
  /** DNS lookup (tests). */
  lookup?: LookupFn;
  /** Counts deliveries and retries (default: not counted). */
  metrics?: Metrics;
}

/** `final`: the receiver refused the body (a 4xx other than 408/425/429); retrying will not help. */
type Outcome = { ok: true } | { ok: false; error: string; final?: boolean };

export class PushDispatcher {
  private timer?: NodeJS.Timeout;
  private running = false;
  private again = false;
  private stopped = false;
  private readonly v1 = new V1PushNotificationSerializer();
  private readonly v03 = new V03PushNotificationSerializer();
  /** The outbox pass in progress: its error is logged, and stop() waits for it. */
  private readonly background: Background;
  /**
   * False once a pass found no config at all: event kicks are then ignored (no query per
   * committed event while nobody uses push) until a config is saved here or the poll finds
   * one saved by another process.
   */
  private anyConfigs = true;

  private get metrics(): Metrics {
    return this.opts.metrics ?? NO_METRICS;
  }

  constructor(private readonly opts: PushDispatcherOptions) {
    this.background = new Background((err) => opts.logger.warn({ err: (err as Error).message }, 'push outbox pass failed'));
  }

  start(): void {
    this.timer = setInterval(() => this.kick(true), this.opts.pollMs ?? 1000);
    this.timer.unref();
    this.kick(true);
  }

  /** A config was saved: there is work to look for. */
  configSaved(): void {
    this.anyConfigs = true;
    this.kick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearInterval(this.timer);
    await this.background.drain();
  }

  /** Looks for due deliveries now (called when events are committed; `poll` = the periodic look). */
  kick(poll = false): void {
    if (this.stopped || (!poll && !this.anyConfigs)) return;
    if (this.running) {
      this.again = true;
      return;
    }
    this.running = true;
    this.background.run('push outbox pass', async () => {
      try {
        await this.pass();
      } finally {
        this.running = false;
        if (this.again) {
          this.again = false;
          this.kick();
        }
      }
    });
  }

  private async pass(): Promise<void> {
    const limit = this.opts.concurrency ?? 8;
    // Long enough for a few posts; a process that dies holding it blocks the config this long.
    const lease = (this.opts.timeoutMs ?? 10_000) * 2 + 5_000;
    for (;;) {
      const now = new Date();
      const due = await this.opts.store.claimDuePushes(this.opts.owner, now, new Date(now.getTime() + lease), limit);
      if (due.length === 0) {
        this.anyConfigs = await this.opts.store.hasPushConfigs();
        return;
      }
      await Promise.all(due.map((c) => this.drain(c)));
      if (due.length < limit || this.stopped) return;
    }
  }

  /**
   * Delivers a config's pending events in order until one fails or none are left. The cursor
   * is stored once per batch (and before a retry is scheduled), not per event: after a crash
   * the tail of a batch may go out again, which X-A2A-Event-Id lets receivers drop.
   */
  private async drain(config: PushConfigRecord): Promise<void> {
    const { store, owner } = this.opts;
    let attempts = config.attempts;
    let delivered = config.deliveredSeq;
    const save = async (seq: number, dropped?: string): Promise<boolean> =>
      seq <= config.deliveredSeq && dropped === undefined
        ? true
        : store.advancePush(config.taskId, config.id, owner, seq, dropped === undefined ? {} : { dropped });
    const events = await this.opts.sources.eventsAfter(config.taskId, config.deliveredSeq);
    // v0.3 bodies are the Task snapshot: read it once per batch (each body gets its event's status).
    const task = config.wireVersion === '0.3' && events.length > 0 ? (await this.opts.sources.loadTask(config.taskId))?.task : undefined;
    for (const ev of events) {
      if (this.stopped) break;
      const outcome = await this.deliver(config, ev, task);
      if (outcome.ok) {
        this.metrics.pushDelivered('delivered');
        delivered = ev.seq;
        attempts = 0;
        continue;
      }
      attempts += 1;
      const max = this.opts.maxAttempts ?? PUSH_MAX_ATTEMPTS;
      if (attempts >= max || outcome.final) {
        const reason = `event ${ev.seq} dropped after ${attempts} attempt${attempts === 1 ? '' : 's'}: ${outcome.error}`;
        this.opts.logger.warn({ taskId: config.taskId, configId: config.id, seq: ev.seq }, `push ${reason}`);
        this.metrics.pushDelivered('dropped');
        if (!(await save(ev.seq, reason))) return; // config deleted or lease lost
        delivered = ev.seq;
        attempts = 0;
        continue;
      }
      const delay = backoffDelay(attempts, {
        baseMs: this.opts.retryBaseMs ?? PUSH_RETRY_BASE_MS,
        maxMs: this.opts.retryMaxMs ?? PUSH_RETRY_MAX_MS,
      });
      this.opts.logger.info(
        { taskId: config.taskId, configId: config.id, seq: ev.seq, attempts, retryInMs: delay, error: outcome.error },
        'push delivery failed; will retry',
      );
      this.metrics.pushRetried();
      await store.deferPush(config.taskId, config.id, owner, attempts, new Date(Date.now() + delay), outcome.error, delivered);
      setTimeout(() => this.kick(true), delay + 5).unref();
      return;
    }
    // Everything logged so far went out (or there was nothing): store the cursor, release the lease.
    await store.deferPush(config.taskId, config.id, owner, attempts, new Date(), undefined, delivered).catch(() => undefined);
  }

  /** The body for one event, in the config's A2A version. */
  async body(config: PushConfigRecord, ev: LoggedEvent, snapshot?: Task): Promise<{ body: string; contentType: string }> {
    let response = ev.response;
    const payload = response.payload;
    if (payload?.$case === 'statusUpdate' && isPaused(stateName(payload.value.status?.state))) {
      // A client must be able to draw the approval card from the callback alone: the cards
      // waiting at this event (from the log, so a late delivery still carries them).
      const parts = await this.opts.sources.pendingParts(config.taskId, ev.seq);
      if (parts.length > 0) {
        const update = structuredClone(payload.value);
        if (update.status?.message) update.status.message.parts = [...update.status.message.parts, ...parts];
        response = { payload: { $case: 'statusUpdate', value: update } };
      }
    }
    if (config.wireVersion === '1.0') return this.v1.serialize(response);
    // v0.3: the Task snapshot (as the SDK's v0.3 sender sends it): a Task event is its own
    // snapshot; a status update goes out as the latest snapshot with that event's status.
    const p = response.payload;
    if (p?.$case !== 'statusUpdate') return this.v03.serialize(response);
    let task = snapshot ?? (await this.opts.sources.loadTask(config.taskId))?.task;
    if (task && p.value.status) task = { ...task, status: p.value.status };
    return this.v03.serialize(response, task);
  }

  private async deliver(config: PushConfigRecord, ev: LoggedEvent, task: Task | undefined): Promise<Outcome> {
    const checked = await checkPushUrl(config.url, { allowPrivate: this.opts.allowPrivate, lookup: this.opts.lookup });
    if (!checked.ok) return { ok: false, error: checked.message };
    let body: { body: string; contentType: string };
    try {
      body = await this.body(config, ev, task);
    } catch (err) {
      return { ok: false, error: `could not build the body: ${(err as Error).message}` };
    }
    const jwt = await this.opts.signer.sign({ taskId: config.taskId, eventId: ev.seq, body: body.body });
    const headers: Record<string, string> = {
      'content-type': body.contentType,
      'x-a2a-event-id': String(ev.seq),
      'user-agent': 'devtool-a2a-server push',
    };
    if (config.token) headers['x-a2a-notification-token'] = config.token;
    if (config.authentication) {
      headers.authorization = `${config.authentication.scheme} ${config.authentication.credentials}`.trim();
      headers['x-a2a-notification-jwt'] = jwt;
    } else {
      headers.authorization = `Bearer ${jwt}`;
    }
    return post(checked.url, checked.addresses[0], headers, body.body, this.opts.timeoutMs ?? 10_000);
  }
}

/** POSTs `body`, connecting to `address` (the one the SSRF guard checked), within `timeoutMs`. */
function post(url: URL, address: string | undefined, headers: Record<string, string>, body: string, timeoutMs: number): Promise<Outcome> {
  return new Promise((resolve) => {
    const lookup: LookupFunction | undefined =
      address === undefined
        ? undefined
        : (_host, options, cb) => {
            const family = address.includes(':') ? 6 : 4;
            if ((options as { all?: boolean }).all)
              (cb as unknown as (e: null, a: Array<{ address: string; family: number }>) => void)(null, [{ address, family }]);
            else cb(null, address, family);
          };
    const client = url.protocol === 'https:' ? https : http;
    const req = client.request(
      url,
      { method: 'POST', headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) }, lookup, timeout: timeoutMs },
      (res) => {
        res.resume();
        res.on('end', () => {
          const status = res.statusCode ?? 0;
          resolve(
            status >= 200 && status < 300
              ? { ok: true }
              : { ok: false, error: `receiver answered HTTP ${status}`, final: !isRetryableStatus(status) },
          );
        });
        res.on('error', (err) => resolve({ ok: false, error: err.message }));
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', (err) => resolve({ ok: false, error: (err as NodeJS.ErrnoException).code ?? err.message }));
    req.end(body);
  });
}
