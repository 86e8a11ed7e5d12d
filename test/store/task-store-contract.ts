/**
 * The TaskStore contract (src/agent/task-store.ts), runnable against any implementation.
 * `makeStore` MUST return, on every call, a new store on the SAME database: the contract
 * uses two of them to play two processes (notifications, concurrent appends and claims).
 * Ids are random, so the cases share the database without seeing each other's rows.
 */
import { fileURLToPath } from 'node:url';
import type { Task } from '@a2a-js/sdk';
import { callContract } from './fixtures/call-contract.js';
import { checkpointContract } from './fixtures/checkpoint-contract.js';
import { commitContract } from './fixtures/commit-contract.js';
import { compactionContract } from './fixtures/compaction-contract.js';
import { copyContract } from './fixtures/copy-contract.js';
import { detailContract } from './fixtures/detail-contract.js';
import { textRunContract } from './fixtures/text-run-contract.js';
import { artifactEvent, eventually, makeTask, seedTask, statusEvent, uid } from './fixtures/builders.js';
import { open, type MakeStore, type Test } from './fixtures/open.js';

// `npx tap test/store/` runs every file of the folder, this library too: rather than a
// "no tests found" skip, it says where the contract actually runs.
if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { default: tap } = await import('tap');
  tap.pass('a library: memory.test.ts, pglite.test.ts and postgres.test.ts run this contract');
}

export function taskStoreContract(t: Test, makeStore: MakeStore): void {
  contextCases(t, makeStore);
  eventCases(t, makeStore);
  dialectCases(t, makeStore);
  subscribeAndListCases(t, makeStore);
  auditAndCloseCases(t, makeStore);
  workspaceClaimCases(t, makeStore);
  callContract(t, makeStore);
  commitContract(t, makeStore);
  compactionContract(t, makeStore);
  textRunContract(t, makeStore);
  copyContract(t, makeStore);
  detailContract(t, makeStore);
  checkpointContract(t, makeStore);
}

/** Unknown ids, contexts and their history. */
function contextCases(t: Test, makeStore: MakeStore): void {
  t.test('unknown ids: undefined or empty, never a throw', async (t) => {
    const s = await open(t, makeStore);
    t.equal(await s.loadTask(uid('nope')), undefined);
    t.equal(await s.loadContext(uid('nope')), undefined);
    t.equal(await s.loadCall(uid('nope')), undefined);
    t.same(await s.eventsAfter(uid('nope'), 0), []);
    t.same(await s.loadTurn(uid('nope')), []);
  });

  t.test('contexts: create is idempotent, history in order, trust once per tool', async (t) => {
    const s = await open(t, makeStore);
    const id = uid('ctx');
    await s.createContext({ id, workspace: '/ws/one' });
    await s.createContext({ id, workspace: '/ws/two' });
    t.same(await s.loadContext(id), { id, workspace: '/ws/one', history: [], trustedTools: [], settings: {} });
    const other = uid('ctx');
    const settings = {
      approvalMode: 'AUTO_EDIT' as const,
      allowedTools: ['run_shell_command(git status)'],
      mcpServers: { fs: { command: 'node', args: ['x.js'] } },
    };
    await s.createContext({ id: other, workspace: '/ws', settings });
    t.same((await s.loadContext(other))?.settings, settings, 'settings stored with the context');
    await s.updateContextSettings(other, { approvalMode: 'YOLO' });
    t.same((await s.loadContext(other))?.settings, { approvalMode: 'YOLO' }, 'settings replaced');
    const turn = (text: string) => ({ role: 'user' as const, parts: [{ text }] });
    await s.appendHistory(id, [
      turn('a'),
      { role: 'model', parts: [{ functionCall: { id: 'f1', name: 'ls', args: { deep: { x: [1] } } }, thoughtSignature: 'sig' }] },
    ]);
    await s.appendHistory(id, []);
    await s.appendHistory(id, [turn('c')]);
    const ctx = await s.loadContext(id);
    t.same(
      ctx?.history.map((h) => h.parts[0].text ?? h.parts[0].functionCall?.name),
      ['a', 'ls', 'c'],
    );
    t.same(ctx?.history[1], {
      role: 'model',
      parts: [{ functionCall: { id: 'f1', name: 'ls', args: { deep: { x: [1] } } }, thoughtSignature: 'sig' }],
    });
    await s.addTrust(id, 'run_shell', 'alice');
    await s.addTrust(id, 'run_shell', 'bob');
    await s.addTrust(id, 'write_file');
    t.same((await s.loadContext(id))?.trustedTools.sort(), ['run_shell', 'write_file']);
    await t.rejects(s.appendHistory(uid('nope'), [turn('x')]), 'appending to an unknown context throws');
  });

  t.test('history: concurrent appenders from two stores never collide', async (t) => {
    const [a, b] = [await open(t, makeStore), await open(t, makeStore)];
    const id = uid('ctx');
    await a.createContext({ id, workspace: '/ws' });
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        (i % 2 ? a : b).appendHistory(id, [
          { role: 'user', parts: [{ text: `${i}.0` }] },
          { role: 'model', parts: [{ text: `${i}.1` }] },
        ]),
      ),
    );
    const texts = (await a.loadContext(id))!.history.map((h) => h.parts[0].text!);
    t.equal(texts.length, 20);
    for (let k = 0; k < 20; k += 2) t.equal(texts[k + 1], texts[k].replace('.0', '.1'), 'each batch stays together, in order');
  });
}

