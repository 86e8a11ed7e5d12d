// ESLint flat config: typescript-eslint's type-checked rules over src/, test/ and scripts/.
//
// Base: @eslint/js recommended + typescript-eslint recommendedTypeChecked, then the rules below, then
// eslint-config-prettier last so that no rule argues with Prettier about layout.
// Types come from the nearest tsconfig.json (projectService): src/tsconfig.json for src/ (which adds
// noUncheckedIndexedAccess), the root tsconfig.json for test/ and scripts/.
import js from '@eslint/js';
import { defineConfig, globalIgnores } from 'eslint/config';
import prettier from 'eslint-config-prettier/flat';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';
import local from './lint-rules/index.js';

const maxLines = { max: 80, skipBlankLines: true, skipComments: true };

export default defineConfig(
  globalIgnores(['dist/', 'coverage/', '.tap/', 'node_modules/', 'drizzle/', '.data/']),

  js.configs.recommended,

  {
    files: ['**/*.ts', '**/*.tsx'],
    extends: [tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    plugins: { 'import-x': importX, local },
    settings: {
      // import-x reads the imports of every module it reaches: let it parse .ts files, and resolve
      // `./x.js` specifiers to `x.ts` the way tsc does.
      'import-x/extensions': ['.ts', '.tsx', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts', '.tsx'] },
      'import-x/resolver-next': [
        createTypeScriptImportResolver({ project: ['./tsconfig.json', './src/console/tsconfig.json'], noWarnOnMultipleProjects: true }),
      ],
    },
    rules: {
      // A promise nobody awaits loses its rejection (an unhandled rejection kills the process) and
      // its ordering; a promise handed where a void callback is expected (an event handler, a
      // Fastify hook that does not await it) does the same. Both already in the preset; kept explicit.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',

      // Import cycles between runtime imports (import-x), and the ones import-x cannot see because
      // a type-only import closes them (local/type-import-cycle; see lint-rules/type-import-cycle.js).
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'local/type-import-cycle': 'error',

      'max-lines-per-function': ['error', maxLines],

      // Off: the code implements Promise-returning ports (TaskStore, PushStore, Tool.propose, the
      // SDK's request handler, Fastify plugins) with `async` methods that happen not to await.
      // `async` is the right tool there: a throw becomes a rejection, as the port promises. The
      // rule's fix (`return Promise.resolve(x)` in a plain function) lets a throw escape synchronously.
      '@typescript-eslint/require-await': 'off',

      // Unused bindings are tsc's job here (noUnusedLocals, noUnusedParameters): one source of truth,
      // and tsc already honours the `_name` convention for parameters.
      '@typescript-eslint/no-unused-vars': 'off',
    },
  },

  {
    files: ['test/**/*.ts'],
    rules: {
      // tap runs `t.test(...)` subtests itself, in order, and waits for them before the parent ends;
      // the returned promise is there for those who want it. Every other promise must be handled.
      '@typescript-eslint/no-floating-promises': [
        'error',
        { allowForKnownSafeCalls: [{ from: 'package', package: '@tapjs/test', name: ['test', 'todo', 'skip', 'only'] }] },
      ],

      // Off in tests: tests read JSON-RPC responses, SSE frames and webhook bodies (`res.json()`,
      // `JSON.parse`, which are `any`) and assert on them field by field; the assertion is the
      // check, and typing every response shape first would only restate what the test asserts.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',

      // A tap test body is a callback as long as its scenario; named helpers keep the limit (and so
      // does a named function that holds long test callbacks). See lint-rules/max-lines-per-named-function.js.
      'max-lines-per-function': 'off',
      'local/max-lines-per-named-function': ['error', maxLines],
    },
  },

  {
    // Plain Node.js scripts (scripts/start.mjs runs before anything is built or loaded).
    files: ['scripts/**/*.mjs'],
    languageOptions: { globals: { process: 'readonly', URL: 'readonly' } },
  },

  prettier,
);
