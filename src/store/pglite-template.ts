/**
 * A new embedded data directory is a copy of a template: a PGlite cluster initialised once
 * (initdb, seconds of WASM work and ~800 MB of transient heap) and prepared by a recipe (the
 * store migrates it), by `npm run build` or by the first start that finds none, kept under
 * node_modules/.cache, one per PGlite version and recipe key. A first start then copies
 * ~40 MB instead of running initdb, and finds the schema already there: the migrations' own
 * growth of the WASM heap (which never shrinks) happened in a worker that is gone.
 */
import { spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Where templates are kept by default. */
export const TEMPLATE_ROOT = path.join(REPO_ROOT, 'node_modules', '.cache', 'devtool-a2a-server');

/** How a data directory was made ready to open. */
export type Provisioned = 'existing' | 'template' | 'initdb';

/** What a template holds beyond a fresh cluster: `prepare` runs on it once, `key` names the result. */
export interface TemplateRecipe {
  /** Part of the template's directory name: a different key is a different template. */
  key: string;
  prepare(dataDir: string): Promise<void>;
}

function pgliteVersion(): string {
  const entry = createRequire(import.meta.url).resolve('@electric-sql/pglite');
  // <pkg>/dist/index.cjs → <pkg>/package.json
  const pkg = JSON.parse(readFileSync(path.join(path.dirname(entry), '..', 'package.json'), 'utf8')) as { version: string };
  return pkg.version;
}

/** The template directory for the installed PGlite (and the recipe) under `root`. */
export function templateDir(root: string = TEMPLATE_ROOT, recipe?: TemplateRecipe): string {
  return path.join(root, `pglite-${pgliteVersion()}${recipe ? `-${recipe.key}` : ''}-template`);
}

function initialised(dir: string): boolean {
  return existsSync(path.join(dir, 'PG_VERSION'));
}

/**
 * Initialises a PGlite data directory in a short-lived child process: initdb grows the WASM
 * heap to ~800 MB, and a WASM heap never shrinks, so it must not happen in the server.
 */
export async function initPgliteDir(dataDir: string): Promise<void> {
  if (initialised(dataDir)) return;
  mkdirSync(dataDir, { recursive: true });
  const script = `const { PGlite } = await import('@electric-sql/pglite'); const pg = new PGlite(process.argv[1]); await pg.waitReady; await pg.close();`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script, dataDir], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let stderr = '';
  child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`could not initialise the PGlite data directory ${dataDir} (exit ${code}): ${stderr.trim().slice(-500)}`);
}

/**
 * The template under `root`, made when missing. Built in a directory of its own and renamed
 * into place, so a concurrent builder or a crash never leaves a half-made template.
 */
export async function ensureTemplate(root: string = TEMPLATE_ROOT, recipe?: TemplateRecipe): Promise<string> {
  const dir = templateDir(root, recipe);
  if (initialised(dir)) return dir;
  const building = `${dir}.building-${process.pid}-${Date.now()}`;
  try {
    await initPgliteDir(building);
    await recipe?.prepare(building);
    try {
      renameSync(building, dir);
    } catch (e) {
      if (!initialised(dir)) throw e; // not lost to a concurrent builder
    }
  } finally {
    rmSync(building, { recursive: true, force: true });
  }
  return dir;
}

function isEmptyOrMissing(dir: string): boolean {
  return !existsSync(dir) || readdirSync(dir).length === 0;
}

/**
 * Makes `dataDir` ready for PGlite to open: an initialised directory is left as it is; an
 * empty or missing one becomes a copy of the template (built first when missing); when no
 * template can be had (a read-only install), initdb runs on the directory itself (and the
 * recipe is not applied: the store migrates on open).
 */
export async function provisionDataDir(dataDir: string, root: string = TEMPLATE_ROOT, recipe?: TemplateRecipe): Promise<Provisioned> {
  if (initialised(dataDir)) return 'existing';
  if (isEmptyOrMissing(dataDir)) {
    let template: string | undefined;
    try {
      template = await ensureTemplate(root, recipe);
    } catch {
      template = undefined;
    }
    if (template !== undefined) {
      // PG_VERSION last: a copy cut short is not taken for an initialised directory.
      const marker = path.join(template, 'PG_VERSION');
      cpSync(template, dataDir, { recursive: true, filter: (src) => src !== marker });
      cpSync(marker, path.join(dataDir, 'PG_VERSION'));
      return 'template';
    }
  }
  await initPgliteDir(dataDir);
  return 'initdb';
}