/** The wire dialect a task speaks. */
function dialectCases(t: Test, makeStore: MakeStore): void {
  t.test('tasks: the wire dialect is stored with the task (rfc by default) and survives its events', async (t) => {
    const s = await open(t, makeStore);
    const plain = await seedTask(s);
    t.equal((await s.loadTask(plain.id))?.dialect, 'rfc', 'default rfc');
    const legacy = makeTask(plain.contextId, 'TASK_STATE_SUBMITTED');
    await s.createTask(legacy, undefined, { dialect: 'legacy' });
    const working = makeTask(plain.contextId, 'TASK_STATE_WORKING', 1, legacy.id);
    await s.appendEvent(working, statusEvent(working, 1), false);
    const stored = await s.loadTask(legacy.id);
    t.equal(stored?.dialect, 'legacy', 'legacy, after an event too');
    t.equal(stored?.lastSeq, 1);
  });
}

/** Tasks, and the events that move them. */
function eventCases(t: Test, makeStore: MakeStore): void {
  t.test('tasks: create, load with principal, JSON round trip keeps DataPart, metadata, $case', async (t) => {
    const s = await open(t, makeStore);
    const task = await seedTask(s, 'TASK_STATE_SUBMITTED', 'alice');
    const stored = await s.loadTask(task.id);
    t.equal(stored?.lastSeq, 0);
    t.equal(stored?.principal, 'alice');
    t.same(stored?.task, task, 'the whole Task survives the round trip');
    const part = stored?.task.status?.message?.parts[1];
    t.equal(part?.content?.$case, 'data');
    t.same(part?.content?.value, { nested: { list: [1, 'two', { three: null }], flag: true }, n: 0 });
    t.same(part?.metadata, { kind: 'card' });
    t.same(stored?.task.metadata, { n: 0, deep: { a: [{ b: 1 }] } });
    const anonymous = await seedTask(s);
    t.notOk('principal' in (await s.loadTask(anonymous.id))!, 'no principal → absent');
    await t.rejects(s.createTask(task), 'a duplicate task id throws');
  });

  t.test('events: seq 1..n, snapshot saved with its event, eventsAfter, final', async (t) => {
    const s = await open(t, makeStore);
    const task = await seedTask(s);
    const working = makeTask(task.contextId, 'TASK_STATE_WORKING', 1, task.id);
    t.equal(await s.appendEvent(working, statusEvent(working, 1), false), 1);
    const loaded1 = await s.loadTask(task.id);
    t.equal(loaded1?.lastSeq, 1);
    t.same(loaded1?.task, working, 'the snapshot is the one passed with the event');
    t.equal(await s.appendEvent(working, artifactEvent(working), false), 2);
    const paused = makeTask(task.contextId, 'TASK_STATE_INPUT_REQUIRED', 3, task.id);
    t.equal(await s.appendEvent(paused, statusEvent(paused, 3), true), 3);
    const all = await s.eventsAfter(task.id, 0);
    t.same(
      all.map((e) => [e.seq, e.final]),
      [
        [1, false],
        [2, false],
        [3, true],
      ],
    );
    t.same(all[0].response, statusEvent(working, 1), 'StreamResponse round trip');
    t.equal(all[0].response.payload?.$case, 'statusUpdate');
    t.same(all[1].response, artifactEvent(working));
    t.equal(all[1].response.payload?.$case, 'artifactUpdate');
    t.same(
      (await s.eventsAfter(task.id, 1)).map((e) => e.seq),
      [2, 3],
    );
    t.same(await s.eventsAfter(task.id, 3), []);
    t.equal((await s.loadTask(task.id))?.task.status?.state, paused.status?.state);
    await t.rejects(s.appendEvent(makeTask(task.contextId), statusEvent(working), false), 'unknown task throws');
  });

  t.test('events: 20 concurrent appends from two stores → 1..20, snapshot matches the last', async (t) => {
    const [a, b] = [await open(t, makeStore), await open(t, makeStore)];
    const task = await seedTask(a);
    const seqs = await Promise.all(
      Array.from({ length: 20 }, (_, n) => {
        const snap = makeTask(task.contextId, 'TASK_STATE_WORKING', n, task.id);
        return (n % 2 ? a : b).appendEvent(snap, statusEvent(snap, n), false);
      }),
    );
    t.same(
      [...seqs].sort((x, y) => x - y),
      Array.from({ length: 20 }, (_, i) => i + 1),
      'no gap, no duplicate',
    );
    const log = await b.eventsAfter(task.id, 0);
    t.same(
      log.map((e) => e.seq),
      Array.from({ length: 20 }, (_, i) => i + 1),
    );
    const stored = await a.loadTask(task.id);
    t.equal(stored?.lastSeq, 20);
    const lastN = (log[19].response.payload?.value as { metadata?: { n?: number } }).metadata?.n;
    t.equal(stored?.task.metadata?.n, lastN, 'the stored snapshot is the one written with the last event');
  });
}

