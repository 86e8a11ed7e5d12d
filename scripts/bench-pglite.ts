/**
 * Per-statement time through the PGlite worker thread, with and without prepared statements:
 * `npm run bench:pglite [-- --statements 2000 --rounds 5]` (not in CI).
 *
 * Two in-memory workers, one with `statementCache: 0` (every statement through PGlite's
 * `query()`, as before src/store/pglite-prepared.ts) and one with the default cache, run the
 * same typical statements in alternating rounds: an insert of an event-like row (text, int,
 * jsonb, timestamptz) and a select of it by key, outside a transaction and inside one (as the
 * store's commits do). Prints the median microseconds per statement of each kind: wall time, and
 * CPU time of the process (both threads), which a busy machine disturbs less.
 */
import { performance } from 'node:perf_hooks';
import { PgliteThread } from '../src/store/pglite-thread.js';
import { numberFlag } from './bench/flags.js';

const statements = numberFlag('statements', 2000);
const rounds = numberFlag('rounds', 5);

const INSERT = 'insert into ev (task_id, seq, body, at) values ($1, $2, $3, $4)';
const SELECT = 'select task_id, seq, body, at from ev where task_id = $1 and seq = $2';
/** drizzle's PGlite driver asks for every statement this way. */
const DRIZZLE = { rowMode: 'array' as const, parsers: { 1184: (v: string) => v } };

async function start(statementCache?: number): Promise<PgliteThread> {
  const thread = await PgliteThread.start(statementCache === undefined ? {} : { statementCache });
  await thread.exec('create table ev (task_id text, seq int, body jsonb not null, at timestamptz not null, primary key (task_id, seq))');
  return thread;
}

type Kind = 'insert' | 'select' | 'insert in tx' | 'select in tx';
/** Microseconds per statement: wall, CPU. */
type Time = [number, number];

/** Microseconds per statement of each kind for one round of `statements` of each. */
async function round(thread: PgliteThread, tag: string): Promise<Record<Kind, Time>> {
  const row = (i: number) => [`${tag}-${i}`, i, { kind: 'status-update', state: 'working', text: `step ${i}` }, new Date()];
  const time = async (run: (i: number) => Promise<unknown>): Promise<Time> => {
    const [t0, cpu0] = [performance.now(), process.cpuUsage()];
    for (let i = 0; i < statements; i++) await run(i);
    const cpu = process.cpuUsage(cpu0);
    return [((performance.now() - t0) * 1000) / statements, (cpu.user + cpu.system) / statements];
  };
  const insert = await time((i) => thread.query(INSERT, row(i), DRIZZLE));
  const select = await time((i) => thread.query(SELECT, [`${tag}-${i}`, i], DRIZZLE));
  let inTx: { insert: Time; select: Time } | undefined;
  await thread.transaction(async (tx) => {
    const ins = await time((i) => tx.query(INSERT, row(statements + i), DRIZZLE));
    const sel = await time((i) => tx.query(SELECT, [`${tag}-${statements + i}`, statements + i], DRIZZLE));
    inTx = { insert: ins, select: sel };
  });
  return { insert, select, 'insert in tx': inTx!.insert, 'select in tx': inTx!.select };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const before = await start(0);
const after = await start();
const times: Record<'before' | 'after', Record<Kind, Time>[]> = { before: [], after: [] };
for (let r = 0; r < rounds; r++) {
  times.before.push(await round(before, `b${r}`));
  times.after.push(await round(after, `a${r}`));
}
await before.close();
await after.close();

console.log(`µs per statement, median of ${rounds} rounds of ${statements}: query() → prepared (ratio)`);
for (const kind of ['insert', 'select', 'insert in tx', 'select in tx'] as Kind[]) {
  const cells = ['wall', 'cpu'].map((label, m) => {
    const b = median(times.before.map((t) => t[kind][m]));
    const a = median(times.after.map((t) => t[kind][m]));
    return `${label} ${b.toFixed(0).padStart(5)} → ${a.toFixed(0).padStart(5)} (${(b / a).toFixed(2)}×)`;
  });
  console.log(kind.padEnd(13), cells.join('   '));
}
