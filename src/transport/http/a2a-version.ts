/**
 * The A2A version a request speaks (specification §3.6): the `A2A-Version` header, or the
 * `A2A-Version` query parameter a client may send instead (§3.6.1). `Major.Minor` counts and a
 * patch is ignored (`1.0.2` is 1.0); an empty value means 0.3 (§3.6.2: "Agents MUST interpret
 * empty value as 0.3 version"). Each binding then refuses a version its interface does not speak.
 */
import type { FastifyRequest } from 'fastify';
import type { A2aVersion } from '../../protocol/a2a.js';

export type RequestedVersion = { version: A2aVersion } | { unsupported: string };

const first = (v: unknown): string | undefined => {
  const one: unknown = Array.isArray(v) ? v[0] : v;
  return typeof one === 'string' ? one.trim() : undefined;
};

export function requestedVersion(request: FastifyRequest): RequestedVersion {
  const header = first(request.headers['a2a-version']);
  const query = first((request.query as Record<string, unknown> | undefined)?.['A2A-Version']);
  const value = header || query || '';
  if (value === '') return { version: '0.3' };
  const m = /^(\d{1,4})(?:\.(\d{1,4}))?(?:\.\d{1,4})?$/.exec(value);
  const majorMinor = m ? `${Number(m[1])}.${Number(m[2] ?? 0)}` : '';
  if (majorMinor === '0.3' || majorMinor === '1.0') return { version: majorMinor };
  return { unsupported: value };
}
