/**
 * Enforces the import rules of src/README.md (test/support/import-rules.ts) on the source tree,
 * and shows that each rule fires on a violation planted in an in-memory tree.
 */
import t from 'tap';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseSource, RULES, violations } from '../support/import-rules.js';

const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? files(p) : /\.tsx?$/.test(p) ? [p] : [];
  });
}

const tree = files(SRC).map((file) => parseSource(path.relative(SRC, file).split(path.sep).join('/'), readFileSync(file, 'utf8')));

t.test('the source tree keeps every rule', async (t) => {
  t.ok(tree.length > 10, 'reads the source tree');
  t.ok(
    tree.some((s) => s.rel === 'app.ts' && s.imports.some((i) => i.target === 'agent/model/genai-model-client' && !i.typeOnly)),
    'sees a dynamic import() (app.ts loads the genai client lazily)',
  );
  t.ok(
    tree.some((s) => s.rel === 'console/main.tsx' && s.imports.some((i) => i.spec === './console.css')),
    "sees a bare import 'x' (the console's stylesheet)",
  );
  for (const [name, found] of violations(tree)) t.strictSame(found, [], name);
});

t.test('isObject is defined once, in lib/ (the server and the browser client share it)', async (t) => {
  const defines = (text: string) => /\b(?:function\s+isObject\b|(?:const|let|var)\s+isObject\s*[=:])/.test(text);
  t.ok(defines('export const isObject = (v: unknown) => true;') && !defines('isObject(x)'), 'the check sees a definition, not a use');
  t.strictSame(
    tree.filter((s) => defines(s.text)).map((s) => s.rel),
    ['lib/is-object.ts'],
  );
});

/** For each rule, files that break it (and only it, where the rule allows). */
const PLANTED: Record<string, Array<[rel: string, text: string]>> = {
  'lib/ is the bottom: it imports nothing of src/': [
    ['lib/x.ts', `const m = await import('../app.js');`],
    ['lib/y.ts', `import type { P } from '../protocol/a2a.js';`],
  ],
  'config/ and protocol/ are leaves (the lib/ helpers aside)': [
    ['config/x.ts', `import { a } from '../agent/requests/y.js';`],
    ['protocol/x.ts', `export { b } from '../tools/tool.js';`],
  ],
  'only protocol/ imports protobufjs': [['store/x.ts', `import 'protobufjs/minimal.js';`]],
  'only config/ and the process entries (main.ts, cli/devtool-a2a.ts) read process.env': [['agent/x.ts', `const home = process.env.HOME;`]],
  'tools/ knows nothing of agent, transport, store, protocol': [['tools/file/x.ts', `import type { A } from '../../protocol/a2a.js';`]],
  'agent/ never imports transport/ or store/': [['agent/requests/x.ts', `const s = await import('../../store/pg-task-store.js');`]],
  'agent/ imports push/ and mcp/ for types only': [
    ['agent/requests/x.ts', `import { DEFAULT_CONFIG_ID } from '../../push/push-registry.js';`],
    ['agent/x.ts', `import { type McpManager } from '../mcp/mcp-manager.js';`], // loads the module all the same
    ['agent/runtime/x.ts', `export { McpManager } from '../../mcp/mcp-manager.js';`],
  ],
  'agent/policy/ decides from settings alone: it imports neither the runtime nor request handling': [
    ['agent/policy/x.ts', `import type { T } from '../runtime/turn-loop.js';`],
  ],
  'agent/runtime/ runs tasks and never reaches into request handling': [['agent/runtime/x.ts', `import '../requests/message-router.js';`]],
  'transport/ never imports agent/ or store/': [['transport/http/x.ts', `import { X } from '../../agent/runtime/event-hub.js';`]],
  'auth/ is a leaf (the lib/ helpers aside)': [['auth/x.ts', `import { y } from '../protocol/errors.js';`]],
  'push/ imports only protocol/ (and the lib/ leaves)': [['push/x.ts', `import { y } from '../store/schema.js';`]],
  'mcp/ imports only tools/ (and the lib/ leaves)': [['mcp/x.ts', `import { y } from '../protocol/errors.js';`]],
  'only mcp/ imports the MCP SDK': [['tools/x.ts', `const sdk = await import('@modelcontextprotocol/sdk/client/index.js');`]],
  'metrics/ imports only lib/': [['metrics/x.ts', `import type { Task } from '../agent/task-store.js';`]],
  'only metrics/ imports prom-client': [['agent/runtime/x.ts', `import { Counter } from 'prom-client';`]],
  'client/ runs in browsers: it imports only itself, eventsource-parser, protocol/extension.ts and lib/is-object.ts (no node:)': [
    ['client/x.ts', `import { a } from '../protocol/a2a.js';`],
    ['client/y.ts', `import { readFile } from 'node:fs/promises';`],
    ['client/z.ts', `import { Background } from '../lib/background.js';`],
  ],
  'cli/ is a client of the server: it imports client/ and node:, nothing else of src/': [
    ['cli/x.ts', `import { y } from '../protocol/extension.js';`],
  ],
  'console/ is browser code: it reaches the server only through client/ (no node:, no other src/ folder)': [
    ['console/x.tsx', `import { y } from '../protocol/extension.js';`],
    ['console/y.ts', `import path from 'node:path';`],
  ],
  'no server module imports console/ (the route serves it as files)': [['transport/http/x.ts', `import '../../console/main.js';`]],
  'only main.ts imports app.ts (the one composition root), and nothing imports main.ts': [
    ['transport/http/x.ts', `import { buildApp } from '../../app.js';`],
    ['app.ts', `import { main } from './main.js';`],
  ],
  'only main.ts calls listen()': [['transport/http/x.ts', `await app.listen({ port: 0 });`]],
  "a task's state changes only in agent/runtime/task-lifecycle.ts (the one writer, checked against its table)": [
    ['agent/requests/x.ts', `task.setState('working');`],
    ['agent/runtime/x.ts', `task.publish({ type: 'state', state: 'completed' });`],
    ['agent/requests/y.ts', `import { pauseEvent } from '../runtime/pause.js';\ntask.publish(pauseEvent(task, []));`],
    ['agent/requests/z.ts', `const t = newTask(id, contextId, message);`],
    ['agent/requests/w.ts', `events.push(pausing(task, waiting, reason));`],
  ],
};

