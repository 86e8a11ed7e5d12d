import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { RunShellCommandTool } from '../../../src/tools/shell/run-shell-command.js';
import type { ToolContext, ToolResult } from '../../../src/tools/tool.js';

type Fixtures = Pick<typeof t, 'testdir' | 'fixture'>;

function setup(t: Fixtures): { ws: string; ctx: ToolContext; live: string[]; abort: AbortController } {
  const root = fs.realpathSync(
    t.testdir({ ws: { sub: { 'f.txt': 'hi\n' }, 'out-link': t.fixture('symlink', '../outside') }, outside: {} }),
  );
  const ws = path.join(root, 'ws');
  const live: string[] = [];
  const abort = new AbortController();
  return { ws, live, abort, ctx: { workspace: ws, signal: abort.signal, onLiveOutput: (s) => live.push(s) } };
}

/** Live (non-zombie) processes whose process group is `pgid`, read from /proc. */
function liveGroupMembers(pgid: number): number[] {
  const found: number[] = [];
  for (const entry of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = fs.readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // state ppid pgrp ...
    if (fields[0] !== 'Z' && Number(fields[2]) === pgid) found.push(Number(entry));
  }
  return found;
}

function isAlive(pid: number): boolean {
  try {
    return !fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].startsWith('Z');
  } catch {
    return false;
  }
}

/** Polls briefly: a signalled process may take a moment to finish dying. */
async function gone(pids: number[], pgid?: number): Promise<boolean> {
  for (let i = 0; i < 20; i++) {
    if (pids.every((p) => !isAlive(p)) && (pgid === undefined || liveGroupMembers(pgid).length === 0)) return true;
    await new Promise((r) => setTimeout(r, 50));
  }
  return false;
}

function pidsIn(text: string, label: string): number[] {
  return [...text.matchAll(new RegExp(`${label}:(\\d+)`, 'g'))].map((m) => Number(m[1]));
}

const tool = new RunShellCommandTool();

t.test('shape, validate, describe, propose', async (t) => {
  const { ws } = setup(t);
  t.equal(tool.name, 'run_shell_command');
  t.equal(tool.kind, 'execute');
  t.same(tool.parameters.required, ['command']);
  t.same(await tool.validate({ command: 'ls', extra: 1 }, { workspace: ws }), { ok: true, args: { command: 'ls' } });
  t.same(await tool.validate({ command: 'ls', description: 'list', dir_path: 'sub' }, { workspace: ws }), {
    ok: true,
    args: { command: 'ls', description: 'list', dir_path: 'sub' },
  });
  t.match(await tool.validate({}, { workspace: ws }), { ok: false, error: { type: 'invalid_argument', message: /command/ } });
  t.match(await tool.validate({ command: '  ' }, { workspace: ws }), {
    ok: false,
    error: { type: 'invalid_argument', message: /command/ },
  });
  t.match(await tool.validate({ command: 'ls', description: 3 }, { workspace: ws }), {
    ok: false,
    error: { type: 'invalid_argument', message: /description/ },
  });
  t.match(await tool.validate({ command: 'ls', dir_path: 5 }, { workspace: ws }), {
    ok: false,
    error: { type: 'invalid_argument', message: /dir_path/ },
  });
  t.match(await tool.validate({ command: 'ls', dir_path: '../' }, { workspace: ws }), {
    ok: false,
    error: { type: 'path_outside_workspace', message: /dir_path "\.\.\/"/ },
  });
  t.equal(tool.describe({ command: 'ls', description: 'list', dir_path: 'sub' }), 'ls [in sub] (list)');
  t.same(await tool.propose({ command: 'ls' }, { workspace: ws }), { type: 'execute', command: 'ls', workingDirectory: ws });
  t.same(await tool.propose({ command: 'ls', dir_path: 'sub' }, { workspace: ws }), {
    type: 'execute',
    command: 'ls',
    workingDirectory: path.join(ws, 'sub'),
  });
});

