/**
 * The server's own files end to end, in the set-up of the security finding: the server runs in
 * the directory that holds its auth file and data directory, and a conversation that names no
 * workspace gets that directory (WORKSPACE_DIR). No tool call reaches those files, whoever asks:
 * - a viewer's `read_file auth.json` runs (reads need no approval) and FAILS `path_protected`;
 *   no key appears anywhere in the stream, nor in the stored task;
 * - every other spelling (./, .., absolute, symlinks to the file, to the data dir, through a
 *   symlinked parent) fails the same way;
 * - listings, globs and searches leave the files out without a word;
 * - a write to them fails before anyone is asked (no confirmation request);
 * - without AUTH_CONFIG the same holds for DATA_DIR and SETTINGS_FILE.
 */
import t from 'tap';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfig } from '../../src/config/load-config.js';
import { rpc } from '../support/sse.js';
import type { PostResult } from '../support/sse.js';
import { dataOf, devtool, startServer, tempDir, textOf, userMessage } from '../support/server.js';
import type { TestServer } from '../support/server.js';
import type { Test } from '../support/tool-call-watch.js';
import { LISTING_CALLS, namedCalls, protectedFilesScript } from '../fixtures/protected-files-script.js';

const KEYS = {
  alice: 'approver-key-0123456789abcdef',
  vic: 'viewer-key-0123456789abcdef-x',
  root: 'admin-key-0123456789abcdef-yz',
} as const;
type Who = keyof typeof KEYS;
const DATA_SECRET = 'pglite-page-SECRET-row';
const SETTINGS_SECRET = 'settings-TOKEN-0123456789';
const SECRETS = [...Object.values(KEYS), DATA_SECRET, SETTINGS_SECRET];
/** Names that must not show up in a listing or a search result. */
const PROTECTED_NAMES = /auth\.json|settings\.json|\.data|store\.db|auth-link|data-link/;

/** The server's directory: its auth file, settings file and data directory, a little source, and symlinks into them. */
function serverDir(): string {
  const dir = tempDir('devtool-srv-');
  writeFileSync(
    path.join(dir, 'auth.json'),
    JSON.stringify({
      api_keys: [
        { key: KEYS.alice, principal: 'alice', roles: ['approver'] },
        { key: KEYS.vic, principal: 'vic', roles: ['viewer'] },
        { key: KEYS.root, principal: 'root', roles: ['admin'] },
      ],
    }),
  );
  writeFileSync(path.join(dir, 'settings.json'), JSON.stringify({ apiToken: SETTINGS_SECRET }));
  mkdirSync(path.join(dir, '.data'));
  writeFileSync(path.join(dir, '.data', 'store.db'), `${DATA_SECRET}\n`);
  mkdirSync(path.join(dir, 'src'));
  writeFileSync(path.join(dir, 'src', 'main.ts'), 'export const main = 1;\n');
  writeFileSync(path.join(dir, 'package.json'), '{ "name": "devtool" }\n');
  symlinkSync('auth.json', path.join(dir, 'auth-link'));
  symlinkSync('.data', path.join(dir, 'data-link'));
  symlinkSync('.', path.join(dir, 'here'));
  return dir;
}

async function server(t: Test, dir: string, auth: boolean): Promise<TestServer> {
  const env: Record<string, string> = {
    WORKSPACE_DIR: dir,
    DATA_DIR: path.join(dir, '.data'),
    SETTINGS_FILE: path.join(dir, 'settings.json'),
  };
  if (auth) env.AUTH_CONFIG = path.join(dir, 'auth.json');
  return startServer(t, { env, script: protectedFilesScript(dir) });
}

const results = (res: PostResult) => (res.events ?? []).map((e) => e.data.result);

async function send(srv: TestServer, who: Who | undefined, text: string): Promise<PostResult> {
  const headers: Record<string, string> = who === undefined ? {} : { authorization: `Bearer ${KEYS[who]}` };
  return rpc(srv.url, 'message/stream', { message: userMessage(text) }, { headers });
}

