/**
 * The shell line reader: what it reads, what it refuses, and — on hostile, random lines — that
 * every line it calls readable runs in bash exactly the commands and arguments it says.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { MAX_READABLE_LINE, readShellLine } from '../../../src/tools/shell/shell-line.js';

const argvs = (line: string): string[][] | string => {
  const r = readShellLine(line);
  return r.readable ? r.commands.map((c) => c.argv) : r.reason;
};

t.test('reads plain commands, quoting and separators', async (t) => {
  const cases: Array<[string, string[][]]> = [
    ['ls', [['ls']]],
    ['  ls -la  ', [['ls', '-la']]],
    [
      'git status && npm test',
      [
        ['git', 'status'],
        ['npm', 'test'],
      ],
    ],
    ['a || b; c | d & e\nf', [['a'], ['b'], ['c'], ['d'], ['e'], ['f']]],
    ['sleep 1 &', [['sleep', '1']]],
    ['a;', [['a']]],
    ['\n\na\n\n', [['a']]],
    ['a &&\nb', [['a'], ['b']]],
    ["echo 'a && b; $(c) `d` \\e'", [['echo', 'a && b; $(c) `d` \\e']]],
    ['echo "hello world" x', [['echo', 'hello world', 'x']]],
    ["echo ''", [['echo', '']]],
    ['git log HEAD~1 --format=%h', [['git', 'log', 'HEAD~1', '--format=%h']]],
    ['a --x=y,z:w @p ^q %r +s', [['a', '--x=y,z:w', '@p', '^q', '%r', '+s']]],
    [
      'npm test 2>&1 | tee log',
      [
        ['npm', 'test'],
        ['tee', 'log'],
      ],
    ],
    ['ls 2>/dev/null >/dev/null &>/dev/null 1>&2 <&0 >&-', [['ls']]],
    ['2>/dev/null git status', [['git', 'status']]],
    ['echo a2>/dev/null', [['echo', 'a2']]],
    ['echo 12 3', [['echo', '12', '3']]],
    ['cat </dev/null', [['cat']]],
    ['./build.sh', [['./build.sh']]],
  ];
  for (const [line, want] of cases) t.same(argvs(line), want, JSON.stringify(line));
});

t.test('refuses everything outside the plain subset, saying why', async (t) => {
  const cases: Array<[string, RegExp]> = [
    // the review's bypasses (issue: one "always" on echo let these run)
    ["x='$(touch PWNED)'; echo ${x@P}", /quote inside a word|assignment/],
    ["x='a[$(touch PWNED)]'; echo ${y[x]}", /quote inside a word|assignment/],
    ['echo ${x@P}', /`\$` expansion/],
    ['cat \\/outside/secret.txt', /backslash/],
    ['cat .\\./secret', /backslash/],
    ['cat .""./secret', /quote inside a word/],
    ['cat $HOME/secret', /`\$` expansion/],
    ['cat {.,}./secret', /brace/],
    ['echo $(id)', /`\$` expansion/],
    ['echo `id`', /backquote/],
    ['echo "$(id)"', /inside double quotes/],
    ['echo "`id`"', /inside double quotes/],
    ['echo "a\\"b"', /inside double quotes|quote inside/],
    ['echo "!x"', /inside double quotes/],
    ['echo $((1+2))', /`\$` expansion/],
    ["echo $'\\x41'", /`\$` expansion/],
    ['FOO=1 ls', /assignment/],
    ['a[1]=x', /glob/],
    ['PATH+=:. ls', /assignment/],
    ['ls *.ts', /glob/],
    ['ls a?', /glob/],
    ['ls [ab]', /glob/],
    ['cat ~/x', /home-directory/],
    ['cat ~', /home-directory/],
    ['echo a=~/x', /home-directory/],
    ['(cd x && ls)', /subshell/],
    ['f() { ls; }', /subshell|brace/],
    ['{ ls; }', /brace/],
    ['if true; then ls; fi', /keyword `if`/],
    ['for f in a; do ls; done', /keyword `for`/],
    ['time ls', /keyword `time`/],
    ['! ls', /`!`/],
    ['[[ -f x ]]', /glob/],
    ['ls # hidden', /comment/],
    ['echo a > f', /redirection `>` to or from a file/],
    ['echo a >> f', /redirection/],
    ['echo a &> f', /redirection/],
    ['echo a >& f', /redirection `>&` to a file/],
    ['echo a >| f', /redirection `>\|`/],
    ['cat < secret', /redirection `<`/],
    ['cat <<EOF\nx\nEOF', /here document/],
    ['diff <(ls) x', /process substitution/],
    ['tee >(wc)', /process substitution/],
    ['>/dev/null', /redirection without a command/],
    ['; ls', /empty command before `;`/],
    ['ls ;; x', /operator `;;`/],
    ['ls |& x', /operator `\|&`/],
    ['ls &&', /ending in `&&`/],
    ['ls &&\n\n', /ending in `&&`/],
    ['ls |\n', /ending in `\|`/],
    ['| ls', /empty command/],
    ['', /no command/],
    ['  \n ', /no command/],
    ["'' rm", /empty command name/],
    ["echo 'unterminated", /unterminated quote/],
    ["echo 'a\tb'", /control character inside quotes/],
    ["echo 'a\nb'", /control character inside quotes/],
    ['echo é', /non-ASCII/],
    ['echo a\u00a0b', /non-ASCII/],
    ['echo a\u0000b', /control character/],
    ['ls\rx', /control character/],
    ['ls trailing\\', /backslash/],
    ['git status \\\n --short', /backslash/],
    ['a=b', /assignment/],
    ['--x=y', /command name with `=`/],
    ['%1', /job specification/],
    ['echo 12>/dev/null', /descriptor 12/],
    ['ls 2>&12', /redirection `2>&` to a file/],
    ['x'.repeat(MAX_READABLE_LINE + 1), /longer than/],
  ];
  for (const [line, reason] of cases) {
    const r = readShellLine(line);
    t.match(r, { readable: false, reason }, JSON.stringify(line).slice(0, 60));
  }
});

/** Words to build hostile lines from; command names are never bash builtins or keywords. */
const VOCABULARY = [
  ...['c1', 'c2', 'zz', 'q9', 'x-y', 'a.b', 'c1', 'zz'],
  ...['-a', '-C/tmp', '--x=y', 'a=b', 'HEAD~1', 'x~', '%p', '@q', '^r', '+s', 'a,b', 'a:b', '..', './p', '/abs', '12'],
  ...["'a b'", '"c d"', "''", '""', "'$x'", '"a;b"', "'`c1`'", '"#"', "'\\'"],
  ...['$x', '${x@P}', '$(c1)', '`c1`', '\\/', '\\', '{a,b}', '*', '?', '[a]', '~', '~/x', '#', '!', '(', ')', "'", '"'],
  ...[';', ';', '&&', '||', '|', '&', '\n', '>', '>>', '<', '2>&1', '>/dev/null', '2>/dev/null', '<<x', '>(c1)', ';;'],
];

