/**
 * Process entry: config → app → listen. SIGINT/SIGTERM hand off gracefully (app.close() with
 * SHUTDOWN_GRACE_MS: see docs/operations.md); a second signal exits at once. Faults that escape
 * everything are logged as one JSON line.
 */
import type { FastifyInstance } from 'fastify';
import { buildApp, configSecrets } from './app.js';
import { ConfigError, loadConfig } from './config/load-config.js';
import type { Config } from './config/load-config.js';
import { secretScrubber } from './lib/redact.js';

/** Past the grace period, how long the rest of the shutdown may take before the process exits anyway, ms. */
const SHUTDOWN_SLACK_MS = 20_000;

const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143 };

type Log = (level: 'fatal' | 'error', obj: { err: unknown }, msg: string) => void;

/** Before the app (and its logger) exists: a pino-shaped JSON line on stdout. */
function bootLog(scrub: (text: string) => string): Log {
  return (level, { err }, msg) => {
    const e = err instanceof Error ? { type: err.name, message: err.message, stack: err.stack } : { message: String(err) };
    const line = { level: level === 'fatal' ? 60 : 50, time: Date.now(), pid: process.pid, err: e, msg };
    process.stdout.write(scrub(JSON.stringify(line)) + '\n');
  };
}

/**
 * An uncaught exception unwound a stack half-way through who knows what: logged, then the
 * process exits non-zero (the orchestrator restarts it; leases hand its tasks over). An
 * unhandled rejection is logged and the process goes on: the code keeps no floating promise,
 * so nothing waits on the one that failed — only its result is lost — and ending every task
 * and stream of the instance for it would do more harm than the bug did.
 */
function onFaults(log: () => Log): void {
  process.on('uncaughtException', (err) => {
    log()('fatal', { err }, 'uncaught exception; exiting');
    process.exit(1);
  });
  process.on('unhandledRejection', (err) => {
    log()('error', { err }, 'unhandled promise rejection (a bug); the process goes on');
  });
}

/** The first signal hands off (app.close()) and exits 0; a second one exits at once. */
function onSignals(app: FastifyInstance, config: Readonly<Config>): void {
  let stopping = false;
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) {
      app.log.warn({ signal }, 'second signal: exiting at once');
      process.exit(SIGNAL_EXIT[signal] ?? 1);
    }
    stopping = true;
    app.log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: draining');
    setTimeout(() => {
      app.log.error({ signal }, 'shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdownGraceMs + SHUTDOWN_SLACK_MS).unref();
    app.close().then(
      () => {
        app.log.info({ signal }, 'shut down');
        process.exit(0);
      },
      (err: unknown) => {
        app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig(process.env);
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(`Configuration error: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  const scrub = secretScrubber(configSecrets(config));
  let log: Log = bootLog(scrub);
  onFaults(() => log);
  const app = await buildApp({ config, shutdownGraceMs: config.shutdownGraceMs });
  log = (level, obj, msg) => app.log[level](obj, msg);
  onSignals(app, config);
  try {
    await app.listen({ host: config.host, port: config.port });
  } catch (err) {
    const why = listenFailure((err as NodeJS.ErrnoException).code, config.host, config.port);
    if (why === undefined) throw err;
    await app.close(); // the store's files and connections are released before the process ends
    process.stderr.write(`Failed to start: ${why}\n`);
    process.exit(1);
  }
  app.log.info(
    { workspace: config.workspaceDir, model: config.model.kind === 'genai' ? config.model.model : 'scripted' },
    `A2A development-tool agent ready (JSON-RPC at POST /, card at /.well-known/agent-card.json)`,
  );
}

/** What a person can do about a listen error the operator causes, or undefined for anything else. */
function listenFailure(code: string | undefined, host: string, port: number): string | undefined {
  const where = `${host.includes(':') ? `[${host}]` : host}:${port}`;
  if (code === 'EADDRINUSE') return `${where} is already in use (is another server running?). Stop it, or set PORT to a free port.`;
  if (code === 'EACCES') return `not allowed to listen on ${where} (ports below 1024 need privileges). Set PORT to 1024 or above.`;
  if (code === 'EADDRNOTAVAIL')
    return `HOST=${host} is not an address of this machine. Use 127.0.0.1 (the default) or one of its addresses.`;
  return undefined;
}

main().catch((err) => {
  // The config may not be loaded: what could hold a secret is scrubbed with what the environment names.
  const scrub = secretScrubber(startupSecrets());
  process.stderr.write(scrub(`Failed to start: ${(err as Error).stack ?? String(err)}\n`));
  process.exit(1);
});

/** The secrets the environment names, for a failure before the config is loaded. */
function startupSecrets(): string[] {
  try {
    return configSecrets(loadConfig(process.env));
  } catch {
    return [process.env.GEMINI_API_KEY, process.env.GOOGLE_API_KEY].filter((s): s is string => s !== undefined);
  }
}
