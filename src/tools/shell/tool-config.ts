/**
 * Tool-configuration files in a workspace: files that git, npm, yarn, pnpm, direnv, editors or
 * hook managers load by themselves and that can make them run code (git hooks and config,
 * `.npmrc`, `.yarnrc.yml`'s yarnPath, `.pnpmfile.cjs`, `.vscode/tasks.json`, …). The sandbox
 * binds each one read-only over itself, so a sandboxed command cannot plant code that a later
 * tool — the developer's own `git commit` or `npm install` outside the sandbox — would run.
 *
 * They are found by a bounded walk that never follows a symbolic link and never blocks the
 * event loop (fs.promises.opendir): within {@link WALK_LIMITS} (directories, entries, depth, time),
 * breadth first, so the workspace root and the levels near it are always covered; generated
 * trees (node_modules, virtual environments, build output) are not entered.
 *
 * Some absent ones (at the workspace root: {@link ABSENT_AT_ROOT}; a repository's hooks/ and
 * info/) are covered too: a command could otherwise create `.npmrc` or a whole `.git`. See
 * {@link PlaceholderRegistry}.
 */
import { type Dirent, promises as fsp } from 'node:fs';
import fs from 'node:fs';
import path from 'node:path';
import { locate } from './locate.js';

/** Entries read-only wherever they lie in the workspace (files or directories, by name). */
export const TOOL_CONFIG_NAMES: ReadonlySet<string> = new Set([
  '.gitattributes',
  '.gitmodules',
  '.gitconfig',
  '.npmrc',
  '.yarnrc',
  '.yarnrc.yml',
  '.pnpmfile.cjs',
  '.envrc',
  '.pre-commit-config.yaml',
  '.mise.toml',
  'mise.toml',
  '.vscode',
  '.idea',
  '.husky',
  '.devcontainer',
  '.githooks',
  '.cargo',
  // gemini-cli: settings.json (MCP servers, hooks, tool discovery commands it runs), extensions/,
  // commands/; and where a home directory lies in the workspace, this server's default EXTENSIONS_DIR
  '.gemini',
  // hook managers, runtimes, build wrappers and debuggers that run what their file names
  '.lefthook.yml',
  'lefthook.yml',
  '.lefthook.yaml',
  'lefthook.yaml',
  '.lefthook-local.yml',
  'lefthook-local.yml',
  '.lefthook-local.yaml',
  'lefthook-local.yaml',
  'bunfig.toml',
  '.bunfig.toml',
  '.mvn',
  '.tool-versions',
  '.devcontainer.json',
  '.pdbrc',
  '.gdbinit',
  '.lldbinit',
  '.exrc',
  '.nvimrc',
  '.nvim.lua',
  '.vimrc',
]);

/**
 * Folders a tool works in (so not read-only as a whole) holding entries it loads and runs: yarn's
 * `.yarn/releases` (the program `yarnPath` names) and `.yarn/plugins`, Mercurial's `.hg/hgrc`
 * (hooks, extensions). Existing ones are read-only; an absent `.hg/hgrc` gets a placeholder.
 */
/** A loaded entry of a {@link TOOL_CONFIG_INSIDE} folder: its kind, and whether an absent one gets a placeholder. */
export interface InsideEntry {
  kind: 'file' | 'dir';
  placeholder: boolean;
}

export const TOOL_CONFIG_INSIDE: ReadonlyMap<string, ReadonlyMap<string, InsideEntry>> = new Map<string, ReadonlyMap<string, InsideEntry>>([
  [
    '.yarn',
    new Map([
      ['releases', { kind: 'dir', placeholder: false }],
      ['plugins', { kind: 'dir', placeholder: false }],
    ]),
  ],
  ['.hg', new Map([['hgrc', { kind: 'file', placeholder: true }]])],
]);

