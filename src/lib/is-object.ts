/**
 * The one test for "a JSON object" (not null, not an array) that the parsers of client- and
 * operator-given JSON share, the browser client's included: client/ may import this file (it
 * uses no Node API), and the client's build emits it beside protocol/extension.ts.
 */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
