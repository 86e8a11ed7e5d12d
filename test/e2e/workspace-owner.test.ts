/**
 * Workspaces belong to principals (AUTH_CONFIG, WORKSPACE_SHARING=owner, the default): the
 * principal that first opens a context on a directory owns it. Another principal — a viewer
 * reading secrets, an approver planting GEMINI.md — is refused (-32010, HTTP 403 on the REST
 * routes) when it names that directory, one inside it or one containing it, whichever route
 * opens the context (message/stream, command/execute, legacy POST /tasks); the refusal names
 * WORKSPACE_SHARING. The default workspace (WORKSPACE_DIR) stays everyone's, so no directory
 * overlapping it can be owned. WORKSPACE_SHARING=shared, and no authentication, keep every
 * workspace open.
 */
import t from 'tap';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { loadConfig } from '../../src/config/load-config.js';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import { rpc } from '../support/sse.js';
import { startServer, tempDir, URI, userMessage } from '../support/server.js';
import type { TestServer } from '../support/server.js';

const KEYS = {
  alice: 'alice-key-0123456789abcdef',
  bob: 'bob-key-0123456789abcdef-x',
  vic: 'vic-key-0123456789abcdef-xy',
} as const;
type Who = keyof typeof KEYS;
const SECRET = 'ALICE-SECRET-0123456789';
const FORBIDDEN = -32010;

const SCRIPT: ModelScript = {
  model: 'scripted-owner',
  scripts: [
    {
      when: '^read env',
      steps: [{ chunks: [[{ functionCall: { name: 'read_file', args: { file_path: '.env' } } }]] }, { chunks: [[{ text: 'Read it.' }]] }],
    },
    { when: '', steps: [{ chunks: [[{ text: 'Hello.' }]] }] },
  ],
};

/** WORKSPACE_ROOTS beside the default workspace, with alice's directory (holding her .env) and an empty one. */
function roots(): { root: string; alice: string } {
  const root = tempDir('devtool-roots-');
  const alice = path.join(root, 'alice');
  mkdirSync(path.join(alice, 'sub'), { recursive: true });
  writeFileSync(path.join(alice, '.env'), `TOKEN=${SECRET}\n`);
  return { root, alice };
}

async function server(
  t: Parameters<typeof startServer>[0],
  env: Record<string, string>,
  auth = true,
  store = new MemoryTaskStore(),
): Promise<TestServer> {
  const env2 = { ...env };
  if (auth) {
    const file = path.join(tempDir('devtool-auth-'), 'auth.json');
    writeFileSync(
      file,
      JSON.stringify({
        api_keys: [
          { key: KEYS.alice, principal: 'alice', roles: ['approver'] },
          { key: KEYS.bob, principal: 'bob', roles: ['approver'] },
          { key: KEYS.vic, principal: 'vic', roles: ['viewer'] },
        ],
      }),
    );
    env2.AUTH_CONFIG = file;
  }
  return startServer(t, { script: SCRIPT, env: env2, app: { store } });
}

const headers = (who: Who) => ({ authorization: `Bearer ${KEYS[who]}` });

/** `who` sends `text` in a new context on `workspace`; the events' results, or the error. */
async function send(srv: TestServer, who: Who, text: string, workspace?: string) {
  const extra = workspace === undefined ? {} : { metadata: { [URI]: { workspace_path: workspace } } };
  const res = await rpc(srv.url, 'message/stream', { message: userMessage(text, extra) }, { headers: headers(who) });
  return { error: res.json?.error as { code: number; message: string } | undefined, results: (res.events ?? []).map((e) => e.data.result) };
}

const outputs = (results: any[]) => results.map((r) => JSON.stringify(r)).join('\n');

t.test("another principal cannot open alice's workspace, a directory inside it or one containing it", async (t) => {
  const { root, alice } = roots();
  const srv = await server(t, { WORKSPACE_ROOTS: root });
  const own = await send(srv, 'alice', 'read env', alice);
  t.equal(own.error, undefined, 'alice opens her directory first: it is hers');
  t.match(outputs(own.results), SECRET, 'and reads her own file');

  for (const [who, dir, what] of [
    ['vic', alice, 'the same directory'],
    ['bob', alice, 'the same directory'],
    ['vic', path.join(alice, 'sub'), 'a directory inside it'],
    ['bob', root, 'a directory containing it'],
  ] as const) {
    const res = await send(srv, who, 'read env', dir);
    t.equal(res.error?.code, FORBIDDEN, `${who}, ${what} → -32010`);
    t.match(
      res.error?.message,
      /belongs to another principal.*WORKSPACE_SHARING=owner.*WORKSPACE_SHARING=shared/,
      'the refusal names the setting',
    );
    t.notMatch(outputs(res.results), SECRET, 'nothing was read');
  }

  const link = path.join(root, 'link-to-alice');
  symlinkSync(alice, link);
  const viaLink = await send(srv, 'vic', 'read env', link);
  t.equal(viaLink.error?.code, FORBIDDEN, 'a symbolic link to her directory is her directory (the real path is claimed)');
  t.notMatch(outputs(viaLink.results), SECRET, 'nothing was read through the link');

  const sub = await send(srv, 'alice', 'hello', path.join(alice, 'sub'));
  t.equal(sub.error, undefined, 'alice may open a directory inside her own');
  const shared = await send(srv, 'vic', 'hello');
  t.equal(shared.error, undefined, 'the default workspace is everyone’s');

  const cmd = await rpc(
    srv.url,
    'command/execute',
    { command_path: ['memory', 'add'], args: 'planted', metadata: { [URI]: { workspace_path: alice } } },
    { headers: headers('bob') },
  );
  t.equal(cmd.json?.error?.code, FORBIDDEN, 'command/execute (/memory add: GEMINI.md) in her workspace → -32010');
  const legacy = await fetch(new URL('/tasks', srv.url), {
    method: 'POST',
    headers: { ...headers('bob'), 'content-type': 'application/json' },
    body: JSON.stringify({ agentSettings: { kind: 'agent-settings', workspacePath: alice } }),
  });
  t.equal(legacy.status, 403, 'legacy POST /tasks in her workspace → 403');
  t.match(((await legacy.json()) as { error: string }).error, /WORKSPACE_SHARING/);
});

