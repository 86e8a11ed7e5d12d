/**
 * The terminal client against the real server with the scripted model: in process (its
 * streams are PassThroughs, so every path is covered), and as the real program over pipes
 * (`node src/cli/devtool-a2a.ts chat URL`): approve → the file is written; n + feedback →
 * CANCELLED; --resume of a task paused by a process that has exited; Ctrl-C detaches.
 */
import t from 'tap';
import { spawn } from 'node:child_process';
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { PassThrough, Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { main, USAGE } from '../../src/cli/chat.js';
import type { ChatIo } from '../../src/cli/chat.js';
import { makeStyle, Renderer } from '../../src/cli/render.js';
import { A2AConnection, emptyView } from '../../src/client/index.js';
import type { TaskView, ToolCardView } from '../../src/client/index.js';
import { CLIENT_SCRIPT } from '../support/client-streams.js';
import { freePort } from '../support/process.js';
import { startServer } from '../support/server.js';

const REPO = fileURLToPath(new URL('../../', import.meta.url));
const ESC = '\u001b[';

interface Run {
  code: number;
  out: string;
  err: string;
}

/** Starts `devtool-a2a <argv>` in process; `input` is the whole stdin, or a stream the test writes. */
function startChat(argv: string[], input: string | PassThrough, opts: Partial<ChatIo> & { onOutput?: (out: string) => void } = {}) {
  let out = '';
  let err = '';
  let interrupt: (() => void) | undefined;
  const io: ChatIo = {
    input: typeof input === 'string' ? Readable.from([input]) : input,
    write: (s) => {
      out += s;
      opts.onOutput?.(out);
    },
    error: (s) => (err += s),
    color: false,
    terminal: false,
    onInterrupt: (handler) => {
      interrupt = handler;
      return () => (interrupt = undefined);
    },
    ...opts,
  };
  const done = main(argv, io).then((code): Run => ({ code, out, err }));
  return { done, interrupt: () => interrupt?.() };
}

const chat = (argv: string[], input: string | PassThrough, opts: Partial<ChatIo> = {}) => startChat(argv, input, opts).done;

/** Resolves when the output so far matches `pattern`. */
function outputMatching(pattern: RegExp): { onOutput: (out: string) => void; seen: Promise<void> } {
  let resolve!: () => void;
  const seen = new Promise<void>((r) => (resolve = r));
  return { onOutput: (out) => pattern.test(out) && resolve(), seen };
}

const resumeId = (out: string) => /--resume (\S+)/.exec(out)?.[1];

t.test('devtool-a2a chat, in process', async (t) => {
  const srv = await startServer(t, { script: CLIENT_SCRIPT });
  const file = (name: string) => path.join(srv.workspace, name);
  const base = ['chat', srv.url];

  t.test('approve: the card, its diff, the run, the answer; plain text over a pipe', async (t) => {
    const run = await chat(base, 'write a file\ny\n');
    t.equal(run.code, 0);
    t.equal(readFileSync(file('hello.txt'), 'utf8'), 'hello world\n');
    t.match(run.out, /\[task \S+ in context \S+\]\n> write a file\n\* write_file Write hello\.txt \[tc_\S+\]\n {2}write_file PENDING\n/);
    t.match(run.out, /\n {4}\+hello world\n/);
    t.match(run.out, /Allow write_file \(Write hello\.txt\)\? \[y\]es once, \[a\]lways, \[e\]dit, \[n\]o \+ feedback: \n/);
    t.match(run.out, / {2}write_file EXECUTING\n {2}write_file SUCCEEDED\nWrote hello\.txt\.\n\[completed\]\n$/);
    t.notOk(run.out.includes(ESC), 'no ANSI codes');
    t.notOk(resumeId(run.out), 'a completed task needs no resume hint');
  });

  t.test('n + feedback: the call is CANCELLED, the file not written', async (t) => {
    const run = await chat([...base, '--workspace', t.testdir({})], 'write not this\nn\ntoo risky\n');
    t.equal(run.code, 0);
    t.match(run.out, /Feedback for the model \(an empty line for none\):\n/);
    t.match(run.out, / {2}write_file CANCELLED\n/);
    t.match(run.out, /> answer cancel: too risky\n/);
  });

  t.test('edit: the replacement content up to a line "."; unknown answers ask again', async (t) => {
    const dir = t.testdir({});
    const run = await chat([...base, '--workspace', dir], 'write edited\nmaybe\ne\nline A\nline B\n.\n');
    t.match(run.out, /Answer one of: y, a, e, n\n/);
    t.match(run.out, /Enter the new content of \S+hello\.txt, then a line with a single "\.":\n/);
    t.equal(readFileSync(path.join(dir, 'hello.txt'), 'utf8'), 'line A\nline B\n');
    const cut = await chat([...base, '--workspace', dir], 'write unfinished\ne\nhalf a line\n');
    t.ok(resumeId(cut.out), 'the input ended inside the content: nothing was sent, the task waits');
  });

  t.test('--resume: a task paused by an earlier chat is replayed and answered', async (t) => {
    const dir = t.testdir({});
    const first = await chat([...base, '--workspace', dir], 'write later\n');
    t.equal(first.code, 0);
    const id = resumeId(first.out);
    t.ok(id, 'the first chat says how to come back');
    t.match(first.out, /The task goes on \(input-required\)\. To come back to it: devtool-a2a chat \S+ --resume \S+\n$/);
    t.notOk(existsSync(path.join(dir, 'hello.txt')));
    const second = await chat([...base, '--resume', id as string], 'y\n');
    t.equal(second.code, 0);
    t.match(second.out, /> write later\n\* write_file/, 'the conversation is redrawn');
    t.match(second.out, /write_file SUCCEEDED\nWrote hello\.txt\.\n\[completed\]\n/);
    t.equal(readFileSync(path.join(dir, 'hello.txt'), 'utf8'), 'hello world\n');
    const unknown = await chat([...base, '--resume', 'no-such-task'], '');
    t.equal(unknown.code, 1);
    t.match(unknown.out, /error: .*\(-32001\)/);
  });

  t.test('live shell output, then the next prompt continues the conversation', async (t) => {
    const run = await chat([...base, '--workspace', t.testdir({})], 'shell slow\ny\nhello again\n');
    t.match(run.out, / {4}\| line1\n[\s\S]* {4}\| line5\n/);
    t.match(run.out, /You said: hello again/);
    t.match(run.out, /\$ for i in 1 2 3 4 5/);
  });

  t.test('Ctrl-C detaches without cancelling and says how to resume', async (t) => {
    const input = new PassThrough();
    const asked = outputMatching(/Allow run_shell_command/);
    const running = outputMatching(/run_shell_command EXECUTING/);
    const run = startChat(base, input, {
      onOutput: (out) => {
        asked.onOutput(out);
        running.onOutput(out);
      },
    });
    input.write('shell hang\n');
    await asked.seen;
    input.write('y\n');
    await running.seen;
    run.interrupt();
    const { code, out } = await run.done;
    t.equal(code, 130);
    t.match(
      out,
      /Detached; the task was not cancelled\.\nThe task goes on \(working\)\. To come back to it: devtool-a2a chat \S+ --resume \S+\n$/,
    );
    const connection = new A2AConnection({ baseUrl: srv.url });
    const id = resumeId(out) as string;
    t.equal((await connection.getTask(id)).status.state, 'working', 'the task runs on');
    await connection.cancel(id);
  });

  t.test('colours on a terminal; the prompt; $EDITOR edits the proposal', async (t) => {
    const dir = t.testdir({});
    const editor = path.join(t.testdir({}), 'editor.sh');
    writeFileSync(editor, '#!/bin/sh\nprintf "from the editor, was: %s" "$(cat "$1")" > "$1"\n');
    chmodSync(editor, 0o755);
    const run = await chat([...base, '--workspace', dir], 'write in colour\ne\n', { color: true, terminal: true, editor });
    t.match(run.out, `    ${ESC}32m+hello world${ESC}0m\n`);
    t.match(run.out, `  write_file ${ESC}33mPENDING${ESC}0m\n`);
    t.match(run.out, /^>\n/m, 'a prompt');
    t.notMatch(run.out, /> write in colour/, 'a terminal shows what the user typed: no echo');
    t.equal(readFileSync(path.join(dir, 'hello.txt'), 'utf8'), 'from the editor, was: hello world');
  });

  t.test('a server that cannot be reached: the error, and the chat goes on', async (t) => {
    const port = await freePort();
    const run = await chat(['chat', `http://127.0.0.1:${port}`], 'hello\nhello\n');
    t.equal(run.code, 0);
    t.equal(run.out.match(/error: cannot reach/g)?.length, 2);
  });

  t.test('--context and --api-key reach the server', async (t) => {
    const first = await chat(base, 'hello one\n');
    const context = /in context (\S+)\]/.exec(first.out)?.[1] as string;
    const seen: string[] = [];
    const spy: typeof fetch = (input, init) => {
      seen.push(JSON.stringify(init?.headers ?? {}));
      return fetch(input, init);
    };
    const second = await chat([...base, '--context', context, '--api-key', 'k-0123456789abcdef-k'], 'hello two\n', { fetch: spy });
    t.match(second.out, `in context ${context}]`);
    t.match(seen[0], /"x-api-key":"k-0123456789abcdef-k"/);
    const third = await chat([...base, '--token', 'tok-0123456789abcdef'], 'hello three\n', { fetch: spy });
    t.equal(third.code, 0);
    t.match(seen.at(-1), /"authorization":"Bearer tok-0123456789abcdef"/);
  });
});

