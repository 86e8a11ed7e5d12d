/**
 * What a shell grant or an allowed_tools prefix may cover. A line is covered only when a
 * person could read off it everything it will do, and that stays inside what they agreed to:
 *
 * 1. It is readable (tools/shell/shell-line.ts): plain words only, no expansion, escape,
 *    assignment, compound command or redirection into a file.
 * 2. No command in it runs other commands or code it is handed: shells and wrappers (`env`,
 *    `xargs`, `sudo`, `eval`, …), `find -exec`, `git -c`, `git config`, `rg --pre`, … — these
 *    are never covered, not by a grant and not by a prefix ({@link RUNS_COMMANDS}).
 * 3. Every word that could be a path stays in the workspace: no absolute path outside it,
 *    no `..`, no symlink that leads out, no bare `cd` (HOME) or `cd -`; none of the server's own
 *    files; nothing under `.git/` or other files that make tools run code ({@link isToolConfigPath}).
 *
 * Interpreters and build runners (`python`, `node`, `npm`, `make`, …) run whatever code they
 * are pointed at, so "always" on one of them would trust every future script: they may be
 * covered by an explicit allowed_tools prefix but are never offered "always" ({@link NO_ALWAYS}).
 * A grant's key is the command name, or for git the command and its subcommand (`git status`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { readShellLine } from '../../tools/index.js';
import type { ShellCommand } from '../../tools/index.js';
import type { CommandLine } from '../../tools/tool.js';

/** Commands that run other commands, code or configuration handed to them: never covered. */
export const RUNS_COMMANDS: ReadonlySet<string> = new Set([
  // shells
  ...['sh', 'bash', 'dash', 'zsh', 'ksh', 'mksh', 'yash', 'fish', 'csh', 'tcsh', 'busybox', 'toybox'],
  // builtins that run, source or change how later words are run
  ...['.', 'source', 'eval', 'exec', 'command', 'builtin', 'trap', 'alias', 'enable', 'hash', 'set', 'shopt'],
  ...['export', 'declare', 'typeset', 'local', 'readonly', 'unset', 'ulimit', 'umask', 'fc', 'history', 'popd', 'pushd'],
  // wrappers that run their arguments as a command
  ...['env', 'xargs', 'parallel', 'sudo', 'doas', 'su', 'runuser', 'pkexec', 'nohup', 'nice', 'ionice', 'timeout'],
  ...['chroot', 'unshare', 'nsenter', 'setsid', 'setpriv', 'stdbuf', 'flock', 'watch', 'strace', 'ltrace', 'script'],
  ...['expect', 'ssh', 'sshpass', 'gdb', 'lldb', 'valgrind', 'taskset', 'chrt', 'prlimit', 'systemd-run', 'at', 'batch'],
  ...['crontab', 'bwrap', 'firejail', 'fakeroot', 'proot', 'time', 'caffeinate', 'open', 'xdg-open', 'sg', 'newgrp'],
]);

/** Interpreters, build and package runners, editors and network clients: an explicit prefix may cover them, "always" never does. */
export const NO_ALWAYS: ReadonlySet<string> = new Set([
  ...['python', 'python2', 'python3', 'pypy', 'pypy3', 'node', 'nodejs', 'deno', 'bun', 'bunx', 'tsx', 'ts-node'],
  ...['perl', 'ruby', 'php', 'lua', 'luajit', 'Rscript', 'R', 'tclsh', 'wish', 'julia', 'java', 'jshell', 'osascript'],
  ...['awk', 'gawk', 'mawk', 'nawk', 'sed', 'gsed', 'ed', 'ex', 'vi', 'vim', 'nvim', 'emacs', 'nano', 'less', 'more', 'man'],
  ...['npm', 'npx', 'pnpm', 'pnpx', 'yarn', 'corepack', 'make', 'gmake', 'cmake', 'ninja', 'meson', 'bazel', 'cargo'],
  ...['rustup', 'go', 'mvn', 'gradle', 'ant', 'sbt', 'dotnet', 'pip', 'pip3', 'pipx', 'poetry', 'uv', 'uvx', 'tox'],
  ...['nox', 'conda', 'gem', 'bundle', 'rake', 'composer', 'docker', 'podman', 'kubectl', 'helm', 'terraform'],
  ...['tar', 'rsync', 'zip', 'curl', 'wget', 'nc', 'ncat', 'socat', 'scp', 'sftp', 'ftp', 'telnet', 'gh', 'git-lfs'],
]);

