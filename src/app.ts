/**
 * The composition root: the only module that constructs concretes and wires them.
 * buildApp never listens; main.ts does (so tests can build many apps in one process).
 */
import { setMaxListeners } from 'node:events';
import fs, { readFileSync } from 'node:fs';
import { processDir } from './lib/process-dir.js';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import type { AgentCard } from '@a2a-js/sdk';
import { ConfigError } from './config/load-config.js';
import { loadExtensions, type LoadedExtension } from './config/extensions.js';
import type { Config } from './config/load-config.js';
import { McpManager, parseMcpServers, type HttpResolver } from './mcp/index.js';
import { buildAgentCard, buildExtendedCard, type ShellMode } from './protocol/agent-card.js';
import { loadDevtoolSchema } from './protocol/devtool-schema.js';
import { Checkpointer } from './agent/runtime/checkpoints.js';
import { EventHub } from './agent/runtime/event-hub.js';
import { MessageRouter } from './agent/requests/message-router.js';
import { TaskFactory } from './agent/requests/task-factory.js';
import { RfcDecoder } from './agent/wire/rfc-decoder.js';
import { LegacyDecoder } from './agent/wire/legacy-decoder.js';
import type { Decoders } from './agent/wire/wire-decoder.js';
import type { WorkspacePolicy } from './agent/policy/settings.js';
import { DevtoolRequestHandler } from './agent/requests/request-handler.js';
import { Supervisor } from './agent/runtime/supervisor.js';
import { TaskCache } from './agent/runtime/task-cache.js';
import { TaskRuns } from './agent/runtime/task-runs.js';
import type { TaskStore } from './agent/task-store.js';
import { SlashCommands } from './agent/requests/slash-commands.js';
import { RestoreCommands } from './agent/requests/restore-commands.js';
import { Toolbox } from './agent/runtime/toolbox.js';
import type { McpConnector, McpServersJson } from './agent/runtime/toolbox.js';
import type { ExtensionInfo } from './agent/requests/extensions-command.js';
import { TurnLoop } from './agent/runtime/turn-loop.js';
import { WriteQueue } from './agent/runtime/write-queue.js';
import { handOff } from './agent/runtime/hand-off.js';
import { LOG_REDACT_PATHS, secretScrubber, urlPassword, withoutQueryParams } from './lib/redact.js';
import { RfcEncoder } from './agent/wire/rfc-encoder.js';
import { LegacyEncoder } from './agent/wire/legacy-encoder.js';
import type { LegacyToolInfo } from './agent/wire/legacy-encoder.js';
import type { Encoders } from './agent/wire/wire-encoder.js';
import type { ModelClient } from './agent/model/model-client.js';
import { CONFORMANCE_SCRIPT_FILE, DEMO_SCRIPT_FILE, loadModelScript, ScriptedModelClient } from './agent/model/scripted-model-client.js';
import { openDatabase } from './store/db.js';
import { Access, OPEN_ACCESS } from './agent/policy/access.js';
import { loadAuthConfig } from './auth/auth-config.js';
import type { AuthConfig } from './auth/auth-config.js';
import { createAuthenticator, qualifiedId } from './auth/authenticator.js';
import type { Authenticator } from './auth/authenticator.js';
import type { DevtoolSchema } from './protocol/devtool-schema.js';
import { PushDispatcher } from './push/push-dispatcher.js';
import { PushRegistry } from './push/push-registry.js';
import { checkPushUrl } from './push/ssrf-guard.js';
import { PushSigner } from './push/push-signer.js';
import type { PushStore } from './push/push-store.js';
import { PgTaskStore } from './store/pg-task-store.js';
import { timedStore } from './store/timed-store.js';
import { unavailableAware } from './store/unavailable-store.js';
import { createCommandTools, createDefaultTools, createShellSandbox, ProtectedPaths, type RunShellCommandOptions } from './tools/index.js';
import type { AnyTool } from './tools/tool.js';
import { agentCardRoutes } from './transport/http/agent-card-route.js';
import { createHostGuard } from './transport/http/host-guard.js';
import { jsonRpcRoutes } from './transport/http/jsonrpc-route.js';
import { parseJsonBodies } from './transport/http/json-body.js';
import type { Authenticate } from './transport/http/jsonrpc-route.js';
import { healthRoutes } from './transport/http/health-routes.js';
import { refuseWhileDraining } from './transport/http/draining.js';
import { legacyRoutes } from './transport/http/legacy-routes.js';
import { consoleRoutes } from './transport/http/console-route.js';
import { REST_PREFIX, restRoutes } from './transport/http/rest-routes.js';
import { LegacyRest } from './agent/requests/legacy-rest.js';
import { PromMetrics } from './metrics/prom-metrics.js';
import { metricsRoutes } from './transport/http/metrics-route.js';

