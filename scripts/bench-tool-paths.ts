/**
 * Benchmark of the main thread's time per `write_file` call (a figure printer, never an
 * assertion): the calls a confirm flow makes of the tool, in process, on a real disk — validate
 * (proposed), propose (its card), validate again (judged again before it runs), run (resolve,
 * read, write through the guarded open) — with the server's own files protected as app.ts does.
 * `--concurrency` flows run at once, `--calls` in all, after a warm-up. Prints per call the main
 * thread's CPU time (Linux: /proc/self/task/<pid>/stat, user and system: JavaScript and every
 * synchronous system call), the whole process's (main thread plus libuv's pool), the event loop's
 * busy time (performance.eventLoopUtilization: wall time, so it grows when other processes take
 * the cores), and the wall time of the run.
 *
 *   npm run bench:tool-paths -- [--calls 4000] [--concurrency 200] [--repo <another checkout, e.g. the code before>]
 *
 * Prints a table and one line `BENCH_TOOL_PATHS {...}`.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { flagValue } from './bench/flags.js';

const repoRoot = path.resolve(flagValue('repo') ?? path.join(path.dirname(fileURLToPath(import.meta.url)), '..'));
const calls = Number(flagValue('calls') ?? 4000);
const concurrency = Number(flagValue('concurrency') ?? 200);

interface Validation {
  ok: boolean;
  args?: Record<string, unknown>;
}
interface BenchTool {
  validate(args: Record<string, unknown>, ctx: { workspace: string }): Validation | Promise<Validation>;
  propose(args: Record<string, unknown>, ctx: { workspace: string }): Promise<unknown>;
  run(args: Record<string, unknown>, ctx: { workspace: string; signal: AbortSignal }): Promise<{ isError?: boolean }>;
}
const tools = (await import(pathToFileURL(path.join(repoRoot, 'src/tools/index.ts')).href)) as {
  WriteFileTool: new (o: { protectedPaths: unknown }) => BenchTool;
  ProtectedPaths: new (paths: string[]) => unknown;
};

// A workspace as deep as a developer's checkout, and the server's files beside it (as app.ts protects them).
const root = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'bench-tool-paths-')));
const workspace = path.join(root, 'home/dev/projects/webapp');
mkdirSync(path.join(workspace, 'src/components'), { recursive: true });
const server = path.join(root, 'srv/a2a');
mkdirSync(path.join(server, 'data'), { recursive: true });
const protectedPaths = new tools.ProtectedPaths(['data', 'auth.json', 'settings.json', 'extensions'].map((p) => path.join(server, p)));
const tool = new tools.WriteFileTool({ protectedPaths });
const signal = new AbortController().signal;

/** One confirm flow's calls of the tool; the file is new on every other call (created), else overwritten. */
async function flow(i: number): Promise<void> {
  const ctx = { workspace };
  const raw = { file_path: `src/components/widget-${i % 400}.ts`, content: `export const widget${i} = ${i};\n` };
  const checked = await tool.validate(raw, ctx);
  if (!checked.ok || checked.args === undefined) throw new Error(`validate failed: ${JSON.stringify(checked)}`);
  await tool.propose(checked.args, ctx);
  const again = await tool.validate(checked.args, ctx);
  if (!again.ok) throw new Error('validate failed again');
  const result = await tool.run(checked.args, { workspace, signal });
  if (result.isError === true) throw new Error(`run failed: ${JSON.stringify(result)}`);
}

const TICK_MS = 1000 / Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());

/** The main thread's CPU time so far, user and system, in ms (its task's stat: utime, stime). */
function mainThreadMs(): { user: number; system: number } {
  const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from field 3 (state) on
  return { user: Number(fields[11]) * TICK_MS, system: Number(fields[12]) * TICK_MS };
}

interface Figures {
  mainMsPerCall: number;
  mainSysMsPerCall: number;
  cpuMsPerCall: number;
  loopMsPerCall: number;
  wallMs: number;
}

async function measure(n: number): Promise<Figures> {
  let next = 0;
  const main0 = mainThreadMs();
  const elu0 = performance.eventLoopUtilization();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: Math.min(concurrency, n) }, async () => {
      while (next < n) await flow(next++);
    }),
  );
  const wallMs = performance.now() - t0;
  const elu = performance.eventLoopUtilization(elu0);
  const cpu = process.cpuUsage(cpu0);
  const main = mainThreadMs();
  return {
    mainMsPerCall: (main.user - main0.user + main.system - main0.system) / n,
    mainSysMsPerCall: (main.system - main0.system) / n,
    cpuMsPerCall: (cpu.user + cpu.system) / 1000 / n,
    loopMsPerCall: elu.active / n,
    wallMs,
  };
}

await measure(Math.min(calls, 1000)); // warm-up: JIT, the files exist
const runs = [await measure(calls), await measure(calls), await measure(calls)];
rmSync(root, { recursive: true, force: true });
const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const pick = (key: keyof Figures): number => Number(median(runs.map((r) => r[key])).toFixed(4));
const out = {
  repo: repoRoot,
  calls,
  concurrency,
  mainMsPerCall: pick('mainMsPerCall'),
  mainSysMsPerCall: pick('mainSysMsPerCall'),
  cpuMsPerCall: pick('cpuMsPerCall'),
  loopMsPerCall: pick('loopMsPerCall'),
  wallMs: Math.round(pick('wallMs')),
};
console.log(`write_file flows (validate, propose, validate, run) × ${calls}, ${concurrency} at once, median of 3:`);
console.log(`  main thread CPU per call: ${out.mainMsPerCall} ms (of which system calls ${out.mainSysMsPerCall} ms)`);
console.log(`  process CPU (main thread + thread pool) per call: ${out.cpuMsPerCall} ms`);
console.log(`  event loop busy (wall) per call: ${out.loopMsPerCall} ms`);
console.log(`  wall time for ${calls} calls: ${out.wallMs} ms`);
console.log(`BENCH_TOOL_PATHS ${JSON.stringify(out)}`);