/** The final card of each tool call in a stream, in order of appearance. */
function finalCards(ev: any[]): any[] {
  const last = new Map<string, any>();
  for (const d of ev.map(dataOf)) if (d?.tool_call_id) last.set(d.tool_call_id, d);
  return [...last.values()];
}

function noSecrets(t: Test, raw: string, what: string, content = true): void {
  for (const s of SECRETS) t.notMatch(raw, s, `${what}: ${s.slice(0, 12)}… appears nowhere`);
  if (content) t.notMatch(raw, /api_keys|principal/, `${what}: nothing of the auth file's content`);
}

t.test('the config names the server files, and app.ts hands them to the tools', async (t) => {
  const dir = serverDir();
  const config = loadConfig(
    { WORKSPACE_DIR: dir, DATA_DIR: '.data', AUTH_CONFIG: 'auth.json', SETTINGS_FILE: 'settings.json', EXTENSIONS_DIR: 'off' },
    dir,
  );
  t.same(config.serverFiles, [path.join(dir, '.data'), path.join(dir, 'auth.json'), path.join(dir, 'settings.json')]);
  const creds = loadConfig({ WORKSPACE_DIR: dir, GOOGLE_APPLICATION_CREDENTIALS: 'gac.json', HOME: '/home/u' }, dir);
  t.same(
    creds.serverFiles,
    [path.join(dir, '.data'), '/home/u/.gemini/extensions', path.join(dir, 'gac.json')],
    'default DATA_DIR and EXTENSIONS_DIR, and the Google credentials file',
  );
  const vertex = loadConfig({ WORKSPACE_DIR: dir, GOOGLE_GENAI_USE_VERTEXAI: 'true', GOOGLE_CLOUD_PROJECT: 'p', HOME: '/home/u' }, dir);
  t.same(
    vertex.serverFiles,
    [path.join(dir, '.data'), '/home/u/.gemini/extensions', '/home/u/.config/gcloud/application_default_credentials.json'],
    'with Vertex AI: ADC',
  );
});