t.test('success returns combined output and the exit code', async (t) => {
  const { ctx, live } = setup(t);
  const r = await tool.run({ command: 'echo out; echo err >&2; pwd' }, ctx);
  t.notOk(r.isError);
  if (r.isError) return;
  t.match(r.llmContent, /out\nerr\n/);
  t.match(r.llmContent, new RegExp(`${ctx.workspace}\n`));
  t.match(r.llmContent, /Exit Code: 0/);
  t.equal(r.display.type, 'text');
  t.match(r.display.type === 'text' ? r.display.text : '', /out\nerr\n[^]*exit code 0/);
  t.match(live[live.length - 1], /out\nerr\n/, 'a final live-output call with everything');
});

t.test('runs in dir_path and ignores stdin', async (t) => {
  const { ctx } = setup(t);
  const r = await tool.run({ command: 'cat f.txt; cat; echo "stdin done"', dir_path: 'sub' }, ctx);
  t.match(r, { llmContent: /hi\nstdin done/ });
});

t.test('dir_path outside the workspace or missing', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ command: 'pwd', dir_path: '..' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ command: 'pwd', dir_path: '/tmp' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ command: 'pwd', dir_path: 'out-link' }, ctx), { isError: true, error: { type: 'path_outside_workspace' } });
  t.match(await tool.run({ command: 'pwd', dir_path: 'nope' }, ctx), {
    isError: true,
    error: { type: 'dir_not_found', message: /Directory not found: nope/ },
  });
});

t.test('non-zero exit says the code and the last lines', async (t) => {
  const { ctx } = setup(t);
  const r = await tool.run({ command: 'for i in $(seq 1 30); do echo line$i; done; echo "no such thing" >&2; exit 2' }, ctx);
  t.match(r, {
    isError: true,
    error: { type: 'shell_exit_nonzero', statusCode: 2, message: /^Command exited with code 2:\n[^]*line30\nno such thing$/ },
    liveOutput: /line1\n/,
    llmContent: /Exit Code: 2/,
  });
  if (r.isError) {
    t.notMatch(r.error.message, /line11\n/, 'only the tail (~20 lines) is in the message');
    t.match(r.error.message, /line12\n/);
  }
  t.match(await tool.run({ command: 'exit 3' }, ctx), {
    isError: true,
    error: { message: 'Command exited with code 3 (no output)', statusCode: 3 },
  });
});

t.test('a bash syntax error is reported with its message', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ command: 'echo (' }, ctx), {
    isError: true,
    error: { type: 'shell_exit_nonzero', statusCode: 2, message: /syntax error/ },
  });
});

t.test('killed by a signal', async (t) => {
  const { ctx } = setup(t);
  t.match(await tool.run({ command: 'echo bye; kill -KILL $$' }, ctx), {
    isError: true,
    error: { type: 'shell_signal', message: /signal SIGKILL:\nbye/ },
  });
});

t.test('live output grows and is throttled', async (t) => {
  const { ctx, live } = setup(t);
  const r = await tool.run({ command: 'echo one; sleep 0.3; echo two; sleep 0.3; echo three' }, ctx);
  t.notOk(r.isError);
  t.ok(live.length >= 3, `called ${live.length} times`);
  for (let i = 1; i < live.length; i++) t.ok(live[i].startsWith(live[i - 1]), 'each call extends the previous text');
  t.equal(live[0], 'one\n');
  t.equal(live[live.length - 1], 'one\ntwo\nthree\n');

  const burst: string[] = [];
  const start = Date.now();
  await tool.run({ command: 'for i in $(seq 1 40); do echo $i; sleep 0.01; done' }, { ...ctx, onLiveOutput: (s) => burst.push(s) });
  const elapsed = Date.now() - start;
  t.ok(burst.length <= Math.ceil(elapsed / 50) + 2, `${burst.length} calls in ${elapsed} ms`);
  t.match(burst[burst.length - 1], /\n40\n$/);
});

