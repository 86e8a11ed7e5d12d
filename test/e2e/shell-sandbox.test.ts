/**
 * The shell sandbox through the server, like a client (issue 10, finding 5): the server runs in
 * the directory that holds its settings file and data directory (so the default workspace holds
 * them), and an approved (YOLO) command tries to read them, to write outside the workspace and
 * to read the server's environment. With SHELL_SANDBOX=bwrap nothing gets out; with `off` the
 * same command does (the reason the sandbox exists). SHELL_SANDBOX=bwrap where bwrap cannot run
 * stops the start.
 */
import t from 'tap';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { bwrapSkip } from '../support/sandbox.js';
import { rpc } from '../support/sse.js';
import { buildServer, confirmMessage, dataOf, startServer, tempDir, URI, userMessage } from '../support/server.js';
import type { Test } from '../support/tool-call-watch.js';

const SECRET = 'settings-SECRET-0123456789';
const DATA_SECRET = 'pglite-page-SECRET';

const skip = bwrapSkip();

/** The server's directory (its settings file and data directory) and a directory beside it. */
function serverDir(): { dir: string; outside: string } {
  const dir = tempDir('devtool-srv-');
  writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ apiToken: SECRET }));
  mkdirSync(path.join(dir, '.data'));
  writeFileSync(path.join(dir, '.data', 'store.db'), `${DATA_SECRET}\n`);
  return { dir, outside: tempDir('devtool-outside-') };
}

function script(outside: string): ModelScript {
  const command =
    `cat settings.json .data/store.db; grep -rh SECRET . 2>/dev/null; cat /proc/${process.pid}/environ 2>/dev/null | tr '\\0' '\\n' | grep -c . ; ` +
    `echo pwned > ${outside}/pwned.txt; echo after-write`;
  return {
    model: 'scripted-sandbox',
    scripts: [
      {
        when: '^hostile',
        steps: [{ chunks: [[{ functionCall: { name: 'run_shell_command', args: { command } } }]] }, { chunks: [[{ text: 'done' }]] }],
      },
    ],
  };
}

/**
 * Runs the hostile command in a YOLO conversation on the default workspace; the final card's output text.
 * Without the sandbox YOLO runs it only because the operator said so (SHELL_UNCONFINED_AUTO_APPROVE).
 */
async function hostile(t: Test, sandbox: string): Promise<{ output: string; outside: string; raw: string }> {
  const { dir, outside } = serverDir();
  const env = {
    WORKSPACE_DIR: dir,
    DATA_DIR: path.join(dir, '.data'),
    SETTINGS_FILE: path.join(dir, 'settings.json'),
    SHELL_SANDBOX: sandbox,
  };
  const srv = await startServer(t, {
    script: script(outside),
    env: sandbox === 'off' ? { ...env, SHELL_UNCONFINED_AUTO_APPROVE: 'true' } : env,
  });
  const res = await rpc(srv.url, 'message/stream', { message: userMessage('hostile', { metadata: { [URI]: { approval_mode: 'YOLO' } } }) });
  const card = (res.events ?? []).map((e) => dataOf(e.data.result)).find((c) => c?.status === 'SUCCEEDED');
  return { output: String(card?.output?.text ?? ''), outside, raw: res.raw };
}

t.test('bwrap: the settings file and data directory read as empty, nothing is written outside', { skip }, async (t) => {
  const { output, outside, raw } = await hostile(t, 'bwrap');
  // The directory beside the workspace is under /tmp: the sandbox's /tmp is its own, empty.
  t.match(
    output,
    /pwned\.txt: (Read-only file system|No such file or directory)\nafter-write/,
    'the write outside fails, the command goes on',
  );
  t.notOk(raw.includes(SECRET) || raw.includes(DATA_SECRET), 'no secret anywhere in the stream');
  t.match(output, /^0$/m, "the server's environment is not visible");
  t.notOk(existsSync(path.join(outside, 'pwned.txt')), 'nothing written outside the workspace');
});

