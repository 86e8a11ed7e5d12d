/**
 * Files that make tools run code: git's hooks and configuration, npm's and yarn's, direnv's,
 * an editor's tasks, a dev container's. Writing one is as good as running a command, so no grant,
 * allowed_tools entry or AUTO_EDIT writes one without a person's yes, and no shell grant covers a
 * line naming one. Judged on the disk as it is when asked (symlinks followed), off the event loop:
 * a path a model names is probed through libuv's thread pool, so a slow or hung disk holds that
 * call only, never every task.
 *
 * 1. By name, in any folder and any case: `.git/` and the names in {@link TOOL_CONFIG}.
 * 2. A git directory wherever it lies: git takes any folder with HEAD, objects/ and refs/ for a
 *    repository (`git status` in `vendor/cache` then loads `vendor/cache/config`). So a folder
 *    below the workspace with a HEAD beside objects, refs or config counts, and all in it; a `HEAD`,
 *    `config`, `objects`, `refs`, `packed-refs` or `commondir` beside another of them counts, and so
 *    does anything under `hooks/`, `info/`, `logs/`, `modules/` or `worktrees/` of a folder that has a
 *    `HEAD` or `objects` + `refs`. Writing a file named `HEAD` or `config` counts anywhere: a
 *    repository is made by its HEAD, and its config may be written first, before anything beside
 *    it says "git directory" (then the HEAD's card alone would not show it); reading one
 *    (`git show HEAD`) counts only by the rule before.
 */
import fs from 'node:fs';
import path from 'node:path';
import { TOOL_CONFIG_INSIDE, TOOL_CONFIG_NAMES } from '../../tools/shell/tool-config.js';

/**
 * Names that make tools run code, in any folder (compared in lower case): every name the sandbox
 * keeps read-only (tools/shell/tool-config.ts, one list, so nothing the policy asks about is
 * writable by a sandboxed command), `.git`, and the folders whose loaded entries the sandbox
 * protects one by one (`.yarn`, `.hg`): writing anything in them asks.
 */
export const TOOL_CONFIG: ReadonlySet<string> = new Set(
  ['.git', ...TOOL_CONFIG_NAMES, ...TOOL_CONFIG_INSIDE.keys()].map((n) => n.toLowerCase()),
);

/** Entries of a git directory that, beside one another, make a folder a repository (lower case). */
const GIT_CORE = new Set(['head', 'config', 'objects', 'refs', 'packed-refs', 'commondir']);
/** Folders of a git directory whose files git runs or loads. */
const GIT_INNER = new Set(['hooks', 'info', 'logs', 'modules', 'worktrees', 'branches']);

/**
 * Judging a path costs a few file-system probes per folder on its way: a path with more folders
 * than this is not judged at all and counts as tool configuration (a person is asked). A model
 * can name a path thousands of folders deep, and judging one blocked the event loop for seconds.
 */
export const MAX_JUDGED_DEPTH = 64;

/** True when `p` has more than {@link MAX_JUDGED_DEPTH} parts (any separator). */
export const tooDeepToJudge = (p: string): boolean => p.split(/[\\/]+/).length > MAX_JUDGED_DEPTH;

/**
 * How many more file-system probes one judgement may make (a realpath, a folder, or a git name
 * probed in one); {@link ProbeBudget.spend} throws {@link TooManyProbes} past it. Bounds what a
 * line naming many paths costs, whatever the caches miss.
 */
export class ProbeBudget {
  constructor(public left: number) {}

  spend(): void {
    if (--this.left < 0) throw new TooManyProbes();
  }
}

/** Thrown when a judgement runs out of its {@link ProbeBudget}: the caller asks a person. */
export class TooManyProbes extends Error {
  constructor() {
    super('too many paths to check');
  }
}

/** True when `rel` (relative to the workspace, any separator) names or lies under a tool-config name of {@link TOOL_CONFIG}. */
export function isToolConfigPath(rel: string): boolean {
  return rel.split(/[\\/]+/).some((part) => TOOL_CONFIG.has(part.toLowerCase()));
}

/** Longest file name Linux file systems store (bytes): a path with a longer part cannot exist. */
const NAME_MAX = 255;

/**
 * True when no file can have path `p` (a part longer than {@link NAME_MAX}): answered without a
 * system call, which for such a path fails slowly (and a hostile line names hundreds of them).
 */
const unnameable = (p: string): boolean => p.split(path.sep).some((part) => part.length > NAME_MAX && Buffer.byteLength(part) > NAME_MAX);

/** True when `dir` is a folder (symlinks followed); false when it is anything else, missing or unreachable. */
async function isFolder(dir: string): Promise<boolean> {
  if (unnameable(dir)) return false;
  try {
    return (await fs.promises.stat(dir)).isDirectory();
  } catch {
    return false;
  }
}

