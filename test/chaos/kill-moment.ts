/**
 * When the chaos suites kill: after a random number of SSE events seen by the clients (a
 * moment somewhere in the load, whatever the machine's speed), drawn from a seeded generator
 * so a run can be replayed with CHAOS_SEED.
 */
import type { FlowRecord } from './flows.js';

/** The run's seed: CHAOS_SEED, else a random one (printed by the suites). */
export const SEED = Number(process.env.CHAOS_SEED ?? Math.floor(Math.random() * 2 ** 31));

/** mulberry32: a small seeded generator of numbers in [0, 1). */
export function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let x = Math.imul(a ^ (a >>> 15), 1 | a);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

/** SSE events the clients have seen so far, over all their streams. */
export const eventsSeen = (flows: FlowRecord[]): number => flows.reduce((n, f) => n + f.streams.reduce((m, s) => m + s.length, 0), 0);
