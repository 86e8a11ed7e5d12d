/**
 * The shell sandbox: how `run_shell_command` starts `bash -c <script>`. With bubblewrap
 * (`bwrap`), the command sees only what it needs: the system directories (/usr, /etc, /opt, …)
 * read-only, its workspace read-write, and a private, empty /tmp, /run and HOME; nothing else of
 * the host's file system exists for it — no other home directory, no /var, and so no host UNIX
 * socket (a database's, Docker's, D-Bus's, an ssh-agent's) is reachable by path. Inside the
 * workspace, the server's own files (DATA_DIR, AUTH_CONFIG, SETTINGS_FILE, EXTENSIONS_DIR, credentials) are
 * masked by empty ones, and tool-configuration files (git hooks and config, `.npmrc`, `.vscode/`,
 * …; see tool-config.ts) are read-only, absent ones included. It has its own PID, IPC and UTS
 * namespaces (no view of the server's /proc, hence not of its environment), no network unless
 * allowed, no capabilities, and it dies with the server (`--die-with-parent`). Without it
 * (`off`), the command runs as the server's user, with the server's view of everything.
 *
 * Every command, sandboxed or not, gets the variables the caller imposes (git's safe
 * configuration, git-env.ts) on top of its environment.
 *
 * The sandbox does not open a session of its own (no `--new-session`): the tool spawns bwrap
 * detached, so bwrap leads a fresh session and process group with no terminal, and bash inside
 * stays in that group, which the tool's timeout and cancel kill whole. A process that leaves
 * the group (`setsid`) still dies with the PID namespace when bwrap goes.
 */
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import fs, { promises as fsp } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gitSafeEnvironment, withGitConfig } from './git-env.js';
import { processDir } from '../../lib/process-dir.js';
import { isWithin } from '../workspace.js';
import { gitNamedPaths } from './git-named-paths.js';
import { quarantineNewRepositories } from './quarantine.js';
import {
  COMMONDIR_PLACEHOLDER,
  createCommondirPlaceholder,
  PlaceholderRegistry,
  scanToolConfig,
  type ToolConfigScan,
} from './tool-config.js';

/** SHELL_SANDBOX: `auto` = bwrap when it is present and works, else off; `bwrap` = required. */
export type ShellSandboxMode = 'auto' | 'bwrap' | 'off';

/** How a command is started: the program and its arguments; `release` once it has ended (bwrap exited). */
export interface SandboxedCommand {
  file: string;
  args: string[];
  /** Descriptors the program must get as 3, 4, … (spawn's stdio after stdin, stdout, stderr). */
  fds?: number[];
  /** Called once the command has ended or failed to start (removes the sandbox's placeholders). */
  release: () => void;
  /**
   * After `release`, once the command has ended: puts the repositories it created out of git's
   * reach (quarantine.ts) and resolves with a line for each, for the command's result.
   */
  afterRun?: () => Promise<string[]>;
}

/** Where a command runs: its working directory and its workspace (both real paths). */
export interface CommandPlace {
  cwd: string;
  workspace: string;
}

/**
 * Starts shell commands. `command` MUST return a program that runs `bash -c script` with `cwd`
 * as its working directory and the variables `env` on top of its environment, confined as
 * `kind` says, and that the caller can spawn detached (its process group is the command's); the
 * caller MUST call `release` once the program has exited (or failed to start).
 */
export interface ShellSandbox {
  readonly kind: 'bwrap' | 'off';
  /** Whether a sandboxed command may use the network. */
  readonly network: boolean;
  /** One sentence for the model: what the command can and cannot touch. */
  readonly description: string;
  command(script: string, where: CommandPlace, env: Readonly<Record<string, string>>): Promise<SandboxedCommand>;
}

/** `NAME=value` arguments for env(1). */
function assignments(env: Readonly<Record<string, string>>): string[] {
  return Object.entries(env).map(([k, v]) => `${k}=${v}`);
}

const NOTHING_TO_RELEASE = (): void => undefined;