/**
 * Absent at the workspace root, covered by an empty read-only file (or directory): those whose
 * mere creation makes a tool on the host run code without asking — a repository (hooks,
 * fsmonitor), npm's `.npmrc` (script-shell, node-options), yarn's yarnPath, pnpm's pnpmfile,
 * VS Code's automatic tasks. Not the others: direnv and mise ask before they trust a new
 * `.envrc` or `mise.toml`; `.gitattributes` and `.gitmodules` only choose among drivers and
 * URLs that configuration (read-only) defines; hook directories only run when git's
 * configuration points at them; and every placeholder shows up on the host while a command runs.
 */
const ABSENT_AT_ROOT: ReadonlyMap<string, ConfigPath['kind']> = new Map([
  ['.git', 'dir'],
  ['.npmrc', 'file'],
  ['.yarnrc', 'file'],
  ['.yarnrc.yml', 'file'],
  ['.pnpmfile.cjs', 'file'],
  ['.vscode', 'dir'],
  ['.gemini', 'dir'],
] as const);

/** In a git directory (`.git`, a bare repository, a submodule's under `.git/modules`): what git loads as configuration or runs. */
const GIT_DIR_CONFIG = ['config', 'config.worktree', 'hooks', 'info', 'commondir'] as const;

/** Absent from a git directory, covered by an empty directory (git creates both with `git init`). */
const GIT_DIR_ABSENT_DIRS = ['hooks', 'info'] as const;

/**
 * The content of a `commondir` placeholder: git reads `commondir` in any git directory and then
 * takes its configuration and hooks from the directory it names, so one created by a command
 * (`../evil`) would point the host's next git at a planted config. An empty placeholder would
 * break git (it fails to read an empty commondir); `.` names the git directory itself.
 */
export const COMMONDIR_PLACEHOLDER = '.\n';

/** Directories the walk does not enter: generated, large, and not where tools look for project configuration. */
const SKIPPED_DIRS: ReadonlySet<string> = new Set(['node_modules', '.venv', 'venv', '__pycache__', '.tox', '.cache', '.next', 'target']);

/** Bounds of the walk (directories read, entries seen, depth, time): past them, deeper tool-config files are left writable. */
export const WALK_LIMITS = Object.freeze({ maxDirs: 2000, maxEntries: 30_000, maxDepth: 8, maxMs: 250 });

/** A path to bind read-only, and what it is (an absent one is covered by an empty file or directory). */
export interface ConfigPath {
  path: string;
  /** `commondir`: an absent git `commondir`, covered by a read-only file holding {@link COMMONDIR_PLACEHOLDER}. */
  kind: 'file' | 'dir' | 'commondir';
}

/** What the walk found: existing entries (bound over themselves) and absent ones (covered by a placeholder). */
export interface ToolConfigScan {
  existing: ConfigPath[];
  absent: ConfigPath[];
  /** Every repository the walk saw: git directories (`.git`, bare ones, submodules') and `.git` files. */
  repositories: string[];
  /** True when a limit stopped the walk before it saw everything. */
  truncated: boolean;
}

/** What the walk may still spend, and the workspace it walks (a real path). */
type Budget = { dirs: number; entries: number; until: number; root: string };

/**
 * A tool-configuration entry that is a symbolic link (`.npmrc -> config/npmrc`, `.git/hooks ->
 * ../scripts/hooks`): the tool follows it, so where it leads, when inside the workspace, is
 * covered — the existing file or directory read-only, or, when missing, a placeholder at its
 * first missing component. A `.git` link to a repository gets its configuration covered.
 */
async function scanLink(p: string, kind: 'file' | 'dir', budget: Budget, scan: ToolConfigScan, depth: number): Promise<void> {
  const target = await fsp.readlink(p).catch(() => undefined);
  if (target === undefined) return;
  const at = await locate(budget.root, path.resolve(path.dirname(p), target), kind);
  if (at === undefined) return; // outside the workspace: nothing a command can write
  if (!at.exists) {
    scan.absent.push({ path: at.path, kind: at.kind });
    return;
  }
  if (path.basename(p) === '.git' && at.kind === 'dir') {
    const entries = await entriesOf(at.path, budget);
    if (entries !== undefined && looksLikeGitDir(entries)) return scanGitDir(at.path, entries, budget, scan, depth + 1);
  }
  scan.existing.push({ path: at.path, kind: at.kind });
}

