/**
 * Repositories a sandboxed command created are put out of git's reach when it ends. Bind mounts
 * keep a command from changing the configuration of the repositories that were there, but not from
 * making a new one anywhere (`git init sub`, a `.git/modules/x`, a `sub/.git` file naming a git
 * directory): registered in the index as a submodule (`git update-index --cacheinfo 160000,…`),
 * its configuration (`core.fsmonitor`, hooks) runs in the developer's next `git status` on the host,
 * unconfined. So each repository the walk finds after the command that was not there before is
 * renamed: a `.git` (directory or file) to `.git.untrusted`, any other git directory's `HEAD` to
 * `HEAD.untrusted` — git no longer takes either for a repository — and the command's result says so.
 * Nothing is deleted; a person who wants the repository renames it back after reading its config.
 *
 * The walk has limits (a command can make a tree too big for it); the submodules the workspace
 * repository's index names are looked up directly too (`git ls-files --stage`, with git's safe
 * configuration imposed: no fsmonitor or hook runs), wherever they lie.
 */
import { execFile } from 'node:child_process';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { isWithin } from '../workspace.js';
import { hostGitEnvironment } from './git-env.js';
import { scanToolConfig } from './tool-config.js';

/** How long `git ls-files` may take. */
const LS_FILES_TIMEOUT_MS = 5_000;

/**
 * The `.git` of every submodule (gitlink, mode 160000) the workspace repository's index names;
 * [] when there is none, no repository, or no git.
 */
function gitlinkRepositories(workspace: string): Promise<string[]> {
  const env = hostGitEnvironment(workspace, true);
  return new Promise((resolve) => {
    execFile(
      'git',
      ['ls-files', '--stage', '-z'],
      { cwd: workspace, env, timeout: LS_FILES_TIMEOUT_MS, maxBuffer: 64 << 20 },
      (err, stdout) => {
        if (err !== null) return resolve([]); // not a repository (or no git): nothing registers a submodule
        const out: string[] = [];
        for (const entry of stdout.split('\0')) {
          const tab = entry.indexOf('\t');
          if (!entry.startsWith('160000 ') || tab < 0) continue;
          const rel = entry.slice(tab + 1);
          const repo = path.resolve(workspace, rel, '.git');
          if (isWithin(workspace, repo)) out.push(repo);
        }
        resolve(out);
      },
    );
  });
}

/** A free name beside `p`: `p.untrusted`, else `p.untrusted-2`, … */
async function freeName(p: string): Promise<string | undefined> {
  for (let n = 1; n <= 20; n++) {
    const candidate = `${p}.untrusted${n === 1 ? '' : `-${n}`}`;
    if ((await fsp.lstat(candidate).catch(() => undefined)) === undefined) return candidate;
  }
  return undefined;
}

/**
 * Renames what makes `repo` a repository, when its parent is still inside the workspace (not a
 * link swapped in meanwhile); the note for the command's result, or undefined when nothing moved.
 */
async function disarm(workspace: string, repo: string): Promise<string | undefined> {
  const parent = await fsp.realpath(path.dirname(repo)).catch(() => undefined);
  if (parent === undefined || !isWithin(workspace, parent)) return undefined;
  const target = path.basename(repo) === '.git' ? path.join(parent, '.git') : path.join(parent, path.basename(repo), 'HEAD');
  const to = await freeName(target);
  if (to === undefined) return undefined;
  try {
    await fsp.rename(target, to);
  } catch {
    return undefined; // gone already, or not ours to move
  }
  return `${path.relative(workspace, target)} → ${path.relative(workspace, to)}`;
}

/**
 * Disarms every repository of `workspace` that is not in `before` (what the walk saw before the
 * command ran) and was made since `since` (ms; its birth time, where the file system records one).
 * Resolves with one line per repository moved, for the command's result.
 */
export async function quarantineNewRepositories(workspace: string, before: ReadonlySet<string>, since: number): Promise<string[]> {
  const [after, registered] = await Promise.all([scanToolConfig(workspace), gitlinkRepositories(workspace)]);
  const moved: string[] = [];
  for (const repo of new Set([...after.repositories, ...registered])) {
    if (before.has(repo)) continue;
    const st = await fsp.lstat(repo).catch(() => undefined);
    if (st === undefined) continue;
    // Older than the command (the walk before it ran was cut short and missed it): not the command's.
    if (st.birthtimeMs > 0 && st.birthtimeMs < since - 1000) continue;
    const note = await disarm(workspace, repo);
    if (note !== undefined) moved.push(note);
  }
  return moved;
}
