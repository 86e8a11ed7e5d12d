/** `run_shell_command`: runs `bash -c` inside the workspace, in its own process group (in a sandbox when there is one). */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { gitSafeEnvironment } from './git-env.js';
import { recordGroup } from './process-group.js';
import { NO_SANDBOX, type SandboxedCommand, type ShellSandbox } from './sandbox.js';
import type { CommandLine, Tool, ToolContext, ToolError, ToolParameterSchema, ToolProposal, ToolResult, Validation } from '../tool.js';
import { describeGivenPath, ProtectedPaths, realWorkspace, resolveInWorkspace, relativeIn, type ResolveResult } from '../workspace.js';

/** A shell is not confined to paths (it asks instead), so its dir_path is not checked against the server's own files. */
const SHELL_PROTECTS_NOTHING = ProtectedPaths.NONE;

/** Arguments of `run_shell_command`. */
export interface RunShellCommandArgs extends Record<string, unknown> {
  command: string;
  description?: string;
  dir_path?: string;
}

/** Constructor options of {@link RunShellCommandTool}. */
export interface RunShellCommandOptions {
  /** Kill the command after this long (default 5 minutes). */
  timeoutMs?: number;
  /** Keep at most this many bytes of combined output, dropping the head (default 1 MB). */
  maxOutputBytes?: number;
  /**
   * The environment commands run with (the server's own secrets removed; config builds it).
   * Undefined = the server's environment.
   */
  env?: Readonly<Record<string, string>>;
  /** The server's own files: no approval grant covers a line that names one. */
  protectedPaths?: ProtectedPaths;
  /** What commands run in (default: no sandbox; app.ts probes SHELL_SANDBOX once at start). */
  sandbox?: ShellSandbox;
}

const DEFAULT_TIMEOUT_MS = 5 * 60 * 1000;
const DEFAULT_MAX_OUTPUT_BYTES = 1024 * 1024;
const KILL_GRACE_MS = 2000;
const LIVE_THROTTLE_MS = 50;
const TAIL_LINES = 20;

/** Combined stdout+stderr, keeping only the last `max` bytes. */
class TailBuffer {
  private chunks: Buffer[] = [];
  private size = 0;
  dropped = 0;
  constructor(private readonly max: number) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.size += chunk.length;
    while (this.size > this.max) {
      const excess = this.size - this.max;
      const first = this.chunks[0];
      if (first === undefined) break;
      if (first.length <= excess) {
        this.chunks.shift();
        this.size -= first.length;
        this.dropped += first.length;
      } else {
        this.chunks[0] = first.subarray(excess);
        this.size -= excess;
        this.dropped += excess;
      }
    }
  }

  text(): string {
    let buf = Buffer.concat(this.chunks, this.size);
    if (this.dropped > 0) {
      let i = 0; // skip UTF-8 continuation bytes cut in half by the truncation
      while (i < buf.length && i < 3 && (buf.readUInt8(i) & 0xc0) === 0x80) i++;
      buf = buf.subarray(i);
      return `[... ${this.dropped} bytes truncated: output is capped at its last ${this.max} bytes ...]\n${buf.toString('utf8')}`;
    }
    return buf.toString('utf8');
  }
}

type Ending = { kind: 'exit'; code: number | null; signal: NodeJS.Signals | null } | { kind: 'spawn_error'; message: string };

/** Runs a shell command; the whole process group is killed on timeout, cancellation and completion. */
export class RunShellCommandTool implements Tool<RunShellCommandArgs> {
  readonly name = 'run_shell_command';
  readonly kind = 'execute' as const;
  readonly description: string;
  readonly parameters: ToolParameterSchema = {
    type: 'object',
    properties: {
      command: { type: 'string', description: 'The exact bash command to run.' },
      description: { type: 'string', description: 'A short description of what the command does, shown to the user.' },
      dir_path: { type: 'string', description: 'Directory to run in, absolute or relative to the workspace (default: the workspace).' },
    },
    required: ['command'],
  };
  private readonly timeoutMs: number;
  private readonly env: Record<string, string> | undefined;
  private readonly maxOutputBytes: number;
  private readonly protectedPaths: ProtectedPaths;
  readonly sandbox: ShellSandbox;

