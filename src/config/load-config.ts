/**
 * Turns the process environment into a validated, defaulted, frozen Config.
 * The only module that reads env, and only through its argument (never process.env itself).
 * Not pure: it reads SETTINGS_FILE (its mcpServers), checks that WORKSPACE_DIR, WORKSPACE_ROOTS,
 * AUTH_CONFIG and AGENT_MODEL_SCRIPT exist (directories resolved to their real paths), and a
 * default INSTANCE_ID takes the host name, the pid and random bytes.
 * A bad value throws ConfigError naming the variable and what is accepted.
 */
import path from 'node:path';
import fs from 'node:fs';
import os from 'node:os';
import { randomBytes } from 'node:crypto';

export interface ModelConfig {
  /** `genai`: Gemini through @google/genai; `scripted`: replay a JSON script. */
  kind: 'genai' | 'scripted';
  model: string;
  apiKey?: string;
  vertexai: boolean;
  project?: string;
  location?: string;
  baseUrl?: string;
  includeThoughts: boolean;
  /** Script file for `scripted`; undefined means a bundled script (`bundled`, else the demo). */
  scriptFile?: string;
  /**
   * `AGENT_MODEL_SCRIPT=conformance`: the bundled script that honours the A2A conformance suite's
   * SUT contract (messageId prefixes such as `tck-complete-task`). Never chosen by default.
   */
  bundled?: 'conformance';
}

export interface Config {
  host: string;
  port: number;
  /** Fallback workspace when the first message carries no AgentSettings.workspace_path. */
  workspaceDir: string;
  /**
   * WORKSPACE_ROOTS: directories client workspaces must lie in (real paths). Default: anywhere
   * without AUTH_CONFIG (local use), only inside WORKSPACE_DIR with it.
   */
  workspaceRoots?: string[];
  /**
   * WORKSPACE_SHARING, with AUTH_CONFIG: `owner` (default) — a workspace belongs to the principal
   * that first opens a context on it, and no other principal may open it, a directory inside it or
   * one containing it (WORKSPACE_DIR, the default workspace, is everyone's); `shared` — every
   * principal may open every workspace the roots allow. Without AUTH_CONFIG there are no principals.
   */
  workspaceSharing: 'owner' | 'shared';
  /** The URL clients reach; defaults to http://host:port/. Goes into the agent card. */
  publicUrl?: string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  model: ModelConfig;
  /** `env`: what shell commands see — the process environment without the server's secrets. */
  shell: ShellConfig;
  /** SSE keep-alive comment interval, ms. */
  sseHeartbeatMs: number;
  /** SHUTDOWN_GRACE_MS: how long running tool calls may go on after SIGTERM before they are recorded interrupted and killed, ms. */
  shutdownGraceMs: number;
  /**
   * What a running call's live output and a stream may cost: the `live_content` window and the
   * update interval (doubling from `intervalMs` up to `maxIntervalMs`); the events held for one
   * stream before it reads the store instead; how long a stream may wait for its client to read.
   */
  output: {
    liveWindowBytes: number;
    liveIntervalMs: number;
    liveMaxIntervalMs: number;
    streamBufferBytes: number;
    sseStallTimeoutMs: number;
  };
  store: StoreConfig;
  /** Unanswered tool calls are cancelled after this many ms; undefined = never. */
  approvalTimeoutMs?: number;
  /** The operator's settings file (SETTINGS_FILE), Gemini CLI's settings.json shape. */
  settings: ServerSettings;
  /**
   * EXTENSIONS_DIR: where gemini-cli extensions are loaded from (absolute; default
   * `~/.gemini/extensions`, gemini-cli's user-level location); undefined with `EXTENSIONS_DIR=off`.
   * A server-side directory only, and one of the server's own files: no tool reaches it.
   */
  extensionsDir?: string;
  /** AUTH_CONFIG: JSON file of API keys and JWT settings; undefined = no authentication (local use). */
  authConfigFile?: string;
  /**
   * The server's own files and directories (absolute, as configured): DATA_DIR, AUTH_CONFIG,
   * SETTINGS_FILE, GOOGLE_APPLICATION_CREDENTIALS and, with Vertex AI, gcloud's application
   * default credentials file. The file and search tools neither reach nor show them.
   */
  serverFiles: readonly string[];
  push: PushConfig;
  /**
   * WIRE_DIALECT: the dialect of a new task whose first message carries neither marker
   * (`coderAgent` agent-settings → legacy; AgentSettings under the extension URI → rfc).
   */
  wireDialect: 'rfc' | 'legacy';
  /**
   * Checkpoints before every approved file-modifying call, restorable with `restore` (gemini-cli's
   * switch): CHECKPOINTING when it is set, else SETTINGS_FILE's `checkpointing.enabled`; off by default.
   */
  checkpointing: boolean;
}

