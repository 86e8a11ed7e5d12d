/**
 * Runs npm scripts side by side (`node --import tsx scripts/check.ts lint typecheck`; default:
 * those two), each one's output kept whole and printed when it ends, in the order given.
 * Exit 1 when any fails. (Run beside tap as well, the linter and the tests fought over the two
 * cores: slower in all, and timing-sensitive tests failed; so `npm test` runs tap after.)
 */
import { spawn } from 'node:child_process';

interface Outcome {
  script: string;
  code: number;
  output: string;
  seconds: number;
}

function run(script: string): Promise<Outcome> {
  const started = Date.now();
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '--silent', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (d: Buffer) => (output += d.toString()));
    child.stderr.on('data', (d: Buffer) => (output += d.toString()));
    child.on('close', (code) => resolve({ script, code: code ?? 1, output, seconds: (Date.now() - started) / 1000 }));
  });
}

const scripts = process.argv.slice(2);
const outcomes = await Promise.all((scripts.length > 0 ? scripts : ['lint', 'typecheck']).map(run));
for (const o of outcomes) {
  process.stdout.write(
    `> npm run ${o.script}: ${o.code === 0 ? 'ok' : `FAILED (exit ${o.code})`} in ${o.seconds.toFixed(1)} s\n${o.output}`,
  );
}
process.exitCode = outcomes.some((o) => o.code !== 0) ? 1 : 0;
