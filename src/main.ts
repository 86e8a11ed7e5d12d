/** Process entry: config → app → listen; SIGINT/SIGTERM close the app. */
import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config/load-config.js';
import { isStoreUnavailable } from './protocol/errors.js';

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
  const app = await buildApp({ config });
  const close = async (signal: string) => {
    app.log.info({ signal }, 'shutting down');
    await app.close();
    process.exit(0);
  };
  process.once('SIGINT', () => void close('SIGINT'));
  process.once('SIGTERM', () => void close('SIGTERM'));
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

// A database driver path that rejects without a handler (postgres.js had one: see store/db.ts
// DRIVER_OPTIONS) must not end the process for a lost connection: logged, the store recovers.
// Anything else still ends it, as Node does by default.
process.on('unhandledRejection', (err) => {
  if (!isStoreUnavailable(err)) throw err;
  process.stderr.write(
    `${JSON.stringify({ level: 40, time: Date.now(), msg: 'unhandled database connection error (ignored; the store reconnects)', err: String(err) })}\n`,
  );
});

main().catch((err) => {
  process.stderr.write(`Failed to start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