export interface ShellConfig {
  timeoutMs: number;
  maxOutputBytes: number;
  env: Readonly<Record<string, string>>;
  /** SHELL_SANDBOX: `auto` = bubblewrap when present and working, `bwrap` = required, `off` = none. */
  sandboxMode: 'auto' | 'bwrap' | 'off';
  /** SHELL_SANDBOX_NETWORK: sandboxed commands may use the network. */
  sandboxNetwork: boolean;
  /**
   * SHELL_UNCONFINED_AUTO_APPROVE: without the sandbox (`off`, or `auto` where bubblewrap cannot
   * run), shell commands may still run without a card by grant, allowed_tools prefix or YOLO.
   * Off (the default): without the sandbox every shell command waits for a person.
   */
  unconfinedAutoApprove: boolean;
}

export interface PushConfig {
  /** PUSH_ALLOW_PRIVATE: allow push URLs on loopback/private/link-local networks (never cloud metadata). */
  allowPrivate: boolean;
  /** Deliveries of one event (the first included) before it is dropped. */
  maxAttempts: number;
  retryBaseMs: number;
  retryMaxMs: number;
  /** Per-POST timeout, ms. */
  timeoutMs: number;
  /** How long before an unanswered call expires (APPROVAL_TIMEOUT) its reminder goes out, ms. */
  reminderMs?: number;
}

/** What SETTINGS_FILE may hold. MCP server entries are checked by the MCP layer at boot. */
export interface ServerSettings {
  /** Absolute path of the file, when one was given. */
  file?: string;
  /** Gemini CLI's `mcpServers`: servers every context can use. */
  mcpServers?: Record<string, Record<string, unknown>>;
  /** Gemini CLI's `checkpointing.enabled` (CHECKPOINTING, when set, wins). */
  checkpointing?: boolean;
}