export interface AppOptions {
  config: Readonly<Config>;
  /** Replaces the model the config names (tests, embedding). */
  model?: ModelClient;
  /** Replaces the default toolset. */
  tools?: AnyTool[];
  /** Fastify logger setting; defaults to the config's level. */
  logger?: boolean | { level: string };
  /** First model retry delay, ms (tests shorten it). */
  retryBaseDelayMs?: number;
  /** Use this store instead of opening the configured database (the caller closes it). */
  store?: TaskStore & PushStore;
  /** Supervisor sweep interval, ms (tests shorten it). */
  sweepMs?: number;
  /**
   * When given (main.ts passes SHUTDOWN_GRACE_MS), close() hands off gracefully: readiness 503
   * and new work refused, open streams ended cleanly, running calls given this long to finish
   * (then recorded interrupted), writes and the push outbox flushed, leases released. Without
   * it (tests), close() detaches the running work at once.
   */
  shutdownGraceMs?: number;
}

const PACKAGE_VERSION = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;

const SYSTEM_INSTRUCTION = [
  'You are a software development agent working inside one workspace directory.',
  'Use the tools to find (glob, search_file_content, list_directory), read (read_file, read_many_files),',
  'change (replace for targeted edits, write_file for new or rewritten files) and run (run_shell_command) things there;',
  'paths are relative to the workspace. Tools named <server>__<tool> come from MCP servers.',
  'Read before you change things: replace needs old_string copied exactly from the file, with enough context to be unique.',
  'Tools that change files or run commands may wait for the user to approve them;',
  'if the user declines a call, do not retry it unless asked. Keep answers short and concrete.',
].join(' ');

/**
 * The model the config names, and whether it is the bundled demo. The Gemini adapter (and
 * @google/genai, ~25 MB of the idle process) is loaded only when the config names Gemini.
 */
export async function createModel(config: Readonly<Config>): Promise<{ model: ModelClient; demo: boolean }> {
  const m = config.model;
  if (m.kind === 'genai') {
    const { GenaiModelClient } = await import('./agent/model/genai-model-client.js');
    return {
      model: new GenaiModelClient({
        model: m.model,
        apiKey: m.apiKey,
        vertexai: m.vertexai,
        project: m.project,
        location: m.location,
        baseUrl: m.baseUrl,
        includeThoughts: m.includeThoughts,
      }),
      demo: false,
    };
  }
  const file = m.scriptFile ?? (m.bundled === 'conformance' ? CONFORMANCE_SCRIPT_FILE : DEMO_SCRIPT_FILE);
  return { model: new ScriptedModelClient(loadModelScript(file)), demo: file === DEMO_SCRIPT_FILE };
}

/** The MCP port over @modelcontextprotocol/sdk (src/mcp/). */
function mcpConnector(resolveHttp: HttpResolver): McpConnector {
  return {
    check: (servers, at) => {
      const parsed = parseMcpServers(servers, at);
      return parsed.ok ? undefined : parsed.message;
    },
    connect: (servers, { cwd, clientGiven }) => {
      const parsed = parseMcpServers(servers, 'mcpServers');
      if (!parsed.ok) throw new Error(parsed.message); // checked before it was stored
      // A client's HTTP servers are checked again when they connect, and pinned to the checked address.
      return new McpManager(parsed.value, { cwd, defaultCwd: mcpHome(), ...(clientGiven ? { resolveHttp } : {}) });
    },
  };
}

/**
 * The working directory of stdio MCP servers whose config names none: an empty directory of this
 * process's, read-only, outside every workspace (a workspace is writable by sandboxed commands, and
 * an MCP server runs unconfined: `npx` would run a package planted in its node_modules).
 */
const mcpHome = processDir('mcp-cwd', (dir) => fs.chmodSync(dir, 0o555));

function isLoopback(host: string): boolean {
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** The legacy dialect's view of the built-in tools (their declarations, for the ToolCall's `tool`). */
function legacyToolInfo(tools: readonly AnyTool[]): (name: string) => LegacyToolInfo | undefined {
  const byName = new Map(tools.map((t) => [t.name, { description: t.description, kind: t.kind, parameters: { ...t.parameters } }]));
  return (name) => byName.get(name);
}

