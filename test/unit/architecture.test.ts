/** Enforces the import rules of src/README.md by reading every source file's imports. */
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(p) ? [p] : [];
  });
}

interface Source {
  rel: string;
  area: string;
  imports: string[];
  text: string;
}

const sources: Source[] = files(SRC).map((file) => {
  const text = readFileSync(file, 'utf8');
  const rel = path.relative(SRC, file).split(path.sep).join('/');
  const imports = [...text.matchAll(/^\s*(?:import|export)[^'"]*?from\s+['"]([^'"]+)['"]/gm)].map((m) => {
    const spec = m[1];
    return spec.startsWith('.')
      ? path
          .relative(SRC, path.resolve(path.dirname(file), spec))
          .split(path.sep)
          .join('/')
      : spec;
  });
  return { rel, area: rel.includes('/') ? rel.split('/')[0] : rel, imports, text };
});

const SRC_AREAS = new Set(readdirSync(SRC).filter((name) => statSync(path.join(SRC, name)).isDirectory()));

const internalAreas = (s: Source) =>
  s.imports
    .filter((i) => !i.startsWith('node:') && !i.startsWith('@') && i.includes('/') && !i.startsWith('..'))
    .map((i) => i.split('/')[0]);

const PROCESS_ENTRIES = ['main.ts', 'cli/devtool-a2a.ts'];

const rules: Array<[string, (s: Source) => string[]]> = [
  [
    'config/ and protocol/ are leaves',
    (s) => (s.area === 'config' || s.area === 'protocol' ? internalAreas(s).filter((a) => a !== s.area) : []),
  ],
  ['only protocol/ imports protobufjs', (s) => (s.area !== 'protocol' ? s.imports.filter((i) => i.startsWith('protobufjs')) : [])],
  [
    'only config/ and the process entries (main.ts, cli/devtool-a2a.ts) read process.env',
    (s) => (s.area !== 'config' && !PROCESS_ENTRIES.includes(s.rel) && /process\.env/.test(s.text) ? ['process.env'] : []),
  ],
  [
    'client/ runs in browsers: it imports only itself, eventsource-parser and protocol/extension.ts (no node:)',
    (s) =>
      s.area === 'client'
        ? s.imports.filter((i) => !i.startsWith('client/') && i !== 'eventsource-parser' && i !== 'protocol/extension.js')
        : [],
  ],
  [
    'cli/ is a client of the server: it imports client/ and node:, nothing else of src/',
    (s) => (s.area === 'cli' ? internalAreas(s).filter((a) => !['cli', 'client'].includes(a)) : []),
  ],
  [
    'tools/ knows nothing of agent, transport, store, protocol',
    (s) => (s.area === 'tools' ? internalAreas(s).filter((a) => ['agent', 'transport', 'store', 'protocol'].includes(a)) : []),
  ],
  [
    'agent/ never imports transport/ or store/',
    (s) => (s.area === 'agent' ? internalAreas(s).filter((a) => ['transport', 'store'].includes(a)) : []),
  ],
  [
    'transport/ never imports agent/ or store/',
    (s) => (s.area === 'transport' ? internalAreas(s).filter((a) => ['agent', 'store'].includes(a)) : []),
  ],
  ['auth/ is a leaf', (s) => (s.area === 'auth' ? internalAreas(s).filter((a) => a !== 'auth') : [])],
  [
    'push/ imports only protocol/ (and the lib/ leaves)',
    (s) => (s.area === 'push' ? internalAreas(s).filter((a) => !['push', 'protocol', 'lib'].includes(a)) : []),
  ],
  [
    'mcp/ imports only tools/ (and the lib/ leaves)',
    (s) => (s.area === 'mcp' ? internalAreas(s).filter((a) => !['mcp', 'tools', 'lib'].includes(a)) : []),
  ],
  [
    'only mcp/ imports the MCP SDK client',
    (s) => (s.area !== 'mcp' ? s.imports.filter((i) => i.startsWith('@modelcontextprotocol/sdk')) : []),
  ],
  [
    'agent/ imports push/ and mcp/ for types only',
    (s) =>
      s.area === 'agent'
        ? [...s.text.matchAll(/^\s*import\s+(?!type\b)[^'"]*from\s+['"](\.\.\/(?:push|mcp)\/[^'"]+)['"]/gm)].map((m) => m[1])
        : [],
  ],
  ['lib/ is a leaf', (s) => (s.area === 'lib' ? internalAreas(s).filter((a) => a !== 'lib') : [])],
  ['metrics/ imports only lib/', (s) => (s.area === 'metrics' ? internalAreas(s).filter((a) => !['metrics', 'lib'].includes(a)) : [])],
  ['only metrics/ imports prom-client', (s) => (s.area !== 'metrics' ? s.imports.filter((i) => i.startsWith('prom-client')) : [])],
  [
    'agent/policy/ decides from settings alone: it imports neither the runtime nor request handling',
    (s) => (s.rel.startsWith('agent/policy/') ? s.imports.filter((i) => /^agent\/(runtime|requests)\//.test(i)) : []),
  ],
  [
    'agent/runtime/ runs tasks and never reaches into request handling',
    (s) => (s.rel.startsWith('agent/runtime/') ? s.imports.filter((i) => i.startsWith('agent/requests/')) : []),
  ],
  [
    'console/ is browser code: it reaches the server only through client/ (no node:, no other src/ folder)',
    (s) =>
      s.area === 'console'
        ? s.imports.filter(
            (i) => i.startsWith('node:') || (SRC_AREAS.has(i.split('/')[0]) && !['console', 'client'].includes(i.split('/')[0])),
          )
        : [],
  ],
  [
    'no server module imports console/ (the route serves it as files)',
    (s) => s.imports.filter((i) => i.startsWith('console/') && s.area !== 'console'),
  ],
  ['only main.ts calls listen()', (s) => (s.rel !== 'main.ts' && /\.listen\(\{/.test(s.text) ? ['listen()'] : [])],
];

t.ok(sources.length > 10, 'reads the source tree');
for (const [name, check] of rules) {
  t.test(name, async (t) => {
    const offenders = sources.flatMap((s) => check(s).map((bad) => `${s.rel} → ${bad}`));
    t.same(offenders, [], name);
  });
}
