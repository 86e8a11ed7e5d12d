/**
 * What the bench runs: the compiled server (`node dist/main.js`, what `npm start` runs) by
 * default, or the sources under tsx (`--from-source`, what `npm run start:dev` runs).
 *
 * tsx is not free: in the server it transpiles every module at start, and the PGlite worker
 * inherits `--import tsx` and loads it again, so a server run from source starts slower and
 * holds more memory than the one users run. The compiled run needs the probe compiled too:
 * it is bundled with esbuild into node_modules/.cache/ (so its package imports resolve from
 * node_modules), with its imports of src/ modules pointed at their dist/ builds — the very
 * modules the server loads, so the probe patches the same PgliteThread the server uses.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { stampIsFresh } from '../build-inputs.mjs';

export interface ServerEntry {
  /** node arguments after any flags: the preloads and the main module. */
  args: (probe: boolean) => string[];
  /** For the log: what runs. */
  describe: string;
}

const SOURCE_ENTRY: ServerEntry = {
  args: (probe) => ['--import', 'tsx', ...(probe ? ['--import', './scripts/bench/probe.ts'] : []), 'src/main.ts'],
  describe: 'from source: node --import tsx src/main.ts',
};

/** `npm run build` (dist/, the console bundle, the PGlite template) unless dist/ is fresh, then the probe bundled against dist/. */
async function compiledEntry(repo: string, log: (line: string) => void): Promise<ServerEntry> {
  // As `npm start` does: build only when dist/ is not what the sources make now (its stamp).
  if (stampIsFresh(repo)) log('dist/ matches its build stamp (the sources did not change since it was built): not rebuilt');
  else {
    log('building the server (npm run build) so the bench runs what npm start runs');
    execFileSync('npm', ['run', '--silent', 'build'], { cwd: repo, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  const outDir = path.join(repo, 'node_modules', '.cache', 'devtool-bench');
  mkdirSync(outDir, { recursive: true });
  const probeFile = path.join(outDir, 'probe.mjs');
  const srcDir = path.join(repo, 'src') + path.sep;
  await build({
    entryPoints: [path.join(repo, 'scripts', 'bench', 'probe.ts')],
    outfile: probeFile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    logLevel: 'warning',
    plugins: [
      {
        name: 'src-to-dist',
        setup(b) {
          // Packages stay external (resolved from node_modules at run time, shared with the server).
          b.onResolve({ filter: /^[^./]/ }, (a) => ({ path: a.path, external: true }));
          b.onResolve({ filter: /\/src\// }, (a) => {
            const abs = path.resolve(a.resolveDir, a.path);
            if (!abs.startsWith(srcDir)) return undefined;
            return { path: pathToFileURL(path.join(repo, 'dist', abs.slice(srcDir.length))).href, external: true };
          });
        },
      },
    ],
  });
  return {
    args: (probe) => [...(probe ? ['--import', pathToFileURL(probeFile).href] : []), 'dist/main.js'],
    describe: 'compiled: node dist/main.js',
  };
}

export async function serverEntry(repo: string, fromSource: boolean, log: (line: string) => void): Promise<ServerEntry> {
  return fromSource ? SOURCE_ENTRY : compiledEntry(repo, log);
}