/** The entries of `dir` (no symlink followed), counted against the budget; undefined when unreadable. */
async function entriesOf(dir: string, budget: Budget): Promise<Dirent[] | undefined> {
  if (budget.dirs <= 0 || Date.now() > budget.until) {
    budget.dirs = 0;
    return undefined;
  }
  budget.dirs--;
  let handle: fs.Dir;
  try {
    handle = await fsp.opendir(dir, { bufferSize: 256 });
  } catch {
    return undefined; // gone, or not readable: nothing to protect that a command could read either
  }
  const out: Dirent[] = [];
  try {
    for await (const entry of handle) {
      if (budget.entries-- <= 0) break;
      out.push(entry);
    }
  } catch {
    // vanished while read: what was read stands
  }
  return out;
}

/** True when the entries look like a git directory: HEAD with objects/ and refs/ (a bare repository, or `.git`). */
function looksLikeGitDir(entries: readonly Dirent[]): boolean {
  const has = (name: string, dir: boolean) => entries.some((e) => e.name === name && (dir ? e.isDirectory() : e.isFile()));
  return has('HEAD', false) && has('objects', true) && has('refs', true);
}

/** The kind of `p` without following a link: undefined when it is absent, a link, or neither file nor directory. */
async function kindOf(p: string): Promise<'file' | 'dir' | 'other' | undefined> {
  const st = await fsp.lstat(p).catch(() => undefined);
  if (st === undefined) return undefined;
  return st.isDirectory() ? 'dir' : st.isFile() ? 'file' : 'other';
}

/**
 * A git directory's configuration entries, its absent hooks/, info/ and commondir, its linked
 * worktrees' git directories and its submodules' git directories. Each name is looked up by
 * lstat, not in the listing, which the walk's entry budget may have cut short.
 */
async function scanGitDir(dir: string, entries: readonly Dirent[], budget: Budget, scan: ToolConfigScan, depth: number): Promise<void> {
  scan.repositories.push(dir);
  await scanGitDirFiles(dir, budget, scan, true);
  const worktrees = path.join(dir, 'worktrees');
  if ((await kindOf(worktrees)) === 'dir') {
    // A linked worktree's git directory (`git worktree add`): its commondir and config.worktree
    // are what git run in that worktree (maybe outside the workspace) loads.
    for (const e of (await entriesOf(worktrees, budget)) ?? []) {
      if (e.isDirectory()) await scanGitDirFiles(path.join(worktrees, e.name), budget, scan, false);
    }
  }
  const modules = entries.find((x) => x.name === 'modules' && x.isDirectory());
  if (modules !== undefined && depth < WALK_LIMITS.maxDepth) await scanModules(path.join(dir, 'modules'), budget, scan, depth + 1);
}

/** The configuration entries of one git directory; with `absent`, placeholders for the missing hooks/, info/ and commondir. */
async function scanGitDirFiles(dir: string, budget: Budget, scan: ToolConfigScan, absent: boolean): Promise<void> {
  for (const name of GIT_DIR_CONFIG) {
    const p = path.join(dir, name);
    const kind = await kindOf(p);
    if (kind === 'file' || kind === 'dir') scan.existing.push({ path: p, kind });
    else if (kind === 'other') await scanLink(p, name === 'hooks' || name === 'info' ? 'dir' : 'file', budget, scan, 0);
    else if (absent && kind === undefined) {
      if ((GIT_DIR_ABSENT_DIRS as readonly string[]).includes(name)) scan.absent.push({ path: p, kind: 'dir' });
      else if (name === 'commondir') scan.absent.push({ path: p, kind: 'commondir' });
      // config.worktree: loaded when the (read-only) config sets extensions.worktreeConfig; an empty one is harmless
      else if (name === 'config.worktree') scan.absent.push({ path: p, kind: 'file' });
    }
  }
}