/** git subcommands that run commands or write the configuration that makes git run them. */
const GIT_RUNS_COMMANDS: ReadonlySet<string> = new Set([
  ...['config', 'submodule', 'bisect', 'rebase', 'difftool', 'mergetool', 'filter-branch', 'filter-repo', 'daemon'],
  ...['instaweb', 'send-email', 'credential', 'credential-store', 'credential-cache', 'hook', 'upload-pack'],
  ...['receive-pack', 'upload-archive', 'shell', 'web--browse', 'help', 'alias', 'worktree', 'notes', 'replace'],
]);

/** git arguments that run a command or load configuration, whatever the subcommand. */
const GIT_RUNS_ARGS = /^(?:-c|--config|--config-env|--upload-pack|--receive-pack|--exec|--template|--extcmd|--tool|-x)(?:=|$)/;

/** `find` actions that run commands or write files. */
const FIND_ACTIONS = /^-(?:exec|execdir|ok|okdir|delete|fprint|fprint0|fprintf|fls)$/;

/** `rg --pre` runs a preprocessor command on every file. */
const RG_RUNS_ARGS = /^--pre(?:=|$)/;

/**
 * Files and folders that make tools run code (git hooks and config, npm and yarn config,
 * direnv, editor tasks, dev containers): writing them is as good as running a command, so no
 * grant covers a line naming them and AUTO_EDIT does not write them without asking.
 */
const TOOL_CONFIG = new Set([
  '.git',
  '.githooks',
  '.husky',
  '.gitconfig',
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.pnpmfile.cjs',
  '.envrc',
  '.vscode',
  '.idea',
  '.devcontainer',
  '.pre-commit-config.yaml',
]);

/** True when `rel` (relative to the workspace, any separator) names or lies under a tool-config file or folder. */
export function isToolConfigPath(rel: string): boolean {
  return rel.split(/[\\/]+/).some((part) => TOOL_CONFIG.has(part.toLowerCase()));
}

/**
 * True when `given` (as a tool was given it, relative to the workspace or absolute) really lands
 * in a tool-config file or folder: symlinks followed, so `link/config` with `link -> .git` counts.
 */
export function writesToolConfig(workspace: string, given: string): boolean {
  return isToolConfigPath(path.relative(workspace, realTarget(path.resolve(workspace, given))));
}

/** Where a line runs and what it must not touch. */
export interface LineScope {
  /** Absolute real path of the workspace. */
  workspace: string;
  /** The directory the line starts in (default: the workspace). */
  cwd?: string;
  /** The server's own files. */
  protectedPaths?: CommandLine['protectedPaths'];
}

/** The verdict on one line: covered commands with their grant keys, or why it must be asked. */
export type LineCoverage =
  { coverable: true; commands: ShellCommand[]; grantKeys: string[]; alwaysOffered: boolean } | { coverable: false; reason: string };

/** The grant key of one command: its name, or `git <subcommand>`. */
export function grantKey(argv: readonly string[]): string {
  const [name = ''] = argv;
  return name === 'git' && argv[1] !== undefined ? `git ${argv[1]}` : name;
}

/** Why `argv` runs other commands (never covered), or undefined. */
function runsCommands(argv: readonly string[]): string | undefined {
  const [name = '', ...args] = argv;
  if (name.includes('/')) return `a command named by its path (${name})`;
  if (RUNS_COMMANDS.has(name)) return `\`${name}\` runs other commands`;
  if (name === 'find' && args.some((a) => FIND_ACTIONS.test(a))) return '`find` with an action that runs commands or writes files';
  if ((name === 'rg' || name === 'ripgrep') && args.some((a) => RG_RUNS_ARGS.test(a))) return '`rg --pre` runs a command';
  if (name === 'git') {
    const [sub] = args;
    if (sub === undefined) return 'git without a subcommand';
    if (sub.startsWith('-')) return 'git options before the subcommand';
    if (GIT_RUNS_COMMANDS.has(sub)) return `\`git ${sub}\` runs commands or changes git's configuration`;
    if (args.some((a) => GIT_RUNS_ARGS.test(a))) return 'a git option that runs a command or sets configuration';
  }
  return undefined;
}

