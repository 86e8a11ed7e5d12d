/** The approval policy: modes, allowed_tools, grants, options (by default reads run, writes wait for a person). */
import t from 'tap';
import type tap from 'tap';
import {
  approves,
  autoApproval,
  grantsFor,
  needsApproval,
  optionsFor,
  serverGrant,
  shellGrant,
} from '../../../src/agent/policy/approval-policy.js';
import type { ApprovalScope } from '../../../src/agent/policy/approval-policy.js';
import type { ContextSettings } from '../../../src/agent/task-store.js';
import path from 'node:path';
import { createDefaultTools } from '../../../src/tools/index.js';
import type { AnyTool } from '../../../src/tools/tool.js';
import { ownDir } from '../../support/own-dir.js';

/** The workspace the calls run in: a file, a folder, a link out of it, a git folder, the server's auth file. */
const root = ownDir('approval-policy', {
  ws: {
    'a.txt': 'a',
    src: { 'x.ts': '' },
    '.git': { config: '', hooks: {} },
    'auth.json': '{}',
    out: { symlink: '../outside' },
    'git-link': { symlink: '.git' },
  },
  outside: { 'secret.txt': 'secret' },
});
const WS = path.join(root, 'ws');
const tools = new Map(createDefaultTools({ protectedPaths: [path.join(WS, 'auth.json')] }).map((tool) => [tool.name, tool]));
const tool = (name: string) => tools.get(name) as AnyTool;
const mcpTool = (server: string, name: string): AnyTool =>
  ({
    ...tool('write_file'),
    name: `${server}__${name}`,
    kind: 'other',
    withModifiedContent: undefined,
    commandLine: undefined,
    mcp: { serverName: server, toolName: name },
  }) as unknown as AnyTool;
const scope = (settings: ContextSettings = {}, grants: string[] = []): ApprovalScope => ({
  settings,
  trustedTools: new Set(grants),
  workspace: WS,
  confined: true,
});
const sh = (command: string) => ({ command });
const ids = async (tool: AnyTool, args: Record<string, unknown>) =>
  (await optionsFor(tool, args, { workspace: WS, confined: true })).map((o) => o.id);
const grants = (tool: AnyTool, args: Record<string, unknown>, option: string) =>
  grantsFor(tool, args, option, { workspace: WS, confined: true });

t.test('modes', async (t) => {
  const write = { file_path: 'a', content: 'x' };
  t.equal(await autoApproval(tool('read_file'), { file_path: 'a' }, scope()), 'read-only');
  t.ok(await needsApproval(tool('write_file'), write, scope()), 'DEFAULT: writes wait');
  t.ok(await needsApproval(tool('replace'), { file_path: 'a', old_string: 'x', new_string: 'y' }, scope({ approvalMode: 'DEFAULT' })));
  t.ok(await needsApproval(tool('run_shell_command'), sh('ls'), scope()), 'DEFAULT: shell waits');
  t.equal(await autoApproval(tool('write_file'), write, scope({ approvalMode: 'AUTO_EDIT' })), 'approval mode AUTO_EDIT');
  t.equal(await autoApproval(tool('replace'), {}, scope({ approvalMode: 'AUTO_EDIT' })), 'approval mode AUTO_EDIT');
  t.ok(await needsApproval(tool('run_shell_command'), sh('ls'), scope({ approvalMode: 'AUTO_EDIT' })), 'AUTO_EDIT: shell still asks');
  t.ok(await needsApproval(mcpTool('gh', 'create'), {}, scope({ approvalMode: 'AUTO_EDIT' })), 'AUTO_EDIT: MCP still asks');
  t.equal(await autoApproval(tool('run_shell_command'), sh('rm -rf x'), scope({ approvalMode: 'YOLO' })), 'approval mode YOLO');
  t.equal(await autoApproval(mcpTool('gh', 'create'), {}, scope({ approvalMode: 'YOLO' })), 'approval mode YOLO');
});

