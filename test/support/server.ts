/**
 * The real server in the test's process: buildApp on the in-memory store, either listening on
 * 127.0.0.1:0 (startServer: real sockets, real SSE) or not listening at all (buildServer: driven
 * through app.inject, the fast path for protocol and agent-core tests).
 */
import { mkdtempSync, realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { buildApp } from '../../src/app.js';
import type { AppOptions } from '../../src/app.js';
import { loadConfig } from '../../src/config/load-config.js';
import type { ModelClient } from '../../src/agent/model/model-client.js';
import { ScriptedModelClient } from '../../src/agent/model/scripted-model-client.js';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { DEVTOOL_EXTENSION_URI } from '../../src/protocol/extension.js';
import tap from 'tap';
import { MemoryTaskStore } from '../../src/store/memory-store.js';

let shared: MemoryTaskStore | undefined;

/**
 * One in-memory database per test process: every server a test file starts shares it, as
 * several instances share one database in production. (The PGlite and PostgreSQL stores are
 * tested against the same contract in test/store/, and in the restart and instance tests.)
 */
export function sharedStore(): Promise<MemoryTaskStore> {
  if (!shared) {
    const opened = (shared = new MemoryTaskStore());
    tap.teardown(() => opened.close());
  }
  return Promise.resolve(shared);
}

export const URI = DEVTOOL_EXTENSION_URI;

export interface TestServer {
  app: FastifyInstance;
  url: string;
  /** The default workspace (WORKSPACE_DIR), a fresh temp dir. */
  workspace: string;
}

interface Teardown {
  teardown(fn: () => unknown): void;
}

export function tempDir(prefix = 'devtool-ws-'): string {
  return realpathSync(mkdtempSync(path.join(tmpdir(), prefix)));
}

export interface ServerOptions {
  script?: ModelScript;
  model?: ModelClient;
  env?: Record<string, string>;
  app?: Partial<AppOptions>;
}

/** buildApp on a fresh workspace and the shared in-memory store (a new connection per server); closed at teardown. */
export async function buildServer(t: Teardown, opts: ServerOptions = {}): Promise<{ app: FastifyInstance; workspace: string }> {
  const workspace = tempDir();
  // EXTENSIONS_DIR off: a test server never loads the extensions of the machine's ~/.gemini.
  const config = loadConfig({ WORKSPACE_DIR: workspace, PORT: '0', LOG_LEVEL: 'silent', EXTENSIONS_DIR: 'off', ...opts.env });
  const model = opts.model ?? new ScriptedModelClient(opts.script ?? TEST_SCRIPT);
  const store = opts.app?.store ?? (await sharedStore()).connect();
  const app = await buildApp({ config, model, logger: false, retryBaseDelayMs: 10, store, ...opts.app });
  t.teardown(() => app.close());
  return { app, workspace };
}

/** buildServer, listening on 127.0.0.1 and an ephemeral port. */
export async function startServer(t: Teardown, opts: ServerOptions = {}): Promise<TestServer> {
  const { app, workspace } = await buildServer(t, opts);
  await app.listen({ host: '127.0.0.1', port: 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { app, url: `http://127.0.0.1:${port}/`, workspace };
}

let n = 0;
/** A v0.3 user message. */
export function userMessage(text: string, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { kind: 'message', role: 'user', messageId: `m-${++n}`, parts: [{ kind: 'text', text }], ...extra };
}

/** A v0.3 user message answering tool calls with ToolCallConfirmation DataParts. */
export function confirmMessage(taskId: string, contextId: string, ...confirmations: Record<string, unknown>[]): Record<string, unknown> {
  return {
    kind: 'message',
    role: 'user',
    messageId: `m-${++n}`,
    taskId,
    contextId,
    parts: confirmations.map((data) => ({ kind: 'data', data })),
  };
}

/** The dev-tool metadata of a v0.3 status-update result. */
export function devtool(result: any): { kind: string; model: string; error?: string } {
  return result?.metadata?.[URI];
}

/** The first DataPart of a v0.3 status-update result (a ToolCall or AgentThought). */
export function dataOf(result: any): any {
  return result?.status?.message?.parts?.find((p: any) => p.kind === 'data')?.data;
}

export function textOf(result: any): string {
  return (result?.status?.message?.parts ?? [])
    .filter((p: any) => p.kind === 'text')
    .map((p: any) => p.text)
    .join('');
}