/** Opens the configured database (migrating it) and closes it with the app. */
async function openStore(app: FastifyInstance, config: Readonly<Config>): Promise<TaskStore & PushStore> {
  const database = await openDatabase({
    databaseUrl: config.store.databaseUrl,
    dataDir: config.store.dataDir,
    durability: config.store.durability,
  });
  app.log.info({ store: database.kind, ...(database.kind === 'pglite' ? { dataDir: config.store.dataDir } : {}) }, 'store open');
  const store = timedStore(new PgTaskStore(database)); // the store itself unless the bench probes
  app.addHook('onClose', async () => store.close());
  return store;
}

/** The process's own secrets, scrubbed by value from every log line (lib/redact.ts). */
export function configSecrets(config: Readonly<Config>): string[] {
  const m = config.model;
  return [...(m.kind === 'genai' && m.apiKey !== undefined ? [m.apiKey] : []), ...urlPassword(config.store.databaseUrl)];
}

/**
 * The default logger: pino JSON lines on stdout (level, time, the request id on request lines),
 * credential fields censored, and the process's secrets scrubbed by value from every line.
 */
export function defaultLogger(config: Readonly<Config>, write: (line: string) => void = (line) => void process.stdout.write(line)) {
  const scrub = secretScrubber(configSecrets(config));
  return {
    level: config.logLevel,
    redact: { paths: LOG_REDACT_PATHS },
    stream: { write: (line: string) => write(scrub(withoutQueryParams(line))) },
  };
}

/** Fastify with the JSON body parser the JSON-RPC route expects (a body that is not JSON reaches it as UNPARSABLE). */
function createFastify(options: AppOptions): FastifyInstance {
  const graceful = options.shutdownGraceMs !== undefined;
  const app = Fastify({
    logger: options.logger ?? defaultLogger(options.config),
    bodyLimit: 32 * 1024 * 1024, // 32 MiB: modified file contents ride in confirmations
    // A graceful close ends every stream itself and lets answers in flight finish (idle
    // keep-alive sockets are closed by server.close()); otherwise open sockets are cut.
    forceCloseConnections: !graceful,
    // While draining, refuseWhileDraining answers in each binding's shape (and /readyz its reason).
    return503OnClosing: !graceful,
  });
  parseJsonBodies(app);
  return app;
}

/** AUTH_CONFIG: who the callers are, and what each may do. */
interface Security {
  auth?: AuthConfig;
  authenticator?: Authenticator;
  access: Access;
}

function setUpSecurity(app: FastifyInstance, config: Readonly<Config>): Security {
  const auth = config.authConfigFile !== undefined ? loadAuthConfig(config.authConfigFile) : undefined;
  if (!auth) {
    app.log.warn({ host: config.host }, 'authentication off (no AUTH_CONFIG): anyone who can reach this address may use the agent');
    return { access: new Access(OPEN_ACCESS) };
  }
  const { apiKeys, jwt, approverRoles, adminRoles } = auth;
  app.log.info({ apiKeys: apiKeys.length, jwt: jwt !== undefined, approverRoles, adminRoles }, 'authentication on');
  return {
    auth,
    authenticator: createAuthenticator(auth),
    access: new Access({ enabled: true, approverRoles, adminRoles, workspaceSharing: config.workspaceSharing }),
  };
}

/**
 * run_shell_command's settings, with its sandbox probed once (SHELL_SANDBOX): the log says which
 * is used; `bwrap` that does not work stops the start.
 */
function shellOptions(
  app: FastifyInstance,
  config: Readonly<Config>,
  protectedPaths: ProtectedPaths,
): RunShellCommandOptions & { mode: ShellMode } {
  const { timeoutMs, maxOutputBytes, env, sandboxMode, sandboxNetwork } = config.shell;
  const { sandbox, fallback } = createShellSandbox(sandboxMode, {
    protectedPaths: protectedPaths.paths,
    network: sandboxNetwork,
    pathVar: env.PATH,
  });
  if (fallback !== undefined) {
    app.log.warn({ shellSandbox: 'off', reason: fallback }, 'shell commands run WITHOUT a sandbox (SHELL_SANDBOX=auto)');
  } else if (sandbox.kind === 'off') {
    app.log.warn({ shellSandbox: 'off' }, 'shell commands run without a sandbox (SHELL_SANDBOX=off)');
  } else {
    app.log.info({ shellSandbox: sandbox.kind, network: sandbox.network }, 'shell commands run in a bubblewrap sandbox');
  }
  const mode: ShellMode = { sandbox: sandbox.kind === 'off' ? 'off' : 'bwrap', unconfinedAutoApprove: config.shell.unconfinedAutoApprove };
  if (mode.sandbox === 'off') {
    const approval = mode.unconfinedAutoApprove
      ? 'grants, allowed_tools prefixes and YOLO run them without asking (SHELL_UNCONFINED_AUTO_APPROVE)'
      : 'every shell command asks first (set SHELL_UNCONFINED_AUTO_APPROVE=true to let grants run them unconfined)';
    app.log.warn({ shellSandbox: 'off', shellUnconfinedAutoApprove: mode.unconfinedAutoApprove }, `without the sandbox: ${approval}`);
  }
  return { timeoutMs, maxOutputBytes, env, sandbox, mode };
}

