/**
 * What every `git` the server starts runs with, so that no file a command or a model can plant
 * makes git run code: configuration imposed through git's environment (GIT_CONFIG_COUNT,
 * GIT_CONFIG_KEY_n, GIT_CONFIG_VALUE_n). Git reads these as command-line configuration: after the
 * system, global, repository and worktree files, so they win over any of those; only `-c` on the
 * command line itself (visible in the line a person or the grant rules judge) comes later.
 *
 * What it closes:
 * - `safe.bareRepository=explicit`: a directory holding HEAD, objects/ and refs/ (a "planted bare
 *   repository", e.g. `vendor/cache`) is not a repository unless named with --git-dir or GIT_DIR,
 *   so its `config` (fsmonitor, diff.external, textconv drivers, gpg programs, …) is never read;
 * - `core.fsmonitor=false`: the fsmonitor hook (a command git runs on status, diff, add, …) is
 *   off in every repository, bare or not;
 * - `core.hooksPath=/dev/null`: no hook runs (pre-commit, post-checkout, …), wherever it lies;
 * - `protocol.ext.allow=never`: `ext::` remote URLs (they run a command) stay refused even when a
 *   repository's config allows them;
 * - GIT_SSH_COMMAND=ssh (unless the server's environment names its own ssh program): a
 *   repository's `core.sshCommand` does not choose the program a fetch or push runs;
 * - GIT_EDITOR and GIT_SEQUENCE_EDITOR `:` (git's "no editor"), GIT_PAGER `cat`: a repository's
 *   `core.editor`, `sequence.editor`, `core.pager` or `pager.<cmd>` never runs. Commands have no
 *   terminal and stdin is closed, so no editor or pager could be used anyway.
 *
 * What it does not close: a non-bare repository that a command or a model creates (a `.git`
 * directory or file in a subdirectory) can still name programs that git runs for some operations
 * (clean/smudge filters and diff/merge drivers selected by .gitattributes, `diff.external`,
 * `core.askPass`, credential helpers, gpg programs); git has no switch for these that would not
 * break ordinary use. In the sandbox such programs run confined like any command; writing such
 * files needs approval (the policy's tool-configuration rule).
 *
 * The system configuration (/etc/gitconfig) is still read: it is the administrator's, and no
 * command can write it in the sandbox.
 */
import os from 'node:os';
import path from 'node:path';

/** The configuration imposed on every git the server starts, in order. */
export const GIT_SAFE_CONFIG: readonly (readonly [key: string, value: string])[] = Object.freeze([
  ['safe.bareRepository', 'explicit'],
  ['core.fsmonitor', 'false'],
  ['core.hooksPath', '/dev/null'],
  ['protocol.ext.allow', 'never'],
] as const);

/** Largest GIT_CONFIG_COUNT taken from the environment as it is (git itself refuses bigger ones sooner or later). */
const MAX_INHERITED_COUNT = 1000;

/**
 * The variables to set, on top of `base` (the environment the command would otherwise get, or
 * undefined when that is not known), so that git runs with {@link GIT_SAFE_CONFIG}. Entries
 * `base` already imposes through GIT_CONFIG_COUNT are kept: ours are appended after them and so
 * win. Spawn anything that may run git with `{ ...base, ...gitSafeEnvironment(base) }`.
 */
export function gitSafeEnvironment(base?: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const inherited = Number(base?.GIT_CONFIG_COUNT ?? '0');
  const first = Number.isInteger(inherited) && inherited >= 0 && inherited <= MAX_INHERITED_COUNT ? inherited : 0;
  const env: Record<string, string> = { GIT_CONFIG_COUNT: String(first + GIT_SAFE_CONFIG.length) };
  GIT_SAFE_CONFIG.forEach(([key, value], i) => {
    env[`GIT_CONFIG_KEY_${first + i}`] = key;
    env[`GIT_CONFIG_VALUE_${first + i}`] = value;
  });
  if (base?.GIT_SSH_COMMAND === undefined && base?.GIT_SSH === undefined) env.GIT_SSH_COMMAND = 'ssh';
  env.GIT_EDITOR = ':';
  env.GIT_SEQUENCE_EDITOR = ':';
  env.GIT_PAGER = 'cat';
  return env;
}

/** `env` (from {@link gitSafeEnvironment}) with one more configuration entry appended: it wins over every earlier one. */
export function withGitConfig(env: Readonly<Record<string, string>>, key: string, value: string): Record<string, string> {
  const count = Number(env.GIT_CONFIG_COUNT ?? '0');
  const n = Number.isInteger(count) && count >= 0 ? count : 0;
  return { ...env, GIT_CONFIG_COUNT: String(n + 1), [`GIT_CONFIG_KEY_${n}`]: key, [`GIT_CONFIG_VALUE_${n}`]: value };
}

/**
 * The environment of a git the server itself runs on the host about `workspace` (to read its
 * configuration or index): a fixed one — none of the server's GIT_* variables, a fixed PATH, HOME
 * for the user's own configuration — confined to the workspace's own repository, never an
 * enclosing one. `imposed`: git's safe configuration on top ({@link gitSafeEnvironment});
 * without it, git reads what the developer's git would read.
 */
export function hostGitEnvironment(workspace: string, imposed: boolean): Record<string, string> {
  return {
    ...(imposed ? gitSafeEnvironment() : { GIT_CONFIG_COUNT: '0' }),
    HOME: os.homedir(),
    PATH: '/usr/local/bin:/usr/bin:/bin',
    GIT_CEILING_DIRECTORIES: path.dirname(workspace),
  };
}
