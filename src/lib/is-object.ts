/**
 * The one test for "a JSON object" (not null, not an array) that the server's parsers of
 * client- and operator-given JSON share. Browser code (client/, console/) keeps its own copy:
 * it is built and published without the server's folders.
 */
export function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