t.test('allowed_tools: names and shell prefixes', async (t) => {
  const allowed = scope({ allowedTools: ['write_file', 'run_shell_command(git status)', 'gh__list', 'run_shell_command()'] });
  t.equal(await autoApproval(tool('write_file'), {}, allowed), 'allowed_tools');
  t.equal(await autoApproval(mcpTool('gh', 'list'), {}, allowed), 'allowed_tools');
  t.ok(await needsApproval(mcpTool('gh', 'create'), {}, allowed));
  for (const ok of ['git status', 'git status --short', '  git status  ', 'git status; git status -s']) {
    t.equal(await autoApproval(tool('run_shell_command'), sh(ok), allowed), 'allowed_tools', ok);
  }
  for (const no of [
    'git statusx',
    'git status && rm x',
    'git push',
    'git status > ~/.bashrc',
    'echo $(git status)',
    'ls',
    `git status $'\\'"' ; touch pwned ; echo "'"'\\'`,
    'git status /etc',
  ]) {
    t.ok(await needsApproval(tool('run_shell_command'), sh(no), allowed), no);
  }
  t.ok(await needsApproval(tool('run_shell_command'), {}, allowed), 'no command: asks');
  t.equal(
    await autoApproval(tool('run_shell_command'), sh('anything'), scope({ allowedTools: ['run_shell_command'] })),
    'allowed_tools',
    'the bare name allows every command',
  );
});

t.test('grants: tools, shell roots, MCP tools and servers', async (t) => {
  const shell = tool('run_shell_command');
  t.same(await grants(shell, sh('echo a && ls -l | wc -l'), 'proceed_always'), [
    shellGrant('run_shell_command', 'echo'),
    shellGrant('run_shell_command', 'ls'),
    shellGrant('run_shell_command', 'wc'),
  ]);
  t.same(await grants(shell, sh('echo a'), 'proceed_once'), []);
  t.same(await grants(shell, sh('echo $(id)'), 'proceed_always'), [], 'command substitution: nothing to trust');
  t.same(await grants(shell, sh('echo a > f'), 'proceed_always'), [], 'output redirection: nothing to trust');
  t.same(await grants(tool('write_file'), {}, 'proceed_always'), ['write_file']);
  t.same(await grants(mcpTool('gh', 'create'), {}, 'proceed_always_tool'), ['gh__create']);
  t.same(await grants(mcpTool('gh', 'create'), {}, 'proceed_always_server'), [serverGrant('gh')]);
  t.same(await grants(mcpTool('gh', 'create'), {}, 'cancel'), []);

  const granted = scope({}, [shellGrant('run_shell_command', 'echo')]);
  t.equal(await autoApproval(shell, sh('echo b'), granted), 'allowed always in this conversation', 'echo a trusted echo b');
  t.ok(await needsApproval(shell, sh('pwd'), granted), 'pwd still asks');
  t.ok(await needsApproval(shell, sh('echo b && pwd'), granted), 'every root must be trusted');
  t.ok(await needsApproval(shell, sh('echo b > ~/.profile'), granted), 'a redirection asks even for a trusted root');
  t.ok(await needsApproval(shell, sh('$(echo rm) -rf x'), granted), 'unparsable: asks');
  t.ok(await needsApproval(shell, sh(`echo $'\\'"' ; touch pwned ; echo "'"'\\'`), granted), "ANSI-C quoting ($'…') is never trusted");
  t.ok(await needsApproval(shell, sh('echo owned >&/tmp/x'), granted), '>&file writes a file: asks');
  t.ok(await needsApproval(shell, sh('echo ~/.ssh/id_rsa'), granted), 'a path outside the workspace: asks');
  t.ok(await needsApproval(shell, sh('echo ../../etc/passwd'), granted), '.. : asks');
  t.equal(await autoApproval(shell, sh('echo b 2>/dev/null'), granted), 'allowed always in this conversation', 'discarding output is fine');
  t.equal(await autoApproval(mcpTool('gh', 'x'), {}, scope({}, [serverGrant('gh')])), 'allowed always in this conversation');
  t.ok(await needsApproval(mcpTool('other', 'x'), {}, scope({}, [serverGrant('gh')])));
  t.equal(await autoApproval(tool('write_file'), {}, scope({}, ['write_file'])), 'allowed always in this conversation');
});

