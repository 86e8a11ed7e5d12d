/** The bench report's "where the time goes" section: per confirm flow, per phase, and the database's traffic. */
import type { Breakdown } from './phase-tally.js';

const f = (n: number, d: number) => (Number.isFinite(n) ? n.toFixed(d) : '–');

/** One table: a column per stretch (sequential flows, each client count), a row per phase. */
export function breakdownLines(
  store: 'pglite' | 'postgres',
  flowMsP50: number,
  columns: Array<{ label: string; b: Breakdown | undefined }>,
): string[] {
  const cols = columns.filter((c): c is { label: string; b: Breakdown } => c.b !== undefined);
  if (cols.length === 0) return ['  where the time goes: not measured (--no-probe, or the probe did not answer)'];
  const out = [
    '  where the time goes, per confirm flow (server-side ms summed per phase; concurrent flows overlap, so under load',
    '  the sums exceed wall time; statements = Execute + simple Query messages, round trips = client sends with nothing',
    `  unanswered before them${store === 'pglite' ? ', here every call into the PGlite engine' : ''}):`,
    `    ${'phase'.padEnd(22)}${cols.map((c) => c.label.padStart(18)).join('')}`,
  ];
  const row = (name: string, pick: (b: Breakdown) => string) =>
    out.push(`    ${name.padEnd(22)}${cols.map((c) => pick(c.b).padStart(18)).join('')}`);
  for (const name of Object.keys(cols[0].b.phases)) {
    row(name, (b) => `${f(b.phases[name]?.ms ?? 0, 2)} ms ×${f(b.phases[name]?.calls ?? 0, 1)}`);
  }
  row('sum of phases', (b) => `${f(b.phaseMs, 2)} ms`);
  if (store === 'pglite') row('in PGlite engine', (b) => `${f(b.engineMs, 2)} ms`);
  row('statements', (b) => f(b.statements, 1));
  row('  of which parsed', (b) => f(b.parses, 1));
  row('round trips', (b) => f(b.roundTrips, 1));
  out.push(`    store calls per flow in the ${cols[0].label} column, most time first:`);
  for (const d of cols[0].b.details.slice(0, 10)) out.push(`      ${d.name.padEnd(34)}${f(d.ms, 2).padStart(9)} ms ×${f(d.calls, 1)}`);
  out.push(
    `    (sequential confirm flow p50, client side: ${f(flowMsP50, 1)} ms; flows measured: ${cols.map((c) => c.b.flows).join(', ')})`,
  );
  return out;
}

/** The same figures for BENCH_RESULT. */
export function breakdownJson(b: Breakdown | undefined) {
  if (!b) return null;
  const r = (n: number) => Math.round(n * 1000) / 1000;
  return {
    flows: b.flows,
    phases_ms: Object.fromEntries(Object.entries(b.phases).map(([k, v]) => [k, r(v.ms)])),
    phase_calls: Object.fromEntries(Object.entries(b.phases).map(([k, v]) => [k, r(v.calls)])),
    store_calls: b.details.slice(0, 12).map((d) => ({ call: d.name, ms: r(d.ms), n: r(d.calls) })),
    statements: r(b.statements),
    parses: r(b.parses),
    round_trips: r(b.roundTrips),
    engine_ms: r(b.engineMs),
  };
}
