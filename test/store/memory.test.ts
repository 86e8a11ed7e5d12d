/**
 * The TaskStore and PushStore contracts on MemoryTaskStore (every store of a contract run is
 * `connect()`ed to one MemoryDatabase, playing processes on one database), plus what only
 * the memory store has to show: separate databases stay apart, closing a store leaves the
 * data and makes every method reject, notifications arrive after the commit, and the module
 * loads without the database drivers.
 */
import t from 'tap';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryDatabase, MemoryTaskStore } from '../../src/store/memory-store.js';
import { makeCall, seedTask, statusEvent } from './fixtures/builders.js';
import { pushStoreContract } from './fixtures/push-contract.js';
import { taskStoreContract } from './task-store-contract.js';

const shared = new MemoryTaskStore();
t.teardown(() => shared.close());

t.test('contract (memory)', async (t) => {
  taskStoreContract(t, async () => {
    const store = shared.connect();
    return { store, close: () => store.close() };
  });
});

t.test('push contract (memory)', async (t) => {
  pushStoreContract(t, async () => {
    const store = shared.connect();
    return { store, close: () => store.close() };
  });
});

t.test('databases: connect() shares one, a new store or database starts empty', async (t) => {
  const a = new MemoryTaskStore();
  const b = a.connect();
  const c = new MemoryTaskStore(a.database);
  const other = new MemoryTaskStore(new MemoryDatabase());
  t.equal(b.database, a.database);
  const task = await seedTask(b);
  t.equal((await c.loadTask(task.id))?.task.id, task.id, 'a store on the same database sees it');
  t.equal(await other.loadTask(task.id), undefined, 'another database does not');
  t.equal(await new MemoryTaskStore().hasPushConfigs(), false, 'a new database has no push configs');
  await b.savePushConfig({ taskId: task.id, id: 'p', url: 'https://h.example/', wireVersion: '1.0' }, 0);
  t.equal(await c.hasPushConfigs(), true);
  t.equal(await other.hasPushConfigs(), false);
});

t.test('close: every method of the closed store rejects; the data stays for the others', async (t) => {
  const open = new MemoryTaskStore();
  const closed = open.connect();
  const task = await seedTask(closed);
  const heard: number[] = [];
  await closed.subscribe((_id, seq) => heard.push(seq));
  await closed.close();
  await t.resolves(closed.close(), 'close is idempotent');
  const now = new Date();
  const calls: Array<[string, () => Promise<unknown>]> = [
    ['createContext', () => closed.createContext({ id: 'x', workspace: '/' })],
    ['updateContextSettings', () => closed.updateContextSettings('x', {})],
    ['loadContext', () => closed.loadContext('x')],
    ['appendHistory', () => closed.appendHistory('x', [])],
    ['addTrust', () => closed.addTrust('x', 'ls')],
    ['createTask', () => closed.createTask(task)],
    ['loadTask', () => closed.loadTask(task.id)],
    ['listTasks', () => closed.listTasks({ limit: 1, offset: 0 })],
    ['appendEvent', () => closed.appendEvent(task, statusEvent(task), false)],
    ['eventsAfter', () => closed.eventsAfter(task.id, 0)],
    ['subscribe', () => closed.subscribe(() => {})],
    ['commit', () => closed.commit({ events: [], calls: [], history: [], trust: [], audit: [] })],
    ['saveCalls', () => closed.saveCalls([])],
    ['loadTurn', () => closed.loadTurn(task.id)],
    ['loadCall', () => closed.loadCall('x')],
    ['claimCalls', () => closed.claimCalls(task.id, [], 'o', now)],
    ['closeTurn', () => closed.closeTurn(task.id, 0)],
    ['leaseTasks', () => closed.leaseTasks([], 'o', now)],
    ['findStaleTasks', () => closed.findStaleTasks(now)],
    ['renewLeases', () => closed.renewLeases('o', now, ['t'])],
    ['findInterrupted', () => closed.findInterrupted(now)],
    ['claimReminders', () => closed.claimReminders(now, now)],
    ['unclaimReminders', () => closed.unclaimReminders(['x'], now)],
    ['findExpired', () => closed.findExpired(now)],
    ['audit', () => closed.audit({ taskId: task.id, contextId: task.contextId, decision: 'proposed' })],
    ['listAudit', () => closed.listAudit({})],
    ['savePushConfig', () => closed.savePushConfig({ taskId: task.id, id: 'p', url: 'https://h.example/', wireVersion: '1.0' }, 0)],
    ['getPushConfig', () => closed.getPushConfig(task.id, 'p')],
    ['listPushConfigs', () => closed.listPushConfigs(task.id)],
    ['hasPushConfigs', () => closed.hasPushConfigs()],
    ['deletePushConfig', () => closed.deletePushConfig(task.id, 'p')],
    ['claimDuePushes', () => closed.claimDuePushes('o', now, now, 1)],
    ['advancePush', () => closed.advancePush(task.id, 'p', 'o', 1, {})],
    ['deferPush', () => closed.deferPush(task.id, 'p', 'o', 1, now, undefined)],
    ['loadSigningKeys', () => closed.loadSigningKeys()],
    [
      'saveCheckpoint',
      () =>
        closed.saveCheckpoint({
          callId: 'c',
          name: 'n',
          taskId: task.id,
          contextId: task.contextId,
          workspace: '/',
          toolName: 'write_file',
          historyLength: 0,
          files: [],
          createdAt: now,
        }),
    ],
    ['loadCheckpoint', () => closed.loadCheckpoint('c')],
    ['listCheckpoints', () => closed.listCheckpoints({ limit: 1 })],
    ['saveSigningKey', () => closed.saveSigningKey({ kid: 'k', alg: 'ES256', privateJwk: {}, publicJwk: {}, createdAt: now })],
  ];
  for (const [name, call] of calls) {
    await t.rejects(call(), { message: `${name}: store is closed`, code: 'AGENT_ERR_STORE_CLOSED' }, name);
  }
  t.equal((await open.loadTask(task.id))?.task.id, task.id, 'the other store still reads the data');
  t.equal(await open.appendEvent(task, statusEvent(task), true), 1);
  await new Promise((r) => setImmediate(r));
  t.same(heard, [], 'a closed store’s listeners hear nothing');
});