  constructor(options: RunShellCommandOptions = {}) {
    this.sandbox = options.sandbox ?? NO_SANDBOX;
    this.description =
      'Runs a command with `bash -c <command>` in the workspace (or in dir_path inside it). stdin is closed. ' +
      'Returns the combined stdout and stderr and the exit code. Background processes are killed when the command ends. ' +
      this.sandbox.description;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.env = options.env === undefined ? undefined : { ...options.env };
    this.maxOutputBytes = options.maxOutputBytes ?? DEFAULT_MAX_OUTPUT_BYTES;
    this.protectedPaths = options.protectedPaths ?? ProtectedPaths.NONE;
  }

  async validate(args: Record<string, unknown>, ctx: Pick<ToolContext, 'workspace'>): Promise<Validation<RunShellCommandArgs>> {
    const { command, description, dir_path } = args;
    if (typeof command !== 'string' || command.trim() === '') {
      return { ok: false, error: { type: 'invalid_argument', message: 'command must be a non-empty string' } };
    }
    if (description !== undefined && description !== null && typeof description !== 'string') {
      return { ok: false, error: { type: 'invalid_argument', message: 'description must be a string when given' } };
    }
    const out: RunShellCommandArgs = { command };
    if (typeof description === 'string') out.description = description;
    if (dir_path !== undefined && dir_path !== null && dir_path !== '') {
      const resolved = await resolveInWorkspace(ctx.workspace, dir_path, 'dir_path', SHELL_PROTECTS_NOTHING);
      if (!resolved.ok) return resolved;
      out.dir_path = dir_path as string;
    }
    return { ok: true, args: out };
  }

  describe(args: RunShellCommandArgs): string {
    const where = args.dir_path ? ` [in ${args.dir_path}]` : '';
    return `${args.command}${where}${args.description ? ` (${args.description})` : ''}`;
  }

  /**
   * The line this call runs and where; the approval rules read it (agent/policy/shell-rules.ts).
   * Its directory (the model's dir_path) is resolved off the event loop, like propose's and run's.
   */
  async commandLine(args: RunShellCommandArgs, ctx: Pick<ToolContext, 'workspace'>): Promise<CommandLine | undefined> {
    if (typeof args.command !== 'string') return undefined;
    const cwd = await this.workingDirectory(args, ctx.workspace);
    return cwd.ok ? { command: args.command, cwd: cwd.path, protectedPaths: this.protectedPaths } : undefined;
  }

  async propose(args: RunShellCommandArgs, ctx: Pick<ToolContext, 'workspace'>): Promise<ToolProposal> {
    const cwd = await this.workingDirectory(args, ctx.workspace);
    return { type: 'execute', command: args.command, workingDirectory: cwd.ok ? cwd.path : undefined };
  }