/** Reads SETTINGS_FILE: `{"mcpServers": {...}, "checkpointing": {"enabled": …}}` (other Gemini CLI settings keys are ignored). */
function loadServerSettings(env: Env, cwd: string): ServerSettings {
  const raw = str(env, 'SETTINGS_FILE');
  if (raw === undefined) return {};
  const file = path.resolve(cwd, raw);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(`SETTINGS_FILE=${raw}: cannot read ${file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError(`SETTINGS_FILE=${raw}: not valid JSON (${(err as Error).message})`);
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw new ConfigError(`SETTINGS_FILE=${raw}: must hold a JSON object`);
  const checkpointing = checkpointingSetting(raw, (json as Record<string, unknown>).checkpointing);
  const servers = (json as Record<string, unknown>).mcpServers;
  if (servers === undefined) return { file, ...checkpointing };
  if (typeof servers !== 'object' || servers === null || Array.isArray(servers)) {
    throw new ConfigError(`SETTINGS_FILE=${raw}: mcpServers must be an object mapping server names to their settings`);
  }
  for (const [name, cfg] of Object.entries(servers)) {
    if (typeof cfg !== 'object' || cfg === null || Array.isArray(cfg))
      throw new ConfigError(`SETTINGS_FILE=${raw}: mcpServers.${name} must be an object`);
  }
  return { file, mcpServers: servers as Record<string, Record<string, unknown>>, ...checkpointing };
}

/** `checkpointing: {enabled: boolean}` as gemini-cli's settings.json has it; absent: nothing. */
function checkpointingSetting(raw: string, value: unknown): { checkpointing?: boolean } {
  if (value === undefined) return {};
  const enabled = typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Record<string, unknown>).enabled : value;
  if (enabled === undefined) return {};
  if (typeof enabled !== 'boolean') throw new ConfigError(`SETTINGS_FILE=${raw}: checkpointing.enabled must be true or false`);
  return { checkpointing: enabled };
}

/** CHECKPOINTING when set (a boolean), else the settings file's `checkpointing.enabled`, else off. */
function checkpointing(env: Env, settings: ServerSettings): boolean {
  return str(env, 'CHECKPOINTING') !== undefined ? bool(env, 'CHECKPOINTING') : settings.checkpointing === true;
}

/**
 * EXTENSIONS_DIR: a set directory must exist; the default (gemini-cli's `~/.gemini/extensions`,
 * `GEMINI_CLI_HOME` standing in for the home directory as it does for gemini-cli) may be missing.
 */
function extensionsDir(env: Env, cwd: string): string | undefined {
  const raw = str(env, 'EXTENSIONS_DIR');
  if (raw?.toLowerCase() === 'off') return undefined;
  if (raw === undefined) return path.join(str(env, 'GEMINI_CLI_HOME') ?? str(env, 'HOME') ?? os.homedir(), '.gemini', 'extensions');
  const dir = path.resolve(cwd, raw);
  if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
    throw new ConfigError(`EXTENSIONS_DIR=${raw} is not an existing directory (${dir}); set EXTENSIONS_DIR=off for no extensions`);
  }
  return dir;
}

export interface StoreConfig {
  /** PostgreSQL URL (postgres.js); undefined = embedded PGlite in `dataDir`. */
  databaseUrl?: string;
  /** PGlite data directory (absolute), created when missing. */
  dataDir: string;
  /** This process's name on call leases (several instances may share one database). */
  instanceId: string;
  /** How long a running call's lease lasts without renewal, ms. */
  leaseMs: number;
  /**
   * DURABILITY: `relaxed` (default) commits without waiting for the database's WAL flush
   * (synchronous_commit = off), except an answer's claim; `strict` waits for every commit.
   */
  durability: 'relaxed' | 'strict';
  /** COMMIT_LANES: group commits in flight at once, each of tasks the others do not carry (WriteQueue). */
  commitLanes: number;
}

export class ConfigError extends Error {
  readonly code = 'AGENT_ERR_CONFIG_INVALID';
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = str(env, name);
  if (raw === undefined) return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(`${name}="${raw}" is not a whole number (expected ${min}–${max})`);
  const n = Number(raw);
  if (n < min || n > max) throw new ConfigError(`${name}=${n} is out of range (expected ${min}–${max})`);
  return n;
}

function bool(env: Env, name: string): boolean {
  const raw = str(env, name)?.toLowerCase();
  if (raw === undefined) return false;
  if (['1', 'true', 'yes', 'on'].includes(raw)) return true;
  if (['0', 'false', 'no', 'off'].includes(raw)) return false;
  throw new ConfigError(`${name}="${raw}" is not a boolean (use 1/0, true/false)`);
}

/** A duration: a whole number of seconds, or with a unit (`500ms`, `30s`, `10m`, `2h`). */
function duration(env: Env, name: string): number | undefined {
  const raw = str(env, name);
  if (raw === undefined || raw === '0' || raw.toLowerCase() === 'off') return undefined;
  const m = /^(\d+)(ms|s|m|h)?$/.exec(raw);
  if (!m) throw new ConfigError(`${name}="${raw}" is not a duration (e.g. 600, 90s, 10m, 2h; 0 or off disables)`);
  const unit = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 }[(m[2] ?? 's') as 'ms' | 's' | 'm' | 'h'];
  return Number(m[1]) * unit;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function loadModelConfig(env: Env, cwd: string): ModelConfig {
  const scriptFile = str(env, 'AGENT_MODEL_SCRIPT');
  const apiKey = str(env, 'GEMINI_API_KEY') ?? str(env, 'GOOGLE_API_KEY');
  const vertexai = bool(env, 'GOOGLE_GENAI_USE_VERTEXAI');
  const base = {
    model: str(env, 'GEMINI_MODEL') ?? 'gemini-2.5-flash',
    vertexai,
    includeThoughts: str(env, 'GEMINI_INCLUDE_THOUGHTS') === undefined ? true : bool(env, 'GEMINI_INCLUDE_THOUGHTS'),
  };
  if (scriptFile === 'conformance') return { ...base, kind: 'scripted', bundled: 'conformance' };
  if (scriptFile !== undefined) {
    const file = path.resolve(cwd, scriptFile);
    if (!fs.existsSync(file)) throw new ConfigError(`AGENT_MODEL_SCRIPT=${scriptFile}: no such file (${file})`);
    return { ...base, kind: 'scripted', scriptFile: file };
  }
  if (apiKey === undefined && !vertexai) return { ...base, kind: 'scripted' };
  const project = str(env, 'GOOGLE_CLOUD_PROJECT');
  const location = str(env, 'GOOGLE_CLOUD_LOCATION');
  if (vertexai && apiKey === undefined && project === undefined) {
    throw new ConfigError('GOOGLE_GENAI_USE_VERTEXAI=true needs GOOGLE_CLOUD_PROJECT (and GOOGLE_CLOUD_LOCATION) or an API key');
  }
  const baseUrl = str(env, 'GOOGLE_GEMINI_BASE_URL');
  if (baseUrl !== undefined && !/^https?:\/\//.test(baseUrl)) {
    throw new ConfigError(`GOOGLE_GEMINI_BASE_URL="${baseUrl}" must start with http:// or https://`);
  }
  return { ...base, kind: 'genai', apiKey, project, location, baseUrl };
}

