/**
 * The shell sandbox: how `run_shell_command` starts `bash -c <script>`. With bubblewrap
 * (`bwrap`), the command sees the host's file system read-only except its workspace and a
 * private, empty /tmp; the server's own files (DATA_DIR, AUTH_CONFIG, SETTINGS_FILE,
 * credentials) are masked by empty ones, inside the workspace too; it has its own PID, IPC and
 * UTS namespaces (no view of the server's /proc, hence not of its environment), no network
 * unless allowed, no capabilities, and it dies with the server (`--die-with-parent`). Without
 * it (`off`), the command runs as the server's user, with the server's view of everything.
 *
 * The sandbox does not open a session of its own (no `--new-session`): the tool spawns bwrap
 * detached, so bwrap leads a fresh session and process group with no terminal, and bash inside
 * stays in that group, which the tool's timeout and cancel kill whole. A process that leaves
 * the group (`setsid`) still dies with the PID namespace when bwrap goes.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** SHELL_SANDBOX: `auto` = bwrap when it is present and works, else off; `bwrap` = required. */
export type ShellSandboxMode = 'auto' | 'bwrap' | 'off';

/** How a command is started: the program and its arguments. */
export interface SandboxedCommand {
  file: string;
  args: string[];
}

/**
 * Starts shell commands. `command` MUST return a program that runs `bash -c script` with `cwd`
 * as its working directory, confined as `kind` says, and that the caller can spawn detached
 * (its process group is the command's).
 */
export interface ShellSandbox {
  readonly kind: 'bwrap' | 'off';
  /** Whether a sandboxed command may use the network. */
  readonly network: boolean;
  /** One sentence for the model: what the command can and cannot touch. */
  readonly description: string;
  command(script: string, where: { cwd: string; workspace: string }): SandboxedCommand;
}

/** No sandbox: `bash -c script` as the server's user. */
export const NO_SANDBOX: ShellSandbox = Object.freeze({
  kind: 'off' as const,
  network: true,
  description: 'It is not sandboxed: it runs with the permissions of the server.',
  command: (script: string): SandboxedCommand => ({ file: 'bash', args: ['-c', script] }),
});

/** What a bwrap sandbox needs: the binary, the paths to mask, and whether the network stays. */
export interface BwrapOptions {
  bwrap: string;
  /** Real paths of the server's own files and directories: masked wherever the command can see them. */
  protectedPaths: readonly string[];
  network: boolean;
  /** An empty, read-only directory holding an empty, read-only file `empty`: what masks are made of. */
  maskDir: string;
}

/** True when `p` is `dir` or lies beneath it. */
function within(dir: string, p: string): boolean {
  const rel = path.relative(dir, p);
  return rel === '' || (!rel.startsWith('..') && !path.isAbsolute(rel));
}

/**
 * The masks for the server's own files: an empty read-only directory over a directory, an
 * empty read-only file over a file. Paths under /tmp are invisible already (the sandbox's /tmp
 * is a fresh tmpfs) unless the workspace brings them back; paths that do not exist are skipped.
 */
function maskArgs(options: BwrapOptions, workspace: string): string[] {
  const args: string[] = [];
  for (const p of options.protectedPaths) {
    if (within('/tmp', p) && !within(workspace, p)) continue;
    let stat: fs.Stats;
    try {
      stat = fs.statSync(p);
    } catch {
      continue; // nothing there to read
    }
    const mask = stat.isDirectory() ? path.join(options.maskDir, 'dir') : path.join(options.maskDir, 'empty');
    args.push('--ro-bind', mask, p);
  }
  return args;
}

/**
 * bwrap's arguments for one command. Order matters: later mounts cover earlier ones, so the
 * masks come after the workspace.
 */
export function bwrapArgs(options: BwrapOptions, script: string, where: { cwd: string; workspace: string }): string[] {
  return [
    '--die-with-parent',
    '--unshare-pid',
    '--unshare-ipc',
    '--unshare-uts',
    '--unshare-cgroup-try',
    ...(options.network ? [] : ['--unshare-net']),
    '--cap-drop',
    'ALL',
    '--ro-bind',
    '/',
    '/',
    '--dev',
    '/dev',
    '--proc',
    '/proc',
    '--tmpfs',
    '/tmp',
    '--bind',
    where.workspace,
    where.workspace,
    ...maskArgs(options, where.workspace),
    '--setenv',
    'TMPDIR',
    '/tmp',
    '--chdir',
    where.cwd,
    'bash',
    '-c',
    script,
  ];
}

/** A bubblewrap sandbox (see the module comment). */
export class BwrapSandbox implements ShellSandbox {
  readonly kind = 'bwrap' as const;
  readonly network: boolean;
  readonly description: string;

  constructor(private readonly options: BwrapOptions) {
    this.network = options.network;
    this.description =
      'It runs in a sandbox: only the workspace is writable, /tmp is private and starts empty, the rest of the file system ' +
      `is read-only, the server's own files read as empty${options.network ? '' : ', and there is no network access'}.`;
  }

  command(script: string, where: { cwd: string; workspace: string }): SandboxedCommand {
    return { file: this.options.bwrap, args: bwrapArgs(this.options, script, where) };
  }
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

let maskDir: string | undefined;

/**
 * A private directory (0700, removed when the process exits) holding an empty read-only file
 * and an empty read-only directory, for the masks; one per process. It lies in the host's /tmp,
 * which no sandboxed command sees (its /tmp is its own).
 */
function sharedMaskDir(): string {
  if (maskDir !== undefined && fs.existsSync(maskDir)) return maskDir;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'shell-sandbox-'));
  fs.writeFileSync(path.join(dir, 'empty'), '', { mode: 0o444 });
  fs.mkdirSync(path.join(dir, 'dir'), { mode: 0o555 });
  if (maskDir === undefined) process.once('exit', () => maskDir !== undefined && fs.rmSync(maskDir, { recursive: true, force: true }));
  maskDir = dir;
  return dir;
}

/** Options of {@link createShellSandbox}. */
export interface CreateSandboxOptions {
  /** Real paths of the server's own files and directories. */
  protectedPaths: readonly string[];
  /** Whether sandboxed commands may use the network (SHELL_SANDBOX_NETWORK). */
  network: boolean;
  /** PATH to look for bwrap in (default: the server's). */
  pathVar?: string;
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
  const sandbox = new BwrapSandbox({ bwrap, protectedPaths: options.protectedPaths, network: options.network, maskDir: sharedMaskDir() });
  const probe = sandbox.command('true', { cwd: '/', workspace: os.tmpdir() });
  const r = spawnSync(probe.file, probe.args, { stdio: ['ignore', 'ignore', 'pipe'], timeout: 10_000 });
  if (r.error !== undefined || r.status !== 0) {
    const detail = r.error?.message ?? (r.stderr.toString('utf8').trim() || `exit code ${r.status ?? r.signal ?? 'unknown'}`);
    return why(`bwrap does not work here (${detail})`);
  }
  return { sandbox };
}