/** `.git/modules`: each submodule's git directory (nested by the submodule's path). */
async function scanModules(dir: string, budget: Budget, scan: ToolConfigScan, depth: number): Promise<void> {
  const entries = await entriesOf(dir, budget);
  for (const e of entries ?? []) {
    if (!e.isDirectory()) continue;
    const sub = path.join(dir, e.name);
    const inner = await entriesOf(sub, budget);
    if (inner === undefined) continue;
    if (looksLikeGitDir(inner)) await scanGitDir(sub, inner, budget, scan, depth);
    else if (depth < WALK_LIMITS.maxDepth) await scanModules(sub, budget, scan, depth + 1);
  }
}

/**
 * A `.git` entry: a repository's git directory (its configuration read-only, the rest writable
 * for ordinary git work); anything else — a `gitdir: …` file, or a directory that is not (yet) a
 * repository, such as an empty placeholder — read-only as a whole, so no repository can be made there.
 */
async function scanDotGit(p: string, e: Pick<Dirent, 'isDirectory'>, depth: number, budget: Budget, scan: ToolConfigScan): Promise<void> {
  const entries = e.isDirectory() ? await entriesOf(p, budget) : undefined;
  if (!e.isDirectory()) scan.repositories.push(p); // a `gitdir: …` file
  if (entries !== undefined && looksLikeGitDir(entries)) await scanGitDir(p, entries, budget, scan, depth + 1);
  else scan.existing.push({ path: p, kind: e.isDirectory() ? 'dir' : 'file' });
}

/** The loaded entries of a folder of {@link TOOL_CONFIG_INSIDE}: existing ones (not links) read-only, absent ones a placeholder where marked. */
async function scanInside(dir: string, inner: ReadonlyMap<string, InsideEntry>, scan: ToolConfigScan): Promise<void> {
  for (const [name, { kind, placeholder }] of inner) {
    const p = path.join(dir, name);
    const st = await fsp.lstat(p).catch(() => undefined);
    if (st === undefined) {
      if (placeholder) scan.absent.push({ path: p, kind });
    } else if (st.isDirectory() || st.isFile()) {
      scan.existing.push({ path: p, kind: st.isDirectory() ? 'dir' : 'file' });
    }
  }
}

/**
 * The workspace root's tool-config entries, looked up by name (lstat) rather than in the
 * listing, which the walk's entry budget cuts short: a command could otherwise fill the root with
 * 30,000 files so that `.git` or `.npmrc` falls past the cut and stays writable.
 */
async function scanRoot(workspace: string, budget: Budget, scan: ToolConfigScan): Promise<void> {
  for (const name of ['.git', ...TOOL_CONFIG_NAMES]) {
    const p = path.join(workspace, name);
    const st = await fsp.lstat(p).catch(() => undefined);
    if (st === undefined) continue;
    if (st.isSymbolicLink()) await scanLink(p, 'file', budget, scan, 0);
    else if (name === '.git') await scanDotGit(p, st, 0, budget, scan);
    else scan.existing.push({ path: p, kind: st.isDirectory() ? 'dir' : 'file' });
  }
  for (const [name, inner] of TOOL_CONFIG_INSIDE) {
    const p = path.join(workspace, name);
    const st = await fsp.lstat(p).catch(() => undefined);
    if (st?.isDirectory() === true) await scanInside(p, inner, scan);
  }
}

