/**
 * The supervisor's sweeps made observable, for negative checks ("nothing happens on later
 * sweeps") that must not guess a wall-clock time: a wrapper around the store a server in the
 * test's process is given, which notes when each supervisor pass begins. A pass always
 * starts with `renewLeases` (nothing else calls it) and passes never overlap, so the start of
 * pass k + 1 proves that pass k has ended.
 */
import type { TaskStore } from '../../src/agent/task-store.js';
import type { PushStore } from '../../src/push/push-store.js';
import type { MemoryTaskStore } from '../../src/store/memory-store.js';
import { until } from './core.js';

export interface SweepWatch {
  /** The store to give the server (app.store); every call goes through to the wrapped one. */
  store: TaskStore & PushStore;
  /** Date.now() at the start of each supervisor pass so far. */
  starts: number[];
  /**
   * Waits until `n` supervisor passes that began after `after` (ms since the epoch) have
   * ended; bounded (`timeoutMs`), with an error naming what was seen.
   */
  passesAfter(after: number, n?: number, timeoutMs?: number): Promise<void>;
}

/** Wraps `inner` (e.g. `(await sharedStore()).connect()`); the caller still closes `inner`. */
export function watchSweeps(inner: MemoryTaskStore): SweepWatch {
  const starts: number[] = [];
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      const fn = (value as (...args: unknown[]) => unknown).bind(target);
      if (prop !== 'renewLeases') return fn;
      return (...args: unknown[]) => {
        starts.push(Date.now());
        return fn(...args);
      };
    },
  });
  const passesAfter = async (after: number, n = 1, timeoutMs = 5_000): Promise<void> => {
    // n passes that began after `after` have ended once the (n + 1)-th of them has begun.
    const begunAfter = () => starts.filter((s) => s > after).length;
    try {
      await until(`${n} supervisor pass(es) begun after ${new Date(after).toISOString()} to end`, () => begunAfter() > n, timeoutMs);
    } catch (err) {
      const seen = starts.map((s) => new Date(s).toISOString()).join(', ');
      throw new Error(`${(err as Error).message} (passes began at: ${seen || 'none'})`, { cause: err });
    }
  };
  return { store, starts, passesAfter };
}