  async run(args: RunShellCommandArgs, ctx: ToolContext): Promise<ToolResult> {
    const cwd = await this.workingDirectory(args, ctx.workspace);
    if (!cwd.ok) return { isError: true, error: cwd.error };
    if (ctx.signal.aborted) {
      return { isError: true, error: { type: 'cancelled', message: 'Command was cancelled before it started' } };
    }
    // The sandbox binds the workspace at its real path, where the (real) cwd lies.
    const workspace = await realWorkspace(ctx.workspace);
    if (!workspace.ok) return { isError: true, error: workspace.error };
    const output = new TailBuffer(this.maxOutputBytes);
    const ending = await this.execute(args.command, { cwd: cwd.path, workspace: workspace.path }, output, ctx);
    const quarantined =
      ending.quarantined.length === 0
        ? ''
        : `\n[The command created git repositories; git could run code from their configuration (fsmonitor, hooks) in the ` +
          `developer's next git command, so they were renamed: ${ending.quarantined.join('; ')}. Rename one back only after ` +
          `reading its config.]`;
    const text = output.text() + quarantined;
    const llmContent = [
      `Command: ${args.command}`,
      `Directory: ${relativeIn(cwd.workspace, cwd.path)}`,
      `Output:\n${text === '' ? '(empty)' : text}`,
      ending.ending.kind === 'exit' && ending.ending.code !== null ? `Exit Code: ${ending.ending.code}` : '',
    ]
      .filter(Boolean)
      .join('\n');
    const fail = (error: ToolError): ToolResult => ({ isError: true, error, llmContent, liveOutput: text });
    const tail = lastLines(text);
    const withTail = (head: string): string => (tail === '' ? `${head} (no output)` : `${head}:\n${tail}`);
    const e = ending.ending;
    if (ending.reason === 'cancelled') return fail({ type: 'cancelled', message: withTail('Command was cancelled') });
    if (ending.reason === 'timeout') {
      return fail({ type: 'shell_timeout', message: withTail(`Command timed out after ${this.timeoutMs} ms and was killed`) });
    }
    if (e.kind === 'spawn_error') return fail({ type: 'shell_spawn_failed', message: `Could not start bash: ${e.message}` });
    if (e.code === 0) {
      const shown = `${text === '' ? '(no output)' : text}\n(exit code 0)`;
      return { llmContent, display: { type: 'text', text: shown } };
    }
    if (e.code !== null) {
      return fail({ type: 'shell_exit_nonzero', statusCode: e.code, message: withTail(`Command exited with code ${e.code}`) });
    }
    return fail({ type: 'shell_signal', message: withTail(`Command was killed by signal ${e.signal ?? 'unknown'}`) });
  }

  /** The real directory the call starts in (dir_path, or the workspace), asked off the event loop. */
  private async workingDirectory(args: RunShellCommandArgs, workspace: string): Promise<ResolveResult> {
    if (args.dir_path === undefined) return realWorkspace(workspace);
    const resolved = await resolveInWorkspace(workspace, args.dir_path, 'dir_path', SHELL_PROTECTS_NOTHING);
    if (!resolved.ok) return resolved;
    const isDir = await fs.promises.stat(resolved.path).then(
      (s) => s.isDirectory(),
      () => false, // missing
    );
    return isDir ? resolved : dirNotFound(workspace, args.dir_path);
  }

  /**
   * Prepares the command in its sandbox (with git's safe configuration imposed, git-env.ts),
   * spawns it, and resolves once bash has exited and its output is closed. The sandbox is
   * released once the program has exited (or could not start).
   */
  private async execute(
    command: string,
    where: { cwd: string; workspace: string },
    output: TailBuffer,
    ctx: ToolContext,
  ): Promise<{ ending: Ending; reason: 'done' | 'timeout' | 'cancelled'; quarantined: string[] }> {
    // stderr joins stdout in one pipe so the combined output keeps its real order; on the
    // same line, so bash's "line N" messages still match the command.
    const script = `exec 2>&1; ${command}`;
    let started: SandboxedCommand;
    try {
      started = await this.sandbox.command(script, where, gitSafeEnvironment(this.env));
    } catch (err) {
      const message = `the sandbox could not be prepared: ${(err as Error).message}`;
      return { ending: { kind: 'spawn_error', message }, reason: 'done', quarantined: [] };
    }
    if (ctx.signal.aborted) {
      started.release();
      return { ending: { kind: 'exit', code: null, signal: null }, reason: 'cancelled', quarantined: [] };
    }
    const ran = await this.spawnStarted(started, where, output, ctx);
    // The repositories it made are put out of git's reach before anyone sees the result (quarantine.ts).
    const quarantined = (await started.afterRun?.().catch(() => [] as string[])) ?? [];
    return { ...ran, quarantined };
  }

