/** drizzle-kit config: `npx drizzle-kit generate --config scripts/drizzle.config.ts` (no database needed). */
import { defineConfig } from 'drizzle-kit';

export default defineConfig({
  dialect: 'postgresql',
  schema: './src/store/schema.ts',
  out: './drizzle',
});
