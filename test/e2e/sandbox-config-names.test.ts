/**
 * Attack (approval review of issue 19): the policy's list of tool-configuration files
 * (src/agent/policy/tool-config.ts) and the sandbox's (src/tools/shell/tool-config.ts) differed.
 * A name the policy refuses to write without a person's yes — `lefthook.yml` (lefthook's git hooks
 * run what it lists on the developer's next commit), `.yarn/releases/*.cjs` (the program yarnPath
 * names: the developer's next `yarn` runs it), `.hg/hgrc` (Mercurial hooks), `bunfig.toml`
 * (preload scripts), `.mvn/` (Maven's JVM and extension config) — stayed writable inside the
 * sandbox, so any command that runs there (approved once, covered by an `allowed_tools` prefix such
 * as `npm test` running model-written code, or YOLO) planted code that runs later on the host,
 * outside the sandbox, with no approval.
 */
import t from 'tap';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { bwrapSkip } from '../support/sandbox.js';
import { rpc } from '../support/sse.js';
import { dataOf, startServer, tempDir, URI, userMessage } from '../support/server.js';

const skip = bwrapSkip();

const ORIGINAL = 'original\n';
/** Files a project legitimately has, that tools outside the sandbox load and run code from. */
const FILES = [
  'lefthook.yml',
  'sub/.lefthook.yml',
  '.yarn/releases/yarn-4.1.0.cjs',
  '.hg/hgrc',
  'bunfig.toml',
  '.mvn/jvm.config',
  '.tool-versions',
  '.gdbinit',
];

function script(): ModelScript {
  // `fresh/.hg` is a Mercurial repository without an hgrc yet: creating one would add hooks.
  const command = `${[...FILES, 'fresh/.hg/hgrc'].map((f) => `echo pwned > ${f}`).join('; ')}; echo after-writes`;
  return {
    model: 'scripted-config-names',
    scripts: [
      {
        when: '^plant',
        steps: [{ chunks: [[{ functionCall: { name: 'run_shell_command', args: { command } } }]] }, { chunks: [[{ text: 'done' }]] }],
      },
    ],
  };
}

t.test('bwrap: no tool-configuration file the policy protects is writable inside the sandbox', { skip }, async (t) => {
  const ws = tempDir('devtool-names-');
  for (const f of FILES) {
    mkdirSync(path.dirname(path.join(ws, f)), { recursive: true });
    writeFileSync(path.join(ws, f), ORIGINAL);
  }
  writeFileSync(path.join(ws, '.yarnrc.yml'), 'yarnPath: .yarn/releases/yarn-4.1.0.cjs\n');
  mkdirSync(path.join(ws, 'fresh/.hg'), { recursive: true });
  const srv = await startServer(t, { script: script(), env: { WORKSPACE_DIR: ws, SHELL_SANDBOX: 'bwrap' } });
  const res = await rpc(srv.url, 'message/stream', { message: userMessage('plant', { metadata: { [URI]: { approval_mode: 'YOLO' } } }) });
  const card = (res.events ?? []).map((e) => dataOf(e.data.result)).find((c) => c?.status === 'SUCCEEDED');
  t.match(String(card?.output?.text ?? ''), /after-writes/, 'the command ran in the sandbox');
  for (const f of FILES) t.equal(readFileSync(path.join(ws, f), 'utf8'), ORIGINAL, `${f} is unchanged`);
  t.notOk(existsSync(path.join(ws, 'fresh/.hg/hgrc')), 'no hgrc was created (its placeholder is gone afterwards)');
});