t.test('devtool-a2a chat: /restore undoes a checkpointed edit through its own card; /restore list', async (t) => {
  const srv = await startServer(t, { script: CLIENT_SCRIPT, env: { CHECKPOINTING: 'true' } });
  const file = path.join(srv.workspace, 'hello.txt');
  writeFileSync(file, 'mine\n');
  const input = new PassThrough();
  const undoHint = outputMatching(/undo: \/restore (\S+)\)/);
  let out = '';
  const run = startChat(['chat', srv.url], input, {
    onOutput: (text) => {
      out = text;
      undoHint.onOutput(text);
    },
  });
  input.write('write a file\ny\n');
  await undoHint.seen;
  t.equal(readFileSync(file, 'utf8'), 'hello world\n');
  const name = /undo: \/restore (\S+)\)/.exec(out)?.[1] ?? '';
  t.match(name, /-hello\.txt-write_file$/, 'a succeeded edit names its checkpoint');
  input.write(`/restore list\n/restore ${name}\ny\n`);
  input.end();
  const done = await run.done;
  t.equal(done.code, 0);
  t.match(done.out, new RegExp(`${name} \\(tool_call_id tc_\\S+\\): hello\\.txt`), '/restore list');
  t.match(done.out, /Allow restore_file \(Restore hello\.txt from checkpoint/, 'the restore asks, with its card');
  t.match(done.out, /\n {4}-hello world\n {4}\+mine\n/, 'and its diff');
  t.equal(readFileSync(file, 'utf8'), 'mine\n', 'restored');
});

