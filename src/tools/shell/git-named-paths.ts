/**
 * Files and directories that the workspace repository's git configuration names by path, and
 * that git on the host loads or runs by itself: `core.hooksPath` (hooks run by the developer's
 * next `git commit`) and the files `include.path` / `includeIf.<condition>.path` pull in (a
 * `core.fsmonitor` there runs on the next `git status`). A repository often keeps these in its
 * working tree (`scripts/hooks`, `shared.gitconfig`) under names the tool-config walk does not
 * know, so the sandbox asks git itself which paths its configuration names, and binds those
 * inside the workspace read-only; an absent one (`local.gitconfig`, "if present") is covered
 * by a placeholder, at its first missing component.
 *
 * `git config` only reads configuration: it runs no hook, fsmonitor or other program.
 */
import { execFile } from 'node:child_process';
import { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { ConfigPath } from './tool-config.js';
import { hostGitEnvironment } from './git-env.js';
import { locate } from './locate.js';

/** What git's configuration names inside the workspace: existing entries and absent ones. */
export interface GitNamedPaths {
  existing: ConfigPath[];
  absent: ConfigPath[];
}

/** How long `git config` may take (it reads a few small files). */
const GIT_CONFIG_TIMEOUT_MS = 5_000;

/** The keys whose values are paths git loads or runs from (lower case, as git prints them). */
const PATH_KEYS = '^(core\\.hookspath|include\\.path|includeif\\..+\\.path)$';

/** `git config --get-regexp` of {@link PATH_KEYS} in `workspace`, with each entry's origin file; [] when there is no repository. */
function readEntries(workspace: string): Promise<{ origin: string; key: string; value: string }[]> {
  // Nothing imposed: this is what git on the host reads by default.
  const env = hostGitEnvironment(workspace, false);
  const args = ['config', '--includes', '--show-origin', '--null', '--get-regexp', PATH_KEYS];
  return new Promise((resolve, reject) => {
    execFile('git', args, { cwd: workspace, env, timeout: GIT_CONFIG_TIMEOUT_MS, maxBuffer: 1 << 20 }, (err, stdout) => {
      // exit 1: no such key; 128: not a repository (or a broken one: nothing git would load)
      if (err !== null && typeof err.code === 'number' && (err.code === 1 || err.code === 128)) return resolve([]);
      if (err !== null && err.code === 'ENOENT') return resolve([]); // no git on the host: nothing there loads these files
      if (err !== null) return reject(new Error(`could not read the repository's configuration: ${err.message}`));
      const fields = stdout.split('\0');
      const out: { origin: string; key: string; value: string }[] = [];
      for (let i = 0; i + 1 < fields.length; i += 2) {
        const origin = fields[i] ?? '';
        const entry = fields[i + 1] ?? '';
        const nl = entry.indexOf('\n');
        if (!origin.startsWith('file:') || nl < 0) continue;
        out.push({ origin: origin.slice('file:'.length), key: entry.slice(0, nl), value: entry.slice(nl + 1) });
      }
      resolve(out);
    });
  });
}

/** `value` as git resolves it: `~/` from HOME; a hook path from the working tree; an include from its file's directory. */
function resolveValue(workspace: string, e: { origin: string; key: string; value: string }): string | undefined {
  if (e.value === '') return undefined;
  if (e.value.startsWith('~/')) return path.join(os.homedir(), e.value.slice(2));
  if (path.isAbsolute(e.value)) return path.normalize(e.value);
  const base = e.key === 'core.hookspath' ? workspace : path.dirname(path.resolve(workspace, e.origin));
  return path.resolve(base, e.value);
}

/** The paths the workspace repository's configuration names inside the workspace (see the module comment). */
export async function gitNamedPaths(workspace: string): Promise<GitNamedPaths> {
  const found: GitNamedPaths = { existing: [], absent: [] };
  const dotGit = await fsp.lstat(path.join(workspace, '.git')).catch(() => undefined);
  if (dotGit === undefined) return found;
  const seen = new Set<string>();
  for (const e of await readEntries(workspace)) {
    const p = resolveValue(workspace, e);
    if (p === undefined) continue;
    const at = await locate(workspace, p, e.key === 'core.hookspath' ? 'dir' : 'file');
    if (at === undefined || seen.has(at.path)) continue;
    seen.add(at.path);
    (at.exists ? found.existing : found.absent).push({ path: at.path, kind: at.kind });
  }
  return found;
}