t.test('with AUTH_CONFIG in the workspace (WORKSPACE_DIR = the server directory)', async (t) => {
  const dir = serverDir();
  const authBefore = readFileSync(path.join(dir, 'auth.json'), 'utf8');
  const srv = await server(t, dir, true);

  await t.test("a viewer's read_file auth.json runs without approval and FAILS path_protected; no key in the stream", async (t) => {
    const res = await send(srv, 'vic', 'steal auth');
    t.equal(res.status, 200);
    const ev = results(res);
    t.same(
      ev.map((r) => [r.kind, devtool(r)?.kind ?? null, dataOf(r)?.status ?? r.status.state]),
      [
        ['task', null, 'submitted'],
        ['status-update', 'STATE_CHANGE', 'working'],
        ['status-update', 'TOOL_CALL_UPDATE', 'PENDING'],
        ['status-update', 'TOOL_CALL_UPDATE', 'EXECUTING'],
        ['status-update', 'TOOL_CALL_UPDATE', 'FAILED'],
        ['status-update', 'TEXT_CONTENT', 'working'],
        ['status-update', 'STATE_CHANGE', 'completed'],
      ],
      'a read: nobody is asked, and it fails',
    );
    const failed = dataOf(ev[4]);
    t.equal(failed.tool_name, 'read_file');
    t.same(failed.error, {
      type: 'path_protected',
      message: `file_path "auth.json" is one of this server's own files (its data, keys or settings); no tool may read, list, search or change them`,
    });
    t.notOk('output' in failed, 'no output');
    t.match(textOf(ev[4]), /^read_file failed: file_path "auth\.json" is one of this server's own files/);
    t.equal(textOf(ev[5]), 'Could not read it.');
    noSecrets(t, res.raw, 'the stream');
    const stored = await rpc(
      srv.url,
      'tasks/get',
      { id: ev[0].id, historyLength: 100 },
      { headers: { authorization: `Bearer ${KEYS.vic}` } },
    );
    t.equal(stored.json?.result?.status?.state, 'completed');
    noSecrets(t, stored.raw, 'the stored task');
  });

  await t.test('every other spelling of a protected path fails path_protected', async (t) => {
    const res = await send(srv, 'vic', 'steal named');
    const ev = results(res);
    const cards = finalCards(ev);
    const expected = namedCalls(dir);
    t.equal(cards.length, expected.length, 'one card per call');
    for (const [i, [name, args]] of expected.entries()) {
      t.match(cards[i], { tool_name: name, status: 'FAILED', error: { type: 'path_protected' } }, `${name} ${JSON.stringify(args)}`);
    }
    t.equal(ev.at(-1)?.status?.state, 'completed');
    noSecrets(t, res.raw, 'the stream');
  });

  await t.test('listings, globs and searches leave the protected files out', async (t) => {
    const res = await send(srv, 'vic', 'steal listed');
    const ev = results(res);
    const cards = finalCards(ev);
    t.equal(cards.length, LISTING_CALLS.length);
    for (const [i, [name, args]] of LISTING_CALLS.entries()) {
      const card = cards[i];
      const what = `${name} ${JSON.stringify(args)}`;
      t.match(card, { tool_name: name, status: 'SUCCEEDED' }, what);
      t.notMatch(card.output?.text ?? '', PROTECTED_NAMES, `${what}: no protected name`);
    }
    t.match(cards[0].output.text, /^Directory listing for \.:\nhere\/\nsrc\/\npackage\.json$/);
    t.match(cards[4].output.text, /^No matches found for pattern "approver-key"/, 'a string only the auth file holds is not found');
    t.match(cards[6].output.text, /package\.json[\s\S]*src\/main\.ts/, 'the other files are read');
    noSecrets(t, res.raw, 'the stream');
  });

  await t.test('writes to them fail at proposal: nobody is asked, nothing is written', async (t) => {
    const res = await send(srv, 'alice', 'steal write');
    const ev = results(res);
    t.notOk(
      ev.some((r) => r.status?.state === 'input-required'),
      'no input-required',
    );
    t.notOk(
      ev.some((r) => dataOf(r)?.confirmation_request),
      'no confirmation request',
    );
    const cards = finalCards(ev);
    t.same(
      cards.map((c) => [c.tool_name, c.status, c.error?.type]),
      [
        ['write_file', 'FAILED', 'path_protected'],
        ['replace', 'FAILED', 'path_protected'],
        ['write_file', 'FAILED', 'path_protected'],
      ],
    );
    t.equal(ev.at(-1)?.status?.state, 'completed');
    t.equal(readFileSync(path.join(dir, 'auth.json'), 'utf8'), authBefore, 'the auth file is unchanged');
    noSecrets(t, res.raw, 'the stream', false); // the model's own write content names api_keys
  });
});

t.test('without authentication the data dir and the settings file are protected too', async (t) => {
  const dir = serverDir();
  const srv = await server(t, dir, false);
  const res = await send(srv, undefined, 'steal named');
  const cards = finalCards(results(res));
  const calls = namedCalls(dir);
  t.equal(cards.length, calls.length);
  for (const [i, [name, args]] of calls.entries()) {
    // No AUTH_CONFIG: an auth.json lying in the workspace is not the server's.
    if (!/\.data|data-link|settings\.json/.test(JSON.stringify(args))) continue;
    t.match(cards[i], { tool_name: name, status: 'FAILED', error: { type: 'path_protected' } }, `${name} ${JSON.stringify(args)}`);
  }
  t.notMatch(res.raw, DATA_SECRET);
  t.notMatch(res.raw, SETTINGS_SECRET);
  const listed = finalCards(results(await send(srv, undefined, 'steal listed')));
  for (const card of listed)
    t.notMatch(card.output?.text ?? '', /settings\.json|\.data|store\.db|data-link/, `${card.tool_name}: left out`);
});
