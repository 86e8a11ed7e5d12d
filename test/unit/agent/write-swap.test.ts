/**
 * Attack (approval review of issue 19): an edit is judged (and its card computed) on a path
 * resolved before it runs; the file tools then resolved it again and wrote there. A command of
 * another conversation on the same workspace (the default workspace is everyone's) can swap a
 * folder on the way for a symlink in between, so an AUTO_EDIT write of `d/info/attributes` — judged
 * an ordinary file — wrote `.git/info/attributes` (a filter: code for the developer's next git), a write a
 * person approved for `notes/todo.txt` landed in another folder, and a YOLO write left the
 * workspace. Each call here is judged as the turn loop does, the folder is swapped, then it runs.
 */
import t from 'tap';
import fs from 'node:fs';
import path from 'node:path';
import { approveCall, proposeCall, rejudgeCall, requestApproval, runCall, showCall } from '../../../src/agent/runtime/call-lifecycle.js';
import type { LiveTask, TurnCall } from '../../../src/agent/runtime/live-task.js';
import { ReplaceTool, WriteFileTool } from '../../../src/tools/index.js';
import { makeCore, startTask } from '../../support/core.js';

async function openTurn(task: LiveTask, calls: Array<[string, Record<string, unknown>]>): Promise<TurnCall[]> {
  task.turnNo += 1;
  task.turn = [];
  for (const [i, [name, args]] of calls.entries())
    task.turn.push(await proposeCall(task, { id: `model-${i}`, name, args }, i, task.context.tools));
  for (const call of task.turn) await requestApproval(task, call, undefined);
  for (const call of task.turn) showCall(task, call);
  await task.flush();
  return task.turn;
}

/** `dir` (relative to `ws`) becomes a symlink to `target`, as a sandboxed `rm -r d && ln -s .git d` would make it. */
function swap(ws: string, dir: string, target: string): void {
  fs.rmSync(path.join(ws, dir), { recursive: true, force: true });
  fs.symlinkSync(target, path.join(ws, dir));
}

const tools = () => [new WriteFileTool(), new ReplaceTool()];

t.test('AUTO_EDIT: a write judged on d/info/attributes does not land in .git/info after d became a link', async (t) => {
  const core = await makeCore(t, { tools: tools() });
  const ws = core.workspace;
  fs.mkdirSync(path.join(ws, '.git/info'), { recursive: true });
  fs.writeFileSync(path.join(ws, '.git/config'), '[core]\n');
  fs.mkdirSync(path.join(ws, 'd/info'), { recursive: true });
  const task = await startTask(core, { settings: { approvalMode: 'AUTO_EDIT' } });
  const [call] = await openTurn(task, [['write_file', { file_path: 'd/info/attributes', content: '* filter=evil\n' }]]);
  t.equal(call.phase, 'ready', 'judged an ordinary file: it runs without a card');
  t.equal(await rejudgeCall(task, call, undefined), true, 'and still when judged again right before it runs');
  swap(ws, 'd', '.git');
  await runCall(task, call);
  t.notOk(fs.existsSync(path.join(ws, '.git/info/attributes')), '.git/info/attributes was not written');
  t.equal(call.snapshot.status, 'FAILED');
  t.match(call.snapshot.error, { type: 'write_error', message: /makes tools run code/ });

  // A new file in a folder that became a link to .git/hooks is not created either.
  fs.mkdirSync(path.join(ws, '.git/hooks'));
  fs.mkdirSync(path.join(ws, 'h'));
  const [hook] = await openTurn(task, [['write_file', { file_path: 'h/pre-commit', content: '#!/bin/sh\nid\n' }]]);
  t.equal(hook.phase, 'ready');
  swap(ws, 'h', '.git/hooks');
  await runCall(task, hook);
  t.notOk(fs.existsSync(path.join(ws, '.git/hooks/pre-commit')), 'no hook created (not even empty)');
});

t.test('approved card: the write lands only on the file the card showed', async (t) => {
  const core = await makeCore(t, { tools: tools() });
  const ws = core.workspace;
  fs.mkdirSync(path.join(ws, 'notes'));
  fs.mkdirSync(path.join(ws, 'other'));
  const task = await startTask(core);
  const [call] = await openTurn(task, [['write_file', { file_path: 'notes/todo.txt', content: 'mine\n' }]]);
  t.equal(call.phase, 'awaiting');
  approveCall(task, call, 'proceed_once', undefined);
  t.equal(await rejudgeCall(task, call, undefined), true);
  swap(ws, 'notes', 'other');
  await runCall(task, call);
  t.notOk(fs.existsSync(path.join(ws, 'other/todo.txt')), 'no file the card did not show was created');
  t.match(call.snapshot.error, { type: 'write_error', message: /not on .*notes\/todo\.txt as its card showed/ });
});

// (Swapped before the tool resolves the path, this one was refused already; the descriptor check covers the moment after.)
t.test('YOLO: a replace never follows a swapped folder out of the workspace', async (t) => {
  const core = await makeCore(t, { tools: tools() });
  const ws = core.workspace;
  const outside = fs.realpathSync(fs.mkdtempSync(path.join(path.dirname(ws), 'devtool-outside-')));
  t.teardown(() => fs.rmSync(outside, { recursive: true, force: true }));
  fs.writeFileSync(path.join(outside, 'rc'), 'a = 1\n');
  fs.mkdirSync(path.join(ws, 'cfg'));
  fs.writeFileSync(path.join(ws, 'cfg/rc'), 'a = 1\n');
  const task = await startTask(core, { settings: { approvalMode: 'YOLO' } });
  const [call] = await openTurn(task, [['replace', { file_path: 'cfg/rc', old_string: 'a = 1', new_string: 'a = 2' }]]);
  t.equal(call.phase, 'ready');
  swap(ws, 'cfg', outside);
  await runCall(task, call);
  t.equal(fs.readFileSync(path.join(outside, 'rc'), 'utf8'), 'a = 1\n', 'the file outside is unchanged');
  t.equal(call.snapshot.status, 'FAILED');
});

t.test('without a swap the same writes happen', async (t) => {
  const core = await makeCore(t, { tools: tools() });
  const ws = core.workspace;
  fs.mkdirSync(path.join(ws, 'd'));
  const task = await startTask(core, { settings: { approvalMode: 'AUTO_EDIT' } });
  const [call] = await openTurn(task, [['write_file', { file_path: 'd/new.txt', content: 'x\n' }]]);
  await runCall(task, call);
  t.equal(call.snapshot.status, 'SUCCEEDED');
  t.equal(fs.readFileSync(path.join(ws, 'd/new.txt'), 'utf8'), 'x\n');
});