/** No sandbox: `env VARS… bash -c script` as the server's user (env(1) adds the variables to the inherited environment). */
export const NO_SANDBOX: ShellSandbox = Object.freeze({
  kind: 'off' as const,
  network: true,
  description: 'It is not sandboxed: it runs with the permissions of the server.',
  command: async (script: string, _where: CommandPlace, env: Readonly<Record<string, string>>): Promise<SandboxedCommand> => ({
    file: 'env',
    args: [...assignments(env), 'bash', '-c', script],
    release: NOTHING_TO_RELEASE,
  }),
});

/** What a bwrap sandbox needs: the binary, the paths to mask, and whether the network stays. */
export interface BwrapOptions {
  bwrap: string;
  /** Real paths of the server's own files and directories: masked wherever the command can see them. */
  protectedPaths: readonly string[];
  network: boolean;
  /** An empty, read-only directory holding an empty, read-only file `empty`: what masks are made of. */
  maskDir: string;
  /** The HOME commands see (an empty tmpfs there); default: this process's home directory. */
  home?: string;
}

/**
 * The host directories a command sees, read-only: programs, libraries, and /etc (name service,
 * certificates, locale: no sockets; its secrets are masked, {@link ETC_SECRETS}). A symbolic
 * link among them (/bin -> usr/bin on merged-/usr systems) is recreated as a link.
 */
