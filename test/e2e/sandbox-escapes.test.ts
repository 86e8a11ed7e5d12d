/**
 * Sandbox escapes through the server, as an injected model would try them (review of issue 19):
 * in a YOLO conversation the model (1) renames the repository's `.git` away and makes a new one
 * whose config runs a command on the developer's next `git status`, (2) points `.git/commondir`
 * at a planted configuration, (3) plants a hook in the repository's own `core.hooksPath`, and
 * (4) writes the host's kernel settings (/proc/sys: kernel.core_pattern would run a workspace
 * script as root on the host; the value written back is the one already there). None may work.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { bwrapSkip } from '../support/sandbox.js';
import { rpc } from '../support/sse.js';
import { startServer, tempDir, URI, userMessage } from '../support/server.js';

const skip = bwrapSkip();

function script(marker: string): ModelScript {
  const evil = `[core]\\n\\trepositoryformatversion = 0\\n\\tfsmonitor = \\"echo pwned > ${marker}; false\\"\\n`;
  const shell = (command: string) => ({ chunks: [[{ functionCall: { name: 'run_shell_command', args: { command } } }]] });
  return {
    model: 'scripted-escapes',
    scripts: [
      {
        when: '^escape',
        steps: [
          shell(
            `mv .git .git-old && mkdir .git && cp -a .git-old/HEAD .git-old/objects .git-old/refs .git/ && printf "${evil}" > .git/config; echo step1`,
          ),
          shell(
            `mkdir evil && cp -a .git/objects .git/refs evil/ && printf "${evil}" > evil/config; echo ../evil > .git/commondir; echo step2`,
          ),
          shell(`printf '#!/bin/sh\\necho pwned > ${marker}\\n' > hooks/pre-commit; chmod +x hooks/pre-commit; echo step3`),
          shell(
            `v=$(cat /proc/sys/kernel/core_pattern) && printf '%s\\n' "$v" > /proc/sys/kernel/core_pattern 2>/dev/null && echo core-$((6*7)) || echo core-$((6*8))`,
          ),
          { chunks: [[{ text: 'done' }]] },
        ],
      },
    ],
  };
}

t.test('bwrap: no planted .git, commondir or hook runs on the host; /proc/sys is read-only', { skip }, async (t) => {
  const ws = tempDir('devtool-escape-');
  const marker = path.join(tempDir('devtool-escape-out-'), 'PWNED');
  const git = (...args: string[]) => execFileSync('git', ['-c', 'user.name=a', '-c', 'user.email=a@example.com', ...args], { cwd: ws });
  git('init', '-q');
  mkdirSync(path.join(ws, 'hooks'));
  writeFileSync(path.join(ws, 'a.txt'), 'a\n');
  git('config', 'core.hooksPath', 'hooks');
  git('add', 'a.txt');
  git('commit', '-q', '-m', 'init');
  const srv = await startServer(t, { script: script(marker), env: { WORKSPACE_DIR: ws, SHELL_SANDBOX: 'bwrap' } });
  const res = await rpc(srv.url, 'message/stream', { message: userMessage('escape', { metadata: { [URI]: { approval_mode: 'YOLO' } } }) });
  t.match(res.raw, /step1[^]*step2[^]*step3/, 'the commands ran');
  // the command's own text holds the arithmetic, its output the result: 42 written, 48 refused
  t.match(res.raw, /core-48/, 'kernel.core_pattern could not be written');
  t.notMatch(res.raw, /core-42/);
  for (const cmd of [['status'], ['commit', '-q', '--allow-empty', '-m', 'dev']]) {
    try {
      git(...cmd);
    } catch {
      // a failing git is not code execution
    }
  }
  t.notOk(existsSync(marker), "the developer's git status and commit ran nothing planted");
});
