/**
 * The A2A version a request speaks (specification §3.6): the `A2A-Version` header, or the
 * `A2A-Version` query parameter a client may send instead (§3.6.1). `Major.Minor` counts, a
 * patch is ignored; an empty value means 0.3 (§3.6.2: "Agents MUST interpret empty value as
 * 0.3 version"). Each binding then refuses a version its interface does not speak.
 */
import type { FastifyRequest } from 'fastify';
import type { A2aVersion } from '../../protocol/a2a.js';

export type RequestedVersion = { version: A2aVersion } | { unsupported: string };

const NAMES: Readonly<Record<string, A2aVersion>> = { '0.3': '0.3', '0.3.0': '0.3', '1': '1.0', '1.0': '1.0', '1.0.0': '1.0' };

export function requestedVersion(request: FastifyRequest): RequestedVersion {
  const header = request.headers['a2a-version'];
  const query = (request.query as Record<string, unknown> | undefined)?.['A2A-Version'];
  const raw = (Array.isArray(header) ? header[0] : header) ?? (typeof query === 'string' ? query : undefined);
  const value = raw?.trim() ?? '';
  const version = value === '' ? '0.3' : NAMES[value];
  return version === undefined ? { unsupported: value } : { version };
}
