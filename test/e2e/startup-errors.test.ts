/**
 * What `npm start` says when it cannot start: a configuration error names the variable (exit 2);
 * an address it cannot listen on says what to do, without a stack trace (exit 1).
 */
import t from 'tap';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { tempDir } from '../support/server.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));

/** Runs the server entry with `env` until it exits: its exit code and stderr. */
function start(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(REPO, 'src/main.ts')], {
    cwd: REPO,
    env: {
      // Not recorded: tsx's source maps do not line up with the test runner's (see support/process.ts).
      _TAPJS_PROCESSINFO_COVERAGE_: '0',
      PATH: process.env.PATH ?? '',
      HOME: process.env.HOME ?? '',
      LOG_LEVEL: 'silent',
      DATA_DIR: path.join(tempDir('startup-data-'), 'pglite'),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), 60_000);
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    }),
  );
}

t.test('a port in use: exit 1 and what to do, no stack trace', async (t) => {
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
  t.teardown(() => taken.close());
  const { port } = taken.address() as net.AddressInfo;
  const { code, stderr } = await start({ PORT: String(port), WORKSPACE_DIR: tempDir() });
  t.equal(code, 1);
  t.equal(
    stderr.trim(),
    `Failed to start: 127.0.0.1:${port} is already in use (is another server running?). Stop it, or set PORT to a free port.`,
  );
});

t.test('a bad setting: exit 2, naming the variable', async (t) => {
  const { code, stderr } = await start({ PORT: 'eighty', WORKSPACE_DIR: tempDir() });
  t.equal(code, 2);
  t.match(stderr, /^Configuration error: PORT/);
  t.notMatch(stderr, /\n\s+at /, 'no stack trace');
});
