/**
 * The web console: `GET /` is its page (JSON-RPC stays at `POST /`), `GET /console/<file>` its
 * script and style sheet. The page holds no data — it reads everything over JSON-RPC with the
 * caller's own credentials — so these routes are public like the agent card; the Host/Origin
 * guard (a root hook) covers them as every route.
 *
 * Everything the console shows comes from the model or a tool and is untrusted, so the page is
 * locked down: a Content-Security-Policy that allows only this origin's script and style (no
 * inline script or style, no eval, no plugins), no framing, no <base>, no form posts elsewhere.
 */
import { fileURLToPath } from 'node:url';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { loadConsole } from './console-assets.js';
import type { ConsoleAsset, ConsoleAssets } from './console-assets.js';

export interface ConsoleRoutesOptions {
  /**
   * Where the console's files come from (default: `../../console/` beside this module, i.e.
   * dist/console/ in a build, src/console/ bundled in memory when run from the sources).
   */
  load?: () => Promise<ConsoleAssets | undefined>;
}

/** The Content-Security-Policy of every console response. */
export const CONSOLE_CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "connect-src 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const DEFAULT_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

function securityHeaders(reply: FastifyReply): FastifyReply {
  return reply
    .header('content-security-policy', CONSOLE_CSP)
    .header('x-content-type-options', 'nosniff')
    .header('x-frame-options', 'DENY')
    .header('referrer-policy', 'no-referrer')
    .header('cross-origin-opener-policy', 'same-origin')
    .header('cross-origin-resource-policy', 'same-origin');
}

/** Sends one file: revalidated on every load (`no-cache` + ETag), so a rebuilt console is picked up at once. */
function sendAsset(request: FastifyRequest, reply: FastifyReply, file: ConsoleAsset): FastifyReply {
  void securityHeaders(reply).header('cache-control', 'no-cache').header('etag', file.etag);
  const inm = request.headers['if-none-match'];
  if (inm !== undefined && inm.split(',').some((t) => t.trim() === file.etag)) return reply.code(304).send();
  return reply.type(file.type).send(file.body);
}

export async function consoleRoutes(app: FastifyInstance, opts: ConsoleRoutesOptions): Promise<void> {
  const load = opts.load ?? (() => loadConsole(DEFAULT_DIR));
  let loading: Promise<ConsoleAssets | undefined> | undefined;
  /** Loads (or bundles) once; a failed attempt is retried by the next request. */
  const assets = async (): Promise<ConsoleAssets | undefined> => {
    loading ??= load();
    try {
      return await loading;
    } catch (err) {
      loading = undefined;
      throw err;
    }
  };
  const serve = async (request: FastifyRequest, reply: FastifyReply, name: string) => {
    let files: ConsoleAssets | undefined;
    try {
      files = await assets();
    } catch (err) {
      request.log.error({ err }, 'the web console could not be bundled');
      return securityHeaders(reply)
        .code(500)
        .type('text/plain; charset=utf-8')
        .send('The web console could not be built; see the server log.');
    }
    const file = files?.get(name);
    if (file === undefined) {
      const why = files === undefined ? 'The web console is not built (run `npm run build`).' : 'No such file.';
      return securityHeaders(reply).code(404).type('text/plain; charset=utf-8').send(why);
    }
    return sendAsset(request, reply, file);
  };
  app.get('/', (request, reply) => serve(request, reply, 'index.html'));
  // A name looked up among the bundle's files: never a path on disk.
  app.get<{ Params: { file: string } }>('/console/:file', (request, reply) => serve(request, reply, request.params.file));
}