function loadStoreConfig(env: Env, cwd: string): StoreConfig {
  const databaseUrl = str(env, 'DATABASE_URL');
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError('DATABASE_URL must be a postgres:// or postgresql:// URL');
  }
  // Checked here, not first by the driver at connect time (a TypeError and a stack); the value
  // itself is never repeated: it may hold a password.
  if (databaseUrl !== undefined && !URL.canParse(databaseUrl)) {
    throw new ConfigError(
      'DATABASE_URL is not a valid URL (postgres://user:password@host:port/database, percent-encoding special characters)',
    );
  }
  const instanceId = str(env, 'INSTANCE_ID') ?? `${os.hostname()}-${process.pid}-${randomBytes(3).toString('hex')}`;
  const durability = str(env, 'DURABILITY') ?? 'relaxed';
  if (durability !== 'relaxed' && durability !== 'strict')
    throw new ConfigError(`DURABILITY="${durability}" is not one of relaxed, strict`);
  return {
    durability,
    databaseUrl,
    dataDir: path.resolve(cwd, str(env, 'DATA_DIR') ?? '.data'),
    instanceId,
    leaseMs: int(env, 'LEASE_MS', 30_000, 1_000, 3_600_000), // 30 s
    // One by default: on one machine, side-by-side commits split the load into more, smaller
    // batches, and each commit costs this process CPU (measured: 100 flows/s at 200 clients with
    // 4 lanes against 134 with 1, docs/performance.md). More lanes suit a database on hosts of its
    // own, where the wait for a commit is the network's; PGlite runs one statement at a time.
    commitLanes: int(env, 'COMMIT_LANES', 1, 1, 8),
  };
}

/**
 * The server's own secrets and settings, kept from the commands the agent runs (the model
 * could otherwise read the API key or the database password with `echo $…`).
 */
export const SERVER_SECRET_VARS = [
  'GEMINI_API_KEY',
  'GOOGLE_API_KEY',
  'GOOGLE_APPLICATION_CREDENTIALS',
  'DATABASE_URL',
  'TEST_DATABASE_URL',
  'BENCH_DATABASE_URL',
  'AUTH_CONFIG',
  'SETTINGS_FILE',
  'DATA_DIR',
];

function shellEnv(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) if (v !== undefined && !SERVER_SECRET_VARS.includes(k)) out[k] = v;
  return out;
}

const SANDBOX_MODES = ['auto', 'bwrap', 'off'] as const;

function sandboxMode(env: Env): ShellConfig['sandboxMode'] {
  const raw = (str(env, 'SHELL_SANDBOX') ?? 'auto').toLowerCase();
  if (!(SANDBOX_MODES as readonly string[]).includes(raw)) {
    throw new ConfigError(`SHELL_SANDBOX="${raw}" is not one of ${SANDBOX_MODES.join(', ')}`);
  }
  return raw as ShellConfig['sandboxMode'];
}

/** SHELL_UNCONFINED_AUTO_APPROVE, refused where it could never apply (the sandbox is required). */
function unconfinedAutoApprove(env: Env, mode: ShellConfig['sandboxMode']): boolean {
  const on = bool(env, 'SHELL_UNCONFINED_AUTO_APPROVE');
  if (on && mode === 'bwrap') {
    throw new ConfigError(
      'SHELL_UNCONFINED_AUTO_APPROVE=true has no effect with SHELL_SANDBOX=bwrap (commands always run in the sandbox): unset one of them',
    );
  }
  return on;
}

function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || /^127\./.test(host);
}