t.test('usage', async (t) => {
  const help = await chat(['--help'], '');
  t.equal(help.code, 0);
  t.equal(help.out, USAGE);
  for (const argv of [[], ['talk'], ['chat', 'a', 'b'], ['chat', '--nope'], ['chat', '--api-key', 'a', '--token', 'b']]) {
    const run = await chat(argv, '');
    t.equal(run.code, 2, argv.join(' '));
    t.match(run.err, /Usage: devtool-a2a chat/);
  }
});

t.test('the renderer: states, reconnection, failures, results', async (t) => {
  let out = '';
  const renderer = new Renderer((s) => (out += s), makeStyle(false), true);
  const card = (over: Partial<ToolCardView>): ToolCardView => ({
    id: 'tc1',
    toolName: 'run_shell_command',
    status: 'PENDING',
    history: [{ status: 'PENDING' }],
    args: { command: 'ls', long: 'x'.repeat(80) },
    options: [],
    waiting: false,
    raw: {},
    ...over,
  });
  const view = (over: Partial<TaskView>): TaskView => ({ ...emptyView(), taskId: 't1', contextId: 'c1', lastEventId: '1', ...over });
  renderer.update(
    view({ state: 'working', connection: 'live', cards: [card({})], transcript: [{ role: 'agent', kind: 'card', cardId: 'tc1' }] }),
  );
  t.match(out, /\* run_shell_command command="ls" long="x{57}…" \[tc1\]\n/);
  renderer.update(view({ state: 'working', connection: 'reconnecting' }));
  t.match(out, /\[connection lost; reconnecting…\]\n$/);
  renderer.update(view({ state: 'working', connection: 'live' }));
  t.match(out, /\[reconnected\]\n$/);
  renderer.update(view({ cards: [card({ id: 'tc3', waiting: true, diff: { unified: '', newContent: '' } })] }));
  t.match(out, / {4}\(no change\)\n$/, 'an edit that changes nothing');
  const long = Array.from({ length: 20 }, (_, i) => `row${i}`).join('\n');
  renderer.update(
    view({ cards: [card({ status: 'SUCCEEDED', history: [{ status: 'PENDING' }, { status: 'SUCCEEDED' }], result: { text: long } })] }),
  );
  t.match(out, / {4}row11\n {4}… \(8 more lines\)\n$/);
  renderer.update(
    view({
      cards: [
        card({
          id: 'tc2',
          status: 'FAILED',
          history: [{ status: 'FAILED' }],
          failureReason: 'boom',
          mcp: { server: 'gh', tool: 'issue' },
          description: 'd',
        }),
      ],
    }),
  );
  t.match(out, /\* run_shell_command \(gh\/issue\) d \[tc2\]\n {2}run_shell_command FAILED\n {4}! boom\n$/);
  for (const [state, text] of [
    ['failed', /\[failed\] it broke\n$/],
    ['canceled', /\[canceled\]\n$/],
    ['auth-required', /\[auth-required\] needs an approver\n$/],
  ] as const) {
    renderer.update(view({ state, error: 'it broke', statusMessage: 'needs an approver' }));
    t.match(out, text, state);
  }
  renderer.update(view({ transcript: [{ role: 'user', kind: 'answer', toolCallId: 'tc1', optionId: 'proceed_once' }] }));
  t.match(out, /> answer proceed_once\n$/);
  const before = out;
  renderer.update({ ...view({ state: 'completed', text: 'more' }), lastEventId: undefined });
  t.equal(out, before, 'a view from a snapshot alone waits for the replay');
});

