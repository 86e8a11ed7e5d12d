/**
 * The grant catalogue (grants by allow-list), the tool-config rule for grants, allowed_tools and
 * git directories anywhere, lines whose first part changes files, and shell calls without the
 * sandbox. Issue 19, findings 1, 2, 7 and 8 (the policy's half) and "Also" (unconfined).
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { autoApproval, grantsFor, needsApproval, optionsFor, shellGrant } from '../../../src/agent/policy/approval-policy.js';
import type { ApprovalScope } from '../../../src/agent/policy/approval-policy.js';
import { catalogueProblem, catalogueTable, GRANT_CATALOGUE } from '../../../src/agent/policy/grant-catalogue.js';
import { judgeLine } from '../../../src/agent/policy/shell-rules.js';
import { writesToolConfig } from '../../../src/agent/policy/tool-config.js';
import type { ContextSettings } from '../../../src/agent/task-store.js';
import { createDefaultTools } from '../../../src/tools/index.js';
import type { AnyTool } from '../../../src/tools/tool.js';
import { ownDir } from '../../support/own-dir.js';

const WS = ownDir('grant-catalogue', {
  'notes.txt': 'b\na\n',
  'data.txt': '1\n',
  'fix.patch': '',
  src: { 'x.ts': '', config: { 'app.ts': '' }, hooks: { 'use.ts': '' } },
  // a bare repository being planted: HEAD and objects/ are there already
  vendor: { cache: { HEAD: 'ref: refs/heads/main\n', objects: {} } },
  // objects/ and refs/, no HEAD yet
  half: { objects: {}, refs: {} },
  '.git': { config: '' },
});
const tools = new Map(createDefaultTools().map((tool) => [tool.name, tool]));
const tool = (name: string) => tools.get(name) as AnyTool;
const shell = tool('run_shell_command');
const sh = (command: string) => ({ command });
const scope = (settings: ContextSettings = {}, grants: string[] = [], confined = true): ApprovalScope => ({
  settings,
  trustedTools: new Set(grants),
  workspace: WS,
  confined,
});
const granted = (...keys: string[]) =>
  scope(
    {},
    keys.map((k) => shellGrant('run_shell_command', k)),
  );
const offered = async (line: string, confined = true) => (await optionsFor(shell, sh(line), { workspace: WS, confined })).map((o) => o.id);

t.test('finding 2: after "always" on a catalogued command, options that run code still ask', async (t) => {
  const s = granted('git grep', 'sort', 'find', 'rg', 'git log', 'git show', 'git diff', 'git clone', 'ls', 'cat');
  t.equal(await autoApproval(shell, sh('git grep -n TODO'), s), 'allowed always in this conversation', 'the granted line');
  t.equal(await autoApproval(shell, sh('sort notes.txt'), s), 'allowed always in this conversation');
  const refused: Array<[string, string]> = [
    ["git grep '--open-files-in-pager=id > P;' TODO", 'git grep: open the matches in a pager command'],
    ['git grep --open-files-in-pager=id TODO', 'the same, unquoted'],
    ['git grep -Oid TODO', 'git grep -O<cmd>'],
    ['git grep -nO id TODO', 'git grep -O in a cluster'],
    ['sort -S 1 --compress-program=sh data.txt', 'sort: a compressor program'],
    ['sort --compress-prog=sh data.txt', 'sort: an abbreviation GNU getopt accepts'],
    ['sort --compress-program sh data.txt', 'sort: its value in the next word'],
    ['sort -o out.txt notes.txt', 'sort -o writes a file'],
    ['sort --output=out.txt notes.txt', 'sort --output writes a file'],
    ['sort -T tmp notes.txt', 'sort -T'],
    ["git clone -u 'touch P' --no-local a b", 'git clone -u runs the command'],
    ['git log --output=x', 'git log --output writes a file'],
    ['git log --ext-diff -p', 'an external diff program'],
    ['git diff --ext-diff', 'git diff --ext-diff'],
    ['git show --textconv HEAD', 'textconv drivers'],
    ['find . -exec touch P ;', 'find -exec'],
    ['find . -execdir touch P +', 'find -execdir'],
    ['find . -delete', 'find -delete'],
    ['find . -fprint out', 'find -fprint'],
    ['rg --pre ./x TODO', 'rg --pre'],
    ['rg --pre=./x TODO', 'rg --pre='],
    ['rg --pre-glob *.x TODO', 'rg --pre-glob'],
    ['rg -z TODO', 'rg --search-zip runs decompressors'],
    ['ls --colr=always', 'an abbreviation of a listed option'],
    ['cat -Z notes.txt', 'an unknown short option'],
  ];
  for (const [line, what] of refused) {
    t.ok(await needsApproval(shell, sh(line), s), `asks: ${line} (${what})`);
    t.same(await offered(line), ['proceed_once', 'cancel'], `no "always" offered: ${line}`);
  }
});

t.test('finding 2: test runners, linters, bundlers and package scripts are never "always"', async (t) => {
  for (const line of [
    'pytest',
    'jest',
    'vitest run',
    'mocha',
    'eslint .',
    'prettier --write .',
    'tsc',
    'webpack',
    'vite build',
    'npm run build',
    'npm test',
    'make',
    'python3 x.py',
  ]) {
    t.same(await offered(line), ['proceed_once', 'cancel'], `${line}: no "always"`);
    t.same(
      await grantsFor(shell, sh(line), 'proceed_always', { workspace: WS, confined: true }),
      [],
      `${line}: an "always" answer grants nothing`,
    );
    const name = line.split(' ')[0] ?? '';
    t.ok(await needsApproval(shell, sh(line), granted(name)), `${line}: a stored grant for ${name} covers nothing`);
  }
  // An operator's explicit prefix naming the whole command may cover it (it runs in the sandbox).
  t.equal(await autoApproval(shell, sh('npm test'), scope({ allowedTools: ['run_shell_command(npm test)'] })), 'allowed_tools');
  t.ok(await needsApproval(shell, sh('npm run evil'), scope({ allowedTools: ['run_shell_command(npm test)'] })), 'only what it names');
  const git = scope({ allowedTools: ['run_shell_command(git)'] });
  t.equal(await autoApproval(shell, sh('git status -s'), git), 'allowed_tools', 'a prefix covers catalogued lines');
  t.ok(await needsApproval(shell, sh("git clone -u 'touch P' --no-local a b"), git), '`git` does not name `git clone`');
  t.ok(await needsApproval(shell, sh('git log --output=x'), git), 'a catalogued command with a refused option: no prefix covers it');
  t.ok(
    await needsApproval(shell, sh("git clone -u 'touch P' a b"), scope({ allowedTools: ['run_shell_command(git clone)'] })),
    'clone -u runs a command',
  );
});

t.test('finding 2: option parsing', async (t) => {
  const ok = (argv: string) => t.equal(catalogueProblem(argv.split(' ')), undefined, `covered: ${argv}`);
  const no = (argv: string) => t.type(catalogueProblem(argv.split(' ')), 'string', `refused: ${argv}`);
  ok('ls -la src');
  ok('ls -lhS --sort=size');
  ok('ls --sort size');
  ok('head -n 5 notes.txt');
  ok('head -n5 notes.txt');
  ok('head -5 notes.txt');
  ok('sort -nr -k 2 -t , data.txt');
  ok('sort -k2,2n data.txt');
  ok('grep -rn -e TODO --include=*.ts src');
  ok('grep -- -e notes.txt');
  ok('git status --porcelain=v2 -uno');
  ok('git diff --stat HEAD~1 -- src');
  ok('git log --oneline -n 5 --format=%h');
  ok('find . -name *.ts -type f -maxdepth 2 -print');
  ok('echo --compress-program=sh');
  ok('rm -rf build');
  no('head -n');
  no('ls --sort');
  no('git branch new-branch');
  no('uniq in.txt out.txt');
  no('pwd x');
  no('date -s 2020-01-01');
  no('git push');
  no('git -C x status');
  no('find . -newerXY x');
  no('sort --compress-program=sh');
  no('tail -f log');
  // walks that follow symlinks would leave the workspace through a link inside it
  no('grep -R x .');
  no('rg -L x');
  no('rg --follow x');
  no('find -L . -name x');
  no('tree -l');
  no('ls -RL');
});

t.test('finding 7: a command that changes files is covered only as the last of its line', async (t) => {
  fs.symlinkSync('.git', path.join(WS, 'lnk'));
  t.teardown(() => fs.rmSync(path.join(WS, 'lnk')));
  const s = granted('git apply', 'cp', 'cat', 'mkdir', 'ln', 'tar', 'mv');
  for (const line of [
    'git apply fix.patch && cp payload.ini lnk/config',
    'git apply fix.patch && cp payload.ini out.ini',
    'cp notes.txt n2.txt && cat n2.txt',
    'mkdir d; cat notes.txt',
    'mv a b | cat notes.txt',
    'tar xf x.tar && cat notes.txt',
    'ln -s .git l2 && cat l2/config',
  ]) {
    t.ok(await needsApproval(shell, sh(line), s), `asks: ${line}`);
    const coverage = await judgeLine(line, { workspace: WS });
    t.equal(coverage.coverable, false, `not coverable as a whole: ${line}`);
  }
  t.match(await judgeLine('git apply fix.patch && cp a b', { workspace: WS }), {
    coverable: false,
    reason: /may change files, and commands follow/,
  });
  t.equal(
    await autoApproval(shell, sh('cp notes.txt n2.txt'), s),
    'allowed always in this conversation',
    'alone it is judged on its own words',
  );
  t.equal(
    await autoApproval(shell, sh('cat notes.txt && cp notes.txt n2.txt'), s),
    'allowed always in this conversation',
    'last in the line',
  );
  t.ok(await needsApproval(shell, sh('cp notes.txt lnk/config'), s), 'into a link to .git: asks');
  t.ok(await needsApproval(shell, sh('cp notes.txt lnk'), s), 'into a folder that is .git: asks');
  t.ok(await needsApproval(shell, sh('git apply fix.patch'), s), 'git apply is not in the catalogue: a stored grant covers nothing');
  t.ok(await needsApproval(shell, sh('cp HEAD vendor/cache/config'), s), 'config beside a HEAD');
  t.ok(await needsApproval(shell, sh('cp src/config vendor/cache'), granted('cp')), 'cp of a file named config into a git directory');
  t.ok(await needsApproval(shell, sh('cp notes.txt half/HEAD'), s), 'HEAD beside objects and refs');
  t.ok(await needsApproval(shell, sh('mv notes.txt HEAD'), s), 'writing a file named HEAD anywhere');
  t.equal(
    await autoApproval(shell, sh('git show HEAD'), granted('git show')),
    'allowed always in this conversation',
    'reading HEAD is fine',
  );
});

t.test('findings 1 and 8: files that make tools run code ask, whatever AUTO_EDIT, allowed_tools or a grant says', async (t) => {
  const write = (file_path: string) => ({ file_path, content: 'x' });
  const replace = (file_path: string) => ({ file_path, old_string: 'a', new_string: 'b' });
  const scopes: Array<[string, ApprovalScope]> = [
    ['AUTO_EDIT', scope({ approvalMode: 'AUTO_EDIT' })],
    ['allowed_tools write_file, replace', scope({ allowedTools: ['write_file', 'replace'] })],
    ['"always" on write_file and replace', scope({}, ['write_file', 'replace'])],
  ];
  const toolConfig = [
    '.git/config',
    '.npmrc',
    'sub/.git/hooks/x',
    'vendor/cache/config', // beside HEAD
    'vendor/cache/refs/heads/main', // refs beside HEAD
    'vendor/cache/hooks/pre-commit',
    'vendor/cache/info/attributes',
    'half/HEAD', // beside objects and refs
    'half/config',
    'elsewhere/HEAD', // a HEAD anywhere
    '.gitattributes',
    'sub/.gitmodules',
    '.envrc',
    '.vscode/settings.json',
    '.cargo/config.toml',
  ];
  for (const [what, s] of scopes) {
    for (const p of toolConfig) {
      t.ok(await needsApproval(tool('write_file'), write(p), s), `${what}: write_file ${p} asks`);
      t.ok(await needsApproval(tool('replace'), replace(p), s), `${what}: replace ${p} asks`);
    }
    for (const p of ['NOTES.md', 'src/x.ts', 'src/config/app.ts', 'src/hooks/use.ts', 'config/app.yml', 'package.json']) {
      t.notOk(await needsApproval(tool('write_file'), write(p), s), `${what}: write_file ${p} runs`);
    }
  }
  t.equal(
    await autoApproval(tool('write_file'), write('vendor/cache/config'), scope({ approvalMode: 'YOLO' })),
    undefined,
    'YOLO asks for them too',
  );
  t.ok(await writesToolConfig(WS, 'vendor/cache/objects/pack/x'), 'anything under objects/ beside a HEAD');
  fs.symlinkSync('vendor/cache', path.join(WS, 'cache-link'));
  t.teardown(() => fs.rmSync(path.join(WS, 'cache-link')));
  t.ok(await writesToolConfig(WS, 'cache-link/config'), 'through a symlink: where the write lands counts');
});

t.test('finding 1: a git command in a planted repository is covered by no grant or prefix', async (t) => {
  const s = scope({ allowedTools: ['run_shell_command(git status)', 'run_shell_command(cd)'] }, [
    shellGrant('run_shell_command', 'git status'),
    shellGrant('run_shell_command', 'cd'),
  ]);
  t.equal(await autoApproval(shell, sh('git status'), s), 'allowed_tools', 'in the workspace it runs');
  t.ok(
    await needsApproval(shell, { command: 'git status', dir_path: 'vendor/cache' }, s),
    'dir_path in a folder with HEAD and objects/: asks',
  );
  t.ok(await needsApproval(shell, sh('cd vendor/cache && git status'), s), 'a cd there: asks');
  t.ok(await needsApproval(shell, { command: 'git status', dir_path: 'vendor/cache/objects' }, s), 'and below it');
  t.equal(await autoApproval(shell, { command: 'git status', dir_path: 'src' }, s), 'allowed_tools', 'an ordinary folder runs');
});

t.test('unconfined: without the sandbox no shell-like call runs without a card', async (t) => {
  const open = (settings: ContextSettings, grants: string[] = []) => scope(settings, grants, false);
  const echo = [shellGrant('run_shell_command', 'echo')];
  t.ok(await needsApproval(shell, sh('echo a'), open({}, echo)), 'a grant does not cover it');
  t.ok(await needsApproval(shell, sh('echo a'), open({ allowedTools: ['run_shell_command(echo)'] })), 'nor a prefix');
  t.ok(await needsApproval(shell, sh('echo a'), open({ allowedTools: ['run_shell_command'] })), 'nor the bare tool name');
  t.ok(await needsApproval(shell, sh('echo a'), open({ approvalMode: 'YOLO' })), 'nor YOLO');
  const absent: ApprovalScope = { settings: { approvalMode: 'YOLO' }, trustedTools: new Set(), workspace: WS };
  t.ok(await needsApproval(shell, sh('echo a'), absent), 'a scope that does not say: unconfined');
  t.same(await offered('echo a', false), ['proceed_once', 'cancel'], 'no "always" offered');
  t.same(
    (await optionsFor(shell, sh('echo a'), WS)).map((o) => o.id),
    ['proceed_once', 'cancel'],
    'a bare workspace: no "always" either',
  );
  t.same(
    await grantsFor(shell, sh('echo a'), 'proceed_always', { workspace: WS, confined: false }),
    [],
    'and an "always" answer grants nothing',
  );
  t.equal(
    await autoApproval(tool('write_file'), { file_path: 'a', content: 'x' }, open({ approvalMode: 'YOLO' })),
    'approval mode YOLO',
    'edits are not shell',
  );
  t.equal(await autoApproval(tool('read_file'), { file_path: 'a' }, open({})), 'read-only');
  t.equal(await autoApproval(shell, sh('echo a'), scope({ approvalMode: 'YOLO' })), 'approval mode YOLO', 'confined: YOLO runs it');
});

t.test('the catalogue is well formed', async (t) => {
  for (const [key, spec] of Object.entries(GRANT_CATALOGUE)) {
    const all = [...(spec.flags ?? []), ...(spec.valued ?? []), ...(spec.optionalValue ?? [])];
    for (const opt of all)
      t.match(opt, spec.wordOptions === true ? /^-[A-Za-z0-9]+$/ : /^(?:-[A-Za-z0-9.]|--[a-z0-9][a-z0-9-]*)$/, `${key}: ${opt}`);
    t.notOk(/^(?:sh|bash|env|xargs|npm|npx|make|python3?|node|pytest|jest|eslint|prettier)$/.test(key), `${key} runs code: not catalogued`);
  }
});

t.test('docs/grant-catalogue.md is the catalogue (regenerate: node --import tsx scripts/grant-catalogue-doc.ts)', async (t) => {
  const doc = fs.readFileSync(new URL('../../../docs/grant-catalogue.md', import.meta.url), 'utf8');
  // Rows compared cell by cell, so Prettier's alignment of the table does not matter.
  const rows = (text: string) =>
    text
      .split('\n')
      .filter((l) => l.startsWith('| `'))
      .map((l) => l.split(' | ').map((c) => c.replace(/^\|/, '').replace(/\|$/, '').trim()));
  t.same(rows(doc), rows(catalogueTable()), 'every command with its options, in order');
  t.equal(rows(doc).length, Object.keys(GRANT_CATALOGUE).length);
});