t.test('the default workspace is shared, so no directory overlapping it can be owned', async (t) => {
  const srv = await server(t, {});
  const inner = path.join(srv.workspace, 'mine');
  mkdirSync(inner);
  const res = await send(srv, 'alice', 'hello', inner);
  t.equal(res.error?.code, FORBIDDEN, 'a directory inside WORKSPACE_DIR → -32010');
  t.match(res.error?.message, /lies inside the default workspace .* \(WORKSPACE_DIR\), which every principal shares/);
  t.equal((await send(srv, 'bob', 'hello', srv.workspace)).error, undefined, 'naming the default workspace itself: shared');
});

t.test('WORKSPACE_SHARING=shared, and no authentication: every workspace stays open', async (t) => {
  for (const [env, auth, what] of [
    [{ WORKSPACE_SHARING: 'shared' }, true, 'WORKSPACE_SHARING=shared'],
    [{}, false, 'no AUTH_CONFIG'],
  ] as const) {
    const { root, alice } = roots();
    const srv = await server(t, { WORKSPACE_ROOTS: root, ...env }, auth);
    t.equal((await send(srv, 'alice', 'hello', alice)).error, undefined, `${what}: alice opens it`);
    const other = await send(srv, 'vic', 'read env', alice);
    t.equal(other.error, undefined, `${what}: so may anyone else`);
  }
});

t.test('store: two principals claiming one new directory, or a parent and a child, at once: exactly one wins', async (t) => {
  const store = new MemoryTaskStore();
  const same = await Promise.all([store.claimWorkspace('/srv/ws/x', 'key:a'), store.claimWorkspace('/srv/ws/x', 'key:b')]);
  t.same(
    same.map((c) => c.ok),
    [true, false],
  );
  const nested = await Promise.all([store.claimWorkspace('/srv/ws/y', 'key:a'), store.claimWorkspace('/srv/ws', 'key:b')]);
  t.same(nested, [{ ok: true }, { ok: false, conflict: '/srv/ws/x' }]);
  t.same(await store.claimWorkspace('/srv/ws/x/deep', 'key:a'), { ok: true }, 'the owner may claim inside its own');
  t.same(await store.claimWorkspace('/', 'key:c'), { ok: false, conflict: '/srv/ws/x' }, 'the root contains every claim');
});

t.test('WORKSPACE_SHARING: owner by default, shared on request, anything else stops the server', async (t) => {
  const dir = tempDir();
  t.equal(loadConfig({ WORKSPACE_DIR: dir }, dir).workspaceSharing, 'owner');
  t.equal(loadConfig({ WORKSPACE_DIR: dir, WORKSPACE_SHARING: 'Shared' }, dir).workspaceSharing, 'shared');
  t.throws(
    () => loadConfig({ WORKSPACE_DIR: dir, WORKSPACE_SHARING: 'open' }, dir),
    /WORKSPACE_SHARING="open" is not one of owner, shared/,
  );
});

t.test('a context opened while workspaces were shared is checked again when its task continues', async (t) => {
  const { root, alice } = roots();
  const store = new MemoryTaskStore();
  const shared = await server(t, { WORKSPACE_ROOTS: root, WORKSPACE_SHARING: 'shared' }, true, store);
  const before = await send(shared, 'bob', 'hello', alice);
  const task = before.results[0];
  t.equal(before.error, undefined, 'bob opened it while it was shared');
  const owned = await server(t, { WORKSPACE_ROOTS: root }, true, store.connect());
  t.equal((await send(owned, 'alice', 'hello', alice)).error, undefined, 'then alice claims it');
  const next = { ...userMessage('read env'), taskId: task.id, contextId: task.contextId };
  const res = await rpc(owned.url, 'message/stream', { message: next }, { headers: headers('bob') });
  t.equal(res.json?.error?.code, FORBIDDEN, "bob's follow-up in his old context → -32010");
  t.notMatch(JSON.stringify(res.events ?? []), SECRET, 'nothing was read');
});
