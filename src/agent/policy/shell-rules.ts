/**
 * What a shell grant or an allowed_tools prefix may cover. A line is covered only when a
 * person could read off it everything it will do, and that stays inside what they agreed to:
 *
 * 1. It is readable (tools/shell/shell-line.ts): plain words only, no expansion, escape,
 *    assignment, compound command or redirection into a file.
 * 2. A grant covers only what the grant catalogue lists (grant-catalogue.ts): known commands and
 *    git subcommands with known options, none of which runs other code or writes outside the
 *    workspace. Anything else asks, and is never offered "always".
 * 3. An allowed_tools prefix covers catalogued lines too, and, because an operator named it, a
 *    command the catalogue does not know (`npm test`, `pytest`) when the prefix names the whole
 *    command (for git: its subcommand). Commands that run other commands (`env`, `xargs`, shells,
 *    `git -c`, … {@link RUNS_COMMANDS}) are covered by no prefix.
 * 4. A command that may change the file system (`cp`, `mv`, `mkdir`, any uncatalogued command:
 *    `git apply`, `tar`, `ln`, …) is covered only as the last command of its line: what follows it
 *    would be judged on a disk it has not changed yet (a link it creates, a patch it applies).
 * 5. Every word that could be a path stays in the workspace: no absolute path outside it,
 *    no `..`, no symlink that leads out, no bare `cd` (HOME) or `cd -`; none of the server's own
 *    files; no file that makes tools run code (tool-config.ts: `.git/`, `.npmrc`, a `config`
 *    beside a `HEAD`, …).
 *
 * A grant's key is the command name, or for git the command and its subcommand (`git status`).
 */
import fs from 'node:fs';
import path from 'node:path';
import { readShellLine } from '../../tools/index.js';
import type { ShellCommand } from '../../tools/index.js';
import type { CommandLine } from '../../tools/tool.js';
import { catalogueKey, catalogueProblem, GRANT_CATALOGUE, mayChangeFiles } from './grant-catalogue.js';
import { isToolConfigTarget, ProbeBudget, realTarget, tooDeepToJudge, TooManyProbes } from './tool-config.js';
import type { FolderCache, RealpathCache } from './tool-config.js';

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

/** Where a line runs and what it must not touch. */
export interface LineScope {
  /** Absolute real path of the workspace. */
  workspace: string;
  /** The directory the line starts in (default: the workspace). */
  cwd?: string;
  /** The server's own files. */
  protectedPaths?: CommandLine['protectedPaths'];
  /** Folders already probed for git entries in this judgement (judgeLine sets it). */
  folders?: FolderCache;
  /** Paths already resolved in this judgement (judgeLine sets it). */
  realpaths?: RealpathCache;
  /** File-system probes this judgement may still make (judgeLine sets it). */
  budget?: ProbeBudget;
  /** Characters of path candidates this judgement may still check (judgeLine sets it; see {@link JUDGE_LIMITS}). */
  checks?: { left: number };
}

/**
 * Bounds on what judging one line may cost: the line is judged before every call runs and for
 * every card, and a model proposes many calls a turn. Its string work runs on the event loop, its
 * probes in libuv's thread pool (which every file operation of the server shares). A line past any of them
 * is simply not coverable (it asks): a person cannot review such a line at a glance either.
 */
export const JUDGE_LIMITS = {
  /** Characters of a line a grant or prefix may cover. */
  maxLine: 2048,
  /**
   * Paths checked per line, in characters: each word's candidates ({@link pathCandidates}) from
   * each `cd` base, each counted as its length plus {@link CHECK_COST}. Checking a path costs
   * string work in proportion to its length, and a word like `a=a=a=…` holds as many candidates
   * as it has `=`.
   */
  maxPathChars: 64 * 1024,
  /** File-system probes per line (realpaths and folders probed for git entries, caches aside). */
  maxProbes: 1024,
} as const;

/** What one path check costs beyond its characters (so that many short paths count too). */
const CHECK_COST = 64;

