/** What both HTTP+JSON bindings (v1.0 and v0.3) read the same way: task path segments and integer query parameters. */
import { invalidParams } from '../../protocol/errors.js';

/** A non-negative integer query parameter (historyLength, pageSize), or undefined when absent. */
export function intQuery(query: Record<string, unknown>, name: string, min = 0, max = Number.MAX_SAFE_INTEGER): number | undefined {
  const raw = query[name];
  if (raw === undefined || raw === '') return undefined;
  if (typeof raw !== 'string') throw invalidParams(`${name} must be given once`);
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n < min || n > max)
    throw invalidParams(`${name} must be an integer from ${min} to ${max}, got "${raw}"`);
  return n;
}

/** `/tasks/{id}`, `/tasks/{id}:cancel`, `/tasks/{id}:subscribe`: one path segment, split at its last colon. */
export function taskTarget(segment: string): { id: string; action: string } {
  const colon = segment.lastIndexOf(':');
  return colon < 0 ? { id: segment, action: '' } : { id: segment.slice(0, colon), action: segment.slice(colon + 1) };
}