/** A deterministic pseudo-random sequence (mulberry32), so a failure names a reproducible line. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let x = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    x = (x + Math.imul(x ^ (x >>> 7), 61 | x)) ^ x;
    return ((x ^ (x >>> 14)) >>> 0) / 4294967296;
  };
}

function hostileLine(next: () => number): string {
  const n = 1 + Math.floor(next() * 7);
  let line = VOCABULARY[Math.floor(next() * 8)] ?? 'c1'; // start with a command name most of the time
  for (let i = 0; i < n; i++) {
    const word = VOCABULARY[Math.floor(next() * VOCABULARY.length)] ?? '';
    line += (next() < 0.8 ? ' ' : '') + word;
  }
  return line;
}

/**
 * Runs each line in bash (`eval` in a subshell, PATH empty, so every command is "not found"
 * and bash hands its argv to command_not_found_handle, which logs it) and returns, per line,
 * the argvs bash ran. `status` is what every command returns, so `&&` and `||` take both paths
 * over two runs. Files the lines create land in `dir`.
 */
function runInBash(bash: string, lines: string[], dir: string, status: 0 | 1): string[][][] {
  const log = path.join(dir, `argv-${status}.log`);
  const script = [
    // One write per command, so commands of a pipeline running at once do not interleave.
    `command_not_found_handle() { local r; printf -v r '%s\\037' "$@"; printf '%s\\036' "$r" >> ${log}; return ${status}; }`,
    'n=0',
    "while IFS= read -r -d '' line; do",
    `  printf '\\035' >> ${log}`,
    '  ( eval "$line"; wait ) </dev/null >/dev/null 2>&1',
    'done',
    'exit 0',
  ].join('\n');
  fs.writeFileSync(log, '');
  const r = spawnSync(bash, ['--norc', '--noprofile', '-c', script], {
    cwd: dir,
    input: lines.map((l) => `${l}\0`).join(''),
    env: { PATH: '/nonexistent', HOME: '/nonexistent-home' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (r.status !== 0) throw new Error(`bash failed: ${r.stderr}`);
  const perLine = fs.readFileSync(log, 'utf8').split('\x1d').slice(1);
  return perLine.map((chunk) =>
    chunk
      .split('\x1e')
      .slice(0, -1)
      .map((cmd) => cmd.split('\x1f').slice(0, -1)),
  );
}

const key = (argv: string[]) => JSON.stringify(argv);

t.test('hostile random lines: whatever the reader calls readable, bash runs exactly as read', async (t) => {
  const which = spawnSync('bash', ['-c', 'command -v bash'], { encoding: 'utf8' });
  const bash = which.stdout.trim();
  t.not(bash, '', 'bash is on the PATH (run_shell_command needs it too)');
  const next = random(0x5eed);
  const readable: Array<{ line: string; argv: string[][] }> = [];
  let tried = 0;
  while (readable.length < 400 && tried < 200_000) {
    tried++;
    const line = hostileLine(next);
    const r = readShellLine(line);
    if (r.readable) readable.push({ line, argv: r.commands.map((c) => c.argv) });
  }
  t.ok(readable.length >= 400, `${readable.length} readable lines out of ${tried} hostile ones`);
  const dir = t.testdir({});
  const lines = readable.map((r) => r.line);
  const runs = [runInBash(bash, lines, dir, 0), runInBash(bash, lines, dir, 1)];
  t.same(
    fs.readdirSync(dir).filter((f) => !f.startsWith('argv-')),
    [],
    'no readable line created a file (redirections go to /dev/null only)',
  );
  let bad = 0;
  readable.forEach(({ line, argv }, i) => {
    const ours = new Set(argv.map(key));
    const ran = runs.flatMap((run) => run[i] ?? []);
    // Safety: bash runs nothing the reader did not show.
    const unexpected = ran.filter((a) => !ours.has(key(a)));
    // Fidelity: every command the reader names runs on one of the two paths (a command named
    // by a path is not looked up by bash's not-found handler and fails, so such lines are left out).
    const seen = new Set(ran.map(key));
    const byPath = argv.some((a) => (a[0] ?? '').includes('/'));
    const missing = byPath ? [] : argv.filter((a) => !seen.has(key(a)));
    if (unexpected.length > 0 || missing.length > 0) {
      bad++;
      if (bad <= 10) t.fail(`${JSON.stringify(line)}: read ${JSON.stringify(argv)}, bash ran ${JSON.stringify(ran)}`);
    }
  });
  t.equal(bad, 0, `all ${readable.length} readable lines run as read`);
});