/** Shell-like calls may run without a card: in the sandbox, or unconfined where the operator said so. */
const autoRunsShell = (mode: ShellMode): boolean => mode.sandbox === 'bwrap' || mode.unconfinedAutoApprove;

/** What the extensions in EXTENSIONS_DIR add: MCP servers, excluded tools, context for the model. */
interface ServerExtensions {
  list: ExtensionInfo[];
  dir?: string;
  /** The settings file's servers, then each extension's (a name already taken is not replaced). */
  mcpServers?: McpServersJson;
  excludeTools: string[];
  /** The system-instruction block with the extensions' context files; undefined when there are none. */
  context?: string;
}

/**
 * Loads EXTENSIONS_DIR. An extension that fails a check, or whose MCP servers fail the strict
 * parse SETTINGS_FILE's get, is skipped with a log line naming the reason; the server starts.
 */
function loadServerExtensions(app: FastifyInstance, config: Readonly<Config>, mcp: McpConnector): ServerExtensions {
  const load = loadExtensions(config.extensionsDir);
  for (const s of load.skipped) app.log.warn({ extension: s.path, reason: s.reason }, 'extension skipped');
  const servers: McpServersJson = { ...(config.settings.mcpServers ?? {}) };
  const active: LoadedExtension[] = [];
  for (const ext of load.extensions) {
    const bad = ext.mcpServers === undefined ? undefined : mcp.check(ext.mcpServers, `${ext.configFile}: mcpServers`);
    if (bad !== undefined) {
      app.log.warn({ extension: ext.path, reason: bad }, 'extension skipped');
      continue;
    }
    for (const warning of ext.warnings) app.log.warn({ extension: ext.path, warning }, 'extension: part of its config is ignored');
    for (const entry of (ext.excludeTools ?? []).filter((e) => e.includes('('))) {
      const warning = `excludeTools "${entry}": per-command exclusions are not supported; the whole tool is excluded`;
      app.log.warn({ extension: ext.path, warning }, 'extension: an exclusion covers the whole tool');
    }
    for (const [name, server] of Object.entries(ext.mcpServers ?? {})) {
      if (name in servers) {
        app.log.warn(
          { extension: ext.path, server: name },
          'extension MCP server not started: the name is taken (SETTINGS_FILE or an earlier extension)',
        );
      } else servers[name] = server;
    }
    active.push(ext);
    const { name, version, path, excludeTools } = ext;
    const contextFiles = ext.contextFiles.map((f) => f.path);
    app.log.info(
      { extension: name, version, path, mcpServers: Object.keys(ext.mcpServers ?? {}), contextFiles, excludeTools },
      'extension loaded',
    );
  }
  return {
    list: active.map((e) => ({ ...e, contextFiles: e.contextFiles.map((f) => f.path) })),
    dir: load.dir,
    mcpServers: Object.keys(servers).length > 0 ? servers : undefined,
    excludeTools: active.flatMap((e) => e.excludeTools ?? []),
    context: extensionContext(active),
  };
}

/** The extensions' context files as one system-instruction block (after the server's, before the workspace's GEMINI.md). */
function extensionContext(extensions: readonly LoadedExtension[]): string | undefined {
  const files = extensions.flatMap((ext) => ext.contextFiles.filter((f) => f.text.trim() !== '').map((f) => ({ ext, ...f })));
  if (files.length === 0) return undefined;
  const blocks = files.map(({ ext, path: file, text }) => {
    const label = `${ext.name}/${file.slice(ext.path.length + 1)}`;
    return `--- ${label} ---\n${text.trim()}\n--- end of ${label} ---`;
  });
  return `Context from the server's extensions (installed by the operator; follow them):\n${blocks.join('\n')}`;
}