/** Notifications of appends, and listing tasks. */
function subscribeAndListCases(t: Test, makeStore: MakeStore): void {
  t.test('subscribe: notified of every append, from this store and from another', async (t) => {
    const [a, b] = [await open(t, makeStore), await open(t, makeStore)];
    const task = await seedTask(a);
    const seen: string[] = [];
    const seenAll: string[] = [];
    const stop = await a.subscribe((id, seq, final) => id === task.id && seen.push(`${id}:${seq}:${final}`));
    await a.subscribe((id, seq) => id === task.id && seenAll.push(`${seq}`));
    await a.subscribe(() => {
      throw new Error('a broken listener does not starve the others');
    });
    await b.appendEvent(task, statusEvent(task), false);
    await a.appendEvent(task, statusEvent(task), true);
    await eventually(() => seen.length === 2);
    t.same(seen.sort(), [`${task.id}:1:false`, `${task.id}:2:true`], 'from the other store and from itself, with the final flag');
    await stop();
    await b.appendEvent(task, statusEvent(task), false);
    await eventually(() => seenAll.length === 3);
    t.equal(seen.length, 2, 'an unsubscribed listener hears nothing more');
    const colon = await seedTask(b);
    const odd = makeTask(colon.contextId, 'TASK_STATE_WORKING', 0, `${uid('a:b')}:c:1`);
    await b.createTask(odd);
    const got: Array<[string, number, boolean]> = [];
    await b.subscribe((id, seq, final) => id === odd.id && got.push([id, seq, final]));
    await a.appendEvent(odd, statusEvent(odd), true);
    await eventually(() => got.length === 1);
    t.same(got, [[odd.id, 1, true]], 'task ids containing ":" (even ":<digit>") survive the payload');
  });

  t.test('listTasks: filters by context and state, pages, counts', async (t) => {
    const s = await open(t, makeStore);
    const contextId = uid('ctx');
    await s.createContext({ id: contextId, workspace: '/ws' });
    const states = ['TASK_STATE_WORKING', 'TASK_STATE_WORKING', 'TASK_STATE_COMPLETED', 'TASK_STATE_WORKING', 'TASK_STATE_INPUT_REQUIRED'];
    const made: Task[] = [];
    for (const st of states) {
      const task = makeTask(contextId, 'TASK_STATE_SUBMITTED');
      await s.createTask(task);
      const moved = makeTask(contextId, st, 0, task.id);
      await s.appendEvent(moved, statusEvent(moved), false);
      made.push(moved);
    }
    await seedTask(s); // another context
    const all = await s.listTasks({ contextId, limit: 100, offset: 0 });
    t.equal(all.total, 5);
    t.same(all.tasks.map((x) => x.id).sort(), made.map((x) => x.id).sort());
    const working = await s.listTasks({ contextId, state: 'working', limit: 100, offset: 0 });
    t.equal(working.total, 3);
    t.ok(working.tasks.every((x) => x.status?.state === made[0].status?.state));
    t.equal((await s.listTasks({ contextId, state: 'input-required', limit: 10, offset: 0 })).total, 1);
    t.equal(
      (await s.listTasks({ contextId, state: 'TASK_STATE_COMPLETED', limit: 10, offset: 0 })).total,
      1,
      'the JSON enum name works too',
    );
    const pages = [];
    for (let offset = 0; offset < 6; offset += 2) {
      const page = await s.listTasks({ contextId, limit: 2, offset });
      t.equal(page.total, 5, 'total ignores paging');
      pages.push(...page.tasks.map((x) => x.id));
    }
    t.same(pages.sort(), made.map((x) => x.id).sort(), 'pages cover every task once');
    t.ok((await s.listTasks({ limit: 1, offset: 0 })).total >= 6, 'no filter lists every context');
  });
}

