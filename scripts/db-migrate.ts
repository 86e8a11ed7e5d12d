/**
 * `npm run db:migrate`: applies pending migrations to the configured store (DATABASE_URL,
 * or the PGlite DATA_DIR) and says what it did. The server also migrates on boot; this is
 * for deployments that migrate as a separate step. Never prints the URL (it may hold a password).
 */
import { loadConfig } from '../src/config/load-config.js';
import { migrateDatabase } from '../src/store/db.js';

try {
  const { store } = loadConfig(process.env);
  const report = await migrateDatabase({ databaseUrl: store.databaseUrl, dataDir: store.dataDir });
  const where = report.kind === 'pglite' ? `PGlite at ${report.target}` : `PostgreSQL (${report.target})`;
  console.log(
    `db:migrate: ${where}: applied ${report.applied} of ${report.available} migration(s)${report.applied === 0 ? ', already up to date' : ''}`,
  );
} catch (e) {
  // The error of a failed connection can quote the URL; print only its class and code.
  const err = e as { name?: string; code?: string; cause?: { code?: string }; message?: string };
  const code = err.cause?.code ?? err.code;
  console.error(`db:migrate failed: ${err.name ?? 'Error'}${code ? ` (${code})` : ''}: ${redact(err.message ?? String(e))}`);
  process.exitCode = 1;
}

/** Masks anything that looks like a connection URL's credentials. */
function redact(text: string): string {
  return text.replace(/(postgres(?:ql)?:\/\/)[^@\s/]*@/g, '$1***@');
}