t.test('options', async (t) => {
  t.same(await ids(tool('write_file'), {}), ['proceed_once', 'proceed_always', 'modify_with_editor', 'cancel']);
  t.same(await ids(tool('run_shell_command'), sh('ls -l')), ['proceed_once', 'proceed_always', 'cancel']);
  t.same(await ids(tool('run_shell_command'), sh('npm test')), ['proceed_once', 'cancel'], 'no "always" for a runner of scripts');
  t.match(
    (await optionsFor(tool('run_shell_command'), sh('git status && ls -l'), { workspace: WS, confined: true })).find(
      (o) => o.id === 'proceed_always',
    )?.description,
    /"git status", "ls" commands/,
  );
  t.same(
    await ids(tool('run_shell_command'), sh('for f in *; do rm $f; done')),
    ['proceed_once', 'cancel'],
    'no "always" for what has no root',
  );
  t.same(await ids(tool('run_shell_command'), sh('echo hi > out.txt')), ['proceed_once', 'cancel'], 'no "always" for a redirection');
  t.same(await ids(mcpTool('gh', 'create'), {}), ['proceed_once', 'proceed_always_tool', 'proceed_always_server', 'cancel']);
  t.ok(approves('proceed_once'));
  t.notOk(approves('cancel'));
});

const shell = () => tool('run_shell_command');
const asks = async (t: Pick<typeof tap, 'ok'>, line: string, s: ApprovalScope, what = line) =>
  t.ok(await needsApproval(shell(), sh(line), s), what);

t.test('one "always" on a shell command does not let other lines run (expansions, assignments)', async (t) => {
  const granted = scope({}, [shellGrant('run_shell_command', 'echo'), shellGrant('run_shell_command', 'cat')]);
  t.equal(await autoApproval(shell(), sh('echo hello'), granted), 'allowed always in this conversation');
  for (const line of [
    "x='$(touch PWNED)'; echo ${x@P}",
    "x='a[$(touch PWNED)]'; echo ${y[x]}",
    'x=1; echo a',
    'echo ${x@P}',
    'echo "$(touch PWNED)"',
    'echo `touch PWNED`',
    'echo a | sh',
    'echo a # && touch PWNED',
    'echo a > PWNED',
    "echo $'\\x41'",
    'echo a{b,c}',
    'echo *',
  ]) {
    await asks(t, line, granted);
    t.same(await grants(shell(), sh(line), 'proceed_always'), [], `${line}: "always" trusts nothing`);
  }
  for (const line of ['echo a; touch PWNED', 'echo a\ntouch PWNED', 'echo a && touch PWNED']) {
    await asks(t, line, granted, `${line}: touch is not trusted`);
    t.same(
      await grants(shell(), sh(line), 'proceed_always'),
      ['echo', 'touch'].map((k) => shellGrant('run_shell_command', k)),
      'what the person saw',
    );
  }
});