/** The audit log, and closing a store. */
function auditAndCloseCases(t: Test, makeStore: MakeStore): void {
  t.test('audit: append-only records, listed by task and by context in order', async (t) => {
    const s = await open(t, makeStore);
    const [ctx1, ctx2] = [uid('ctx'), uid('ctx')];
    const [t1, t2, t3] = [uid('task'), uid('task'), uid('task')];
    await s.audit({
      taskId: t1,
      contextId: ctx1,
      toolCallId: 'c1',
      decision: 'proposed',
      shownHash: 'h1',
      detail: { args: { deep: [1, { x: 2 }] } },
    });
    await s.audit({ taskId: t2, contextId: ctx1, decision: 'proposed' });
    await s.audit({ taskId: t3, contextId: ctx2, decision: 'expired' });
    await s.audit({
      taskId: t1,
      contextId: ctx1,
      toolCallId: 'c1',
      decision: 'authorized',
      principal: 'alice',
      optionId: 'proceed_once',
      shownHash: 'h1',
    });
    await s.audit({ taskId: t1, contextId: ctx1, toolCallId: 'c1', decision: 'succeeded' });
    const byTask = await s.listAudit({ taskId: t1 });
    t.same(
      byTask.map((r) => r.decision),
      ['proposed', 'authorized', 'succeeded'],
    );
    t.ok(
      byTask.every((r, i) => i === 0 || r.id > byTask[i - 1].id),
      'ids increase',
    );
    t.ok(byTask[0].at instanceof Date);
    t.same(byTask[0].detail, { args: { deep: [1, { x: 2 }] } });
    t.match(byTask[1], { principal: 'alice', optionId: 'proceed_once', shownHash: 'h1', toolCallId: 'c1', contextId: ctx1 });
    t.notOk('principal' in byTask[0], 'absent fields stay absent');
    const byContext = await s.listAudit({ contextId: ctx1 });
    t.same(
      byContext.map((r) => `${r.taskId === t1 ? 't1' : 't2'}:${r.decision}`),
      ['t1:proposed', 't2:proposed', 't1:authorized', 't1:succeeded'],
    );
    t.same(
      (await s.listAudit({ contextId: ctx2 })).map((r) => r.taskId),
      [t3],
    );
    t.same(await s.listAudit({ taskId: t1, contextId: ctx2 }), [], 'filters combine');
  });

  t.test('close is idempotent', async (t) => {
    const opened = await makeStore();
    const { store } = opened;
    await store.close();
    await t.resolves(store.close(), 'a second close resolves');
    await opened.close();
  });
}

/** Workspace claims: the first principal owns a directory; overlapping claims of others lose, also when they race from two stores. */
function workspaceClaimCases(t: Test, makeStore: MakeStore): void {
  t.test('workspace claims: first principal wins, overlap in either direction refused, races decided once', async (t) => {
    const a = await open(t, makeStore);
    const b = await open(t, makeStore);
    const root = `/ws-${uid('claims')}`;
    t.same(await a.claimWorkspace(`${root}/alice`, 'key:alice'), { ok: true });
    t.same(await a.claimWorkspace(`${root}/alice`, 'key:alice'), { ok: true }, 'claiming again what one holds');
    t.same(await b.claimWorkspace(`${root}/alice`, 'key:vic'), { ok: false, conflict: `${root}/alice` }, 'the same directory');
    t.same(await b.claimWorkspace(`${root}/alice/src`, 'key:vic'), { ok: false, conflict: `${root}/alice` }, 'a directory inside');
    t.same(await b.claimWorkspace(root, 'key:vic'), { ok: false, conflict: `${root}/alice` }, 'a directory containing it');
    t.same(await b.claimWorkspace(`${root}/alice-2`, 'key:vic'), { ok: true }, 'a sibling sharing the name prefix is not inside');
    t.same(await a.claimWorkspace(`${root}/alice/src`, 'key:alice'), { ok: true }, 'the owner claims inside its own');
    for (let i = 0; i < 5; i++) {
      const dir = `${root}/race-${i}`;
      const same = await Promise.all([a.claimWorkspace(dir, 'key:p'), b.claimWorkspace(dir, 'key:q')]);
      t.equal(same.filter((c) => c.ok).length, 1, `one directory, two principals at once: one wins (${i})`);
      const nested = await Promise.all([a.claimWorkspace(`${dir}-n/child`, 'key:p'), b.claimWorkspace(`${dir}-n`, 'key:q')]);
      t.equal(nested.filter((c) => c.ok).length, 1, `a child and its parent at once: one wins (${i})`);
    }
  });
}