t.test('output cap keeps the tail with a marker', async (t) => {
  const { ctx } = setup(t);
  const small = new RunShellCommandTool({ maxOutputBytes: 1000 });
  const r = await small.run({ command: 'seq 1 2000' }, ctx);
  t.notOk(r.isError);
  if (r.isError) return;
  const all = Array.from({ length: 2000 }, (_, i) => `${i + 1}\n`).join('');
  t.match(r.llmContent, `[... ${all.length - 1000} bytes truncated: output is capped at its last 1000 bytes ...]\n`);
  t.ok(r.llmContent.includes(all.slice(-1000)), 'keeps the last 1000 bytes');
  t.notMatch(r.llmContent, /\n1\n2\n3\n/);
  t.match(r.llmContent, /1999\n2000\n/);
});

t.test('timeout kills the whole process group', async (t) => {
  const { ctx } = setup(t);
  const quick = new RunShellCommandTool({ timeoutMs: 300 });
  const start = Date.now();
  const r = await quick.run({ command: 'echo "pg:$$"; sleep 30 & echo "bg:$!"; sleep 30; wait' }, ctx);
  t.ok(Date.now() - start < 2000, 'returns promptly');
  t.match(r, { isError: true, error: { type: 'shell_timeout', message: /timed out after 300 ms[^]*pg:/ } });
  const text = r.isError ? (r.liveOutput ?? '') : '';
  const [pgid] = pidsIn(text, 'pg');
  const [bg] = pidsIn(text, 'bg');
  t.ok(pgid > 0 && bg > 0);
  t.ok(await gone([bg], pgid), 'no process left in the group');
});

t.test('timeout escalates to SIGKILL for a group that ignores SIGTERM', async (t) => {
  const { ctx } = setup(t);
  const quick = new RunShellCommandTool({ timeoutMs: 200 });
  const start = Date.now();
  const r = await quick.run({ command: 'trap "" TERM; echo "pg:$$"; sleep 30; sleep 30' }, ctx);
  const elapsed = Date.now() - start;
  t.ok(elapsed >= 2000 && elapsed < 5000, `killed after the grace period (${elapsed} ms)`);
  t.match(r, { isError: true, error: { type: 'shell_timeout' } });
  const [pgid] = pidsIn(r.isError ? (r.liveOutput ?? '') : '', 'pg');
  t.ok(pgid > 0);
  t.ok(await gone([], pgid), 'no process left in the group');
});

t.test('abort mid-command kills the child process group', async (t) => {
  const { ctx, abort } = setup(t);
  let seen = '';
  const running = tool.run(
    { command: 'echo "pg:$$"; sleep 30 & echo "bg:$!"; sleep 30 & echo "fg:$!"; wait' },
    {
      ...ctx,
      onLiveOutput: (s) => {
        seen = s;
        if (s.includes('fg:')) abort.abort();
      },
    },
  );
  const r: ToolResult = await running;
  t.match(r, { isError: true, error: { type: 'cancelled', message: /cancelled/ } });
  const [pgid] = pidsIn(seen, 'pg');
  const pids = [...pidsIn(seen, 'bg'), ...pidsIn(seen, 'fg')];
  t.equal(pids.length, 2);
  t.ok(pgid > 0);
  t.ok(await gone(pids, pgid), `pids ${pids.join(', ')} and group ${pgid} are gone`);
});

t.test('already-aborted signal does not start the command', async (t) => {
  const { ws, ctx, abort } = setup(t);
  abort.abort();
  t.match(await tool.run({ command: 'touch started' }, ctx), { isError: true, error: { type: 'cancelled' } });
  t.notOk(fs.existsSync(path.join(ws, 'started')));
});

t.test('background processes do not outlive a successful command', async (t) => {
  const { ctx } = setup(t);
  const start = Date.now();
  const r = await tool.run({ command: 'sleep 30 >/dev/null 2>&1 & echo "bg:$!"; sleep 30 & echo "bg:$!"; echo done' }, ctx);
  t.ok(Date.now() - start < 5000, 'does not wait for background processes');
  t.match(r, { llmContent: /done/ });
  const pids = pidsIn(r.isError ? '' : r.llmContent, 'bg');
  t.equal(pids.length, 2);
  t.ok(await gone(pids), `pids ${pids.join(', ')} are gone`);
});
