/**
 * A store that fails on demand: it passes every call through to a real store (the in-memory
 * one), counts them, and rejects chosen calls as a database blip would. Tests use it to check
 * that a failure at any await of a flow fails one task, never the process. Every test that
 * arms a fault asserts, through `fired`, that the fault was hit: a fault armed past the end of
 * the flow would otherwise pass as a clean run.
 */
import type { TaskStore } from '../../src/agent/task-store.js';
import type { PushStore } from '../../src/push/push-store.js';
import type { MemoryTaskStore } from '../../src/store/memory-store.js';

export type Store = TaskStore & PushStore;

/** Methods that never reach the database (lifecycle, listeners). */
const UNCOUNTED = new Set(['close', 'subscribe', 'connect']);

export class DatabaseBlip extends Error {
  /** SQLSTATE 08006, connection failure: the outcome of the statement is unknown. */
  readonly code = '08006';

  constructor(method: string) {
    super(`connection to the database was lost during ${method} (test blip)`);
  }
}

export interface FaultyStore {
  store: Store;
  /** Every counted call so far, in order, by method name. */
  calls: string[];
  /** The calls rejected so far, in order, by method name. */
  fired: string[];
  /**
   * Rejects the `n`-th call from now on (1 = the next one) to `method` (any method when
   * omitted), and the `times - 1` calls to it after that: a store that stays down a while.
   */
  failAt(n: number, method?: string, times?: number): void;
  /**
   * Lets the `n`-th call from now on to `method` reach the store, then rejects it as a lost
   * connection: the statement committed, and the caller cannot know.
   */
  loseReplyAt(n: number, method: string): void;
}

export function faultyStore(inner: MemoryTaskStore): FaultyStore {
  const calls: string[] = [];
  const fired: string[] = [];
  let armed: { left: number; method?: string; times: number; committed?: boolean } | undefined;
  const store = new Proxy(inner, {
    get(target, prop, receiver) {
      const value: unknown = Reflect.get(target, prop, receiver);
      if (typeof prop !== 'string' || typeof value !== 'function') return value;
      const fn = value as (...args: unknown[]) => unknown;
      // Own properties are the store's internals (its notification handler), not port methods.
      if (UNCOUNTED.has(prop) || Object.prototype.hasOwnProperty.call(target, prop)) return fn.bind(target);
      return (...args: unknown[]) => {
        calls.push(prop);
        if (armed && (armed.method === undefined || armed.method === prop) && --armed.left <= 0) {
          const committed = armed.committed === true;
          if (--armed.times <= 0) armed = undefined;
          fired.push(prop);
          if (committed) return (fn.apply(target, args) as Promise<unknown>).then(() => Promise.reject(new DatabaseBlip(prop)));
          return Promise.reject(new DatabaseBlip(prop));
        }
        return fn.apply(target, args);
      };
    },
  });
  return {
    store,
    calls,
    fired,
    failAt: (n, method, times = 1) => {
      armed = { left: n, method, times };
    },
    loseReplyAt: (n, method) => {
      armed = { left: n, method, times: 1, committed: true };
    },
  };
}
