/**
 * A tool call's paths are resolved and checked off the event loop: a path a model or a request
 * supplies must never hold the loop (a slow or hung file system would stall every task, and the
 * synchronous calls cost the main thread CPU under load). This rule reads the per-call tool code
 * with the TypeScript parser and fails on any call of a `…Sync` function (fs.statSync,
 * fs.realpathSync.native, and the code's own sync helpers, named `…Sync` for this) outside the
 * allow-list below, each entry with its reason. It is shown to fire on planted violations.
 */
import t from 'tap';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url));

/** The code every file or search tool call runs (src-relative; a folder covers its files). */
const PER_CALL = [
  'tools/workspace.ts',
  'tools/tool.ts',
  'tools/index.ts',
  'tools/diff.ts',
  'tools/file/',
  'tools/search/',
  'tools/shell/run-shell-command.ts',
];

/**
 * `file: function → callee` that stay synchronous, with why. Each must still be found (a stale
 * entry fails too), so the list says exactly what is left.
 */
const ALLOWED: Record<string, string> = {
  'tools/workspace.ts: askSync → fs.realpathSync.native':
    'the sync driver of the path steps: only for ProtectedPaths (startup) and the shell commandLine (entries below)',
  'tools/workspace.ts: askSync → linkTargetSync': 'the same driver, following a dangling link',
  'tools/workspace.ts: linkTargetSync → fs.readlinkSync': 'the same driver, following a dangling link',
  'tools/workspace.ts: ProtectedPaths.constructor → askSync':
    "built once at startup (app.ts) from the server's configured paths, never from a tool argument",
  'tools/workspace.ts: ProtectedPaths.constructor → caseInsensitiveAtSync': 'the same: once per protected path, at startup',
  'tools/workspace.ts: caseInsensitiveAtSync → fs.statSync': 'only from the ProtectedPaths constructor (startup)',
  'tools/workspace.ts: realWorkspaceSync → askSync': 'only for RunShellCommandTool.commandLine (below)',
  'tools/workspace.ts: resolveInWorkspaceSync → askSync': 'only for RunShellCommandTool.commandLine (below)',
  'tools/shell/run-shell-command.ts: RunShellCommandTool.commandLine → this.workingDirectorySync':
    'the approval policy (agent/policy) asks for the line synchronously, and judges its paths synchronously too: ' +
    'async once the policy is; propose and run resolve the directory off the loop',
  'tools/shell/run-shell-command.ts: RunShellCommandTool.workingDirectorySync → realWorkspaceSync': 'for commandLine only',
  'tools/shell/run-shell-command.ts: RunShellCommandTool.workingDirectorySync → resolveInWorkspaceSync': 'for commandLine only',
  'tools/shell/run-shell-command.ts: RunShellCommandTool.workingDirectorySync → fs.statSync': 'for commandLine only',
};

/** The name of the function, method or constructor around `node` (`Class.method`, `name`, or `(top level)`). */
function enclosing(node: ts.Node): string {
  for (let n: ts.Node | undefined = node.parent; n !== undefined; n = n.parent) {
    const owner = (m: ts.Node): string =>
      m.parent !== undefined && ts.isClassLike(m.parent) && m.parent.name ? `${m.parent.name.text}.` : '';
    if (ts.isConstructorDeclaration(n)) return `${owner(n)}constructor`;
    if ((ts.isMethodDeclaration(n) || ts.isGetAccessorDeclaration(n)) && ts.isIdentifier(n.name)) return `${owner(n)}${n.name.text}`;
    if (ts.isFunctionDeclaration(n) && n.name) return n.name.text;
    if ((ts.isArrowFunction(n) || ts.isFunctionExpression(n)) && ts.isVariableDeclaration(n.parent) && ts.isIdentifier(n.parent.name)) {
      return n.parent.name.text;
    }
  }
  return '(top level)';
}

/** Every call of a `…Sync` function in `text`, as `rel: function → callee` (`fs.statSync`, `askSync`). */
export function syncCalls(rel: string, text: string): string[] {
  const file = ts.createSourceFile(rel, text, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const out: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isCallExpression(node)) {
      const callee = node.expression.getText(file).replace(/\s+/g, '');
      // `fs.realpathSync.native(…)`, `statSync(…)`, `fs.promises.x` is not: the last name before `.native` decides.
      const name =
        callee
          .replace(/\.native$/, '')
          .split('.')
          .pop() ?? '';
      if (/Sync$/.test(name)) out.push(`${rel}: ${enclosing(node)} → ${callee}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return out;
}

function files(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? files(p) : /\.ts$/.test(e.name) ? [p] : [];
  });
}

const tree = files(SRC).map((f) => ({ rel: path.relative(SRC, f).split(path.sep).join('/'), text: readFileSync(f, 'utf8') }));
const perCall = (rel: string): boolean => PER_CALL.some((p) => (p.endsWith('/') ? rel.startsWith(p) : rel === p));

t.test('the per-call tool code calls no sync function beyond the allow-list, and every entry is still there', async (t) => {
  const scanned = tree.filter((f) => perCall(f.rel));
  t.ok(scanned.length >= 15, `reads the per-call tool code (${scanned.length} files)`);
  t.ok(
    scanned.some((f) => f.rel === 'tools/search/walk.ts'),
    'walk.ts is among them',
  );
  const found = [...new Set(scanned.flatMap((f) => syncCalls(f.rel, f.text)))];
  t.strictSame(
    found.filter((c) => !(c in ALLOWED)),
    [],
    'no sync call outside the allow-list',
  );
  t.strictSame(
    Object.keys(ALLOWED).filter((c) => !found.includes(c)),
    [],
    'no stale allow-list entry',
  );
});

t.test('the sync resolvers of workspace.ts are called only where the allow-list says, anywhere in src/', async (t) => {
  const callers = tree.flatMap((f) => syncCalls(f.rel, f.text)).filter((c) => /→ (resolveInWorkspaceSync|realWorkspaceSync)$/.test(c));
  t.strictSame(
    callers.filter((c) => !(c in ALLOWED)),
    [],
  );
  t.ok(callers.length >= 2, 'finds the allowed callers');
});

t.test('the rule fires on planted violations', async (t) => {
  const planted = `
    import fs, { statSync } from 'node:fs';
    export class WriteFileTool {
      async validate(p: string) { return statSync(p).isDirectory(); }
      commandLine(p: string) { return fs.realpathSync.native(p); }
    }
    const isDir = (p: string) => fs.existsSync(p);
    export function resolveHere(p: string) { return resolveInWorkspaceSync(p); }
    export async function fine(p: string) { return (await fs.promises.stat(p)).isFile(); }
  `;
  t.strictSame(syncCalls('tools/file/write-file.ts', planted), [
    'tools/file/write-file.ts: WriteFileTool.validate → statSync',
    'tools/file/write-file.ts: WriteFileTool.commandLine → fs.realpathSync.native',
    'tools/file/write-file.ts: isDir → fs.existsSync',
    'tools/file/write-file.ts: resolveHere → resolveInWorkspaceSync',
  ]);
  t.notOk('tools/file/write-file.ts: WriteFileTool.validate → statSync' in ALLOWED, 'and none of them is allowed');
});
