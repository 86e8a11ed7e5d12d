import t from 'tap';
import { matchesCommandPrefix, rootCommands, splitCommands } from '../../../src/tools/shell/command-roots.js';

t.test('splitCommands splits on control operators and newlines', async (t) => {
  const cases: [string, string[]][] = [
    ['ls', ['ls']],
    ['  ls -la  ', ['ls -la']],
    ['a && b', ['a', 'b']],
    ['a || b', ['a', 'b']],
    ['a; b;c', ['a', 'b', 'c']],
    ['a | b|c', ['a', 'b', 'c']],
    ['a & b', ['a', 'b']],
    ['sleep 1 &', ['sleep 1']],
    ['a\nb\r\n', ['a', 'b']],
    ['a |& b', ['a', 'b']],
    ['a && b || c; d | e & f\ng', ['a', 'b', 'c', 'd', 'e', 'f', 'g']],
    ['', []],
    [' ;; && ', []],
  ];
  for (const [line, want] of cases) t.same(splitCommands(line), want, JSON.stringify(line));
});

t.test('splitCommands respects quotes and escapes', async (t) => {
  t.same(splitCommands(`echo 'a && b; c | d' && ls`), [`echo 'a && b; c | d'`, 'ls']);
  t.same(splitCommands(`echo "a && b; c | d" || ls`), [`echo "a && b; c | d"`, 'ls']);
  t.same(splitCommands(`echo "it's; fine" ; ls`), [`echo "it's; fine"`, 'ls']);
  t.same(splitCommands(`echo 'say "hi"; ok'`), [`echo 'say "hi"; ok'`]);
  t.same(splitCommands(`echo "a \\" ; b"`), [`echo "a \\" ; b"`]);
  t.same(splitCommands('echo a\\;b \\&\\& c'), ['echo a\\;b \\&\\& c']);
  t.same(splitCommands("echo 'a\\' ; b"), ["echo 'a\\'", 'b'], 'no escapes inside single quotes');
  t.same(splitCommands('git status \\\n  --short'), ['git status \\\n  --short'], 'line continuation is not a newline');
  t.same(splitCommands("echo 'line1\nline2'"), ["echo 'line1\nline2'"]);
});

t.test('splitCommands keeps redirections whole and drops comments', async (t) => {
  t.same(splitCommands('npm test 2>&1 | tee log'), ['npm test 2>&1', 'tee log']);
  t.same(splitCommands('cmd >&2'), ['cmd >&2']);
  t.same(splitCommands('cmd <&3'), ['cmd <&3']);
  t.same(splitCommands('cmd &> out.log && next'), ['cmd &> out.log', 'next']);
  t.same(splitCommands('cmd &>> out.log'), ['cmd &>> out.log']);
  t.same(splitCommands('cmd >| out'), ['cmd >| out']);
  t.same(splitCommands('git status # && rm -rf x'), ['git status']);
  t.same(splitCommands('# only a comment\nls'), ['ls']);
  t.same(splitCommands('echo a#b; echo $#'), ['echo a#b', 'echo $#'], '# inside a word is not a comment');
  t.same(splitCommands(`echo '# not a comment'; ls`), [`echo '# not a comment'`, 'ls']);
});

t.test('rootCommands names the command of each segment', async (t) => {
  const cases: [string, string[]][] = [
    ['ls -la', ['ls']],
    ['git status && npm test', ['git', 'npm']],
    ['cat a | grep x | wc -l', ['cat', 'grep', 'wc']],
    ['/usr/bin/git log', ['git']],
    ['./scripts/build.sh', ['./scripts/build.sh']],
    ['bin/tool --x', ['bin/tool']],
    ['FOO=1 BAR="a b" npm run build', ['npm']],
    ['PATH+=:/x arr[1]=y make', ['make']],
    ['FOO=1', []],
    ['FOO=1; ls', ['ls']],
    ['"git" status', ['git']],
    ["'/usr/bin/env' node", ['env']],
    ['g\\it status', ['git']],
    ['npm test 2>&1 | tee out.log', ['npm', 'tee']],
    ['echo "$(date)"x', undefined as unknown as string[]],
    ["echo '$(date)'", ['echo']],
    ['echo "`date`"', undefined as unknown as string[]],
    ["echo '`date`'", ['echo']],
    ['', []],
    ['[ -f x ] && echo y', ['[', 'echo']],
  ];
  for (const [line, want] of cases) t.same(rootCommands(line), want, JSON.stringify(line));
});

t.test('rootCommands is undefined when commands may hide', async (t) => {
  const unsafe = [
    'echo $(rm -rf x)',
    'echo "$(rm -rf x)"',
    'echo `rm -rf x`',
    'ls && echo "`whoami`"',
    'diff <(ls a) <(ls b)',
    'tee >(wc -l)',
    'X=$(cat f) make',
    'echo $((1 + 2))',
    '(cd sub && rm -rf x)',
    'f() { rm -rf x; }; f',
    'a=(1 2 3)',
    '{ rm -rf x; }',
    'if true; then rm -rf x; fi',
    'for f in *; do rm "$f"; done',
    'while true; do :; done',
    '! git diff --quiet',
    'time make',
    '[[ -f x ]] && ls',
    '$CMD --flag',
    '${CMD} --flag',
    '~/bin/tool',
    'g?t status',
    '/usr/bin/*',
    '>out echo hi',
    '2>/dev/null git status',
    "echo 'unterminated",
    'echo "unterminated',
    'echo trailing\\',
    "'' rm",
  ];
  for (const line of unsafe) t.equal(rootCommands(line), undefined, JSON.stringify(line));
});

t.test('matchesCommandPrefix: every segment starts with the prefix on word boundaries', async (t) => {
  const yes: [string, string][] = [
    ['git status', 'git status'],
    ['git status --short', 'git status'],
    ['git  status   -s', 'git status'],
    ['git "status" -s', 'git status'],
    ['git status && git status -s', 'git status'],
    ['npm test', 'npm'],
    ['npm test 2>&1', 'npm test'],
    ['git status # comment && rm -rf x', 'git status'],
    ['git log --format="%h; %s"', 'git log'],
  ];
  for (const [command, prefix] of yes) t.ok(matchesCommandPrefix(command, prefix), `${command} ~ ${prefix}`);
  const no: [string, string][] = [
    ['git statusx', 'git status'],
    ['git', 'git status'],
    ['gitx status', 'git'],
    ['git status && rm -rf x', 'git status'],
    ['git status; rm -rf x', 'git status'],
    ['git status | sh', 'git status'],
    ['git status & rm -rf x', 'git status'],
    ['git status\nrm -rf x', 'git status'],
    ['git status $(rm -rf x)', 'git status'],
    ['git status `rm -rf x`', 'git status'],
    ['FOO=1 git status', 'git status'],
    ['/usr/bin/git status', 'git status'],
    ['git status "unterminated', 'git status'],
    ['', 'git'],
    ['git status', ''],
    ['git status', '   '],
    ['git status', 'git status && ls'],
    ['git status', 'git $(x)'],
    ['if git status; then ls; fi', 'git status'],
  ];
  for (const [command, prefix] of no) t.notOk(matchesCommandPrefix(command, prefix), `${JSON.stringify(command)} !~ ${prefix}`);
});