/** One command of a readable line, as the catalogue sees it. */
export interface JudgedCommand extends ShellCommand {
  /** Its catalogue and grant key: the name, or `git <subcommand>`. */
  key: string;
  /** The catalogue lists the command (or git subcommand). */
  known: boolean;
  /** Why the catalogue does not cover it (unknown command, option or operand), or undefined. */
  notCatalogued?: string;
}

/**
 * The verdict on one line: its commands with their grant keys (a grant may cover it only when
 * `alwaysOffered`: every command is in the catalogue), or why nothing may cover it.
 */
export type LineCoverage =
  { coverable: true; commands: JudgedCommand[]; grantKeys: string[]; alwaysOffered: boolean } | { coverable: false; reason: string };

/** `git clone -u <cmd>` (`--upload-pack`) runs the command. */
const GIT_CLONE_RUNS = /^-[^-]*u/;

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
    if (sub === 'clone' && args.some((a) => GIT_CLONE_RUNS.test(a))) return '`git clone -u` runs a command';
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

/** How many directories a line's `cd`s may lead to before it is too involved to judge. */
const MAX_BASES = 16;

const inside = (dir: string, p: string): boolean => p === dir || p.startsWith(dir.endsWith(path.sep) ? dir : dir + path.sep);

/**
 * Why `candidate`, read from `base`, leaves the workspace or touches what no grant covers;
 * undefined when fine. `writing`: the command may write it (a file named HEAD counts then).
 */
async function pathProblem(candidate: string, base: string, scope: LineScope, writing: boolean): Promise<string | undefined> {
  if (candidate.split('/').includes('..')) return `a path with \`..\` (${candidate})`;
  if (candidate === '/dev/null') return undefined;
  if (scope.checks !== undefined && (scope.checks.left -= candidate.length + CHECK_COST) < 0) throw new TooManyProbes();
  if (tooDeepToJudge(candidate)) return `a path too deep to judge (${candidate.slice(0, 80)}…)`;
  const target = await realTarget(path.resolve(base, candidate), scope.realpaths, scope.budget);
  if (!inside(scope.workspace, target)) return `a path outside the workspace (${candidate})`;
  if (scope.protectedPaths?.covers(target)) return `one of the server's own files (${candidate})`;
  if (await isToolConfigTarget(scope.workspace, target, writing, scope.folders, scope.budget))
    return `a file that makes tools run code (${candidate})`;
  return undefined;
}

/** The words of a `cp`/`mv` that are not options. */
const operandsOf = (args: readonly string[]): string[] => args.filter((a) => !a.startsWith('-'));

/**
 * The paths a command names: its words (and the strings inside them, {@link pathCandidates}), and
 * for `cp`/`mv` into a folder the file each source becomes there (`cp x dir` writes `dir/x`).
 */
async function namedPaths(argv: readonly string[], base: string, budget: ProbeBudget | undefined): Promise<string[]> {
  const [name, ...args] = argv;
  const out = args.flatMap(pathCandidates);
  const operands = operandsOf(args);
  const dest = operands.at(-1);
  if ((name === 'cp' || name === 'mv') && dest !== undefined && operands.length > 1) {
    let isDir = dest.endsWith('/');
    budget?.spend();
    try {
      isDir ||= (await fs.promises.stat(path.resolve(base, dest))).isDirectory();
    } catch {
      // a destination that does not exist is the file itself
    }
    if (isDir) out.push(...operands.slice(0, -1).map((src) => path.join(dest, path.basename(src))));
  }
  return out;
}

/** Why one command is not coverable (a `cd` home, a path out, a tool-config file), checked from every base. */
async function commandProblem(argv: readonly string[], bases: readonly string[], scope: LineScope): Promise<string | undefined> {
  const [name, ...args] = argv;
  if (name === 'cd') {
    const dirs = args.filter((a) => !/^-[LPe@]+$/.test(a));
    const [dir] = dirs;
    if (dir === undefined || dir === '-' || dirs.length > 1) return '`cd` to the home or previous directory';
  }
  const writing = mayChangeFiles(argv);
  for (const base of bases) {
    for (const candidate of await namedPaths(argv, base, scope.budget)) {
      const problem = await pathProblem(candidate, base, scope, writing);
      if (problem !== undefined) return problem;
    }
  }
  return undefined;
}

