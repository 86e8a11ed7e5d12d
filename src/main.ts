/** Process entry: config → app → listen; SIGINT/SIGTERM close the app. */
import { buildApp } from './app.js';
import { ConfigError, loadConfig } from './config/load-config.js';

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
  await app.listen({ host: config.host, port: config.port });
  app.log.info(
    { workspace: config.workspaceDir, model: config.model.kind === 'genai' ? config.model.model : 'scripted' },
    `A2A development-tool agent ready (JSON-RPC at POST /, card at /.well-known/agent-card.json)`,
  );
}

main().catch((err) => {
  process.stderr.write(`Failed to start: ${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
