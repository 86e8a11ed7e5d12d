/** The project's own ESLint rules, used by eslint.config.js as the `local` plugin. */
import maxLinesPerNamedFunction from './max-lines-per-named-function.js';
import typeImportCycle from './type-import-cycle.js';

export default {
  meta: { name: 'local' },
  rules: {
    'max-lines-per-named-function': maxLinesPerNamedFunction,
    'type-import-cycle': typeImportCycle,
  },
};
