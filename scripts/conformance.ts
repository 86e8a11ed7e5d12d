/**
 * npm run conformance: starts the server in conformance mode (AGENT_MODEL_SCRIPT=conformance,
 * embedded store in a temp DATA_DIR) on a free port, runs the official A2A suite against it
 * (TCK_RUNNER or the first argument; default ../shared/conformance/run-tck.sh from the repo),
 * stops the server and prints the suite's counts. Exit code: the runner's.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';

const repo = path.resolve(import.meta.dirname, '..');
const runner = path.resolve(repo, process.argv[2] ?? process.env.TCK_RUNNER ?? '../shared/conformance/run-tck.sh');

const port = await new Promise<number>((resolve) => {
  const probe = createServer().listen(0, '127.0.0.1', () => {
    const p = (probe.address() as { port: number }).port;
    probe.close(() => resolve(p));
  });
});
const env: NodeJS.ProcessEnv = {
  ...process.env,
  AGENT_MODEL_SCRIPT: 'conformance',
  PORT: String(port),
  HOST: '127.0.0.1',
  DATA_DIR: mkdtempSync(path.join(tmpdir(), 'a2a-conformance-data-')),
  WORKSPACE_DIR: mkdtempSync(path.join(tmpdir(), 'a2a-conformance-ws-')),
  LOG_LEVEL: 'warn',
};
delete env.DATABASE_URL;
const server = spawn(process.execPath, ['--import', 'tsx', path.join(repo, 'src/main.ts')], { env, stdio: 'inherit' });
const url = `http://localhost:${port}`;
for (let i = 0; ; i++) {
  const ok = await fetch(`${url}/.well-known/agent-card.json`).then(
    (r) => r.ok,
    () => false,
  );
  if (ok) break;
  if (i > 1200 || server.exitCode !== null) {
    server.kill('SIGTERM');
    throw new Error(`the server did not start on ${url} within 120 s`);
  }
  await new Promise((r) => setTimeout(r, 100));
}
const transports = process.env.TCK_V10_TRANSPORTS ?? 'jsonrpc,http_json';
const suite = spawn('bash', [runner, url, '--suite', process.env.TCK_SUITE ?? 'both', '--v10-transports', transports], {
  stdio: 'inherit',
});
const code = await new Promise<number>((resolve) => suite.on('exit', (c) => resolve(c ?? 1)));
server.kill('SIGTERM');
process.exitCode = code;
