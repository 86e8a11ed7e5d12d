/**
 * The grant catalogue: the commands an "Allow always" may cover, and per command the options
 * known neither to run other code nor to write outside the workspace. It is an allow-list: a
 * command, git subcommand or option that is not listed here is never covered by a grant (the
 * line asks), however harmless it looks. Options are matched exactly as written here:
 *
 * - long options only in full (`--compress-prog` is refused: GNU getopt would take it for
 *   `--compress-program`), with their value glued (`--key=2`) or in the next word;
 * - short options alone or combined (`-nr`), a value glued (`-n5`) or in the next word;
 * - everything after `--` is an operand; every word (operand or value) is still judged as a
 *   path by shell-rules.ts (inside the workspace, no server file, no tool-configuration file);
 * - no option that follows symlinks while walking a tree (`grep -R`, `rg -L`, `find -L`, `tree -l`,
 *   `ls -L`): a link inside the workspace would lead the walk out of it.
 *
 * Test runners, linters, bundlers, package scripts, interpreters and build tools load code the
 * model can write: none of them is listed, so none is ever "always" (an operator may still name
 * one in an `allowed_tools` prefix). docs/grant-catalogue.md is generated from this table and a
 * test keeps the two equal.
 */

/** What one catalogued command accepts. */
export interface CommandSpec {
  /** Options without a value. */
  readonly flags?: readonly string[];
  /** Options that take a value: the next word, or glued (`-n5`, `--lines=5`). */
  readonly valued?: readonly string[];
  /** Long options whose value is optional and only ever glued (`--porcelain=v2`, `--color`). */
  readonly optionalValue?: readonly string[];
  /** `-5` style counts (`head -5`). */
  readonly numeric?: boolean;
  /** Options are whole words starting with one dash (`find -name x`): never split into letters. */
  readonly wordOptions?: boolean;
  /** Every word is an operand, none an option (`echo -x` prints `-x`). */
  readonly noOptions?: boolean;
  /** At most this many operands (`git branch`: none, so it only lists). */
  readonly maxOperands?: number;
  /** It changes the file system (creates, moves, removes files): never covered when other commands follow. */
  readonly changesFiles?: boolean;
}

const COLOR = ['--color', '--colour'];

const GIT_DIFF_FORMAT = {
  flags: [
    ...['-p', '-u', '-s', '--patch', '--no-patch', '--raw', '--name-only', '--name-status', '--numstat', '--shortstat', '--summary'],
    ...['--no-color', '--no-ext-diff', '--no-textconv', '--no-renames', '--full-index', '--binary', '--minimal', '--patience'],
    ...['--histogram', '-w', '-b', '--ignore-all-space', '--ignore-space-change', '--ignore-blank-lines', '-R', '-a', '--text'],
    ...['--cached', '--staged', '--exit-code', '--quiet', '-z', '--no-prefix', '-W', '--function-context', '--word-diff'],
  ],
  valued: ['--diff-filter', '--stat-width', '--word-diff-regex', '--src-prefix', '--dst-prefix'],
  // git reads `-U` and `--unified` values only glued (`-U5`, `--unified=5`): `-U --output=P` is two options.
  optionalValue: [
    '-U',
    '--unified',
    '--stat',
    '--dirstat',
    '-M',
    '-C',
    '--find-renames',
    '--find-copies',
    '--abbrev',
    ...COLOR,
    '--word-diff',
  ],
} as const;

const GIT_LOG = {
  flags: [
    ...GIT_DIFF_FORMAT.flags,
    ...['--oneline', '--graph', '--all', '--reverse', '--first-parent', '--merges', '--no-merges', '--follow', '--decorate'],
    ...['--no-decorate', '--abbrev-commit', '--no-abbrev-commit', '--name-only', '--left-right', '--cherry-pick', '--date-order'],
    ...['--topo-order', '--source', '--branches', '--tags', '--remotes', '-i', '--regexp-ignore-case', '-E', '-F'],
  ],
  valued: [
    ...GIT_DIFF_FORMAT.valued,
    ...['-n', '--max-count', '--skip', '--since', '--after', '--until', '--before', '--author', '--committer', '--grep'],
    ...['--date', '-L', '-S', '-G'],
  ],
  optionalValue: [...GIT_DIFF_FORMAT.optionalValue, '--pretty', '--format', '--decorate'],
  numeric: true,
} as const;

