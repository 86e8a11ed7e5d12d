/**
 * The import rules of src/README.md as functions over parsed sources, so that
 * test/unit/architecture.test.ts can run them on the real tree and on planted violations alike.
 *
 * Imports are read with the TypeScript parser (static, `export … from`, bare `import 'x'`,
 * `import('x')`), and a relative specifier is resolved to the module it names (src-relative, no
 * extension) before any rule looks at it: a rule compares folders, never specifier strings, so
 * `../push/x.js` and `../../push/x.js` are the same thing to it.
 */
import path from 'node:path';
import ts from 'typescript';

export interface Import {
  /** The specifier as written. */
  spec: string;
  /** For a relative specifier: the src-relative module it resolves to, without extension
   * (`push/push-registry`, `app`); `../x` when it leaves src/. Undefined for packages and `node:`. */
  target?: string;
  /** `import type` / `export type`: erased at build. (Under verbatimModuleSyntax,
   * `import { type A }` still loads the module, so it counts as a value import.) */
  typeOnly: boolean;
}

export interface Source {
  /** Path relative to src/, with `/` (`agent/requests/request-handler.ts`). */
  rel: string;
  /** The top folder (`agent`), or the file itself for a top-level file (`app`, `main`). */
  area: string;
  imports: Import[];
  /** What in it changes a task's state (see STATE_WRITES), as written. */
  stateWrites: string[];
  text: string;
}

const EXT = /\.(?:[cm]?js|jsx|tsx?)$/;

/** The top folder of a src-relative module (`agent`), or the module itself at the top (`app`). */
export const areaOf = (mod: string): string => (mod.includes('/') ? mod.split('/')[0] : mod.replace(EXT, ''));

function importsOf(rel: string, file: ts.SourceFile): Import[] {
  const out: Import[] = [];
  const add = (spec: string, typeOnly: boolean) => {
    const target = spec.startsWith('.') ? path.posix.normalize(path.posix.join(path.posix.dirname(rel), spec)).replace(EXT, '') : undefined;
    out.push({ spec, target, typeOnly });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node) && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node.importClause?.isTypeOnly ?? false);
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier && ts.isStringLiteral(node.moduleSpecifier)) {
      add(node.moduleSpecifier.text, node.isTypeOnly);
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword) {
      const [arg] = node.arguments;
      // A computed specifier cannot be checked here; none of src/ uses one on a src/ module.
      if (arg && ts.isStringLiteralLike(arg)) add(arg.text, false);
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument) && ts.isStringLiteral(node.argument.literal)) {
      add(node.argument.literal.text, true); // `typeof import('x')`: a type
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return out;
}

/**
 * What changes a task's state: `x.setState(…)`, an object literal `{ type: 'state', … }` (the
 * AgentEvent that moves it), and `pauseEvent` / `pausing` / `newTask` (a pause's state event,
 * unchecked and checked; a new task's first state). Comments and strings are not code, so the parser, not a regex, finds them.
 */
function stateWritesOf(file: ts.SourceFile): string[] {
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node) && ts.isPropertyAccessExpression(node.expression) && node.expression.name.text === 'setState') {
      out.push('setState()');
    } else if (
      ts.isPropertyAssignment(node) &&
      ts.isObjectLiteralExpression(node.parent) &&
      (ts.isIdentifier(node.name) || ts.isStringLiteral(node.name)) &&
      node.name.text === 'type' &&
      ts.isStringLiteralLike(node.initializer) &&
      node.initializer.text === 'state'
    ) {
      out.push("{ type: 'state' }");
    } else if (ts.isIdentifier(node) && STATE_MAKERS.includes(node.text) && !ts.isImportSpecifier(node.parent)) {
      out.push(node.text);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return out;
}

const STATE_MAKERS = ['pauseEvent', 'pausing', 'newTask'];

/** Parses one source file given its src-relative path and text. */
export function parseSource(rel: string, text: string): Source {
  const file = ts.createSourceFile(rel, text, ts.ScriptTarget.Latest, true, rel.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS);
  return { rel, area: areaOf(rel), imports: importsOf(rel, file), stateWrites: stateWritesOf(file), text };
}

/**
 * Where those are defined rather than used: LiveTask.setState, pauseEvent (the pause's event,
 * built for the lifecycle), newTask (the protocol's Task builder). The lifecycle itself is the owner.
 */
const STATE_OWNERS = ['agent/runtime/task-lifecycle.ts', 'agent/runtime/live-task.ts', 'agent/runtime/pause.ts', 'protocol/a2a.ts'];

/** The src/ modules a source imports (resolved, without extension), type-only ones included. */
const internal = (s: Source) => s.imports.flatMap((i) => (i.target !== undefined ? [i.target] : []));
/** The areas of those modules that are not the source's own. */
const otherAreas = (s: Source) => internal(s).filter((m) => areaOf(m) !== s.area);
const inAreas = (s: Source, areas: string[]) => otherAreas(s).filter((m) => areas.includes(areaOf(m)));
const outsideAreas = (s: Source, allowed: string[]) => otherAreas(s).filter((m) => !allowed.includes(areaOf(m)));
const packages = (s: Source, pred: (spec: string) => boolean) =>
  s.imports.filter((i) => i.target === undefined && pred(i.spec)).map((i) => i.spec);