/**
 * Reads `line` and judges whether a grant or prefix may cover it (see the module comment).
 * Touches the file system only to resolve symlinks of the paths the line names and to look
 * beside them for a git directory, off the event loop (the line is the model's).
 */
export async function judgeLine(line: string, given: LineScope): Promise<LineCoverage> {
  if (line.length > JUDGE_LIMITS.maxLine) return { coverable: false, reason: `a line longer than ${JUDGE_LIMITS.maxLine} characters` };
  const read = readShellLine(line);
  if (!read.readable) return { coverable: false, reason: read.reason };
  const scope: LineScope = {
    ...given,
    folders: new Map(),
    realpaths: new Map(),
    budget: new ProbeBudget(JUDGE_LIMITS.maxProbes),
    checks: { left: JUDGE_LIMITS.maxPathChars },
  };
  try {
    return await judgeCommands(read.commands, scope);
  } catch (err) {
    if (err instanceof TooManyProbes) return { coverable: false, reason: 'it names too many paths to check' };
    throw err;
  }
}

/** {@link judgeLine} for a readable line's commands, within the scope's budgets (throws {@link TooManyProbes} past them). */
async function judgeCommands(commands: readonly ShellCommand[], scope: LineScope): Promise<LineCoverage> {
  const bases = [scope.cwd ?? scope.workspace];
  // Where the line starts counts too: git run in a planted repository (`dir_path: vendor/cache`) loads its config.
  const start = await pathProblem('.', bases[0] ?? scope.workspace, scope, false);
  if (start !== undefined) return { coverable: false, reason: `it starts in ${start.replace(/ \(\.\)$/, '')}` };
  const judged: JudgedCommand[] = [];
  for (const [i, { argv }] of commands.entries()) {
    const key = catalogueKey(argv);
    const known = Object.hasOwn(GRANT_CATALOGUE, key);
    const runs = known ? undefined : runsCommands(argv);
    if (runs !== undefined) return { coverable: false, reason: runs };
    if (i < commands.length - 1 && mayChangeFiles(argv))
      return { coverable: false, reason: `\`${key}\` may change files, and commands follow it: they would be judged before it ran` };
    const problem = await commandProblem(argv, bases, scope);
    if (problem !== undefined) return { coverable: false, reason: problem };
    const notCatalogued = catalogueProblem(argv);
    judged.push({ argv, key, known, ...(notCatalogued !== undefined ? { notCatalogued } : {}) });
    // A later command may run in a directory this one changed to: check its paths from there too.
    if (argv[0] === 'cd') {
      const dir = argv.at(-1) ?? '.';
      bases.push(...bases.map((b) => path.resolve(b, dir)));
      if (bases.length > MAX_BASES) return { coverable: false, reason: 'too many `cd`s to follow' };
    }
  }
  const grantKeys = [...new Set(judged.map((c) => c.key))];
  const alwaysOffered = judged.every((c) => c.notCatalogued === undefined);
  return { coverable: true, commands: judged, grantKeys, alwaysOffered };
}

/**
 * True when an allowed_tools prefix covers every command of a coverable line: each starts with
 * the prefix's words, and is either in the catalogue with its options, or unknown to the catalogue
 * and named whole by the prefix (`npm test` by `npm test`, `git clone` by `git clone`, not by `git`).
 */
export function matchesPrefix(covered: readonly JudgedCommand[], prefix: string): boolean {
  const want = readShellLine(prefix);
  if (!want.readable || want.commands.length !== 1) return false;
  const words = want.commands[0]?.argv ?? [];
  const named = (c: JudgedCommand) => !c.known && words.length >= c.key.split(' ').length;
  return covered.length > 0 && covered.every((c) => words.every((w, i) => c.argv[i] === w) && (c.notCatalogued === undefined || named(c)));
}