function workspaceRoots(env: Env, cwd: string, fallback: string[] | undefined): string[] | undefined {
  const raw = str(env, 'WORKSPACE_ROOTS');
  if (raw === undefined) return fallback;
  return raw
    .split(path.delimiter)
    .filter((p) => p.trim() !== '')
    .map((p) => {
      const dir = path.resolve(cwd, p.trim());
      if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory())
        throw new ConfigError(`WORKSPACE_ROOTS: ${p} is not an existing directory (${dir})`);
      return fs.realpathSync(dir);
    });
}

function workspaceSharing(env: Env): Config['workspaceSharing'] {
  const raw = (str(env, 'WORKSPACE_SHARING') ?? 'owner').toLowerCase();
  if (raw !== 'owner' && raw !== 'shared') throw new ConfigError(`WORKSPACE_SHARING="${raw}" is not one of owner, shared`);
  return raw;
}

function authConfigFile(env: Env, cwd: string): string | undefined {
  const raw = str(env, 'AUTH_CONFIG');
  if (raw === undefined) return undefined;
  const file = path.resolve(cwd, raw);
  if (!fs.existsSync(file)) throw new ConfigError(`AUTH_CONFIG=${raw}: no such file (${file})`);
  return file;
}

/**
 * The files holding the server's data and secrets that the server itself reads: its database
 * directory, auth and settings files, its extensions (what the model could plant there runs at the next start), and the Google credentials the Gemini SDK loads
 * (GOOGLE_APPLICATION_CREDENTIALS; with Vertex AI also gcloud's application default credentials).
 */
function serverFiles(
  env: Env,
  cwd: string,
  config: Pick<Config, 'store' | 'authConfigFile' | 'settings' | 'model' | 'extensionsDir'>,
): string[] {
  const files = [config.store.dataDir, config.authConfigFile, config.settings.file, config.extensionsDir];
  const credentials = str(env, 'GOOGLE_APPLICATION_CREDENTIALS');
  if (credentials !== undefined) files.push(path.resolve(cwd, credentials));
  if (config.model.vertexai) {
    const gcloud = str(env, 'CLOUDSDK_CONFIG') ?? path.join(str(env, 'HOME') ?? os.homedir(), '.config', 'gcloud');
    files.push(path.resolve(cwd, gcloud, 'application_default_credentials.json'));
  }
  return files.filter((f): f is string => f !== undefined);
}

function loadPushConfig(env: Env): PushConfig {
  const approvalTimeout = duration(env, 'APPROVAL_TIMEOUT');
  const reminder = duration(env, 'APPROVAL_REMINDER');
  const retryBaseMs = int(env, 'PUSH_RETRY_BASE_MS', 1_000, 1, 3_600_000); // 1 s
  const retryMaxMs = int(env, 'PUSH_RETRY_MAX_MS', 60_000, 1, 86_400_000); // 1 min
  if (retryMaxMs < retryBaseMs) throw new ConfigError(`PUSH_RETRY_MAX_MS=${retryMaxMs} is below PUSH_RETRY_BASE_MS=${retryBaseMs}`);
  let reminderMs: number | undefined;
  if (approvalTimeout !== undefined) {
    reminderMs = reminder ?? Math.min(60_000, Math.floor(approvalTimeout / 5));
    if (reminderMs >= approvalTimeout) throw new ConfigError(`APPROVAL_REMINDER must be shorter than APPROVAL_TIMEOUT`);
  }
  return {
    allowPrivate: bool(env, 'PUSH_ALLOW_PRIVATE'),
    maxAttempts: int(env, 'PUSH_MAX_ATTEMPTS', 12, 1, 1_000),
    retryBaseMs,
    retryMaxMs,
    timeoutMs: int(env, 'PUSH_TIMEOUT_MS', 10_000, 100, 600_000), // 10 s
    reminderMs,
  };
}

function loadOutputConfig(env: Env): Config['output'] {
  const liveIntervalMs = int(env, 'LIVE_OUTPUT_INTERVAL_MS', 100, 10, 60_000); // 0.1 s
  const liveMaxIntervalMs = int(env, 'LIVE_OUTPUT_MAX_INTERVAL_MS', 2_000, 10, 600_000); // 2 s
  if (liveMaxIntervalMs < liveIntervalMs) throw new ConfigError('LIVE_OUTPUT_MAX_INTERVAL_MS must not be below LIVE_OUTPUT_INTERVAL_MS');
  return {
    liveWindowBytes: int(env, 'LIVE_OUTPUT_WINDOW_BYTES', 32_768, 1_024, 1_048_576), // 32 KiB
    liveIntervalMs,
    liveMaxIntervalMs,
    streamBufferBytes: int(env, 'STREAM_BUFFER_BYTES', 4_194_304, 65_536, 268_435_456), // 4 MiB
    sseStallTimeoutMs: int(env, 'SSE_STALL_TIMEOUT_MS', 30_000, 100, 3_600_000), // 30 s
  };
}

