/**
 * `local/max-lines-per-named-function`: ESLint's `max-lines-per-function`, same options, except that
 * a function written inline as an argument of a call (`t.test('…', async (t) => { … })`,
 * `new Promise((resolve) => …)`, `.map((x) => …)`) is not measured on its own.
 *
 * Meant for tests: a tap test body is such a callback and is as long as its scenario. Named
 * functions (declarations, `const helper = () => …`, methods) keep the limit, and so does a
 * function that holds long callbacks, since their lines are its lines.
 */
import { builtinRules } from 'eslint/use-at-your-own-risk';

const base = /** @type {import('eslint').Rule.RuleModule} */ (builtinRules.get('max-lines-per-function'));

/** @param {import('estree').Node & { parent?: import('estree').Node }} node */
function isInlineCallback(node) {
  const parent = node.parent;
  return (
    (node.type === 'ArrowFunctionExpression' || node.type === 'FunctionExpression') &&
    (parent?.type === 'CallExpression' || parent?.type === 'NewExpression') &&
    parent.arguments.includes(/** @type {never} */ (node))
  );
}

/** @type {import('eslint').Rule.RuleModule} */
export default {
  meta: { ...base.meta, docs: { description: 'max-lines-per-function, not counting inline callbacks on their own' } },
  create(context) {
    const filtered = Object.create(context, {
      report: {
        value: (/** @type {import('eslint').Rule.ReportDescriptor & { node?: never }} */ descriptor) => {
          if (descriptor.node && isInlineCallback(descriptor.node)) return;
          context.report(descriptor);
        },
      },
    });
    return /** @type {NonNullable<typeof base.create>} */ (base.create)(filtered);
  },
};