/** The built-in tools and MCP servers every context can use (its own MCP servers join when it starts). */
async function startToolbox(
  app: FastifyInstance,
  options: AppOptions,
): Promise<{ toolbox: Toolbox; shellMode: ShellMode; extensions: ServerExtensions }> {
  const { config } = options;
  // Resolved once: the tools, the GEMINI.md reader and the workspace policy share it.
  const protectedPaths = new ProtectedPaths(config.serverFiles);
  const shell = options.tools === undefined ? shellOptions(app, config, protectedPaths) : undefined;
  // Tools given by the embedder: their sandbox is unknown, so they count as unconfined.
  const shellMode = shell?.mode ?? { sandbox: 'off', unconfinedAutoApprove: config.shell.unconfinedAutoApprove };
  const tools = options.tools ?? createDefaultTools({ shell, protectedPaths });
  const mcp = mcpConnector(mcpResolver(config));
  if (config.settings.mcpServers !== undefined) {
    const bad = mcp.check(config.settings.mcpServers, `SETTINGS_FILE ${config.settings.file}: mcpServers`);
    if (bad !== undefined) throw new ConfigError(bad);
  }
  const extensions = loadServerExtensions(app, config, mcp);
  const commandTools = createCommandTools({ protectedPaths });
  const toolbox = new Toolbox({
    builtin: tools,
    commandTools,
    mcp,
    serverMcp: extensions.mcpServers,
    defaultCwd: config.workspaceDir,
    logger: app.log,
    protectedPaths,
    excludeTools: extensions.excludeTools,
  });
  await toolbox.start();
  app.addHook('onClose', async () => toolbox.close());
  return { toolbox, shellMode, extensions };
}

/** Push notifications: the event log is the outbox; the dispatcher posts what each config has not had. */
interface Push {
  signer: PushSigner;
  registry: PushRegistry;
  dispatcher: PushDispatcher;
}

async function setUpPush(
  config: Readonly<Config>,
  store: TaskStore & PushStore,
  encoders: Encoders,
  app: FastifyInstance,
  metrics: PromMetrics,
): Promise<Push> {
  const signer = await PushSigner.create(store, { issuer: config.publicUrl });
  const dispatcher = new PushDispatcher({
    store,
    metrics,
    signer,
    owner: config.store.instanceId,
    allowPrivate: config.push.allowPrivate,
    logger: app.log,
    maxAttempts: config.push.maxAttempts,
    retryBaseMs: config.push.retryBaseMs,
    retryMaxMs: config.push.retryMaxMs,
    timeoutMs: config.push.timeoutMs,
    sources: {
      eventsAfter: (taskId, seq) => store.eventsAfter(taskId, seq),
      loadTask: (taskId) => store.loadTask(taskId),
      pendingParts: async (taskId, seq) => {
        const log = (await store.eventsAfter(taskId, 0)).filter((e) => e.seq <= seq);
        const dialect = (await store.loadTask(taskId))?.dialect ?? 'rfc';
        return encoders[dialect].waitingCallParts(
          log.flatMap((e) => (e.response.payload?.$case === 'statusUpdate' ? [e.response.payload.value] : [])),
        );
      },
    },
  });
  const registry = new PushRegistry({ store, allowPrivate: config.push.allowPrivate, onSaved: () => dispatcher.configSaved() });
  return { signer, registry, dispatcher };
}

/** The agent: the model loop and its tasks, their supervisor, and what turns messages into runs. */
interface Agent {
  loop: TurnLoop;
  cache: TaskCache;
  router: MessageRouter;
  handler: DevtoolRequestHandler;
  commands: SlashCommands;
  /** The legacy dialect's REST side routes. */
  legacyRest: LegacyRest;
  supervisor: Supervisor;
  runs: TaskRuns;
  /** The group commit every task's writes go through. */
  writes: WriteQueue;
}

interface AgentParts {
  options: AppOptions;
  model: ModelClient;
  store: TaskStore;
  hub: EventHub;
  toolbox: Toolbox;
  encoders: Encoders;
  schema: DevtoolSchema;
  security: Security;
  push: Push;
  card: () => AgentCard;
  shellMode: ShellMode;
  metrics: PromMetrics;
  extensions: ServerExtensions;
}