export const SYSTEM_DIRS: readonly string[] = ['/usr', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/libx32', '/etc', '/opt'];

/** Files of /etc only root should read (the command may run as root): covered by empty ones. */
const ETC_SECRETS: readonly string[] = [
  '/etc/shadow',
  '/etc/shadow-',
  '/etc/gshadow',
  '/etc/gshadow-',
  '/etc/security/opasswd',
  '/etc/ssl/private',
];

/** The mask for `p`: an empty read-only directory over a directory, an empty file over anything else; undefined when `p` is missing. */
function maskFor(maskDir: string, p: string): string | undefined {
  try {
    return fs.statSync(p).isDirectory() ? path.join(maskDir, 'dir') : path.join(maskDir, 'empty');
  } catch {
    return undefined;
  }
}

/** The host's layout as the sandbox shows it, read once: system mounts, the node install, the masks of /etc's secrets. */
export interface HostLayout {
  /** bwrap arguments for the system directories (binds and links). */
  system: string[];
  /** Directories bound read-only (system directories and the node install): what a command can see besides its workspace. */
  visible: string[];
  /** bwrap arguments masking /etc's secrets and the ssh host keys. */
  etcMasks: string[];
}

/** Reads the host's layout (once per sandbox; cheap: a few lstat calls). */
export function hostLayout(maskDir: string): HostLayout {
  const system: string[] = [];
  const visible: string[] = [];
  for (const dir of SYSTEM_DIRS) {
    let st: fs.Stats;
    try {
      st = fs.lstatSync(dir);
    } catch {
      continue;
    }
    if (st.isSymbolicLink()) system.push('--symlink', fs.readlinkSync(dir), dir);
    else if (st.isDirectory()) {
      system.push('--ro-bind', dir, dir);
      visible.push(dir);
    }
  }
  // node (and npm beside it) where it is installed outside the system directories (nvm, a tarball).
  const nodePrefix = path.dirname(path.dirname(fs.realpathSync(process.execPath)));
  if (nodePrefix !== '/' && !visible.some((d) => isWithin(d, nodePrefix))) {
    system.push('--ro-bind', nodePrefix, nodePrefix);
    visible.push(nodePrefix);
  }
  const secrets = [...ETC_SECRETS, ...sshHostKeys()];
  const etcMasks = secrets.flatMap((p) => {
    const mask = maskFor(maskDir, p);
    return mask === undefined ? [] : ['--ro-bind', mask, p];
  });
  return { system, visible, etcMasks };
}

/** /etc/ssh's private host keys. */
function sshHostKeys(): string[] {
  try {
    return fs
      .readdirSync('/etc/ssh')
      .filter((n) => /^ssh_host_.*_key$/.test(n))
      .map((n) => path.join('/etc/ssh', n));
  } catch {
    return [];
  }
}

/**
 * /etc/resolv.conf when it links into /run (systemd-resolved): the file it names, bound
 * read-only after /run's tmpfs, so that name lookups work when the network is allowed.
 */
function resolvConf(): string[] {
  try {
    const real = fs.realpathSync('/etc/resolv.conf');
    return isWithin('/run', real) ? ['--ro-bind', real, real] : [];
  } catch {
    return [];
  }
}

/**
 * The masks for the server's own files: an empty read-only directory over a directory, an
 * empty read-only file over a file. Only where the command could see them (the workspace, the
 * system directories); elsewhere they do not exist for it. Paths that do not exist are skipped.
 */
function maskArgs(options: BwrapOptions, workspace: string, visible: readonly string[]): string[] {
  const args: string[] = [];
  for (const p of options.protectedPaths) {
    if (!isWithin(workspace, p) && !visible.some((d) => isWithin(d, p))) continue;
    const mask = maskFor(options.maskDir, p);
    if (mask !== undefined) args.push('--ro-bind', mask, p);
  }
  return args;
}

/** Where HOME is in the sandbox: the real home's path, as an empty tmpfs, unless that would cover the workspace or a system directory. */
function homeArgs(home: string, workspace: string, visible: readonly string[]): { home: string; args: string[] } {
  const usable =
    path.isAbsolute(home) &&
    home !== '/' &&
    !isWithin(workspace, home) &&
    !['/dev', '/proc'].some((d) => isWithin(d, home)) &&
    !visible.some((d) => isWithin(d, home) || isWithin(home, d));
  if (!usable) return { home: '/tmp/home', args: ['--dir', '/tmp/home'] };
  return { home, args: ['--tmpfs', home] };
}

/**
 * The directories between the workspace and each tool-configuration entry (the workspace and the
 * entries excluded), shallowest first. Each is bound over itself, so that it is a mount point in
 * the sandbox: a command cannot rename it away (or delete it) and put a directory of its own,
 * with a hostile `.git/config` or `.npmrc`, in its place (rename(2) refuses a mount point).
 */
export function configAncestors(scan: ToolConfigScan, workspace: string): string[] {
  const dirs = new Set<string>();
  for (const { path: p } of [...scan.existing, ...scan.absent]) {
    for (let d = path.dirname(p); d !== workspace && isWithin(workspace, d) && !dirs.has(d); d = path.dirname(d)) dirs.add(d);
  }
  return [...dirs].sort((a, b) => a.length - b.length);
}

/** The mask covering an absent entry of `kind`. */
function absentMask(maskDir: string, kind: ToolConfigScan['absent'][number]['kind']): string {
  return path.join(maskDir, kind === 'dir' ? 'dir' : kind === 'commondir' ? 'commondir' : 'empty');
}

/**
 * The tool-configuration binds: the directories leading to them bound over themselves (see
 * {@link configAncestors}), existing entries read-only over themselves, absent ones covered by
 * read-only placeholders.
 */
function toolConfigArgs(
  scan: ToolConfigScan | undefined,
  workspace: string,
  maskDir: string,
  fds: ReadonlyMap<string, number> | undefined,
): string[] {
  if (scan === undefined) return [];
  const args: string[] = [];
  for (const dir of configAncestors(scan, workspace)) {
    const fd = fds?.get(dir);
    if (fd !== undefined) args.push('--bind-fd', String(fd), dir);
    else if (fds === undefined) args.push('--bind', dir, dir);
    else throw new Error(`the workspace changed while the sandbox was prepared (${dir}): try again`);
  }
  for (const { path: p } of scan.existing) {
    const fd = fds?.get(p);
    if (fd !== undefined) args.push('--ro-bind-fd', String(fd), p);
    else if (fds === undefined) args.push('--ro-bind', p, p);
    // else: it changed since the walk (now a link, or gone): left out rather than bound through a link
  }
  for (const { path: p, kind } of scan.absent) args.push('--ro-bind', absentMask(maskDir, kind), p);
  return args;
}

/** What one command adds to the fixed layout: the tool-config scan, the imposed variables, git's exclude file for placeholders. */
export interface CommandExtras {
  scan?: ToolConfigScan;
  env?: Readonly<Record<string, string>>;
  /** A host file listing the placeholders, bound at {@link GIT_EXCLUDE_PATH} (git's core.excludesFile in the sandbox). */
  gitExclude?: string;
  /**
   * The descriptor number (in bwrap) of each existing tool-config entry, opened without following
   * links: bound with `--ro-bind-fd`, so the mount is of the very file the walk found even if a
   * concurrent command swaps a path component for a link. Without it, paths are bound by name.
   */
  configFds?: ReadonlyMap<string, number>;
}

/** Where the placeholders' exclude file appears in the sandbox. */
export const GIT_EXCLUDE_PATH = '/run/sandbox/git-exclude';

/**
 * bwrap's arguments for one command. Order matters: later mounts cover earlier ones, so the
 * workspace comes after /tmp and HOME (it may lie under either), the tool-configuration
 * binds after the workspace, and the masks of the server's files last (a settings file inside
 * `.vscode/` stays masked); `--remount-ro /` last makes the sandbox's own
 * root (where bwrap made the mount points) read-only.
 */
export function bwrapArgs(
  options: BwrapOptions,
  script: string,
  where: CommandPlace,
  extras: CommandExtras = {},
  layout?: HostLayout,
): string[] {
  const host = layout ?? hostLayout(options.maskDir);
  const home = homeArgs(options.home ?? os.homedir(), where.workspace, host.visible);
  const env = Object.entries({ ...extras.env, HOME: home.home, TMPDIR: '/tmp' }).flatMap(([k, v]) => ['--setenv', k, v]);
  return [
    '--die-with-parent',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(options.network ? [] : ['--unshare-net']),
    '--cap-drop',
    'ALL',
    ...host.system,
    ...host.etcMasks,
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    // bwrap covers /proc/sys only when it finds it writable, and the directory says it is not
    // (EACCES), so its files stay writable for a root command: kernel.core_pattern or
    // kernel.modprobe naming a workspace script would run it as root on the host. Sysctls show
    // the reader's namespaces, so the host's /proc/sys, read-only, reads as the command's own.
    '--ro-bind-try',
    '/proc/sys',
    '/proc/sys',
    '--tmpfs',
    '/tmp',
    '--tmpfs',
    '/run',
    '--symlink',
    '../run',
    '/var/run',
    ...resolvConf(),
    ...(extras.gitExclude === undefined ? [] : ['--ro-bind', extras.gitExclude, GIT_EXCLUDE_PATH]),
    ...home.args,
    '--bind',
    where.workspace,
    where.workspace,
    ...toolConfigArgs(extras.scan, where.workspace, options.maskDir, extras.configFds),
    ...maskArgs(options, where.workspace, host.visible),
    '--remount-ro',
    '/',
    ...env,
    '--chdir',
    where.cwd,
    'bash',
    '-c',
    script,
  ];
}

/** Placeholders of every bwrap sandbox in this process (one registry: commands of one workspace may run in different sandboxes). */
const PLACEHOLDERS = new PlaceholderRegistry();

/** A bubblewrap sandbox (see the module comment). */
export class BwrapSandbox implements ShellSandbox {
  readonly kind = 'bwrap' as const;
  readonly network: boolean;
  readonly description: string;
  private readonly layout: HostLayout;

  constructor(private readonly options: BwrapOptions) {
    this.network = options.network;
    this.layout = hostLayout(options.maskDir);
    this.description =
      'It runs in a sandbox: only the workspace is writable (except its tool-configuration files such as .git/config, .git/hooks and .npmrc, ' +
      'which are read-only), /tmp and HOME are private and start empty, only the system directories of the rest of the file system are ' +
      `visible (read-only), the server's own files read as empty${options.network ? '' : ', and there is no network access'}.`;
  }

  /** bwrap's arguments for `script` with this sandbox's layout. */
  argsFor(script: string, where: CommandPlace, extras: CommandExtras): string[] {
    return bwrapArgs(this.options, script, where, extras, this.layout);
  }

  async command(script: string, where: CommandPlace, env: Readonly<Record<string, string>>): Promise<SandboxedCommand> {
    const release = PLACEHOLDERS.acquire(where.workspace);
    try {
      const scan = await scanToolConfig(where.workspace);
      const named = await gitNamedPaths(where.workspace);
      const known = new Set([...scan.existing, ...scan.absent].map((e) => e.path));
      scan.existing.push(...named.existing.filter((e) => !known.has(e.path)));
      scan.absent.push(...named.absent.filter((e) => !known.has(e.path)));
      scan.absent = await creatable(scan.absent.map((a) => a.path)).then((ok) => scan.absent.filter((a) => ok.has(a.path)));
      PLACEHOLDERS.record(
        where.workspace,
        scan.absent.map((a) => a.path),
      );
      // A commondir placeholder is made here, holding `.`: an empty one (bwrap's) would break git.
      for (const a of scan.absent) if (a.kind === 'commondir') createCommondirPlaceholder(a.path);
      const gitExclude = excludeFile(this.options.maskDir, where.workspace, scan);
      const imposed = gitExclude === undefined ? env : withGitConfig(env, 'core.excludesFile', GIT_EXCLUDE_PATH);
      const ancestors = configAncestors(scan, where.workspace);
      const opened = await openExisting([...ancestors, ...scan.existing.map((e) => e.path)]);
      const configFds = new Map([...opened.keys()].map((p, i) => [p, FIRST_EXTRA_FD + i]));
      const handles = [...opened.values()];
      let args: string[];
      try {
        args = this.argsFor(script, where, { scan, env: imposed, gitExclude, configFds });
      } catch (err) {
        for (const h of handles) void h.close().catch(() => undefined);
        throw err;
      }
      const done = (): void => {
        release();
        for (const h of handles) void h.close().catch(() => undefined); // closing cannot fail in a way that matters
      };
      const before = new Set(scan.repositories);
      const since = Date.now();
      const afterRun = () => quarantineNewRepositories(where.workspace, before, since);
      return { file: this.options.bwrap, args, fds: handles.map((h) => h.fd), release: done, afterRun };
    } catch (err) {
      release();
      throw err;
    }
  }
}

/** The first descriptor number past stdin, stdout and stderr: where the spawn puts {@link SandboxedCommand.fds}. */
const FIRST_EXTRA_FD = 3;

/**
 * Opens each path read-only without following a link (O_NOFOLLOW, O_NONBLOCK: a FIFO does not
 * block) and keeps it only when it is a regular file or a directory and the descriptor's own
 * path (/proc/self/fd) is the path itself — no component was swapped for a link since the walk.
 */
async function openExisting(paths: readonly string[]): Promise<Map<string, fsp.FileHandle>> {
  const flags = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;
  const opened = new Map<string, fsp.FileHandle>();
  for (const p of paths) {
    const handle = await fsp.open(p, flags).catch(() => undefined);
    if (handle === undefined) continue;
    const st = await handle.stat().catch(() => undefined);
    const real = await fsp.readlink(`/proc/self/fd/${handle.fd}`).catch(() => undefined);
    if (st !== undefined && (st.isFile() || st.isDirectory()) && real === p) opened.set(p, handle);
    else await handle.close().catch(() => undefined);
  }
  return opened;
}

/** Those of `paths` whose directory is writable (bwrap must create a placeholder there); others are left out. */
async function creatable(paths: readonly string[]): Promise<Set<string>> {
  const ok = new Set<string>();
  const dirs = new Map<string, Promise<boolean>>();
  for (const p of paths) {
    const dir = path.dirname(p);
    if (!dirs.has(dir))
      dirs.set(
        dir,
        fsp.access(dir, fs.constants.W_OK).then(
          () => true,
          () => false,
        ),
      );
    if (await dirs.get(dir)) ok.add(p);
  }
  return ok;
}

/**
 * A file listing the workspace root's file placeholders as git exclude patterns (`/.npmrc`),
 * so that `git status` and `git add -A` in the sandbox do not see them; undefined when there
 * are none. Written once per distinct content, in the private mask directory.
 */
function excludeFile(maskDir: string, workspace: string, scan: ToolConfigScan): string | undefined {
  const lines = scan.absent.filter((a) => a.kind === 'file' && path.dirname(a.path) === workspace).map((a) => `/${path.basename(a.path)}`);
  if (lines.length === 0) return undefined;
  const text = `${lines.join('\n')}\n`;
  const file = path.join(maskDir, `exclude-${createHash('sha256').update(text).digest('hex').slice(0, 16)}`);
  if (!fs.existsSync(file)) fs.writeFileSync(file, text, { mode: 0o444 });
  return file;
}

/** The sandbox a required mode could not set up (SHELL_SANDBOX=bwrap); the server does not start. */
export class SandboxUnavailableError extends Error {
  readonly code = 'AGENT_ERR_SHELL_SANDBOX_UNAVAILABLE';
  constructor(message: string) {
    super(message);
    this.name = 'SandboxUnavailableError';
  }
}

/** `bwrap` on PATH (or where `given` says), if it is an executable file. */
function findBwrap(pathVar: string | undefined, given?: string): string | undefined {
  const candidates = given !== undefined ? [given] : (pathVar ?? '/usr/bin:/bin').split(path.delimiter).map((d) => path.join(d, 'bwrap'));
  for (const c of candidates) {
    try {
      fs.accessSync(c, fs.constants.X_OK);
      if (fs.statSync(c).isFile()) return c;
    } catch {
      // not here
    }
  }
  return undefined;
}

/**
 * A private directory (0700, removed when the process exits) holding an empty read-only file
 * and an empty read-only directory, for the masks; one per process. It lies in the host's /tmp,
 * which no sandboxed command sees (its /tmp is its own).
 */
const sharedMaskDir = processDir('shell-sandbox', (dir) => {
  fs.writeFileSync(path.join(dir, 'empty'), '', { mode: 0o444 });
  fs.mkdirSync(path.join(dir, 'dir'), { mode: 0o555 });
  fs.writeFileSync(path.join(dir, 'commondir'), COMMONDIR_PLACEHOLDER, { mode: 0o444 });
});

/** Options of {@link createShellSandbox}. */
export interface CreateSandboxOptions {
  /** Real paths of the server's own files and directories. */
  protectedPaths: readonly string[];
  /** Whether sandboxed commands may use the network (SHELL_SANDBOX_NETWORK). */
  network: boolean;
  /** PATH to look for bwrap in (default: the server's). */
  pathVar?: string;
  /** The HOME of commands (default: this process's): an empty tmpfs at that path in the sandbox. */
  home?: string;
  /** Use this bwrap binary instead of searching PATH (tests). */
  bwrap?: string;
}

/**
 * The sandbox for `mode`, probed once: bwrap must be found and must run `true` with the very
 * namespaces and mounts commands get. `auto` falls back to no sandbox and says why;
 * `bwrap` throws {@link SandboxUnavailableError} instead.
 */
export function createShellSandbox(mode: ShellSandboxMode, options: CreateSandboxOptions): { sandbox: ShellSandbox; fallback?: string } {
  if (mode === 'off') return { sandbox: NO_SANDBOX };
  const why = (reason: string) => {
    if (mode === 'bwrap') throw new SandboxUnavailableError(`SHELL_SANDBOX=bwrap: ${reason}`);
    return { sandbox: NO_SANDBOX, fallback: reason };
  };
  const bwrap = findBwrap(options.pathVar, options.bwrap);
  if (bwrap === undefined) return why('bwrap (bubblewrap) is not installed or not on PATH');
  const sandbox = new BwrapSandbox({
    bwrap,
    protectedPaths: options.protectedPaths,
    network: options.network,
    maskDir: sharedMaskDir(),
    home: options.home,
  });
  const failure = probeSandbox(sandbox, bwrap);
  if (failure !== undefined) return why(`bwrap does not work here (${failure})`);
  return { sandbox };
}

/**
 * Runs `true` with the mounts commands get — the system directories, the private /tmp, /run and
 * HOME, a workspace with a read-only tool-configuration file and a placeholder — synchronously
 * (start-up). Returns what went wrong, or undefined.
 */
function probeSandbox(sandbox: BwrapSandbox, bwrap: string): string | undefined {
  const workspace = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'shell-sandbox-probe-')));
  try {
    fs.writeFileSync(path.join(workspace, '.npmrc'), '');
    const scan: ToolConfigScan = {
      existing: [{ path: path.join(workspace, '.npmrc'), kind: 'file' }],
      absent: [{ path: path.join(workspace, '.vscode'), kind: 'dir' }],
      repositories: [],
      truncated: false,
    };
    const args = sandbox.argsFor('true', { cwd: workspace, workspace }, { scan, env: gitSafeEnvironment() });
    const r = spawnSync(bwrap, args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
    if (r.error !== undefined || r.status !== 0) {
      return r.error?.message ?? (r.stderr.toString('utf8').trim() || `exit code ${r.status ?? r.signal ?? 'unknown'}`);
    }
    return undefined;
  } finally {
    fs.rmSync(workspace, { recursive: true, force: true });
  }
}
