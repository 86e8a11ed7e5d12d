/**
 * A tool call's paths are resolved and checked off the event loop: a path a model or a request
 * supplies must never hold the loop (a slow or hung file system would stall every task, and the
 * synchronous calls cost the main thread CPU under load). This rule reads the per-call code (the
 * tools, and the approval policy that judges every call: its shell lines, dir_path and edit
 * targets, and the write guard) with the TypeScript parser and fails on any call of a `…Sync`
 * function (fs.statSync, fs.realpathSync.native, and the code's own sync helpers, named `…Sync`
 * for this) outside the allow-list below, each entry with its reason. It is shown to fire on
 * planted violations.
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
  // The approval policy and its callers: asked for every call, its card, its grants and its write guard.
  'agent/policy/',
  'agent/runtime/call-lifecycle.ts',
  'agent/runtime/turn-loop.ts',
  'agent/requests/resume-handler.ts',
  'agent/requests/slash-commands.ts',
];

/**
 * `file: function → callee` that stay synchronous, with why. Each must still be found (a stale
 * entry fails too), so the list says exactly what is left.
 */
const ALLOWED: Record<string, string> = {
  'tools/workspace.ts: askSync → fs.realpathSync.native': 'the sync driver of the path steps: only for ProtectedPaths (startup, below)',
  'tools/workspace.ts: askSync → linkTargetSync': 'the same driver, following a dangling link',
  'tools/workspace.ts: linkTargetSync → fs.readlinkSync': 'the same driver, following a dangling link',
  'tools/workspace.ts: ProtectedPaths.constructor → askSync':
    "built once at startup (app.ts) from the server's configured paths, never from a tool argument",
  'tools/workspace.ts: ProtectedPaths.constructor → caseInsensitiveAtSync': 'the same: once per protected path, at startup',
  'tools/workspace.ts: caseInsensitiveAtSync → fs.statSync': 'only from the ProtectedPaths constructor (startup)',
  // Not per call but per message: a request's workspace_path is checked where its settings are
  // decoded (wire/rfc-decoder.ts, synchronous), once per message that names one. Left for a change
  // of the decoder; a workspace's own path, not a tool argument.
  'agent/policy/settings.ts: checkWorkspace → fs.statSync': "per message that names a workspace_path (the decoder's check), not per call",
  'agent/policy/settings.ts: checkWorkspace → fs.realpathSync':
    "per message that names a workspace_path (the decoder's check), not per call",
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

t.test('the approval policy is covered: its per-call files are read by the rule above', async (t) => {
  const scanned = tree.filter((f) => perCall(f.rel)).map((f) => f.rel);
  for (const rel of [
    'agent/policy/approval-policy.ts',
    'agent/policy/shell-rules.ts',
    'agent/policy/tool-config.ts',
    'agent/runtime/call-lifecycle.ts',
    'agent/requests/resume-handler.ts',
  ]) {
    t.ok(scanned.includes(rel), `${rel} is read`);
  }
});

t.test('workspace.ts keeps no sync resolver for tool arguments: nothing in src/ can resolve one on the loop', async (t) => {
  const workspace = tree.find((f) => f.rel === 'tools/workspace.ts')?.text ?? '';
  t.notMatch(workspace, /export function (resolveInWorkspaceSync|realWorkspaceSync)\b/, 'no exported sync resolver');
  const callers = tree.flatMap((f) => syncCalls(f.rel, f.text)).filter((c) => /→ (resolveInWorkspaceSync|realWorkspaceSync)$/.test(c));
  t.strictSame(callers, [], 'and no caller of one');
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