  /**
   * Spawns a prepared command. The group is ended on timeout, on cancellation, and (for
   * background leftovers) when bash exits: SIGTERM, then SIGKILL after a grace period.
   */
  private spawnStarted(
    started: SandboxedCommand,
    where: { cwd: string; workspace: string },
    output: TailBuffer,
    ctx: ToolContext,
  ): Promise<{ ending: Ending; reason: 'done' | 'timeout' | 'cancelled' }> {
    return new Promise((resolve) => {
      let reason: 'done' | 'timeout' | 'cancelled' = 'done';
      let lastLive = 0;
      let liveTimer: NodeJS.Timeout | undefined;
      let killTimer: NodeJS.Timeout | undefined;
      let exited: Ending | undefined;
      let settled = false;

      const child = spawn(started.file, started.args, {
        cwd: where.cwd,
        detached: true,
        stdio: ['ignore', 'pipe', 'pipe', ...(started.fds ?? [])],
        env: this.env,
      });
      const pid = child.pid;
      const group = pid === undefined ? undefined : recordGroup(pid);
      if (group !== undefined) ctx.onProcessGroup?.(group);
      const signalGroup = (sig: NodeJS.Signals): boolean => {
        if (pid === undefined) return false;
        try {
          process.kill(-pid, sig);
          return true;
        } catch {
          return false; // group already gone
        }
      };
      const terminateGroup = (): void => {
        if (killTimer || !signalGroup('SIGTERM')) return;
        killTimer = setTimeout(() => signalGroup('SIGKILL'), KILL_GRACE_MS);
      };
      const emitLive = (): void => {
        liveTimer = undefined;
        lastLive = Date.now();
        ctx.onLiveOutput?.(output.text());
      };
      const onData = (chunk: Buffer): void => {
        output.push(chunk);
        if (!ctx.onLiveOutput || liveTimer || settled) return;
        const wait = LIVE_THROTTLE_MS - (Date.now() - lastLive);
        if (wait <= 0) emitLive();
        else liveTimer = setTimeout(emitLive, wait);
      };
      const stop = (why: 'timeout' | 'cancelled'): void => {
        if (reason !== 'done' || settled) return;
        reason = why;
        terminateGroup();
      };
      const onAbort = (): void => stop('cancelled');
      const timeout = setTimeout(() => stop('timeout'), this.timeoutMs);
      ctx.signal.addEventListener('abort', onAbort, { once: true });

      const finish = (ending: Ending): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timeout);
        clearTimeout(liveTimer);
        ctx.signal.removeEventListener('abort', onAbort);
        ctx.onLiveOutput?.(output.text());
        // A pending escalation still SIGKILLs any straggler once the grace period ends.
        resolve({ ending, reason });
      };

      child.stdout?.on('data', onData);
      child.stderr?.on('data', onData);
      child.on('error', (err) => {
        started.release();
        finish({ kind: 'spawn_error', message: err.message });
      });
      child.on('exit', (code, signal) => {
        started.release(); // the sandbox (bwrap and its namespaces) is gone with it
        exited = { kind: 'exit', code, signal };
        // Background processes may still hold the pipes open; they do not outlive the command.
        terminateGroup();
      });
      child.on('close', (code, signal) => finish(exited ?? { kind: 'exit', code, signal }));
    });
  }
}

/** The last {@link TAIL_LINES} non-empty-trailing lines of `text`. */
function lastLines(text: string): string {
  const lines = text.replace(/\s+$/, '').split('\n');
  if (lines.length === 1 && lines[0] === '') return '';
  return lines.slice(-TAIL_LINES).join('\n');
}

function dirNotFound(workspace: string, given: string): ResolveResult {
  return { ok: false, error: { type: 'dir_not_found', message: `Directory not found: ${describeGivenPath(workspace, given)}` } };
}