t.test('off: the same command reads the secrets and writes outside', async (t) => {
  const { output, outside } = await hostile(t, 'off');
  t.match(output, new RegExp(`${SECRET}[^]*${DATA_SECRET}`));
  t.ok(existsSync(path.join(outside, 'pwned.txt')));
});

t.test('SHELL_SANDBOX=bwrap where bwrap cannot run: the server does not start', async (t) => {
  await t.rejects(buildServer(t, { env: { SHELL_SANDBOX: 'bwrap', PATH: '/nonexistent' } }), {
    code: 'AGENT_ERR_SHELL_SANDBOX_UNAVAILABLE',
    message: /SHELL_SANDBOX=bwrap: bwrap \(bubblewrap\) is not installed or not on PATH/,
  });
});

/**
 * Issue 19, finding 1: the model plants a bare repository (HEAD, config with core.fsmonitor,
 * objects/, refs/) with write_file and runs `git status` in it, by dir_path and after a `cd`.
 * Writing a repository's HEAD or config asks in every mode (YOLO too); here a person says yes to
 * both, so the repository is there. The fsmonitor command must not run, with the sandbox or without.
 */
function plantScript(ws: string, marker: string): ModelScript {
  const cache = path.join(ws, 'vendor/cache');
  const config = `[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tworktree = ${cache}\n\tfsmonitor = "touch ${marker}; false"\n`;
  const write = (file_path: string, content: string) => ({ functionCall: { name: 'write_file', args: { file_path, content } } });
  const shell = (args: Record<string, string>) => ({ functionCall: { name: 'run_shell_command', args } });
  return {
    model: 'scripted-plant',
    scripts: [
      {
        when: '^plant',
        steps: [
          {
            chunks: [
              [
                write('vendor/cache/HEAD', 'ref: refs/heads/main\n'),
                write('vendor/cache/config', config),
                write('vendor/cache/objects/info/.keep', ''),
                write('vendor/cache/refs/heads/.keep', ''),
              ],
            ],
          },
          { chunks: [[shell({ command: 'git status', dir_path: 'vendor/cache' })]] },
          { chunks: [[shell({ command: 'cd vendor/cache && git status; echo after-status' })]] },
          { chunks: [[{ text: 'done' }]] },
        ],
      },
    ],
  };
}

for (const mode of ['off', 'bwrap']) {
  t.test(`${mode}: a planted bare repository's fsmonitor does not run on git status`, { skip: mode === 'bwrap' && skip }, async (t) => {
    const ws = tempDir('devtool-plant-');
    const marker = path.join(ws, 'pwned-marker');
    const srv = await startServer(t, {
      script: plantScript(ws, marker),
      env: { WORKSPACE_DIR: ws, SHELL_SANDBOX: mode, ...(mode === 'off' ? { SHELL_UNCONFINED_AUTO_APPROVE: 'true' } : {}) },
    });
    const first = await rpc(srv.url, 'message/stream', {
      message: userMessage('plant', { metadata: { [URI]: { approval_mode: 'YOLO' } } }),
    });
    const ev = (first.events ?? []).map((e) => e.data.result);
    const asked = ev.map(dataOf).filter((d) => d?.confirmation_request !== undefined);
    const paths = asked.map((c) => c.input_parameters?.file_path);
    t.ok(
      paths.includes('vendor/cache/HEAD') && paths.includes('vendor/cache/config'),
      `writing its HEAD and config asks, even in YOLO (${paths.join(', ')})`,
    );
    t.notOk(existsSync(path.join(ws, 'vendor/cache/config')), 'nothing was written before a person said yes');
    const yes = asked.map((c) => ({ tool_call_id: c.tool_call_id, selected_option_id: 'proceed_once' }));
    const res = await rpc(srv.url, 'message/stream', { message: confirmMessage(ev[0].id, ev[0].contextId, ...yes) });
    t.ok(existsSync(path.join(ws, 'vendor/cache/config')), 'the repository was planted (a person approved it)');
    t.match(res.raw, /after-status/, 'both commands ran');
    t.match(res.raw, /cannot use bare repository/, 'git refuses the planted repository');
    t.notOk(existsSync(marker), 'the fsmonitor command did not run');
  });
}