/** The tasks this process works on, writing through one group-commit queue. */
function buildCache(app: FastifyInstance, parts: AgentParts, runs: TaskRuns, writes: WriteQueue): TaskCache {
  const { options, model, store, hub, toolbox, encoders, shellMode, metrics } = parts;
  const { liveWindowBytes: windowBytes, liveIntervalMs: intervalMs, liveMaxIntervalMs: maxIntervalMs } = options.config.output;
  return new TaskCache({
    store,
    writes,
    hub,
    metrics,
    encoders,
    model: model.model,
    logger: app.log,
    instanceId: options.config.store.instanceId,
    leaseMs: options.config.store.leaseMs,
    toolbox,
    runs,
    liveOutput: { windowBytes, intervalMs, maxIntervalMs },
    shellConfined: autoRunsShell(shellMode),
    checkpoints: new Checkpointer(store, toolbox.protectedPaths, options.config.checkpointing),
  });
}

function buildAgent(app: FastifyInstance, parts: AgentParts): Agent {
  const { options, model, store, hub, toolbox, encoders, schema, security, push, card, metrics, extensions } = parts;
  const { config } = options;
  const { instanceId, leaseMs } = config.store;
  const [runs, writes] = [new TaskRuns(app.log), new WriteQueue(store, app.log, metrics, config.store.commitLanes)];
  const loop = new TurnLoop({
    model,
    toolbox,
    store,
    runs,
    systemInstruction: extensions.context === undefined ? SYSTEM_INSTRUCTION : `${SYSTEM_INSTRUCTION}\n\n${extensions.context}`,
    logger: app.log,
    retryBaseDelayMs: options.retryBaseDelayMs,
    approvalTimeoutMs: config.approvalTimeoutMs,
  });
  const cache = buildCache(app, parts, runs, writes);
  const supervisor = new Supervisor({
    store,
    cache,
    loop,
    logger: app.log,
    instanceId,
    leaseMs,
    sweepMs: options.sweepMs,
    reminderMs: config.push.reminderMs,
    metrics,
    // Embedded PGlite: one process by construction; a given store may be shared.
    exclusiveStore: options.store === undefined && config.store.databaseUrl === undefined,
  });
  // With authentication, no client workspace may contain the server's own files (keys, the database).
  const workspacePolicy = { roots: config.workspaceRoots, protectedPaths: security.auth ? toolbox.protectedPaths.paths : [] };
  const decoders = buildDecoders(schema, toolbox, workspacePolicy);
  const factory = new TaskFactory({ store, cache, toolbox, access: security.access, ...factorySlice(config, security) });
  const router = new MessageRouter({
    decoders,
    loop,
    store,
    cache,
    access: security.access,
    factory,
    instanceId,
    leaseMs,
    defaultDialect: config.wireDialect,
    metrics,
  });
  const handler = new DevtoolRequestHandler({
    card,
    extendedCard: extendedCardSource(card, toolbox, security),
    router,
    hub,
    store,
    cache,
    access: security.access,
    encoders,
    push: push.registry,
  });
  const restore = new RestoreCommands({
    store,
    protectedPaths: toolbox.protectedPaths,
    checkpointing: config.checkpointing,
    ownerFor: (caller) => security.access.ownerFor(caller),
  });
  const commands = new SlashCommands({ schema, factory, decoders, loop, restore, extensions: extensionsSlice(extensions) });
  const legacyRest = new LegacyRest({
    factory,
    commands,
    store,
    cache,
    access: security.access,
    encoders,
    model: model.model,
    workspacePolicy,
    restore,
    hub,
  });
  return { loop, cache, router, handler, commands, legacyRest, supervisor, runs, writes };
}

/** What the slash commands show of the extensions loaded at start. */
function extensionsSlice(extensions: AgentParts['extensions']) {
  return { list: extensions.list, dir: extensions.dir };
}

/** The task factory's slice of the config. */
function factorySlice(config: Readonly<Config>, security: Security) {
  const { instanceId, leaseMs } = config.store;
  return { checkMcpUrl: mcpUrlCheck(config, security), defaultWorkspace: config.workspaceDir, instanceId, leaseMs };
}

/** One decoder per wire dialect, reading settings against the MCP layer and the workspace policy. */
function buildDecoders(schema: DevtoolSchema, toolbox: Toolbox, workspacePolicy: WorkspacePolicy): Decoders {
  const opts = { schema, checkServers: toolbox.checkServers.bind(toolbox), workspacePolicy };
  return { rfc: new RfcDecoder(opts), legacy: new LegacyDecoder(opts) };
}

/** The card an authenticated caller reads (the tools listed): only where authentication is on. */
function extendedCardSource(card: () => AgentCard, toolbox: Toolbox, security: Security): (() => AgentCard) | undefined {
  if (security.authenticator === undefined) return undefined;
  const tools = toolbox.builtin.map((tool) => ({ name: tool.name, description: tool.description, asks: tool.kind !== 'read' }));
  return () => buildExtendedCard(card(), tools);
}

