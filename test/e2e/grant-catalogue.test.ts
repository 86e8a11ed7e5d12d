/**
 * Issue 19 end to end, the policy's half, over real HTTP with the real @google/genai SDK against
 * the fake Gemini API and the real bubblewrap sandbox (or none, where said):
 * - finding 2: after "Allow always" on `git grep -n TODO` and `sort notes.txt`, lines with options
 *   that run programs ask; test runners, linters and `git clone -u` are offered no "always";
 * - finding 8: after "Always" on a write (or allowed_tools ["write_file"]), tool-config files ask;
 * - finding 1: AUTO_EDIT + allowed `git status`: planting a bare repository asks at every step, and
 *   `git status` run inside one is covered by nothing;
 * - finding 7: `git apply fix.patch && cp payload.ini lnk/config` asks whatever was granted;
 * - without the sandbox nothing shell-like runs unasked (YOLO included) unless
 *   SHELL_UNCONFINED_AUTO_APPROVE, and the agent card says which mode is in force.
 */
import t from 'tap';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { dataOf } from '../support/server.js';
import { answer, scenario, send, startGeminiServer } from '../support/gemini-server.js';
import type { GeminiServer } from '../support/gemini-server.js';
import { checkToolCalls, TaskWatch } from '../support/tool-call-watch.js';
import type { Test } from '../support/tool-call-watch.js';

interface Outcome {
  asked: boolean;
  /** The ids of the options the card offered (none when it did not ask). */
  options: string[];
  status: string;
  contextId: string;
}

/**
 * One task whose model makes one call, then says "ok". A card is answered with `reply`:
 * `always` takes "Allow always" when offered (else allows once), `no` declines.
 */
async function run(
  t: Test,
  srv: GeminiServer,
  name: string,
  args: Record<string, unknown>,
  opts: { contextId?: string; settings?: Record<string, unknown>; reply?: 'always' | 'once' | 'no' } = {},
): Promise<Outcome> {
  scenario(srv.fake).call(name, args).say('ok');
  const watch = new TaskWatch();
  const first = watch.take(await send(srv, `call ${name}`, { contextId: opts.contextId, settings: opts.settings }));
  const card = dataOf(first[2]);
  const asked = first.at(-1).status.state === 'input-required';
  const options: string[] = asked ? card.confirmation_request.options.map((o: any) => o.id) : [];
  if (asked) {
    const reply = opts.reply ?? 'no';
    const option = reply === 'no' ? 'cancel' : reply === 'always' && options.includes('proceed_always') ? 'proceed_always' : 'proceed_once';
    watch.take(await answer(srv, watch.taskId, watch.contextId, { tool_call_id: card.tool_call_id, selected_option_id: option }));
  }
  t.equal(watch.results.at(-1).status.state, 'completed', 'the task completes');
  const status = checkToolCalls(t, watch).get(card.tool_call_id)?.at(-1) as string;
  return { asked, options, status, contextId: watch.contextId };
}

const shell = (command: string, dir_path?: string) => ({ command, ...(dir_path !== undefined ? { dir_path } : {}) });

t.test('finding 2: "always" on `git grep -n TODO` and `sort notes.txt` covers no option that runs a program', async (t) => {
  const srv = await startGeminiServer(t);
  const ws = srv.workspace;
  execFileSync('git', ['init', '-q'], { cwd: ws });
  writeFileSync(path.join(ws, 'a.txt'), 'TODO one\n');
  writeFileSync(path.join(ws, 'notes.txt'), 'b\na\n');
  writeFileSync(path.join(ws, 'data.txt'), '2\n1\n');
  execFileSync('git', ['add', '.'], { cwd: ws });
  let ctx: string | undefined;
  for (const command of ['git grep -n TODO', 'sort notes.txt', 'git log -n 1', 'find . -name a.txt', 'rg -n TODO']) {
    const o = await run(t, srv, 'run_shell_command', shell(command), { contextId: ctx, reply: 'always' });
    t.ok(o.asked && o.options.includes('proceed_always'), `${command}: asks once, "always" offered`);
    ctx = o.contextId;
  }
  t.notOk(
    (await run(t, srv, 'run_shell_command', shell('git grep -n TODO a.txt'), { contextId: ctx })).asked,
    'the grant covers its own kind',
  );
  t.notOk((await run(t, srv, 'run_shell_command', shell('sort -r notes.txt'), { contextId: ctx })).asked);
  for (const command of [
    "git grep '--open-files-in-pager=touch P;' TODO",
    'git grep -Otouch TODO',
    'sort -S 1 --compress-program=sh data.txt',
    'sort --compress-prog=sh data.txt',
    'git log --output=P',
    'find . -exec touch P ;',
    'rg --pre touch TODO',
  ]) {
    const o = await run(t, srv, 'run_shell_command', shell(command), { contextId: ctx });
    t.ok(o.asked, `asks: ${command}`);
    t.notOk(o.options.includes('proceed_always'), 'and offers no "always"');
    t.equal(o.status, 'CANCELLED');
  }
  for (const command of ["git clone -u 'touch P' --no-local . b", 'pytest', 'jest', 'eslint .', 'prettier --write .']) {
    const o = await run(t, srv, 'run_shell_command', shell(command), { contextId: ctx });
    t.ok(o.asked, `asks: ${command}`);
    t.same(o.options, ['proceed_once', 'cancel'], `${command}: never "always"`);
  }
  t.notOk(existsSync(path.join(ws, 'P')), 'nothing ran');
});