/** Validates `env` once at boot. Throws ConfigError on the first bad value. */
export function loadConfig(env: Env, cwd: string = process.cwd()): Readonly<Config> {
  const host = str(env, 'HOST') ?? '127.0.0.1';
  const port = int(env, 'PORT', 41242, 0, 65535);
  const workspaceRaw = str(env, 'WORKSPACE_DIR');
  const workspaceDir = path.resolve(cwd, workspaceRaw ?? '.');
  if (!fs.existsSync(workspaceDir) || !fs.statSync(workspaceDir).isDirectory()) {
    throw new ConfigError(`WORKSPACE_DIR=${workspaceRaw} is not an existing directory (${workspaceDir})`);
  }
  const publicUrl = str(env, 'PUBLIC_URL');
  if (publicUrl !== undefined && !/^https?:\/\//.test(publicUrl)) {
    throw new ConfigError(`PUBLIC_URL="${publicUrl}" must start with http:// or https://`);
  }
  const logLevel = (str(env, 'LOG_LEVEL') ?? 'info') as Config['logLevel'];
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL="${logLevel}" is not one of ${LOG_LEVELS.join(', ')}`);
  }
  const wireDialect = (str(env, 'WIRE_DIALECT') ?? 'rfc') as Config['wireDialect'];
  if (wireDialect !== 'rfc' && wireDialect !== 'legacy') {
    throw new ConfigError(`WIRE_DIALECT="${String(wireDialect)}" is not one of rfc, legacy`);
  }
  const authFile = authConfigFile(env, cwd);
  if (authFile === undefined && !isLoopbackHost(host) && !bool(env, 'ALLOW_UNAUTHENTICATED_REMOTE')) {
    throw new ConfigError(
      `HOST=${host} is not a loopback address and AUTH_CONFIG is unset: anyone on the network could run commands here. ` +
        'Set AUTH_CONFIG, bind 127.0.0.1, or set ALLOW_UNAUTHENTICATED_REMOTE=1 if something in front of the server authenticates',
    );
  }
  const settings = Object.freeze(loadServerSettings(env, cwd));
  const config: Omit<Config, 'serverFiles'> = {
    host,
    port,
    workspaceDir: fs.realpathSync(workspaceDir),
    workspaceRoots: workspaceRoots(env, cwd, authFile === undefined ? undefined : [fs.realpathSync(workspaceDir)]),
    workspaceSharing: workspaceSharing(env),
    publicUrl,
    logLevel,
    model: Object.freeze(loadModelConfig(env, cwd)),
    shell: Object.freeze({
      timeoutMs: int(env, 'SHELL_TIMEOUT_MS', 300_000, 1_000, 86_400_000), // 5 min
      maxOutputBytes: int(env, 'SHELL_MAX_OUTPUT_BYTES', 1_048_576, 1_024, 67_108_864), // 1 MiB
      env: Object.freeze(shellEnv(env)),
      sandboxMode: sandboxMode(env),
      sandboxNetwork: bool(env, 'SHELL_SANDBOX_NETWORK'),
      unconfinedAutoApprove: unconfinedAutoApprove(env, sandboxMode(env)),
    }),
    sseHeartbeatMs: int(env, 'SSE_HEARTBEAT_MS', 15_000, 100, 600_000), // 15 s
    shutdownGraceMs: int(env, 'SHUTDOWN_GRACE_MS', 10_000, 0, 3_600_000), // 10 s
    output: Object.freeze(loadOutputConfig(env)),
    store: Object.freeze(loadStoreConfig(env, cwd)),
    approvalTimeoutMs: duration(env, 'APPROVAL_TIMEOUT'),
    settings,
    extensionsDir: extensionsDir(env, cwd),
    authConfigFile: authFile,
    push: Object.freeze(loadPushConfig(env)),
    wireDialect,
    checkpointing: checkpointing(env, settings),
  };
  return Object.freeze({ ...config, serverFiles: Object.freeze(serverFiles(env, cwd, config)) });
}