export const PROCESS_ENTRIES = ['main.ts', 'cli/devtool-a2a.ts'];

/** [rule as src/README.md states it, (source) → what in it breaks the rule]. */
export const RULES: ReadonlyArray<readonly [string, (s: Source) => string[]]> = [
  ['lib/ is the bottom: it imports nothing of src/', (s) => (s.area === 'lib' ? otherAreas(s) : [])],
  [
    'config/ and protocol/ are leaves (the lib/ helpers aside)',
    (s) => (['config', 'protocol'].includes(s.area) ? outsideAreas(s, ['lib']) : []),
  ],
  ['only protocol/ imports protobufjs', (s) => (s.area !== 'protocol' ? packages(s, (p) => /^protobufjs(\/|$)/.test(p)) : [])],
  [
    'only config/ and the process entries (main.ts, cli/devtool-a2a.ts) read process.env',
    (s) => (s.area !== 'config' && !PROCESS_ENTRIES.includes(s.rel) && /process\.env/.test(s.text) ? ['process.env'] : []),
  ],
  [
    'tools/ knows nothing of agent, transport, store, protocol',
    (s) => (s.area === 'tools' ? inAreas(s, ['agent', 'transport', 'store', 'protocol']) : []),
  ],
  ['agent/ never imports transport/ or store/', (s) => (s.area === 'agent' ? inAreas(s, ['transport', 'store']) : [])],
  [
    'agent/ imports push/ and mcp/ for types only',
    (s) =>
      s.area === 'agent'
        ? s.imports.filter((i) => !i.typeOnly && i.target !== undefined && ['push', 'mcp'].includes(areaOf(i.target))).map((i) => i.spec)
        : [],
  ],
  [
    'agent/policy/ decides from settings alone: it imports neither the runtime nor request handling',
    (s) => (s.rel.startsWith('agent/policy/') ? internal(s).filter((m) => /^agent\/(runtime|requests)\//.test(m)) : []),
  ],
  [
    'agent/runtime/ runs tasks and never reaches into request handling',
    (s) => (s.rel.startsWith('agent/runtime/') ? internal(s).filter((m) => m.startsWith('agent/requests/')) : []),
  ],
  ['transport/ never imports agent/ or store/', (s) => (s.area === 'transport' ? inAreas(s, ['agent', 'store']) : [])],
  ['auth/ is a leaf (the lib/ helpers aside)', (s) => (s.area === 'auth' ? outsideAreas(s, ['lib']) : [])],
  ['push/ imports only protocol/ (and the lib/ leaves)', (s) => (s.area === 'push' ? outsideAreas(s, ['protocol', 'lib']) : [])],
  ['mcp/ imports only tools/ (and the lib/ leaves)', (s) => (s.area === 'mcp' ? outsideAreas(s, ['tools', 'lib']) : [])],
  ['only mcp/ imports the MCP SDK', (s) => (s.area !== 'mcp' ? packages(s, (p) => p.startsWith('@modelcontextprotocol/sdk')) : [])],
  ['metrics/ imports only lib/', (s) => (s.area === 'metrics' ? outsideAreas(s, ['lib']) : [])],
  ['only metrics/ imports prom-client', (s) => (s.area !== 'metrics' ? packages(s, (p) => /^prom-client(\/|$)/.test(p)) : [])],
  [
    'client/ runs in browsers: it imports only itself, eventsource-parser, protocol/extension.ts and lib/is-object.ts (no node:)',
    (s) =>
      s.area === 'client'
        ? [
            ...otherAreas(s).filter((m) => m !== 'protocol/extension' && m !== 'lib/is-object'),
            ...packages(s, (p) => p !== 'eventsource-parser'),
          ]
        : [],
  ],
  [
    'cli/ is a client of the server: it imports client/ and node:, nothing else of src/',
    (s) => (s.area === 'cli' ? outsideAreas(s, ['client']) : []),
  ],
  [
    'console/ is browser code: it reaches the server only through client/ (no node:, no other src/ folder)',
    (s) => (s.area === 'console' ? [...outsideAreas(s, ['client']), ...packages(s, (p) => p.startsWith('node:'))] : []),
  ],
  ['no server module imports console/ (the route serves it as files)', (s) => (s.area !== 'console' ? inAreas(s, ['console']) : [])],
  [
    'only main.ts imports app.ts (the one composition root), and nothing imports main.ts',
    (s) => internal(s).filter((m) => m === 'main' || (m === 'app' && s.rel !== 'main.ts')),
  ],
  ['only main.ts calls listen()', (s) => (s.rel !== 'main.ts' && /\.listen\(\{/.test(s.text) ? ['listen()'] : [])],
  [
    "a task's state changes only in agent/runtime/task-lifecycle.ts (the one writer, checked against its table)",
    (s) => (STATE_OWNERS.includes(s.rel) ? [] : s.stateWrites),
  ],
];

/** Every break of every rule in `sources`, as `rule: file → import`. */
export function violations(sources: readonly Source[]): Map<string, string[]> {
  return new Map(RULES.map(([name, check]) => [name, sources.flatMap((s) => check(s).map((bad) => `${s.rel} → ${bad}`))]));
}
