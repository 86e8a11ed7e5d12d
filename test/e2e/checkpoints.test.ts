/**
 * Checkpoints (CHECKPOINTING) over real HTTP, with the real @google/genai SDK against the fake
 * Gemini API: before an approved edit runs, the file it touches is kept in the store (bytes, or
 * "did not exist"), named by the call's id and by gemini-cli's `<time>-<file>-<tool>`, and its
 * cards from EXECUTING on name it; a declined call gets none, nor does any call with
 * checkpointing off. Restores are in restore.test.ts.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import { dataOf } from '../support/server.js';
import { answer, scenario, send, startGeminiServer } from '../support/gemini-server.js';
import type { GeminiServer } from '../support/gemini-server.js';
import { TaskWatch } from '../support/tool-call-watch.js';
import type { Test } from '../support/tool-call-watch.js';

const NAME = /^\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d_\d{3}Z-(.+)-(write_file|replace)$/;

async function server(
  t: Test,
  env: Record<string, string> = { CHECKPOINTING: 'true' },
): Promise<GeminiServer & { store: MemoryTaskStore }> {
  const store = new MemoryTaskStore();
  t.teardown(() => store.close());
  const srv = await startGeminiServer(t, { env, app: { store } });
  return { ...srv, store };
}

/** The model proposes one call; it is answered with `option`; the model then says "done". */
async function oneCall(
  srv: GeminiServer,
  name: string,
  args: Record<string, unknown>,
  option: string,
): Promise<{ watch: TaskWatch; id: string }> {
  scenario(srv.fake).call(name, args).say('done');
  const watch = new TaskWatch();
  const first = watch.take(await send(srv, `call ${name}`));
  const card = first.map(dataOf).find((d) => d?.status === 'PENDING');
  if (card === undefined) throw new Error('no PENDING card');
  watch.take(await answer(srv, watch.taskId, watch.contextId, { tool_call_id: card.tool_call_id, selected_option_id: option }));
  return { watch, id: card.tool_call_id };
}

/** The DataPart metadata of each card of call `id`, by status. */
function cardsOf(watch: TaskWatch, id: string): Array<{ status: string; checkpoint?: string }> {
  return watch.results.flatMap((r) => {
    const part = r.status?.message?.parts?.find((p: any) => p.kind === 'data');
    if (part?.data?.tool_call_id !== id) return [];
    return [{ status: part.data.status, ...(part.metadata?.checkpoint !== undefined ? { checkpoint: part.metadata.checkpoint } : {}) }];
  });
}

t.test('an approved write_file: the file as it was is kept before it is written, and its cards name the checkpoint', async (t) => {
  const srv = await server(t);
  writeFileSync(path.join(srv.workspace, 'notes.txt'), 'before\n');
  const { watch, id } = await oneCall(srv, 'write_file', { file_path: 'notes.txt', content: 'after\n' }, 'proceed_once');
  t.equal(readFileSync(path.join(srv.workspace, 'notes.txt'), 'utf8'), 'after\n', 'written');
  const cp = await srv.store.loadCheckpoint(id);
  t.ok(cp, 'a checkpoint named by the tool_call_id');
  t.match(cp?.name, NAME);
  t.equal(NAME.exec(cp?.name ?? '')?.[1], 'notes.txt');
  t.same(cp?.files, [{ path: 'notes.txt', content: Buffer.from('before\n').toString('base64') }], 'exactly the file the call touched');
  t.match(cp, { taskId: watch.taskId, contextId: watch.contextId, workspace: srv.workspace, toolName: 'write_file' });
  t.ok((cp?.historyLength ?? 0) >= 2, 'the conversation position: the history so far');
  t.type(cp?.messageId, 'string', 'and the user message of the turn');
  t.same((await srv.store.loadCheckpoint(cp!.name))?.callId, id, 'found by its name too');
  const cards = cardsOf(watch, id);
  t.same(
    cards.map((c) => c.status),
    ['PENDING', 'EXECUTING', 'SUCCEEDED'],
  );
  t.notOk(cards[0].checkpoint, 'the waiting card has none: nothing is kept before a person approved');
  t.same(
    cards.slice(1).map((c) => c.checkpoint),
    [cp?.name, cp?.name],
    'EXECUTING and SUCCEEDED name it',
  );
});