t.test('grants and prefixes stay inside the workspace', async (t) => {
  const granted = scope(
    {},
    ['cat', 'rm', 'cd', 'ls', 'git status', 'git diff'].map((k) => shellGrant('run_shell_command', k)),
  );
  const covered = async (line: string) =>
    t.equal(await autoApproval(shell(), sh(line), granted), 'allowed always in this conversation', line);
  await covered('cat a.txt');
  await covered(`cat ${path.join(WS, 'a.txt')}`);
  await covered('cd src && cat x.ts');
  await covered('rm -f src/x.ts');
  await covered('ls -la src');
  await covered('git diff --stat HEAD~1 -- src');
  await covered('cat /dev/null');
  await covered('cat new-file-not-there-yet');
  for (const line of [
    'cat \\/outside/secret.txt',
    'cat .\\./secret',
    'cat .""./secret',
    'cat $HOME/secret',
    `cat ${path.join(root, 'outside/secret.txt')}`,
    'cat /etc/passwd',
    'cat ../outside/secret.txt',
    'cat src/../../outside/secret.txt',
    'cat out/secret.txt',
    'cat out',
    'rm -f \\/elsewhere/file',
    'rm -f /elsewhere/file',
    'cd && cat secret',
    'cd - && cat secret',
    'cd out && cat secret.txt',
    'cd src && cat ../../outside/secret.txt',
    'ls -C/etc',
    'ls --directory=/etc',
    'ls a:/etc',
    'cat {.,}./secret',
    'cat ~/secret',
    'cat auth.json',
    'cat src/../auth.json',
    'cat .git/config',
    'rm -f .git/hooks/pre-commit',
    'cat git-link/config',
    'ls .GIT',
    'git -C /tmp status',
    'git --git-dir=/tmp/x status',
  ]) {
    await asks(t, line, granted);
  }
  const allowed = scope({ allowedTools: ['run_shell_command(cat)', 'run_shell_command(git status)'] });
  t.equal(await autoApproval(shell(), sh('cat a.txt'), allowed), 'allowed_tools');
  for (const line of ['cat /etc/passwd', 'cat out/secret.txt', 'cat auth.json', 'cat .git/config', 'git status --porcelain=/etc']) {
    await asks(t, line, allowed, `prefix: ${line}`);
  }
  // dir_path moves the starting point; paths are judged from there
  t.equal(await autoApproval(shell(), { command: 'cat x.ts', dir_path: 'src' }, granted), 'allowed always in this conversation');
  t.ok(await needsApproval(shell(), { command: 'cat ../../outside/secret.txt', dir_path: 'src' }, granted), 'from dir_path, .. still asks');
});

t.test('commands that run other commands are never covered, by a grant or a prefix', async (t) => {
  const everything = ['find', 'echo', 'xargs', 'env', 'git status', 'git config', 'git log', 'rg', 'python3', 'npm', 'bash', 'command'];
  const granted = scope(
    {},
    everything.map((k) => shellGrant('run_shell_command', k)),
  );
  const prefixes = scope({
    allowedTools: ['find', 'echo', 'xargs', 'env', 'git', 'rg', 'bash', 'command', 'sudo', 'eval'].map((p) => `run_shell_command(${p})`),
  });
  for (const line of [
    'find . -exec touch X ;',
    'find . -execdir touch X +',
    'find . -delete',
    'find . -fprint out',
    'echo X | xargs touch',
    'env touch X',
    'command touch X',
    'bash -c ls',
    'sudo ls',
    'eval ls',
    'git -c core.fsmonitor=touch status',
    'git --config-env=core.fsmonitor=X status',
    'git config core.fsmonitor touch',
    'git log -c',
    'git submodule foreach touch',
    'rg --pre ./x pattern',
    'rg --pre=./x pattern',
  ]) {
    await asks(t, line, granted, `grant: ${line}`);
    await asks(t, line, prefixes, `prefix: ${line}`);
    t.same(await ids(shell(), sh(line)), ['proceed_once', 'cancel'], `${line}: no "always" offered`);
  }
  t.equal(await autoApproval(shell(), sh('find . -name x.ts'), granted), 'allowed always in this conversation', 'find without actions');
  t.equal(await autoApproval(shell(), sh('git status -s'), granted), 'allowed always in this conversation');
  t.ok(await needsApproval(shell(), sh('git push'), granted), 'git grants are per subcommand');
  t.same(await grants(shell(), sh('git status && git log -n1'), 'proceed_always'), [
    shellGrant('run_shell_command', 'git status'),
    shellGrant('run_shell_command', 'git log'),
  ]);
  t.ok(await needsApproval(shell(), sh('python3 x.py'), granted), 'a stored grant for an interpreter covers nothing');
  t.equal(
    await autoApproval(shell(), sh('npm test'), scope({ allowedTools: ['run_shell_command(npm test)'] })),
    'allowed_tools',
    'an explicit prefix may cover a script runner',
  );
});