/** The catalogue: a command name, or `git <subcommand>`, to what it accepts. */
export const GRANT_CATALOGUE: Readonly<Record<string, CommandSpec>> = {
  // looking at files
  ls: {
    flags: [
      ...['-l', '-a', '-A', '-h', '-R', '-1', '-t', '-S', '-r', '-d', '-F', '-p', '-i', '-s', '-n', '-g', '-o', '-G', '-C', '-x'],
      ...['-m', '-U', '-X', '-v', '-Q', '-N', '--all', '--almost-all', '--human-readable', '--recursive', '--reverse'],
      ...['--directory', '--classify', '--inode', '--size', '--group-directories-first', '--full-time'],
    ],
    valued: ['-I', '--ignore', '--hide', '--sort', '--time-style', '--format', '--indicator-style', '--quoting-style', '-w', '--width'],
    optionalValue: COLOR,
  },
  cat: {
    flags: ['-n', '-b', '-s', '-A', '-E', '-T', '-v', '-e', '-t', '-u', '--number', '--number-nonblank', '--squeeze-blank'],
  },
  head: { flags: ['-q', '-v', '-z', '--quiet', '--silent', '--verbose'], valued: ['-n', '-c', '--lines', '--bytes'], numeric: true },
  tail: { flags: ['-q', '-v', '-z', '--quiet', '--silent', '--verbose'], valued: ['-n', '-c', '--lines', '--bytes'], numeric: true },
  wc: { flags: ['-l', '-w', '-c', '-m', '-L', '--lines', '--words', '--bytes', '--chars', '--max-line-length'] },
  nl: { flags: ['-p'], valued: ['-b', '-n', '-w', '-s', '-v', '-i'] },
  tac: { flags: ['-b', '-r'], valued: ['-s'] },
  rev: {},
  file: { flags: ['-b', '-i', '-L', '-h', '--brief', '--mime', '--mime-type', '--mime-encoding', '--dereference'] },
  stat: { flags: ['-L', '-t', '-f', '--dereference', '--terse', '--file-system'], valued: ['-c', '--format', '--printf'] },
  du: {
    flags: ['-s', '-h', '-a', '-c', '-k', '-m', '-b', '-x', '--summarize', '--human-readable', '--apparent-size', '--total'],
    valued: ['-d', '--max-depth', '--exclude'],
  },
  df: { flags: ['-h', '-T', '-k', '-i', '-l', '--human-readable', '--print-type', '--inodes', '--local'] },
  tree: {
    flags: ['-a', '-d', '-f', '-i', '-F', '-C', '-n', '-s', '-h', '-D', '--noreport', '--dirsfirst', '--gitignore'],
    valued: ['-L', '-I', '-P'],
  },
  basename: { flags: ['-a', '-z', '--multiple', '--zero'], valued: ['-s', '--suffix'] },
  dirname: { flags: ['-z', '--zero'] },
  realpath: { flags: ['-e', '-m', '-s', '-q', '-z', '--canonicalize-existing', '--canonicalize-missing', '--no-symlinks'] },
  pwd: { flags: ['-L', '-P'], maxOperands: 0 },
  md5sum: { flags: ['-b', '-t', '-z', '-c', '--tag', '--check', '--quiet', '--status'] },
  sha1sum: { flags: ['-b', '-t', '-z', '-c', '--tag', '--check', '--quiet', '--status'] },
  sha256sum: { flags: ['-b', '-t', '-z', '-c', '--tag', '--check', '--quiet', '--status'] },
  // searching and filtering text
  grep: {
    flags: [
      ...['-n', '-i', '-v', '-r', '-l', '-L', '-c', '-w', '-x', '-E', '-F', '-G', '-P', '-o', '-h', '-H', '-s', '-q'],
      ...['-z', '-Z', '-a', '-I', '-b', '-U', '-T', '--line-number', '--ignore-case', '--invert-match', '--recursive'],
      ...['--files-with-matches', '--files-without-match', '--count', '--word-regexp', '--line-regexp', '--extended-regexp'],
      ...['--fixed-strings', '--only-matching', '--no-filename', '--with-filename', '--no-messages', '--quiet', '--null'],
    ],
    valued: ['-e', '-f', '-m', '-A', '-B', '-C', '--regexp', '--file', '--max-count', '--include', '--exclude', '--exclude-dir'],
    optionalValue: COLOR,
    numeric: true,
  },
  rg: {
    flags: [
      ...['-n', '-N', '-i', '-S', '-s', '-v', '-w', '-x', '-l', '-c', '-o', '-F', '-U', '-u', '-H', '-I', '-0', '-.'],
      ...['--hidden', '--no-ignore', '--files', '--json', '--vimgrep', '--no-heading', '--heading', '--line-number'],
      ...['--ignore-case', '--smart-case', '--case-sensitive', '--fixed-strings', '--files-with-matches', '--count'],
      ...['--multiline', '--word-regexp', '--invert-match', '--only-matching', '--trim', '--no-messages'],
    ],
    valued: ['-e', '-g', '-t', '-T', '-A', '-B', '-C', '-m', '-M', '--regexp', '--glob', '--iglob', '--type', '--type-not'],
    optionalValue: COLOR,
  },
  sort: {
    flags: [
      ...['-n', '-r', '-u', '-f', '-b', '-d', '-g', '-h', '-i', '-M', '-R', '-s', '-V', '-c', '-C', '-z', '--numeric-sort'],
      ...['--reverse', '--unique', '--ignore-case', '--stable', '--human-numeric-sort', '--version-sort', '--general-numeric-sort'],
      ...['--ignore-leading-blanks', '--dictionary-order', '--month-sort', '--random-sort', '--zero-terminated'],
    ],
    valued: ['-k', '-t', '--key', '--field-separator'],
  },
  uniq: {
    flags: ['-c', '-d', '-u', '-i', '-z', '--count', '--repeated', '--unique', '--ignore-case'],
    valued: ['-f', '-s', '-w', '--skip-fields', '--skip-chars', '--check-chars'],
    maxOperands: 1, // a second operand is a file uniq writes
  },
  cut: {
    flags: ['-s', '-z', '--complement', '--only-delimited'],
    valued: ['-d', '-f', '-c', '-b', '--delimiter', '--fields', '--characters', '--bytes', '--output-delimiter'],
  },
  tr: { flags: ['-d', '-s', '-c', '-C', '-t', '--delete', '--squeeze-repeats', '--complement'] },
  column: { flags: ['-t', '-n', '-x', '-e'], valued: ['-s', '-c', '-o'] },
  diff: {
    flags: [
      ...['-u', '-c', '-r', '-N', '-q', '-s', '-i', '-w', '-b', '-B', '-a', '-y', '-t', '-T', '--brief', '--recursive'],
      ...['--new-file', '--report-identical-files', '--ignore-case', '--ignore-all-space', '--ignore-space-change'],
      ...['--ignore-blank-lines', '--text', '--side-by-side', '--expand-tabs', '--strip-trailing-cr'],
    ],
    valued: ['-U', '-C', '-W', '--width', '-x', '--exclude'],
    optionalValue: ['--unified', '--context', ...COLOR],
  },
  jq: {
    flags: ['-r', '-c', '-n', '-s', '-e', '-S', '-j', '-a', '-C', '-M', '--raw-output', '--compact-output', '--null-input', '--slurp'],
    valued: ['--indent'],
  },
  // printing
  echo: { noOptions: true },
  true: { noOptions: true },
  false: { noOptions: true },
  exit: { noOptions: true },
  seq: { flags: ['-w', '--equal-width'], valued: ['-s', '-f', '--separator', '--format'] },
  date: { flags: ['-u', '-R', '--utc', '--universal', '--rfc-email'], valued: ['-d', '--date'], optionalValue: ['-I', '--iso-8601'] },
  cd: { flags: ['-L', '-P'], maxOperands: 1 },
  // changing files inside the workspace (paths judged as always; never followed by another command)
  mkdir: { flags: ['-p', '-v', '--parents', '--verbose'], changesFiles: true },
  touch: { flags: ['-a', '-c', '-m', '--no-create'], changesFiles: true },
  cp: {
    flags: ['-r', '-R', '-a', '-p', '-v', '-n', '-f', '-u', '-T', '--recursive', '--archive', '--no-clobber', '--force'],
    changesFiles: true,
  },
  mv: { flags: ['-f', '-n', '-v', '-u', '-T', '--force', '--no-clobber', '--verbose'], changesFiles: true },
  rm: { flags: ['-r', '-R', '-f', '-v', '-d', '--recursive', '--force', '--verbose', '--dir'], changesFiles: true },
  rmdir: { flags: ['-p', '-v', '--parents', '--verbose'], changesFiles: true },
  find: {
    wordOptions: true,
    flags: [
      ...['-print', '-print0', '-prune', '-empty', '-not', '-o', '-a', '-or', '-and', '-depth', '-P', '-true'],
      ...['-false', '-xdev', '-mount', '-readable', '-writable', '-executable', '-ls'],
    ],
    valued: [
      ...['-name', '-iname', '-path', '-ipath', '-wholename', '-iwholename', '-type', '-xtype', '-maxdepth', '-mindepth'],
      ...['-newer', '-mtime', '-mmin', '-atime', '-amin', '-ctime', '-cmin', '-size', '-perm', '-regex', '-iregex', '-links'],
      ...['-user', '-group', '-printf'],
    ],
  },
  // git, read-only subcommands (run with the environment the shell tool imposes on git)
  'git status': {
    flags: ['-s', '-b', '-z', '-v', '--short', '--branch', '--long', '--show-stash', '--ahead-behind', '--no-ahead-behind'],
    optionalValue: ['--porcelain', '-u', '--untracked-files', '--ignored', '--ignore-submodules', '--column', '--no-column'],
  },
  'git diff': { ...GIT_DIFF_FORMAT, numeric: false },
  'git log': GIT_LOG,
  'git show': GIT_LOG,
  'git grep': {
    flags: [
      ...['-n', '-i', '-v', '-w', '-l', '-L', '-c', '-h', '-H', '-E', '-F', '-G', '-P', '-o', '-q', '-z', '-I', '-a', '-p'],
      ...['--cached', '--untracked', '--no-index', '--line-number', '--ignore-case', '--invert-match', '--word-regexp'],
      ...['--files-with-matches', '--files-without-match', '--count', '--full-name', '--heading', '--break', '--no-textconv'],
      ...['--extended-regexp', '--fixed-strings', '--basic-regexp', '--perl-regexp', '--only-matching', '--quiet', '--all-match'],
      // operators between patterns, not options with a value: the word after one is read as an option
      ...['--and', '--or', '--not'],
    ],
    valued: ['-e', '-f', '-m', '-A', '-B', '-C', '--max-depth', '--max-count'],
    optionalValue: COLOR,
    numeric: true,
  },
  'git branch': {
    flags: ['-a', '-r', '-v', '--all', '--remotes', '--verbose', '--show-current', '--no-color'],
    valued: ['--sort', '--format'],
    optionalValue: ['--contains', '--no-contains', '--merged', '--no-merged', '--points-at', ...COLOR],
    maxOperands: 0, // with a name it would create a branch
  },
  'git rev-parse': {
    flags: [
      ...['--show-toplevel', '--show-prefix', '--show-cdup', '--git-dir', '--absolute-git-dir', '--is-inside-work-tree'],
      ...['--is-bare-repository', '--abbrev-ref', '--verify', '-q', '--quiet', '--symbolic-full-name'],
    ],
    optionalValue: ['--short'],
  },
  'git ls-files': {
    flags: [
      ...['-c', '-d', '-m', '-o', '-i', '-s', '-u', '-z', '-t', '--cached', '--deleted', '--modified', '--others', '--ignored'],
      ...['--stage', '--unmerged', '--exclude-standard', '--directory', '--no-empty-directory', '--full-name', '--error-unmatch'],
    ],
    valued: ['-x', '--exclude', '-X', '--exclude-from'],
  },
  'git blame': {
    flags: ['-e', '-s', '-w', '-l', '-t', '-n', '-f', '-p', '--porcelain', '--line-porcelain', '--show-email', '--no-textconv'],
    valued: ['-L'],
  },
  'git remote': { flags: ['-v', '--verbose'], maxOperands: 0 },
};