t.test('the program over pipes', async (t) => {
  const srv = await startServer(t, { script: CLIENT_SCRIPT });
  /** Runs the real entry point; `input` is written and stdin closed, unless `keepOpen`. */
  function program(args: string[], input: string, keepOpen = false) {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/devtool-a2a.ts', 'chat', srv.url, ...args], {
      cwd: REPO,
      // see spawnServer: tsx's source maps do not merge with the runner's coverage
      env: { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0', NO_COLOR: '' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stderr.setEncoding('utf8').on('data', (s: string) => (out += s));
    child.stdin.write(input);
    if (!keepOpen) child.stdin.end();
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    t.teardown(() => child.kill('SIGKILL'));
    return { child, exited, output: () => out };
  }
  const until = async (p: ReturnType<typeof program>, pattern: RegExp) => {
    while (!pattern.test(p.output())) await new Promise((r) => p.child.stdout.once('data', r));
  };

  const dir = t.testdir({});
  const first = program(['--workspace', dir], 'write over a pipe\n');
  t.equal(await first.exited, 0);
  const id = resumeId(first.output());
  t.ok(id, `paused: ${first.output()}`);
  t.notOk(first.output().includes(ESC), 'plain text');
  const second = program(['--resume', id as string], 'y\n');
  t.equal(await second.exited, 0);
  t.match(second.output(), /write_file SUCCEEDED/);
  t.equal(readFileSync(path.join(dir, 'hello.txt'), 'utf8'), 'hello world\n', 'approved after the first process exited');

  const declined = program(['--workspace', dir], 'two writes\nn\nnot a\nn\n\n');
  t.equal(await declined.exited, 0);
  t.equal(declined.output().match(/write_file CANCELLED/g)?.length, 2, declined.output());
  t.match(declined.output(), /Both answered\./);
  t.notOk(existsSync(path.join(dir, 'a.txt')));

  t.test(
    'under a pseudo-terminal: colours, the prompt, the typed lines not echoed by the client',
    { skip: existsSync('/usr/bin/script') ? false : 'util-linux script is missing' },
    async (t) => {
      const ws = t.testdir({});
      const child = spawn(
        '/usr/bin/script',
        ['-qfec', `${process.execPath} --import tsx src/cli/devtool-a2a.ts chat ${srv.url} --workspace ${ws}`, '/dev/null'],
        {
          cwd: REPO,
          env: { ...process.env, _TAPJS_PROCESSINFO_COVERAGE_: '0', NO_COLOR: '', TERM: 'xterm' },
          stdio: ['pipe', 'pipe', 'pipe'],
        },
      );
      t.teardown(() => child.kill('SIGKILL'));
      let out = '';
      child.stdout.setEncoding('utf8').on('data', (s: string) => (out += s));
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const until = async (pattern: RegExp) => {
        while (!pattern.test(out)) await new Promise((r) => child.stdout.once('data', r));
      };
      await until(/^>/m);
      child.stdin.write('write on a terminal\r');
      await until(/Allow write_file/);
      child.stdin.write('y\r');
      await until(/\[completed\]/);
      child.stdin.end('\u0004');
      t.equal(await exited, 0);
      t.match(out, `write_file ${ESC}33mPENDING${ESC}0m`);
      t.match(out, `    ${ESC}32m+hello world${ESC}0m`);
      t.equal(readFileSync(path.join(ws, 'hello.txt'), 'utf8'), 'hello world\n');
    },
  );

  const hang = program([], 'shell hang\ny\n', true);
  await until(hang, /run_shell_command EXECUTING/);
  hang.child.kill('SIGINT');
  t.equal(await hang.exited, 130);
  t.match(hang.output(), /Detached; the task was not cancelled\./);
  await new A2AConnection({ baseUrl: srv.url }).cancel(resumeId(hang.output()) as string);
});
