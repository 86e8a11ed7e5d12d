/**
 * The web console's files: `index.html`, `console.js` and `console.css`. `npm run build`
 * bundles them into dist/console/ (bundleConsole with an outDir); when the server runs from
 * its sources (tsx, tests) there is no bundle, so the first request bundles them in memory.
 * The UI libraries are bundled in: the page loads nothing from elsewhere (no CDN, works offline).
 */
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';

/** One served file: its bytes, Content-Type and a strong ETag. */
export interface ConsoleAsset {
  body: Buffer;
  type: string;
  etag: string;
}

/** The console's files by name (`index.html`, `console.js`, `console.css`). */
export type ConsoleAssets = ReadonlyMap<string, ConsoleAsset>;

export const CONSOLE_FILES = ['index.html', 'console.js', 'console.css'] as const;

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};

function asset(name: string, body: Buffer): ConsoleAsset {
  const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
  return { body, type: TYPES[path.extname(name)] ?? 'application/octet-stream', etag };
}

/**
 * Bundles the console's sources in `srcDir` (entry `main.tsx`, the page `index.html`) with
 * esbuild: minified, no source maps, the browser target of the page. With `outDir` the files are
 * written there too (the build); either way they are returned.
 */
export async function bundleConsole(srcDir: string, outDir?: string): Promise<ConsoleAssets> {
  // Loaded only when bundling: a built server (dist/) serves its files and never needs esbuild.
  const { build } = await import('esbuild');
  const result = await build({
    entryPoints: { console: path.join(srcDir, 'main.tsx') },
    bundle: true,
    write: false,
    outdir: outDir ?? path.join(srcDir, 'out'),
    format: 'esm',
    platform: 'browser',
    target: ['es2022'],
    minify: true,
    legalComments: 'none',
    jsx: 'automatic',
    jsxImportSource: 'preact',
    tsconfig: path.join(srcDir, 'tsconfig.json'),
    logLevel: 'silent',
  });
  const files = new Map<string, ConsoleAsset>();
  for (const out of result.outputFiles) {
    const name = path.basename(out.path);
    files.set(name, asset(name, Buffer.from(out.contents)));
  }
  files.set('index.html', asset('index.html', readFileSync(path.join(srcDir, 'index.html'))));
  for (const name of CONSOLE_FILES) {
    if (!files.has(name)) throw new Error(`bundling the console in ${srcDir} produced no ${name}`);
  }
  if (outDir !== undefined) {
    mkdirSync(outDir, { recursive: true });
    for (const [name, file] of files) writeFileSync(path.join(outDir, name), file.body);
  }
  return files;
}

/** Reads a built console (every file of CONSOLE_FILES in `dir`). */
export function readConsole(dir: string): ConsoleAssets {
  return new Map(CONSOLE_FILES.map((name) => [name, asset(name, readFileSync(path.join(dir, name)))]));
}

/**
 * The console in `dir`: the built files when `dir` holds them (dist/console/), else its
 * sources bundled in memory (src/console/ under tsx). Undefined when it holds neither.
 */
export async function loadConsole(dir: string): Promise<ConsoleAssets | undefined> {
  if (existsSync(path.join(dir, 'console.js'))) return readConsole(dir);
  if (existsSync(path.join(dir, 'main.tsx'))) return bundleConsole(dir);
  return undefined;
}