/**
 * Client-given MCP URLs: never cloud metadata; with authentication, no private networks either
 * (unless PUSH_ALLOW_PRIVATE). Local use keeps localhost MCP servers working.
 */
function mcpUrlCheck(config: Readonly<Config>, security: Security): (url: string, at: string) => Promise<string | undefined> {
  return async (url, at) => {
    const r = await checkPushUrl(url, { allowPrivate: !security.auth || config.push.allowPrivate, field: at, purpose: 'mcp' });
    return r.ok ? undefined : r.message;
  };
}

/**
 * When a client's HTTP MCP server connects: its URL checked again (as mcpUrlCheck does when the
 * settings arrive) and its host resolved once; the connection is pinned to that address, so a
 * DNS answer that changes after the check (rebinding) is never used.
 */
function mcpResolver(config: Readonly<Config>): HttpResolver {
  const allowPrivate = config.authConfigFile === undefined || config.push.allowPrivate;
  return async (url) => {
    const r = await checkPushUrl(url, { allowPrivate, field: 'mcp_servers url', purpose: 'mcp' });
    if (!r.ok) return { ok: false, message: r.message };
    const [address] = r.addresses;
    return address === undefined ? { ok: false, message: `mcp_servers url: ${r.url.hostname} has no address` } : { ok: true, address };
  };
}

