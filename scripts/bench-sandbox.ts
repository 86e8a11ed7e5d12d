/**
 * What the shell sandbox costs per command: runs `true` (and a small `git status`) N times
 * through run_shell_command with SHELL_SANDBOX=off and with bubblewrap, sequentially, and prints
 * the median and p90 wall time of each. `node --import tsx scripts/bench-sandbox.ts [N]`.
 */
import { mkdtempSync, realpathSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { RunShellCommandTool } from '../src/tools/shell/run-shell-command.js';
import { createShellSandbox, NO_SANDBOX, type ShellSandbox } from '../src/tools/shell/sandbox.js';

const runs = Number(process.argv[2] ?? 50);
const workspace = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'bench-sandbox-')));

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? NaN;
}

async function measure(sandbox: ShellSandbox, command: string): Promise<{ p50: number; p90: number }> {
  const tool = new RunShellCommandTool({ sandbox });
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const start = process.hrtime.bigint();
    const r = await tool.run({ command }, { workspace, signal: new AbortController().signal });
    if (r.isError) throw new Error(`${command}: ${r.error.message}`);
    times.push(Number(process.hrtime.bigint() - start) / 1e6);
  }
  times.sort((a, b) => a - b);
  return { p50: quantile(times, 0.5), p90: quantile(times, 0.9) };
}

const { sandbox: bwrap, fallback } = createShellSandbox('auto', { protectedPaths: [], network: false });
if (fallback !== undefined) console.log(`bubblewrap unavailable (${fallback}); measuring 'off' only`);
for (const command of ['true', 'git init -q . 2>/dev/null; git status --short']) {
  for (const sandbox of fallback === undefined ? [NO_SANDBOX, bwrap] : [NO_SANDBOX]) {
    const { p50, p90 } = await measure(sandbox, command);
    console.log(`${sandbox.kind.padEnd(5)} ${command.padEnd(45)} p50 ${p50.toFixed(1)} ms  p90 ${p90.toFixed(1)} ms  (${runs} runs)`);
  }
}
