/**
 * Is the event loop free? GETs the agent card on a fixed schedule while some work runs. Client
 * and server share the test's event loop, so each latency counts from when its GET was due, not
 * from when it was sent: a blocked loop delays the sending too, and must show.
 */
import type { TestServer } from './server.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** GETs the card every `everyMs` until `done` settles (and at least `min` times, at most `max`). */
export async function pollAgentCard(
  srv: Pick<TestServer, 'url'>,
  done: Promise<unknown>,
  { everyMs = 50, min = 5, max = 2_000 }: { everyMs?: number; min?: number; max?: number } = {},
): Promise<{ status: number; ms: number }[]> {
  let settled = false;
  // Both handlers only set a flag: this promise cannot reject.
  void done.then(
    () => (settled = true),
    () => (settled = true),
  );
  const out: { status: number; ms: number }[] = [];
  const start = performance.now();
  while ((!settled || out.length < min) && out.length < max) {
    const due = start + out.length * everyMs;
    await sleep(Math.max(0, due - performance.now()));
    const res = await fetch(new URL('/.well-known/agent-card.json', srv.url));
    await res.json();
    out.push({ status: res.status, ms: performance.now() - due });
  }
  return out;
}