/** The agent card, naming the address actually listened on (PORT=0 picks one at listen time). */
function cardSource(
  app: FastifyInstance,
  config: Readonly<Config>,
  description: string,
  security: Security,
  shell: ShellMode,
): () => AgentCard {
  let card: AgentCard | undefined;
  return () => {
    if (card) return card;
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : config.port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const url = config.publicUrl ?? `http://${host}:${port}/`;
    const built = buildAgentCard({
      url,
      restUrl: url.replace(/\/*$/, '') + REST_PREFIX,
      version: PACKAGE_VERSION,
      description,
      pushNotifications: true,
      security: security.authenticator?.securitySchemesV1(),
      extendedCard: security.authenticator !== undefined,
      shell,
    });
    if (port !== 0) card = built;
    return built;
  };
}

function describeAgent(model: ModelClient, demo: boolean): string {
  return demo
    ? 'DEMO MODE: no Gemini credentials are configured, so answers come from a bundled script. Development agent: reads, writes and runs code in a workspace with approvals.'
    : `Development agent on ${model.model}: reads, writes and runs code in a workspace, asking before side effects.`;
}

/** HTTP: the Host/Origin guard on loopback, the agent card and JWKS, the JSON-RPC endpoint and the HTTP+JSON binding. */
async function registerTransport(
  app: FastifyInstance,
  config: Readonly<Config>,
  agent: Agent,
  security: Security,
  push: Push,
  card: () => AgentCard,
  store: Pick<TaskStore, 'ping'>,
  metrics: PromMetrics,
  closing: AbortSignal,
): Promise<void> {
  if (isLoopback(config.host)) {
    const extra = config.publicUrl ? [new URL(config.publicUrl).hostname] : [];
    app.addHook('onRequest', createHostGuard({ allowedHosts: extra }));
  }
  const draining = () => closing.aborted;
  refuseWhileDraining(app, draining);
  await app.register(healthRoutes, { pingStore: () => store.ping(), draining });
  const { authenticator } = security;
  const v03 = authenticator?.securitySchemesV03();
  await app.register(agentCardRoutes, {
    card,
    securityV03: v03 && { securitySchemes: v03.securitySchemes, security: v03.security },
    jwks: () => push.signer.jwks(),
  });
  await app.register(consoleRoutes, {});
  const { handler, commands } = agent;
  const authenticate: Authenticate | undefined =
    authenticator &&
    (async (headers) => {
      const r = await authenticator.authenticate(headers);
      if (r.ok) return { ok: true, caller: { id: qualifiedId(r.principal), roles: r.principal.roles } };
      return { ok: false, message: r.message, wwwAuthenticate: r.wwwAuthenticate };
    });
  await app.register(metricsRoutes, { render: () => metrics.render(), authenticate, mayRead: (caller) => security.access.isAdmin(caller) });
  await app.register(legacyRoutes, { handler: agent.legacyRest, authenticate });
  await app.register(jsonRpcRoutes, {
    handler,
    heartbeatMs: config.sseHeartbeatMs,
    stallTimeoutMs: config.output.sseStallTimeoutMs,
    closing,
    extensionMethods: {
      'commands/get': async () => commands.list(),
      'command/execute': async (params, caller) => commands.execute(params, caller),
      'audit/list': async (params, caller) => handler.listAudit(params, caller),
    },
    authenticate,
    metrics,
  });
  await app.register(restRoutes, {
    prefix: REST_PREFIX,
    handler,
    closing,
    heartbeatMs: config.sseHeartbeatMs,
    stallTimeoutMs: config.output.sseStallTimeoutMs,
    authenticate,
    metrics,
  });
}

/**
 * Builds the whole server in named steps: the store, security, tools, push, the agent, then
 * the HTTP routes. Everything is constructed with what it needs; background work stops on close.
 */
export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config } = options;
  const app = createFastify(options);
  const created = options.model ? { model: options.model, demo: false } : await createModel(config);
  if (created.demo) app.log.warn('No GEMINI_API_KEY (or Vertex AI settings): answering with the bundled demo script, not Gemini');
  const schema = loadDevtoolSchema();
  const { toolbox, shellMode, extensions } = await startToolbox(app, options);
  // Tool labels: the built-in tools' names; every other tool is an MCP server's (`mcp`).
  const metrics = new PromMetrics({ builtinTools: toolbox.builtin.map((tool) => tool.name) });
  const encoders: Encoders = { rfc: new RfcEncoder(schema), legacy: new LegacyEncoder(legacyToolInfo(toolbox.builtin)) };
  // A store that cannot be reached rejects with StoreUnavailableError (retryable), given or opened.
  const store = unavailableAware(options.store ?? (await openStore(app, config)));
  const security = setUpSecurity(app, config);
  const push = await setUpPush(config, store, encoders, app, metrics);
  const hub = new EventHub(store, undefined, config.output.streamBufferBytes);
  hub.addListener({ event: () => push.dispatcher.kick() });
  await hub.start();
  const card = cardSource(app, config, describeAgent(created.model, created.demo), security, shellMode);
  const agent = buildAgent(app, {
    options,
    model: created.model,
    store,
    hub,
    toolbox,
    encoders,
    schema,
    security,
    push,
    card,
    shellMode,
    metrics,
    extensions,
  });
  push.dispatcher.start();
  await agent.supervisor.start();
  // Runs before the store's own onClose hook (hooks run in reverse order of registration).
  app.addHook('onClose', async () => {
    await agent.supervisor.stop();
    agent.cache.detachAll();
    // Aborted runs end promptly and write nothing more; one stuck in a call that ignores its
    // abort signal (an MCP server still starting) does not hold the shutdown up for long.
    if (!(await agent.runs.drain(5_000))) app.log.warn('task runs still going at shutdown; closing anyway');
    await push.dispatcher.stop();
    await hub.stop();
  });
  const closing = new AbortController();
  setMaxListeners(0, closing.signal); // one listener per open stream
  app.addHook('preClose', async () => {
    closing.abort(); // readiness 503, new work refused, open streams end
    const graceMs = options.shutdownGraceMs;
    if (graceMs === undefined) return;
    await gracefulHandOff(app, { agent, push, store, instanceId: config.store.instanceId, graceMs });
    // server.close() now waits for the answers in flight; one that does not end is cut after a while.
    setTimeout(() => app.server.closeAllConnections(), IN_FLIGHT_MS).unref();
  });
  await registerTransport(app, config, agent, security, push, card, store, metrics, closing.signal);
  return app;
}

/** How long a graceful close waits for the answers in flight once the work is handed off, ms. */
const IN_FLIGHT_MS = 5_000;

/**
 * The graceful part of close(), before the server stops listening: running calls finish within
 * the grace period or are recorded interrupted, writes are committed, leases released, the push
 * outbox gets one more pass (the onClose hooks then wait for it and close the store).
 */
async function gracefulHandOff(
  app: FastifyInstance,
  { agent, push, store, instanceId, graceMs }: { agent: Agent; push: Push; store: TaskStore; instanceId: string; graceMs: number },
): Promise<void> {
  const started = Date.now();
  const report = await handOff(
    {
      cache: agent.cache,
      runs: agent.runs,
      writes: agent.writes,
      store,
      logger: app.log,
      instanceId,
      beforeRelease: () => agent.supervisor.stop(),
    },
    graceMs,
  );
  push.dispatcher.kick(true);
  app.log.info({ ...report, ms: Date.now() - started }, 'shutdown: work handed off, leases released');
}