t.test('every rule fires on a planted violation', async (t) => {
  t.strictSame(Object.keys(PLANTED).sort(), RULES.map(([name]) => name).sort(), 'a planted violation for every rule');
  for (const [rule, plants] of Object.entries(PLANTED)) {
    for (const [rel, text] of plants) {
      const found = violations([parseSource(rel, text)]).get(rule);
      t.equal(found?.length, 1, `${rule}: fires on ${rel}: ${text}`);
    }
  }
});

t.test('what the rules allow', async (t) => {
  const allowed: Array<[string, string]> = [
    ['agent/requests/x.ts', `import type { PushRegistry } from '../../push/push-registry.js';`],
    ['agent/x.ts', `export type { McpConnector } from '../mcp/mcp-manager.js';`],
    ['main.ts', `import { buildApp } from './app.js';`],
    ['console/main.tsx', `import { App } from './app.js';`], // the console's own app.tsx, not src/app.ts
    ['client/x.ts', `import { EXT } from '../protocol/extension.js'; import { createParser } from 'eventsource-parser';`],
    ['client/y.ts', `import { isObject } from '../lib/is-object.js';`],
    ['lib/x.ts', `import { y } from './y.js'; import { join } from 'node:path';`],
    ['protocol/x.ts', `import { isObject } from '../lib/is-object.js';`],
    ['auth/x.ts', `import { isObject } from '../lib/is-object.js';`],
    // Reading a state event, its type, and words in comments and strings change nothing.
    ['agent/runtime/x.ts', `if (event.type === 'state') log('setState()'); type E = { type: 'state' }; // task.setState('x')`],
    ['agent/runtime/task-lifecycle.ts', `task.setState('working'); move(task, { type: 'state', state: 'working' });`],
  ];
  for (const [rel, text] of allowed) {
    const found = [...violations([parseSource(rel, text)])].filter(([, v]) => v.length > 0);
    t.strictSame(found, [], `${rel}: ${text}`);
  }
});
