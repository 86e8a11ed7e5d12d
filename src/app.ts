/**
 * The composition root: the only module that constructs concretes and wires them.
 * buildApp never listens; main.ts does (so tests can build many apps in one process).
 */
import { readFileSync, realpathSync } from 'node:fs';
import Fastify from 'fastify';
import type { FastifyInstance } from 'fastify';
import type { AgentCard } from '@a2a-js/sdk';
import { ConfigError } from './config/load-config.js';
import type { Config } from './config/load-config.js';
import { McpManager, parseMcpServers } from './mcp/index.js';
import { buildAgentCard } from './protocol/agent-card.js';
import { loadDevtoolSchema } from './protocol/devtool-schema.js';
import { EventHub } from './agent/event-hub.js';
import { DevtoolRequestHandler } from './agent/request-handler.js';
import { Supervisor } from './agent/supervisor.js';
import { TaskCache } from './agent/task-cache.js';
import type { TaskStore } from './agent/task-store.js';
import { SlashCommands } from './agent/slash-commands.js';
import { Toolbox } from './agent/toolbox.js';
import type { McpConnector } from './agent/toolbox.js';
import { TurnLoop } from './agent/turn-loop.js';
import { WriteQueue } from './agent/write-queue.js';
import { RfcEncoder } from './agent/wire/rfc-encoder.js';
import type { ModelClient } from './agent/model/model-client.js';
import { GenaiModelClient } from './agent/model/genai-model-client.js';
import { DEMO_SCRIPT_FILE, loadModelScript, ScriptedModelClient } from './agent/model/scripted-model-client.js';
import { openDatabase } from './store/db.js';
import { Access, OPEN_ACCESS } from './agent/access.js';
import { loadAuthConfig } from './auth/auth-config.js';
import { createAuthenticator } from './auth/authenticator.js';
import { PushDispatcher } from './push/push-dispatcher.js';
import { PushRegistry } from './push/push-registry.js';
import { checkPushUrl } from './push/ssrf-guard.js';
import { PushSigner } from './push/push-signer.js';
import type { PushStore } from './push/push-store.js';
import { PgTaskStore } from './store/pg-task-store.js';
import { createDefaultTools } from './tools/index.js';
import type { AnyTool } from './tools/tool.js';
import { agentCardRoutes } from './transport/http/agent-card-route.js';
import { createHostGuard } from './transport/http/host-guard.js';
import { jsonRpcRoutes, UNPARSABLE } from './transport/http/jsonrpc-route.js';

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

