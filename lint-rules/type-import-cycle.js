/**
 * `local/type-import-cycle`: import cycles that exist only through type-only imports.
 *
 * `import-x/no-cycle` skips `import type` (and imports whose every specifier is `type`), so a
 * cycle such as live-task.ts → (type) turn-loop.ts → tool-runner.ts → (type) live-task.ts goes
 * unreported. Such a cycle costs nothing at run time but still ties the modules into one knot
 * (none of them can be understood, tested or moved without the others). This rule follows every
 * import, type-only ones included, and reports an import that closes a cycle which
 * `import-x/no-cycle` does not report, so the two rules never report the same import.
 *
 * The graph comes from the TypeScript program typescript-eslint already built (module
 * resolution is TypeScript's own, so `./x.js` finds `x.ts`); it is built once per program.
 */
import path from 'node:path';
import ts from 'typescript';

/** @typedef {{ target: string, typeOnly: boolean, statement: ts.Statement }} Edge */
/** @typedef {{ edges: Map<string, Edge[]>, reach: Map<string, Set<string>>, cache: ts.ModuleResolutionCache }} Graph */

/** @type {WeakMap<ts.Program, Graph>} */
const graphs = new WeakMap();

/** @param {ts.Program} program */
function graphOf(program) {
  let graph = graphs.get(program);
  if (!graph) {
    const cwd = program.getCurrentDirectory();
    const cache = ts.createModuleResolutionCache(cwd, (f) => f, program.getCompilerOptions());
    graph = { edges: new Map(), reach: new Map(), cache };
    graphs.set(program, graph);
  }
  return graph;
}

/** `import type …`, `export type … from`, or every named specifier marked `type`. */
function isTypeOnly(statement) {
  if (ts.isImportDeclaration(statement)) {
    const clause = statement.importClause;
    if (!clause) return false; // `import './x.js'` runs the module
    if (clause.isTypeOnly) return true;
    const named = clause.namedBindings;
    return !clause.name && !!named && ts.isNamedImports(named) && named.elements.length > 0 && named.elements.every((e) => e.isTypeOnly);
  }
  if (ts.isExportDeclaration(statement)) {
    if (statement.isTypeOnly) return true;
    const clause = statement.exportClause;
    return !!clause && ts.isNamedExports(clause) && clause.elements.length > 0 && clause.elements.every((e) => e.isTypeOnly);
  }
  return false;
}

/**
 * The project files a file imports (static `import`/`export … from`; packages are left out).
 * @param {ts.Program} program
 * @param {string} fileName
 * @returns {Edge[]}
 */
function edgesOf(program, fileName) {
  const graph = graphOf(program);
  const known = graph.edges.get(fileName);
  if (known) return known;
  /** @type {Edge[]} */
  const edges = [];
  graph.edges.set(fileName, edges);
  const sourceFile = program.getSourceFile(fileName);
  if (!sourceFile) return edges;
  const options = program.getCompilerOptions();
  for (const statement of sourceFile.statements) {
    if (!ts.isImportDeclaration(statement) && !ts.isExportDeclaration(statement)) continue;
    const specifier = statement.moduleSpecifier;
    if (!specifier || !ts.isStringLiteral(specifier)) continue;
    const mode = ts.getModeForUsageLocation(sourceFile, specifier, options);
    const { resolvedModule } = ts.resolveModuleName(specifier.text, fileName, options, ts.sys, graph.cache, undefined, mode);
    if (!resolvedModule || resolvedModule.isExternalLibraryImport || !program.getSourceFile(resolvedModule.resolvedFileName)) continue;
    edges.push({ target: resolvedModule.resolvedFileName, typeOnly: isTypeOnly(statement), statement });
  }
  return edges;
}

/**
 * A path of imports from `from` to `to` (file names, `from` excluded), or undefined.
 * @param {ts.Program} program
 * @param {boolean} valuesOnly follow only imports that survive compilation
 */
function pathBetween(program, from, to, valuesOnly) {
  /** @type {Map<string, string | null>} */
  const cameFrom = new Map([[from, null]]);
  const queue = [from];
  while (queue.length > 0) {
    const file = /** @type {string} */ (queue.shift());
    if (file === to) {
      const route = [];
      for (let at = file; at !== null && at !== from; at = /** @type {string | null} */ (cameFrom.get(at))) route.unshift(at);
      return route;
    }
    for (const edge of edgesOf(program, file)) {
      if ((valuesOnly && edge.typeOnly) || cameFrom.has(edge.target)) continue;
      cameFrom.set(edge.target, file);
      queue.push(edge.target);
    }
  }
  return undefined;
}

/**
 * Where a statement is, in ESLint's terms (1-based lines, 0-based columns).
 * @param {ts.Statement} statement
 */
function locOf(statement) {
  const sourceFile = statement.getSourceFile();
  const at = (/** @type {number} */ pos) => {
    const { line, character } = sourceFile.getLineAndCharacterOfPosition(pos);
    return { line: line + 1, column: character };
  };
  return { start: at(statement.getStart(sourceFile)), end: at(statement.getEnd()) };
}

/** @type {import('eslint').Rule.RuleModule} */
export default {
  meta: {
    type: 'problem',
    docs: { description: 'Forbid import cycles that import-x/no-cycle misses because they pass through type-only imports' },
    schema: [],
    messages: {
      cycle: 'Dependency cycle through type-only imports: {{route}}. Move the shared type to a module both can import.',
    },
  },
  create(context) {
    const program = context.sourceCode.parserServices?.program;
    if (!program) return {};
    const fileName = context.physicalFilename;
    const short = (/** @type {string} */ f) => path.relative(context.cwd, f);
    return {
      Program() {
        for (const edge of edgesOf(program, fileName)) {
          if (edge.target === fileName) continue;
          const route = pathBetween(program, edge.target, fileName, false);
          if (!route) continue;
          // A cycle made of value imports only is import-x/no-cycle's to report.
          if (!edge.typeOnly && pathBetween(program, edge.target, fileName, true)) continue;
          const files = [fileName, edge.target, ...route].map(short);
          context.report({ loc: locOf(edge.statement), messageId: 'cycle', data: { route: files.join(' → ') } });
        }
      },
    };
  },
};