t.test('notifications: after the commit returned, to every store of the database only', async (t) => {
  const [a, b] = [new MemoryTaskStore(), new MemoryTaskStore()];
  const a2 = a.connect();
  const task = await seedTask(a);
  const heard: string[] = [];
  await a.subscribe((_id, seq, final) => heard.push(`a:${seq}:${final}`));
  await a2.subscribe((_id, seq, final) => heard.push(`a2:${seq}:${final}`));
  await b.subscribe(() => heard.push('b'));
  const seq = a.appendEvent(task, statusEvent(task), true);
  t.same(heard, [], 'not inside the commit');
  t.equal(await seq, 1);
  await new Promise((r) => setImmediate(r));
  t.same(heard.sort(), ['a2:1:true', 'a:1:true'], 'every store on the database, once; none on another');
  t.same(await a.commit({ events: [], calls: [makeCall(task.id)], history: [], trust: [], audit: [] }), []);
  await new Promise((r) => setImmediate(r));
  t.equal(heard.length, 2, 'a commit without events notifies nothing');
});

t.test('the module loads without drizzle-orm, postgres or PGlite', async (t) => {
  const root = fileURLToPath(new URL('../../src/', import.meta.url));
  const seen = new Set<string>();
  const bare: string[] = [];
  const walk = (file: string) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = readFileSync(file, 'utf8');
    // Runtime imports only: `import type` and `import { type X }`-only lines are erased.
    for (const m of text.matchAll(/^\s*import\s+(?!type\b)([^'"]*?)from\s+['"]([^'"]+)['"]/gm)) {
      if (/^\{\s*(type\s+\w+\s*,?\s*)+\}\s*$/.test(m[1].trim())) continue;
      const spec = m[2];
      if (spec.startsWith('.')) walk(path.resolve(path.dirname(file), spec.replace(/\.js$/, '.ts')));
      else bare.push(spec);
    }
  };
  walk(path.join(root, 'store/memory-store.ts'));
  t.ok(seen.size > 1, 'follows relative imports');
  t.same(
    bare.filter((s) => /drizzle|postgres|pglite/.test(s)),
    [],
    `runtime imports: ${[...new Set(bare)].join(', ')}`,
  );
});