/** One directory of the walk: its tool-config entries; the subdirectories to walk next. */
async function scanDir(dir: string, depth: number, budget: Budget, scan: ToolConfigScan): Promise<string[]> {
  const entries = await entriesOf(dir, budget);
  if (entries === undefined) return [];
  if (looksLikeGitDir(entries)) {
    // A bare repository in the workspace (planted or not): its config and hooks, not its objects.
    await scanGitDir(dir, entries, budget, scan, depth);
    return [];
  }
  const next: string[] = [];
  for (const e of entries) {
    const p = path.join(dir, e.name);
    if (depth === 0 && (e.name === '.git' || TOOL_CONFIG_NAMES.has(e.name) || TOOL_CONFIG_INSIDE.has(e.name))) continue; // done by name, see scanRoot
    if (e.isSymbolicLink()) {
      // not walked into; a tool-config link's target is covered where it lies
      if (e.name === '.git' || TOOL_CONFIG_NAMES.has(e.name)) await scanLink(p, 'file', budget, scan, depth);
      continue;
    }
    if (e.name === '.git') {
      await scanDotGit(p, e, depth, budget, scan);
    } else if (TOOL_CONFIG_NAMES.has(e.name)) {
      scan.existing.push({ path: p, kind: e.isDirectory() ? 'dir' : 'file' });
    } else if (e.isDirectory() && TOOL_CONFIG_INSIDE.has(e.name)) {
      await scanInside(p, TOOL_CONFIG_INSIDE.get(e.name) ?? new Map(), scan);
    } else if (e.isDirectory() && !SKIPPED_DIRS.has(e.name) && depth < WALK_LIMITS.maxDepth) {
      next.push(p);
    }
  }
  return next;
}

/**
 * The tool-configuration entries of `workspace` (a real path), breadth first within
 * {@link WALK_LIMITS}. Absent ones at the root (and in the root repository) are listed in `absent`.
 */
export async function scanToolConfig(workspace: string): Promise<ToolConfigScan> {
  const scan: ToolConfigScan = { existing: [], absent: [], repositories: [], truncated: false };
  const budget: Budget = {
    dirs: WALK_LIMITS.maxDirs,
    entries: WALK_LIMITS.maxEntries,
    until: Date.now() + WALK_LIMITS.maxMs,
    root: workspace,
  };
  const rootEntries = new Set((await fsp.readdir(workspace).catch(() => [] as string[])).map(String));
  await scanRoot(workspace, budget, scan);
  let level = [workspace];
  for (let depth = 0; level.length > 0; depth++) {
    const next: string[] = [];
    for (const dir of level) next.push(...(await scanDir(dir, depth, budget, scan)));
    level = next;
  }
  scan.truncated = budget.dirs <= 0 || budget.entries <= 0;
  for (const [name, kind] of ABSENT_AT_ROOT) {
    if (!rootEntries.has(name)) scan.absent.push({ path: path.join(workspace, name), kind });
  }
  return scan;
}

/**
 * Placeholders for absent tool-configuration entries. bwrap can only mount over a path that
 * exists, so for an absent `.npmrc` (or `.git`, `.vscode`, …) it creates an empty file (or
 * directory) in the workspace, on the host, and mounts an empty read-only one over it: the
 * command can neither write it nor create it. Afterwards the placeholder is removed — but only
 * once no sandboxed command of that workspace is running in this process: unlinking a path
 * that is a mount point in another command's namespace would unmount it there and let that
 * command create the file after all. A placeholder is removed only while it is still empty
 * (a person may have written it meanwhile).
 *
 * While a command runs, the placeholders are visible (as empty entries) on the host as well;
 * inside the sandbox git ignores them (core.excludesFile, see the sandbox). Not coordinated
 * across server processes: two servers sharing one workspace could remove each other's
 * placeholders while a command runs; after a crash, empty placeholders stay behind.
 */
export class PlaceholderRegistry {
  private readonly workspaces = new Map<string, { running: number; placeholders: Set<string> }>();