/** The model the config names, and whether it is the bundled demo. */
export function createModel(config: Readonly<Config>): { model: ModelClient; demo: boolean } {
  const m = config.model;
  if (m.kind === 'genai') {
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
  return { model: new ScriptedModelClient(loadModelScript(m.scriptFile ?? DEMO_SCRIPT_FILE)), demo: m.scriptFile === undefined };
}

/** The MCP port over @modelcontextprotocol/sdk (src/mcp/). */
function mcpConnector(): McpConnector {
  return {
    check: (servers, at) => {
      const parsed = parseMcpServers(servers, at);
      return parsed.ok ? undefined : parsed.message;
    },
    connect: (servers, { cwd }) => {
      const parsed = parseMcpServers(servers, 'mcpServers');
      if (!parsed.ok) throw new Error(parsed.message); // checked before it was stored
      return new McpManager(parsed.value, { cwd });
    },
  };
}

/** The real path of `p` when it exists (symlinks resolved), else `p`. */
function realOrSelf(p: string): string {
  try {
    return realpathSync(p);
  } catch {
    return p;
  }
}

function isLoopback(host: string): boolean {
  return host === '127.0.0.1' || host === 'localhost' || host === '::1' || host.startsWith('127.');
}

/** Opens the configured database (migrating it) and closes it with the app. */
async function openStore(app: FastifyInstance, config: Readonly<Config>): Promise<TaskStore & PushStore> {
  const database = await openDatabase({ databaseUrl: config.store.databaseUrl, dataDir: config.store.dataDir });
  app.log.info({ store: database.kind, ...(database.kind === 'pglite' ? { dataDir: config.store.dataDir } : {}) }, 'store open');
  const store = new PgTaskStore(database);
  app.addHook('onClose', async () => store.close());
  return store;
}

export async function buildApp(options: AppOptions): Promise<FastifyInstance> {
  const { config } = options;
  const app = Fastify({
    logger: options.logger ?? { level: config.logLevel },
    bodyLimit: 32 * 1024 * 1024, // 32 MiB: modified file contents ride in confirmations
    forceCloseConnections: true,
  });
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (_req, body, done) => {
    try {
      done(null, JSON.parse(body as string));
    } catch {
      done(null, UNPARSABLE);
    }
  });

  const created = options.model ? { model: options.model, demo: false } : createModel(config);
  if (created.demo) {
    app.log.warn('No GEMINI_API_KEY (or Vertex AI settings): answering with the bundled demo script, not Gemini');
  }
  const schema = loadDevtoolSchema();
  const tools = options.tools ?? createDefaultTools({ shell: config.shell });
  const mcp = mcpConnector();
  const serverMcp = config.settings.mcpServers;
  if (serverMcp !== undefined) {
    const bad = mcp.check(serverMcp, `SETTINGS_FILE ${config.settings.file}: mcpServers`);
    if (bad !== undefined) throw new ConfigError(bad);
  }
  const toolbox = new Toolbox({ builtin: tools, mcp, serverMcp, defaultCwd: config.workspaceDir, logger: app.log });
  await toolbox.start();
  app.addHook('onClose', async () => toolbox.close());
  const { instanceId, leaseMs } = config.store;
  const store = options.store ?? (await openStore(app, config));
  const hub = new EventHub(store);
  await hub.start();

  // Authentication (AUTH_CONFIG) and who may do what.
  const auth = config.authConfigFile !== undefined ? loadAuthConfig(config.authConfigFile) : undefined;
  const authenticator = auth && createAuthenticator(auth);
  const access = new Access(auth ? { enabled: true, approverRoles: auth.approverRoles, adminRoles: auth.adminRoles } : OPEN_ACCESS);
  if (auth) {
    app.log.info(
      { apiKeys: auth.apiKeys.length, jwt: auth.jwt !== undefined, approverRoles: auth.approverRoles, adminRoles: auth.adminRoles },
      'authentication on',
    );
  } else {
    app.log.warn({ host: config.host }, 'authentication off (no AUTH_CONFIG): anyone who can reach this address may use the agent');
  }

  // Push notifications: the event log is the outbox; the dispatcher posts what each config has not had.
  const signer = await PushSigner.create(store, { issuer: config.publicUrl });
  const registry = new PushRegistry({ store, allowPrivate: config.push.allowPrivate, onSaved: () => dispatcher.configSaved() });
  const loop = new TurnLoop({
    model: created.model,
    toolbox,
    store,
    systemInstruction: SYSTEM_INSTRUCTION,
    logger: app.log,
    retryBaseDelayMs: options.retryBaseDelayMs,
    approvalTimeoutMs: config.approvalTimeoutMs,
  });
  const encoder = new RfcEncoder(schema);
  const cache = new TaskCache({
    store,
    writes: new WriteQueue(store, app.log),
    hub,
    encoder,
    model: created.model.model,
    logger: app.log,
    instanceId,
    leaseMs,
    toolbox,
  });
  const dispatcher: PushDispatcher = new PushDispatcher({
    store,
    signer,
    owner: instanceId,
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
        return encoder.waitingCallParts(
          log.flatMap((e) => (e.response.payload?.$case === 'statusUpdate' ? [e.response.payload.value] : [])),
        );
      },
    },
  });
  hub.onEvent = () => dispatcher.kick();
  dispatcher.start();
  const supervisor = new Supervisor({
    store,
    cache,
    loop,
    logger: app.log,
    instanceId,
    leaseMs,
    sweepMs: options.sweepMs,
    reminderMs: config.push.reminderMs,
  });
  await supervisor.start();
  // Runs before the store's own onClose hook (hooks run in reverse order of registration).
  app.addHook('onClose', async () => {
    await supervisor.stop();
    await dispatcher.stop();
    await hub.stop();
  });
  const description = created.demo
    ? 'DEMO MODE: no Gemini credentials are configured, so answers come from a bundled script. Development agent: reads, writes and runs code in a workspace with approvals.'
    : `Development agent on ${created.model.model}: reads, writes and runs code in a workspace, asking before side effects.`;
  // The card names the address actually listened on (PORT=0 picks one at listen time).
  let card: AgentCard | undefined;
  const currentCard = (): AgentCard => {
    if (card) return card;
    const address = app.server.address();
    const port = typeof address === 'object' && address !== null ? address.port : config.port;
    const host = config.host.includes(':') ? `[${config.host}]` : config.host;
    const built = buildAgentCard({
      url: config.publicUrl ?? `http://${host}:${port}/`,
      version: PACKAGE_VERSION,
      description,
      pushNotifications: true,
      security: authenticator?.securitySchemesV1(),
    });
    if (port !== 0) card = built;
    return built;
  };
  const handler = new DevtoolRequestHandler({
    card: currentCard,
    schema,
    loop,
    encoder,
    store,
    cache,
    hub,
    toolbox,
    access,
    push: registry,
    // Client-given MCP URLs: never cloud metadata; with authentication, no private networks either
    // (unless PUSH_ALLOW_PRIVATE). Local use keeps localhost MCP servers working.
    checkMcpUrl: async (url, at) => {
      const r = await checkPushUrl(url, { allowPrivate: !auth || config.push.allowPrivate, field: at });
      return r.ok ? undefined : r.message.replace(/push to private networks/, 'connecting to private networks');
    },
    workspacePolicy: {
      roots: config.workspaceRoots,
      // With authentication, no client workspace may contain the server's own files (keys, the database).
      protectedPaths: auth
        ? [config.store.dataDir, config.authConfigFile, config.settings.file].filter((p): p is string => p !== undefined).map(realOrSelf)
        : [],
    },
    defaultWorkspace: config.workspaceDir,
    instanceId,
    leaseMs,
  });

  if (isLoopback(config.host)) {
    const extra = config.publicUrl ? [new URL(config.publicUrl).hostname] : [];
    app.addHook('onRequest', createHostGuard({ allowedHosts: extra }));
  }
  const v03 = authenticator?.securitySchemesV03();
  await app.register(agentCardRoutes, {
    card: currentCard,
    securityV03: v03 && { securitySchemes: v03.securitySchemes as Record<string, unknown>, security: v03.security },
    jwks: () => signer.jwks(),
  });
  const commands = new SlashCommands({ schema, router: handler.router, loop });
  await app.register(jsonRpcRoutes, {
    handler,
    heartbeatMs: config.sseHeartbeatMs,
    extensionMethods: {
      'commands/get': async () => commands.list(),
      'command/execute': async (params, caller) => commands.execute(params, caller),
      'audit/list': async (params, caller) => handler.listAudit(params, caller),
    },
    authenticate:
      authenticator &&
      (async (headers) => {
        const r = await authenticator.authenticate(headers);
        return r.ok
          ? { ok: true, caller: { id: r.principal.id, roles: r.principal.roles } }
          : { ok: false, message: r.message, wwwAuthenticate: r.wwwAuthenticate };
      }),
  });
  return app;
}