t.test('finding 8: an "always" or allowed_tools on write_file does not write tool-config files unasked', async (t) => {
  const srv = await startGeminiServer(t);
  const ws = srv.workspace;
  execFileSync('git', ['init', '-q'], { cwd: ws });
  mkdirSync(path.join(ws, 'vendor/cache/objects'), { recursive: true });
  writeFileSync(path.join(ws, 'vendor/cache/HEAD'), 'ref: refs/heads/main\n');
  const first = await run(t, srv, 'write_file', { file_path: 'NOTES.md', content: 'notes\n' }, { reply: 'always' });
  t.ok(first.asked && first.status === 'SUCCEEDED', 'Always on `Write NOTES.md`');
  const ctx = first.contextId;
  t.notOk(
    (await run(t, srv, 'write_file', { file_path: 'OTHER.md', content: 'x\n' }, { contextId: ctx })).asked,
    'the grant covers writes',
  );
  const allowed = { allowed_tools: ['write_file'] };
  for (const file_path of ['.git/config', '.npmrc', 'sub/.git/hooks/x', 'vendor/cache/config']) {
    const content = '[core]\n\tfsmonitor = touch P\n';
    const granted = await run(t, srv, 'write_file', { file_path, content }, { contextId: ctx });
    t.ok(granted.asked, `after "always": ${file_path} asks`);
    const listed = await run(t, srv, 'write_file', { file_path, content }, { settings: allowed });
    t.ok(listed.asked, `allowed_tools ["write_file"]: ${file_path} asks`);
    t.notMatch(existsSync(path.join(ws, file_path)) ? readFileSync(path.join(ws, file_path), 'utf8') : '', /fsmonitor/, 'not written');
  }
});

t.test('finding 1: AUTO_EDIT with `git status` allowed: planting a bare repository asks, git in one is not covered', async (t) => {
  const srv = await startGeminiServer(t);
  const ws = srv.workspace;
  const settings = { approval_mode: 'AUTO_EDIT', allowed_tools: ['run_shell_command(git status)'] };
  const config = '[core]\n\tfsmonitor = "touch $PWD/P"\n';
  const head = await run(t, srv, 'write_file', { file_path: 'vendor/cache/HEAD', content: 'ref: refs/heads/main\n' }, { settings });
  t.ok(head.asked, 'a HEAD asks');
  const ctx = head.contextId;
  // A person let these through, one by one (or they came another way): the repository exists now.
  mkdirSync(path.join(ws, 'vendor/cache/objects'), { recursive: true });
  mkdirSync(path.join(ws, 'vendor/cache/refs'), { recursive: true });
  writeFileSync(path.join(ws, 'vendor/cache/HEAD'), 'ref: refs/heads/main\n');
  const cfg = await run(t, srv, 'write_file', { file_path: 'vendor/cache/config', content: config }, { contextId: ctx });
  t.ok(cfg.asked, 'its config asks');
  const hook = await run(
    t,
    srv,
    'write_file',
    { file_path: 'vendor/cache/hooks/post-index-change', content: '#!/bin/sh\ntouch P\n' },
    { contextId: ctx },
  );
  t.ok(hook.asked, 'a hook in it asks');
  writeFileSync(path.join(ws, 'vendor/cache/config'), config);
  const inside = await run(t, srv, 'run_shell_command', shell('git status', 'vendor/cache'), { contextId: ctx });
  t.ok(inside.asked, '`git status` with dir_path in the planted repository asks');
  const cd = await run(t, srv, 'run_shell_command', shell('cd vendor/cache && git status'), { contextId: ctx });
  t.ok(cd.asked, 'so does a `cd` there');
  t.notOk(existsSync(path.join(ws, 'P')) || existsSync(path.join(ws, 'vendor/cache/P')), 'the fsmonitor command never ran');
  t.equal(
    (await run(t, srv, 'write_file', { file_path: 'src/app.ts', content: 'x\n' }, { contextId: ctx })).asked,
    false,
    'ordinary files are written without asking',
  );
});