/** The catalogue key of `argv`: `git <subcommand>` for git, otherwise the command name. */
export function catalogueKey(argv: readonly string[]): string {
  const [name = ''] = argv;
  return name === 'git' && argv[1] !== undefined ? `git ${argv[1]}` : name;
}

/** The words of `argv` after the command (and git's subcommand). */
function argsOf(argv: readonly string[]): readonly string[] {
  return argv.slice(argv[0] === 'git' ? 2 : 1);
}

/** Why the long option `word` is not accepted by `spec`; `skipNext` when it takes the next word. */
function longOption(word: string, spec: CommandSpec): { problem?: string; skipNext?: boolean } {
  const eq = word.indexOf('=');
  const name = eq < 0 ? word : word.slice(0, eq);
  if (spec.flags?.includes(name) === true && eq < 0) return {};
  if (spec.optionalValue?.includes(name) === true) return {};
  if (spec.valued?.includes(name) === true) return { skipNext: eq < 0 };
  return { problem: `\`${name}\`` };
}

/** Why the short option cluster `word` (`-nr`, `-n5`, `-k2`) is not accepted by `spec`; `skipNext` when its last option takes the next word. */
function shortCluster(word: string, spec: CommandSpec): { problem?: string; skipNext?: boolean } {
  if (spec.numeric === true && /^-\d+$/.test(word)) return {};
  for (let k = 1; k < word.length; k++) {
    const opt = `-${word.charAt(k)}`;
    if (spec.valued?.includes(opt) === true) return { skipNext: k === word.length - 1 };
    // An optional value is glued (`-M50`): the rest of the word is its value.
    if (spec.optionalValue?.includes(opt) === true) return {};
    if (spec.flags?.includes(opt) !== true) return { problem: `\`${opt}\`` };
  }
  return {};
}