  /** Marks a command of `workspace` as running; the returned function ends it (idempotent). */
  acquire(workspace: string): () => void {
    let entry = this.workspaces.get(workspace);
    if (entry === undefined) {
      entry = { running: 0, placeholders: new Set() };
      this.workspaces.set(workspace, entry);
    }
    entry.running++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.release(workspace);
    };
  }

  /** Records paths the running command of `workspace` gets placeholders for (they did not exist). */
  record(workspace: string, paths: readonly string[]): void {
    const entry = this.workspaces.get(workspace);
    for (const p of paths) entry?.placeholders.add(p);
  }

  /** Whether a command of `workspace` is running (tests). */
  running(workspace: string): number {
    return this.workspaces.get(workspace)?.running ?? 0;
  }

  private release(workspace: string): void {
    const entry = this.workspaces.get(workspace);
    if (entry === undefined) return;
    entry.running--;
    if (entry.running > 0) return;
    this.workspaces.delete(workspace);
    // Synchronous on purpose: a command that starts after this line must not see a placeholder
    // being removed under its mount. Deepest first, so `.git/hooks` goes before `.git`.
    for (const p of [...entry.placeholders].sort((a, b) => b.length - a.length)) removeIfEmpty(p);
  }
}

/**
 * Runs `fn` with a path naming `dir` through an open descriptor (`/proc/self/fd/N`), only when
 * `dir` is still where its name says — no component swapped for a link — so that what `fn`
 * removes or creates there cannot land outside the workspace, even if a link appears meanwhile.
 */
function inDir<T>(dir: string, fn: (at: string) => T): T | undefined {
  let fd: number;
  try {
    fd = fs.openSync(dir, fs.constants.O_RDONLY | fs.constants.O_DIRECTORY | fs.constants.O_NOFOLLOW);
  } catch {
    return undefined;
  }
  try {
    if (fs.readlinkSync(`/proc/self/fd/${fd}`) !== dir) return undefined;
    return fn(`/proc/self/fd/${fd}`);
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Removes the placeholder `p` when it is still an empty regular file, an empty directory or a
 * `commondir` placeholder as created, and only in its own directory (see {@link inDir}): nothing
 * outside the workspace is removed.
 */
function removeIfEmpty(p: string): void {
  try {
    inDir(path.dirname(p), (dir) => {
      const at = path.join(dir, path.basename(p));
      const st = fs.lstatSync(at);
      if (st.isFile() && (st.size === 0 || (path.basename(p) === 'commondir' && isCommondirPlaceholder(at)))) fs.unlinkSync(at);
      else if (st.isDirectory()) fs.rmdirSync(at); // fails unless empty
    });
  } catch {
    // gone already, or no longer empty: left as it is
  }
}

/** Whether the regular file `p` holds exactly {@link COMMONDIR_PLACEHOLDER} (read without following a link or blocking). */
function isCommondirPlaceholder(p: string): boolean {
  const fd = fs.openSync(p, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    const buf = Buffer.alloc(COMMONDIR_PLACEHOLDER.length + 1);
    const n = fs.readSync(fd, buf, 0, buf.length, 0);
    return fs.fstatSync(fd).isFile() && buf.toString('utf8', 0, n) === COMMONDIR_PLACEHOLDER;
  } finally {
    fs.closeSync(fd);
  }
}

/**
 * Creates the `commondir` placeholder `p` on the host (O_EXCL: never over an existing file or a
 * link; in its own directory, see {@link inDir}), holding {@link COMMONDIR_PLACEHOLDER} so that
 * git on the host and in the sandbox keeps working while the command runs; false when it could not.
 */
export function createCommondirPlaceholder(p: string): boolean {
  try {
    return (
      inDir(path.dirname(p), (dir) => {
        fs.writeFileSync(path.join(dir, path.basename(p)), COMMONDIR_PLACEHOLDER, { flag: 'wx', mode: 0o644 });
        return true;
      }) ?? false
    );
  } catch {
    return false;
  }
}