t.test('finding 7: `git apply fix.patch && cp payload.ini lnk/config` asks, whatever was allowed before', async (t) => {
  const srv = await startGeminiServer(t);
  const ws = srv.workspace;
  execFileSync('git', ['init', '-q'], { cwd: ws });
  writeFileSync(path.join(ws, 'README.md'), 'readme\n');
  writeFileSync(path.join(ws, 'payload.ini'), '[core]\n\tfsmonitor = touch P\n');
  writeFileSync(path.join(ws, 'fix.patch'), '');
  let ctx: string | undefined;
  for (const command of ['git apply --check fix.patch', 'cp README.md README.bak']) {
    ctx = (await run(t, srv, 'run_shell_command', shell(command), { contextId: ctx, reply: 'always' })).contextId;
  }
  const o = await run(t, srv, 'run_shell_command', shell('git apply fix.patch && cp payload.ini lnk/config'), { contextId: ctx });
  t.ok(o.asked, 'the line asks');
  t.notMatch(readFileSync(path.join(ws, '.git/config'), 'utf8'), /fsmonitor/, 'nothing was copied');
});

t.test('without the sandbox: nothing shell-like runs unasked, YOLO included, unless the operator opts in', async (t) => {
  await t.test('SHELL_SANDBOX=off', async (t) => {
    const srv = await startGeminiServer(t, { env: { SHELL_SANDBOX: 'off' } });
    const yolo = await run(t, srv, 'run_shell_command', shell('touch yolo.txt'), { settings: { approval_mode: 'YOLO' } });
    t.ok(yolo.asked, 'YOLO: the shell asks');
    t.same(yolo.options, ['proceed_once', 'cancel'], 'no "always" offered');
    t.notOk(existsSync(path.join(srv.workspace, 'yolo.txt')));
    const ctx = yolo.contextId;
    const listed = await run(t, srv, 'run_shell_command', shell('echo a'), {
      settings: { approval_mode: 'DEFAULT', allowed_tools: ['run_shell_command(echo)'] },
      contextId: ctx,
    });
    t.ok(listed.asked, 'an allowed_tools prefix covers nothing');
    t.equal(
      (await run(t, srv, 'write_file', { file_path: 'w.txt', content: 'x' }, { settings: { approval_mode: 'YOLO' } })).asked,
      false,
      'edits are not shell',
    );
    const card: any = await (await fetch(`${srv.url}.well-known/agent-card.json`)).json();
    t.match(card.capabilities.extensions[0].params, { shell_sandbox: 'off', shell_unconfined_auto_approve: false }, 'the card says so');
    t.match(card.skills[0].description, /without a sandbox, so every one asks first/);
  });
  await t.test('SHELL_SANDBOX=off with SHELL_UNCONFINED_AUTO_APPROVE=true', async (t) => {
    const srv = await startGeminiServer(t, { env: { SHELL_SANDBOX: 'off', SHELL_UNCONFINED_AUTO_APPROVE: 'true' } });
    const yolo = await run(t, srv, 'run_shell_command', shell('touch yolo.txt'), { settings: { approval_mode: 'YOLO' } });
    t.notOk(yolo.asked, 'YOLO runs it, as the operator chose');
    t.ok(existsSync(path.join(srv.workspace, 'yolo.txt')));
    const card: any = await (await fetch(`${srv.url}.well-known/agent-card.json`)).json();
    t.match(card.capabilities.extensions[0].params, { shell_sandbox: 'off', shell_unconfined_auto_approve: true });
  });
  await t.test('in the sandbox (the default here)', async (t) => {
    const srv = await startGeminiServer(t);
    const card: any = await (await fetch(`${srv.url}.well-known/agent-card.json`)).json();
    const mode = card.capabilities.extensions[0].params.shell_sandbox;
    t.ok(mode === 'bwrap' || mode === 'off', `the card states the mode (${mode})`);
  });
});
