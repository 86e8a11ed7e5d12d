/**
 * The benchmark's view of the store: while the bench probes (src/protocol/probe.ts), every
 * store call publishes its duration as a phase: reads as `load`, answer claims and leases as
 * `claim`, group commits as `commit`, anything else as `store`. Otherwise the store itself
 * is returned (no wrapper, no cost).
 */
import { phaseEnd, phaseStart, probing } from '../protocol/probe.js';
import type { Phase } from '../protocol/probe.js';

const CLAIM = new Set(['claimCalls', 'claimAndCommit', 'leaseTasks', 'renewLeases', 'releaseLeases', 'closeTurn', 'settleTurn']);
const COMMIT = new Set(['commit', 'commitWhileAwaiting', 'appendEvent', 'saveCalls']);

/** The phase a store method's time counts under. */
export function storePhase(method: string): Phase {
  if (COMMIT.has(method)) return 'commit';
  if (CLAIM.has(method)) return 'claim';
  if (/^(load|list|find|get|events)/.test(method)) return 'load';
  return 'store';
}

/** `store`, timed per call while probing (checked once, when the app is built). */
export function timedStore<T extends object>(store: T): T {
  if (!probing()) return store;
  return new Proxy(store, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || typeof key !== 'string' || key === 'constructor') return value;
      const phase = storePhase(key);
      return function timed(...args: unknown[]): unknown {
        const started = phaseStart();
        const out: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
        if (out instanceof Promise) return out.finally(() => phaseEnd(phase, started, key));
        phaseEnd(phase, started, key);
        return out;
      };
    },
  });
}
