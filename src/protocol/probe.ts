/**
 * Instrumentation hooks for the benchmark (`npm run bench`): phases of a request publish
 * their duration on a diagnostics channel. Nothing subscribes in production, so each hook is
 * a `hasSubscribers` check and no clock read; the bench's probe (scripts/bench/probe.ts,
 * preloaded into the server process) subscribes before the app is built.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { performance } from 'node:perf_hooks';

/**
 * Where a request's time goes: body parse and checks, authentication and permission checks,
 * store reads, answer claims and leases, waiting in the write queue, the group commit,
 * SSE framing (JSON), socket writes; `store` is every other store call.
 */
export type Phase = 'parse' | 'authorize' | 'load' | 'claim' | 'commit wait' | 'commit' | 'encode' | 'write' | 'store';

/** What the phase channel carries. */
export interface PhaseSample {
  phase: Phase;
  ms: number;
  /** What inside the phase (the store method), when the site knows it. */
  detail?: string;
}

export const PHASE_CHANNEL = 'devtool-a2a:phase';

const channel = diagnosticsChannel.channel(PHASE_CHANNEL);

/** True while someone listens (the bench): callers may then measure. */
export function probing(): boolean {
  return channel.hasSubscribers;
}

/** A start mark: performance.now() while probing, else 0 (no clock read). */
export function phaseStart(): number {
  return channel.hasSubscribers ? performance.now() : 0;
}

/** Publishes the time since `start` (a phaseStart() mark) as `phase`; nothing for a 0 mark. */
export function phaseEnd(phase: Phase, start: number, detail?: string): void {
  if (start !== 0 && channel.hasSubscribers) channel.publish({ phase, ms: performance.now() - start, detail } satisfies PhaseSample);
}

/** Publishes a duration measured elsewhere (e.g. Fastify's reply.elapsedTime). */
export function phaseSpent(phase: Phase, ms: number): void {
  if (channel.hasSubscribers) channel.publish({ phase, ms } satisfies PhaseSample);
}
