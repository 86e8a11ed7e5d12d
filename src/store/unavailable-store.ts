/**
 * The store as callers see it: a call that fails because the database cannot be reached
 * (restart, failover, a dropped connection; see isStoreUnavailable) rejects with
 * StoreUnavailableError, the driver's error as its cause. Every layer above then tells
 * "try again in a moment" (JSON-RPC -32050 with `data.retryable`, HTTP 503 + Retry-After, an
 * SSE error event) from a bug (-32603), without knowing the driver. Other errors pass as they are.
 */
import { isStoreUnavailable, StoreUnavailableError } from '../protocol/errors.js';

function translate(err: unknown): never {
  throw err instanceof StoreUnavailableError || !isStoreUnavailable(err) ? err : new StoreUnavailableError(err);
}

/** `store`, with its connection-class failures rejected as StoreUnavailableError. */
export function unavailableAware<T extends object>(store: T): T {
  // Keyed by the function itself, not its name: a store may hand out another function under
  // the same name later (a proxy, a method replaced at run time), and that one is what runs.
  const wrapped = new WeakMap<object, unknown>();
  return new Proxy(store, {
    get(target, key, receiver) {
      const value: unknown = Reflect.get(target, key, receiver);
      if (typeof value !== 'function' || key === 'constructor') return value;
      let fn = wrapped.get(value);
      if (fn === undefined) {
        fn = function unavailableAware(...args: unknown[]): unknown {
          const out: unknown = (value as (...a: unknown[]) => unknown).apply(target, args);
          return out instanceof Promise ? out.catch(translate) : out;
        };
        wrapped.set(value, fn);
      }
      return fn;
    },
  });
}