/** The strings inside `word` that a command might take as a path: the word, what follows `=`, `:` or `,`, and a path glued to a short option (`-C/dir`). */
function pathCandidates(word: string): string[] {
  const out = [word];
  for (let i = 0; i < word.length; i++) if ('=:,'.includes(word.charAt(i))) out.push(word.slice(i + 1));
  const opt = /^-[A-Za-z0-9]+/.exec(word);
  if (opt !== null && !word.startsWith('--')) for (let k = 2; k <= opt[0].length; k++) out.push(word.slice(k));
  return out.filter((c) => c !== '');
}

/** The real path `p` would reach: its nearest existing ancestor resolved (symlinks followed), the rest appended. */
function realTarget(p: string): string {
  let dir = p;
  const rest: string[] = [];
  for (;;) {
    try {
      return path.join(fs.realpathSync(dir), ...rest);
    } catch {
      const parent = path.dirname(dir);
      if (parent === dir) return p;
      rest.unshift(path.basename(dir));
      dir = parent;
    }
  }
}

/** How many directories a line's `cd`s may lead to before it is too involved to judge. */
const MAX_BASES = 16;

const inside = (dir: string, p: string): boolean => p === dir || p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);

/** Why `candidate`, read from `base`, leaves the workspace or touches what no grant covers; undefined when fine. */
function pathProblem(candidate: string, base: string, scope: LineScope): string | undefined {
  if (candidate.split('/').includes('..')) return `a path with \`..\` (${candidate})`;
  if (candidate === '/dev/null') return undefined;
  const target = realTarget(path.resolve(base, candidate));
  if (!inside(scope.workspace, target)) return `a path outside the workspace (${candidate})`;
  if (scope.protectedPaths?.covers(target)) return `one of the server's own files (${candidate})`;
  if (isToolConfigPath(path.relative(scope.workspace, target))) return `a file that makes tools run code (${candidate})`;
  return undefined;
}

/**
 * Reads `line` and judges whether a grant or prefix may cover it (see the module comment).
 * Touches the file system only to resolve symlinks of the paths the line names.
 */
export function judgeLine(line: string, scope: LineScope): LineCoverage {
  const read = readShellLine(line);
  if (!read.readable) return { coverable: false, reason: read.reason };
  const bases = [scope.cwd ?? scope.workspace];
  for (const { argv } of read.commands) {
    const runs = runsCommands(argv);
    if (runs !== undefined) return { coverable: false, reason: runs };
    const [name, ...args] = argv;
    if (name === 'cd') {
      const dirs = args.filter((a) => !/^-[LPe@]+$/.test(a));
      const [dir] = dirs;
      if (dir === undefined || dir === '-' || dirs.length > 1)
        return { coverable: false, reason: '`cd` to the home or previous directory' };
    }
    for (const word of args) {
      for (const candidate of pathCandidates(word)) {
        for (const base of bases) {
          const problem = pathProblem(candidate, base, scope);
          if (problem !== undefined) return { coverable: false, reason: problem };
        }
      }
    }
    // A later command may run in a directory this one changed to: check its paths from there too.
    if (name === 'cd') {
      const dir = args.at(-1) ?? '.';
      bases.push(...bases.map((b) => path.resolve(b, dir)));
      if (bases.length > MAX_BASES) return { coverable: false, reason: 'too many `cd`s to follow' };
    }
  }
  const grantKeys = [...new Set(read.commands.map((c) => grantKey(c.argv)))];
  const alwaysOffered = read.commands.every((c) => !NO_ALWAYS.has(c.argv[0] ?? ''));
  return { coverable: true, commands: read.commands, grantKeys, alwaysOffered };
}

/** True when every command of a covered line starts with the words of `prefix` (an allowed_tools entry). */
export function matchesPrefix(covered: readonly ShellCommand[], prefix: string): boolean {
  const want = readShellLine(prefix);
  if (!want.readable || want.commands.length !== 1) return false;
  const words = want.commands[0]?.argv ?? [];
  return covered.length > 0 && covered.every(({ argv }) => words.every((w, i) => argv[i] === w));
}