/**
 * Why `argv` is not covered by the catalogue (an unknown command or subcommand, an option not
 * listed, too many operands), or undefined when every word is accepted.
 */
export function catalogueProblem(argv: readonly string[]): string | undefined {
  const key = catalogueKey(argv);
  const spec = Object.hasOwn(GRANT_CATALOGUE, key) ? GRANT_CATALOGUE[key] : undefined;
  if (spec === undefined) return `\`${key}\` is not in the grant catalogue`;
  if (spec.noOptions === true) return undefined;
  const args = argsOf(argv);
  let operands = 0;
  for (let i = 0; i < args.length; i++) {
    const word = args[i] ?? '';
    if (word === '--' && spec.wordOptions !== true) {
      operands += args.length - i - 1;
      break;
    }
    if (!word.startsWith('-') || word === '-') {
      operands++;
      continue;
    }
    const verdict =
      spec.wordOptions === true ? longOption(word, spec) : word.startsWith('--') ? longOption(word, spec) : shortCluster(word, spec);
    if (verdict.problem !== undefined) return `\`${key}\` with the option ${verdict.problem}, which the grant catalogue does not list`;
    if (verdict.skipNext === true && ++i >= args.length) return `\`${key}\` with the option \`${word}\` but no value after it`;
  }
  if (spec.maxOperands !== undefined && operands > spec.maxOperands) return `\`${key}\` with more than ${spec.maxOperands} operand(s)`;
  return undefined;
}

