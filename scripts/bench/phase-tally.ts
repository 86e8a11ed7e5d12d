/**
 * The probe's accumulator and the bench's arithmetic on it: cumulative time and count per
 * phase plus wire totals in the server; the bench takes a snapshot before and after a
 * measured stretch and divides the difference by the flows completed in it.
 */
import { emptyWire } from './wire-count.js';
import type { WireTotals } from './wire-count.js';

/** The phases in the order a confirm flow meets them (src/protocol/probe.ts). */
export const PHASES = ['parse', 'authorize', 'load', 'claim', 'commit wait', 'commit', 'encode', 'write', 'store'] as const;

export interface ProbeSnapshot {
  phases: Record<string, { ms: number; n: number }>;
  /** The same by `<phase>: <detail>` (store calls by method). */
  details: Record<string, { ms: number; n: number }>;
  wire: WireTotals;
}

function bump(map: Map<string, { ms: number; n: number }>, key: string, ms: number): void {
  const t = map.get(key);
  if (t) {
    t.ms += ms;
    t.n++;
  } else map.set(key, { ms, n: 1 });
}

function copy(map: Map<string, { ms: number; n: number }>): Record<string, { ms: number; n: number }> {
  const out: Record<string, { ms: number; n: number }> = {};
  for (const [k, v] of map) out[k] = { ...v };
  return out;
}

export class PhaseTally {
  private readonly phases = new Map<string, { ms: number; n: number }>();
  private readonly details = new Map<string, { ms: number; n: number }>();
  readonly wire: WireTotals = emptyWire();

  add(phase: string, ms: number, detail?: string): void {
    if (!Number.isFinite(ms) || ms < 0) return;
    bump(this.phases, phase, ms);
    if (detail !== undefined) bump(this.details, `${phase}: ${detail}`, ms);
  }

  snapshot(): ProbeSnapshot {
    return { phases: copy(this.phases), details: copy(this.details), wire: { ...this.wire } };
  }
}

/** Per-flow figures of a stretch: ms and calls per phase, statements, parses, round trips. */
export interface Breakdown {
  flows: number;
  phases: Record<string, { ms: number; calls: number }>;
  /** Store calls by method (`<phase>: <method>`), most ms first. */
  details: Array<{ name: string; ms: number; calls: number }>;
  /** Sum of the phases' ms per flow (phases may overlap under concurrency). */
  phaseMs: number;
  statements: number;
  parses: number;
  roundTrips: number;
  engineMs: number;
}

/** (after − before) / flows; undefined without flows. */
export function perFlow(before: ProbeSnapshot, after: ProbeSnapshot, flows: number): Breakdown | undefined {
  if (!(flows > 0)) return undefined;
  const phases: Breakdown['phases'] = {};
  let phaseMs = 0;
  const names = [...PHASES, ...Object.keys(after.phases).filter((k) => !(PHASES as readonly string[]).includes(k))];
  for (const name of names) {
    const a = after.phases[name] ?? { ms: 0, n: 0 };
    const b = before.phases[name] ?? { ms: 0, n: 0 };
    const ms = (a.ms - b.ms) / flows;
    phases[name] = { ms, calls: (a.n - b.n) / flows };
    phaseMs += ms;
  }
  const details = Object.keys(after.details ?? {})
    .map((name) => {
      const a = after.details[name];
      const b = before.details?.[name] ?? { ms: 0, n: 0 };
      return { name, ms: (a.ms - b.ms) / flows, calls: (a.n - b.n) / flows };
    })
    .filter((d) => d.calls > 0)
    .sort((x, y) => y.ms - x.ms);
  const w = (k: keyof WireTotals) => (after.wire[k] - before.wire[k]) / flows;
  return {
    flows,
    phases,
    details,
    phaseMs,
    statements: w('statements'),
    parses: w('parses'),
    roundTrips: w('roundTrips'),
    engineMs: w('engineMs'),
  };
}