/** True when `p` exists (symlinks followed: a dangling link does not), like fs.existsSync but off the event loop. */
async function exists(p: string): Promise<boolean> {
  try {
    await fs.promises.access(p, fs.constants.F_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * What one judgement learns of a folder's git entries, probed lazily: a folder first (one
 * stat: most folders a hostile line names do not exist), then only the names a decision needs,
 * each once, one after another (never six at a time: that would take the whole, shared thread
 * pool). Writing `src/app.ts` needs no git name probed in the workspace itself and one (`HEAD`)
 * in `src/`; probing all six in every folder on the way was most of a write's file-system work.
 */
class GitFolder {
  private folder?: Promise<boolean>;
  private readonly names = new Map<string, Promise<boolean>>();

  constructor(
    private readonly dir: string,
    private readonly budget: ProbeBudget | undefined,
  ) {}

  /** True when the folder holds entry `name` (one of GIT_CORE, lower case; git on Linux spells them in upper case only for HEAD). */
  async has(name: string): Promise<boolean> {
    if (this.folder === undefined) {
      // One probe for the folder itself.
      this.budget?.spend();
      this.folder = isFolder(this.dir);
    }
    if (!(await this.folder)) return false;
    let found = this.names.get(name);
    if (found === undefined) {
      this.budget?.spend();
      found = exists(path.join(this.dir, name === 'head' ? 'HEAD' : name));
      this.names.set(name, found);
    }
    return found;
  }

  /** True when any of `names` is here, probed in order until one is. */
  async any(names: readonly string[]): Promise<boolean> {
    for (const n of names) if (await this.has(n)) return true;
    return false;
  }
}

/** What one judgement already learnt of folders' git entries (a line names many paths in few folders). */
export type FolderCache = Map<string, GitFolder>;

function folderOf(dir: string, cache: FolderCache, budget: ProbeBudget | undefined): GitFolder {
  let folder = cache.get(dir);
  if (folder === undefined) {
    folder = new GitFolder(dir, budget);
    cache.set(dir, folder);
  }
  return folder;
}

/** Names whose writing asks wherever they lie (rule 2 of the module comment), lower case. */
const WRITE_ALWAYS_ASKS: ReadonlySet<string> = new Set(['head', 'config']);

/** True when `folder` is a git directory already (a HEAD with objects, refs or config beside it). */
const isGitDirectory = async (folder: GitFolder): Promise<boolean> =>
  (await folder.has('head')) && (await folder.any(['objects', 'refs', 'config']));

const CORE_NAMES = [...GIT_CORE];

/** True when `name`, in `folder`, is (or would make that folder) part of a git directory. */
async function gitEntry(name: string, folder: GitFolder): Promise<boolean> {
  const lower = name.toLowerCase();
  if (GIT_CORE.has(lower)) return folder.any(CORE_NAMES.filter((c) => c !== lower));
  if (GIT_INNER.has(lower)) return (await folder.has('head')) || ((await folder.has('objects')) && (await folder.has('refs')));
  return false;
}

/**
 * True when `target` (an absolute real path inside `workspace`, existing or not) is or lies in a
 * git directory by its contents (rule 2 of the module comment), or, when `writing`, is named HEAD or config.
 */
export async function inGitDirectory(
  workspace: string,
  target: string,
  writing: boolean,
  cache: FolderCache = new Map(),
  budget?: ProbeBudget,
): Promise<boolean> {
  const rel = path.relative(workspace, target);
  if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return false;
  const parts = rel.split(path.sep);
  if (writing && WRITE_ALWAYS_ASKS.has(parts.at(-1)?.toLowerCase() ?? '')) return true;
  if (parts.length > MAX_JUDGED_DEPTH) return true;
  let dir = workspace;
  for (const part of parts) {
    const folder = folderOf(dir, cache, budget);
    if ((await gitEntry(part, folder)) || (dir !== workspace && (await isGitDirectory(folder)))) return true;
    dir = path.join(dir, part);
  }
  return isGitDirectory(folderOf(dir, cache, budget));
}

/** Real paths already resolved in one judgement (undefined: the path does not exist). */
export type RealpathCache = Map<string, string | undefined>;

async function realpathOrUndefined(
  p: string,
  cache: RealpathCache | undefined,
  budget: ProbeBudget | undefined,
): Promise<string | undefined> {
  if (cache?.has(p) === true) return cache.get(p);
  if (unnameable(p)) return undefined;
  budget?.spend();
  let real: string | undefined;
  try {
    real = await fs.promises.realpath(p);
  } catch {
    real = undefined;
  }
  cache?.set(p, real);
  return real;
}

/** The real path `p` would reach: its nearest existing ancestor resolved (symlinks followed), the rest appended. */
export async function realTarget(p: string, cache?: RealpathCache, budget?: ProbeBudget): Promise<string> {
  let dir = p;
  const rest: string[] = [];
  for (;;) {
    const real = await realpathOrUndefined(dir, cache, budget);
    if (real !== undefined) return path.join(real, ...rest);
    const parent = path.dirname(dir);
    if (parent === dir) return p;
    rest.unshift(path.basename(dir));
    dir = parent;
  }
}

/** True when the real path `target` is a tool-configuration file by name or by what lies beside it (`writing`: a HEAD anywhere too). */
export async function isToolConfigTarget(
  workspace: string,
  target: string,
  writing: boolean,
  cache?: FolderCache,
  budget?: ProbeBudget,
): Promise<boolean> {
  return isToolConfigPath(path.relative(workspace, target)) || (await inGitDirectory(workspace, target, writing, cache, budget));
}

/**
 * True when `given` (as a tool was given it, relative to the workspace or absolute) really lands
 * in a tool-config file or folder: symlinks followed, so `link/config` with `link -> .git` counts.
 */
export async function writesToolConfig(workspace: string, given: string): Promise<boolean> {
  // Too deep to judge in bounded time: a person is asked (see MAX_JUDGED_DEPTH).
  if (tooDeepToJudge(given)) return true;
  return isToolConfigTarget(workspace, await realTarget(path.resolve(workspace, given)), true);
}