/** True when `argv` may change the file system: a catalogued command that does, or any command the catalogue does not know. */
export function mayChangeFiles(argv: readonly string[]): boolean {
  const key = catalogueKey(argv);
  const spec = Object.hasOwn(GRANT_CATALOGUE, key) ? GRANT_CATALOGUE[key] : undefined;
  return spec === undefined || spec.changesFiles === true;
}

const code = (words: readonly string[]): string => words.map((w) => `\`${w}\``).join(' ');

/** One row of the documented table: the command and what it accepts. */
function catalogueRow(key: string, spec: CommandSpec): string {
  const notes: string[] = [];
  if (spec.noOptions === true) notes.push('any words (none is an option)');
  if (spec.flags?.length) notes.push(code(spec.flags));
  if (spec.valued?.length) notes.push(`with a value: ${code(spec.valued)}`);
  if (spec.optionalValue?.length) notes.push(`value optional, glued with \`=\`: ${code(spec.optionalValue)}`);
  if (spec.numeric === true) notes.push('a count as `-5`');
  if (spec.maxOperands !== undefined) notes.push(`at most ${spec.maxOperands} operand(s)`);
  if (spec.changesFiles === true) notes.push('**changes files**: covered only as the last command of a line');
  return `| \`${key}\` | ${notes.length > 0 ? notes.join('; ') : 'no options'} |`;
}

/** The catalogue as the Markdown table docs/grant-catalogue.md holds (a test keeps them equal). */
export function catalogueTable(): string {
  const rows = Object.entries(GRANT_CATALOGUE).map(([key, spec]) => catalogueRow(key, spec));
  return ['| command | options a grant covers |', '|---|---|', ...rows].join('\n');
}
