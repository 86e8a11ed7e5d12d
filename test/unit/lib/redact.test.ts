/**
 * The app's logger keeps secrets out of its lines: credential fields censored by path (request
 * headers, a push config's token and credentials), the process's own secrets (GEMINI_API_KEY,
 * the DATABASE_URL password) scrubbed by value wherever they turn up (an error message, a URL).
 */
import t from 'tap';
import Fastify from 'fastify';
import { defaultLogger } from '../../../src/app.js';
import { loadConfig } from '../../../src/config/load-config.js';
import { REDACTED, secretScrubber, urlPassword, withoutQueryParams } from '../../../src/lib/redact.js';
import { ownDir } from '../../support/own-dir.js';

t.test('the default logger censors credential fields and scrubs the config secrets by value', async (t) => {
  const dir = ownDir('redact-');
  const config = loadConfig(
    {
      WORKSPACE_DIR: dir,
      GEMINI_API_KEY: 'gemini-key-0123',
      DATABASE_URL: 'postgres://app:pa%3Ass-w0rd@db.internal:5432/agent',
      LOG_LEVEL: 'info',
    },
    dir,
  );
  const lines: string[] = [];
  const app = Fastify({ logger: defaultLogger(config, (line) => lines.push(line)) });
  t.teardown(() => app.close());
  app.log.info({ req: { headers: { authorization: 'Bearer abc.def.ghi', 'x-api-key': 'key-xyz-123456' } } }, 'a request');
  app.log.info({ config: { url: 'http://hook', token: 'push-token-1', authentication: { credentials: 'cred-1' } } }, 'push config');
  app.log.error({ err: new Error('connect ECONNREFUSED postgres://app:pa%3Ass-w0rd@db.internal:5432/agent') }, 'store down');
  app.log.warn({ detail: 'sent x-goog-api-key: gemini-key-0123 and pa:ss-w0rd' }, 'model');
  const out = lines.join('');
  for (const secret of ['abc.def.ghi', 'key-xyz-123456', 'push-token-1', 'cred-1', 'gemini-key-0123', 'pa%3Ass-w0rd', 'pa:ss-w0rd']) {
    t.notOk(out.includes(secret), `${secret} is not in the log`);
  }
  t.equal(lines.length, 4, 'every line still written');
  for (const line of lines) t.match(JSON.parse(line), { level: Number, time: Number });
  t.ok(out.includes(REDACTED), 'what was removed is marked');
  t.ok(out.includes('db.internal:5432/agent'), 'the rest of a URL stays (the host helps an operator)');
});

t.test('secretScrubber', async (t) => {
  const scrub = secretScrubber(['s3cr3t-value', 'short', undefined, 'with "quote"']);
  t.equal(scrub('a s3cr3t-value b s3cr3t-value'), `a ${REDACTED} b ${REDACTED}`, 'every occurrence');
  t.equal(scrub(encodeURIComponent('x s3cr3t-value')), `x%20${REDACTED}`, 'URL-encoded too');
  t.equal(scrub(JSON.stringify({ v: 'with "quote"' })), `{"v":"${REDACTED}"}`, 'as escaped in JSON');
  t.equal(scrub('short stays'), 'short stays', 'secrets under 6 characters are not scrubbed (they match ordinary words)');
  t.equal(secretScrubber([])('anything'), 'anything');
  t.same(urlPassword('postgres://u:p%40ss@h/d'), ['p%40ss', 'p@ss']);
  t.same(urlPassword('postgres://u@h/d'), []);
  t.same(urlPassword('not a url'), []);
  t.same(urlPassword(undefined), []);
});

t.test("withoutQueryParams: a failed query's parameters leave the log line; the line stays JSON", async (t) => {
  const err = new Error('Failed query: select devtool_commit($1::jsonb) as r\nparams: {"content":"API_KEY=\\"s3cret\\"","n":1}');
  const line = JSON.stringify({ level: 50, err: { message: err.message, stack: `Error: ${err.message}\n    at x` }, msg: 'write failed' });
  const out = withoutQueryParams(line);
  t.notMatch(out, /s3cret/, 'the values are gone');
  t.match(out, /Failed query: select devtool_commit/, 'the statement stays');
  const parsed = JSON.parse(out) as { err: { message: string; stack: string } };
  t.equal(parsed.err.message, 'Failed query: select devtool_commit($1::jsonb) as r\nparams: [REDACTED]');
  t.equal(
    parsed.err.stack,
    'Error: Failed query: select devtool_commit($1::jsonb) as r\nparams: [REDACTED]\n    at x',
    'the stack keeps its frames',
  );
  t.equal(withoutQueryParams('{"msg":"plain"}'), '{"msg":"plain"}');
});