t.test('AUTO_EDIT still asks before writing files that make tools run code', async (t) => {
  const auto = scope({ approvalMode: 'AUTO_EDIT' });
  const write = (file_path: string) => ({ file_path, content: 'x' });
  t.equal(await autoApproval(tool('write_file'), write('src/x.ts'), auto), 'approval mode AUTO_EDIT');
  t.equal(await autoApproval(tool('write_file'), write('.gitignore'), auto), 'approval mode AUTO_EDIT');
  for (const p of [
    '.git/config',
    '.git/hooks/pre-commit',
    './.git/config',
    `${WS}/.git/config`,
    'sub/.git/config',
    '.GIT/config',
    '.npmrc',
    '.yarnrc.yml',
    '.husky/pre-commit',
    '.githooks/pre-push',
    '.vscode/tasks.json',
    '.envrc',
    '.devcontainer/devcontainer.json',
    'git-link/config', // a symlink to .git: where the write really lands counts
    // the sandbox's list and the policy's are one (attack review): overrides and siblings of listed names
    'lefthook-local.yml',
    'sub/.lefthook-local.yaml',
    '.devcontainer.json',
    '.nvim.lua',
    '.yarn/releases/yarn-4.1.0.cjs',
    '.hg/hgrc',
  ]) {
    t.ok(await needsApproval(tool('write_file'), write(p), auto), `write_file ${p}`);
    t.ok(await needsApproval(tool('replace'), { file_path: p, old_string: 'a', new_string: 'b' }, auto), `replace ${p}`);
  }
  const yolo = scope({ approvalMode: 'YOLO' });
  t.equal(await autoApproval(tool('write_file'), write('.git/config'), yolo), undefined, 'YOLO asks for it too');
  t.equal(await autoApproval(tool('write_file'), write('.git/hooks/pre-commit'), yolo), undefined, 'and for a hook');
  // A repository's config may be written before anything beside it says "git directory": a file named config asks anywhere.
  for (const p of ['vendor/cache/config', 'lib/Config', 'config']) {
    t.ok(await needsApproval(tool('write_file'), write(p), auto), `write_file ${p} (AUTO_EDIT)`);
    t.equal(await autoApproval(tool('write_file'), write(p), yolo), undefined, `write_file ${p} (YOLO)`);
  }
  t.equal(await autoApproval(tool('write_file'), write('config/app.yml'), yolo), 'approval mode YOLO', 'a folder named config is ordinary');
  t.notOk(await needsApproval(tool('write_file'), write('src/x.ts'), auto), 'ordinary files still run under AUTO_EDIT');
});

t.test('judging a call probes the disk off the event loop: the loop turns while the model-named paths are checked', async (t) => {
  // A check on the loop would finish before any other callback ran; one through the thread pool lets them run.
  const turnsWhile = async (judge: () => Promise<unknown>): Promise<boolean> => {
    let turned = false;
    setImmediate(() => (turned = true));
    await judge();
    return turned;
  };
  const granted = scope({}, [shellGrant('run_shell_command', 'cat')]);
  t.ok(await turnsWhile(() => autoApproval(shell(), { command: 'cat x.ts', dir_path: 'src' }, granted)), 'a shell line and its dir_path');
  t.ok(
    await turnsWhile(() =>
      needsApproval(tool('write_file'), { file_path: 'src/x.ts', content: 'x' }, scope({ approvalMode: 'AUTO_EDIT' })),
    ),
    'an edit target',
  );
  t.ok(await turnsWhile(() => ids(shell(), sh('cat a.txt'))), 'the options of a card');
  t.ok(await turnsWhile(() => grants(shell(), sh('cat a.txt'), 'proceed_always')), 'the grants of an answer');
});