t.test('a file the call creates is kept as "did not exist"; replace is checkpointed too', async (t) => {
  const srv = await server(t);
  const created = await oneCall(srv, 'write_file', { file_path: 'dir/new.md', content: 'new\n' }, 'proceed_once');
  t.same((await srv.store.loadCheckpoint(created.id))?.files, [{ path: 'dir/new.md' }]);
  const replaced = await oneCall(srv, 'replace', { file_path: 'dir/new.md', old_string: 'new', new_string: 'newer' }, 'proceed_once');
  const cp = await srv.store.loadCheckpoint(replaced.id);
  t.equal(NAME.exec(cp?.name ?? '')?.[2], 'replace');
  t.same(cp?.files, [{ path: 'dir/new.md', content: Buffer.from('new\n').toString('base64') }]);
});

t.test('no checkpoint for a declined call, a read, or with checkpointing off', async (t) => {
  const srv = await server(t);
  const declined = await oneCall(srv, 'write_file', { file_path: 'x.txt', content: 'x' }, 'cancel');
  t.equal(await srv.store.loadCheckpoint(declined.id), undefined, 'declined: nothing kept (the original keeps one)');
  writeFileSync(path.join(srv.workspace, 'seed.txt'), 'seed');
  scenario(srv.fake).call('read_file', { file_path: 'seed.txt' }).say('read');
  await send(srv, 'read it');
  t.same(await srv.store.listCheckpoints({ workspace: srv.workspace, limit: 10 }), [], 'a read keeps nothing');
  const off = await server(t, {});
  const approved = await oneCall(off, 'write_file', { file_path: 'y.txt', content: 'y' }, 'proceed_once');
  t.equal(readFileSync(path.join(off.workspace, 'y.txt'), 'utf8'), 'y');
  t.equal(await off.store.loadCheckpoint(approved.id), undefined, 'off by default');
  t.notOk(
    cardsOf(approved.watch, approved.id).some((c) => c.checkpoint),
    'and no card names one',
  );
});

t.test('a checkpoint that cannot be stored: the call fails and nothing is written', async (t) => {
  const store = new MemoryTaskStore();
  t.teardown(() => store.close());
  store.saveCheckpoint = async () => {
    throw new Error('disk full');
  };
  const srv = await startGeminiServer(t, { env: { CHECKPOINTING: 'true' }, app: { store } });
  writeFileSync(path.join(srv.workspace, 'keep.txt'), 'keep\n');
  const { watch, id } = await oneCall(srv, 'write_file', { file_path: 'keep.txt', content: 'lost\n' }, 'proceed_once');
  t.equal(readFileSync(path.join(srv.workspace, 'keep.txt'), 'utf8'), 'keep\n', 'the file is untouched');
  const last = watch.results
    .map(dataOf)
    .filter((d) => d?.tool_call_id === id)
    .at(-1);
  t.equal(last?.status, 'FAILED');
  t.equal(last?.error?.type, 'checkpoint_failed');
  t.match(last?.error?.message, /Nothing was written: the checkpoint could not be stored \(disk full\)/);
});

t.test('AUTO_EDIT: an edit that runs without a card is checkpointed as well', async (t) => {
  const srv = await server(t);
  scenario(srv.fake).call('write_file', { file_path: 'auto.txt', content: 'auto\n' }).say('done');
  const watch = new TaskWatch();
  watch.take(await send(srv, 'auto edit', { settings: { approval_mode: 'AUTO_EDIT' } }));
  const id = watch.results.map(dataOf).find((d) => d?.tool_name === 'write_file')?.tool_call_id;
  t.same((await srv.store.loadCheckpoint(id))?.files, [{ path: 'auto.txt' }]);
  t.equal(readFileSync(path.join(srv.workspace, 'auto.txt'), 'utf8'), 'auto\n');
});
