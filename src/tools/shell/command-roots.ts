/**
 * Reading a bash command line well enough to decide approvals: which commands it runs
 * (its "roots") and whether every part of it starts with an allowed prefix.
 *
 * This is not a bash parser. It errs towards "cannot tell" (undefined / false), which
 * makes the caller ask a person: anything that can hide a command from a plain word
 * split (command or process substitution, subshells, compound commands, a command name
 * built from expansions, unterminated quotes) is reported as unparsable.
 */

/** Bash reserved words (and `[[`) that start a compound command: the real commands are further in. */
const KEYWORDS: ReadonlySet<string> = new Set([
  '!',
  'case',
  'coproc',
  'do',
  'done',
  'elif',
  'else',
  'esac',
  'fi',
  'for',
  'function',
  'if',
  'in',
  'select',
  'then',
  'time',
  'until',
  'while',
  '{',
  '}',
  '[[',
  ']]',
]);

/** `NAME=value`, `NAME+=value`, `NAME[i]=value` before the command name (raw, unquoted). */
const ASSIGNMENT = /^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=/;

interface Parsed {
  segments: string[];
  /** The segment being read. */
  cur: string;
  /** Why the line cannot be read safely, if it cannot. */
  unsafe?: string;
}

function flag(st: Parsed, why: string): void {
  st.unsafe ??= why;
}

function pushSegment(st: Parsed): void {
  const s = st.cur.trim();
  if (s !== '') st.segments.push(s);
  st.cur = '';
}

/** Splits on unquoted `&&`, `||`, `;`, `|`, `&` and newlines, noting constructs that hide commands. */
function parse(command: string): Parsed {
  const st: Parsed = { segments: [], cur: '' };
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    const next = command[i + 1];
    if (quote === "'") {
      st.cur += c;
      if (c === "'") quote = undefined;
    } else if (c === '\\') {
      if (next === undefined) flag(st, 'a trailing backslash');
      st.cur += c + (next ?? '');
      i++;
    } else if (quote === '"') {
      st.cur += c;
      if (c === '"') quote = undefined;
      else if (c === '`' || (c === '$' && next === '(')) flag(st, 'command substitution');
    } else if (c === "'" || c === '"') {
      quote = c;
      st.cur += c;
    } else {
      i = unquoted(command, i, st);
    }
  }
  if (quote !== undefined) flag(st, 'an unterminated quote');
  pushSegment(st);
  return st;
}

/** Reads the unquoted, unescaped character at `i`; returns the index of the last character consumed. */
function unquoted(command: string, i: number, st: Parsed): number {
  const c = command[i];
  const next = command[i + 1];
  const prev = st.cur[st.cur.length - 1];
  if (c === '#' && (prev === undefined || /\s/.test(prev))) {
    // A comment runs to the end of the line (bash -c recognises comments).
    const eol = command.indexOf('\n', i);
    return eol === -1 ? command.length : eol - 1;
  }
  const separator =
    c === '\n' ||
    c === ';' ||
    (c === '&' && (next === '&' || (prev !== '>' && prev !== '<' && next !== '>'))) || // not 2>&1, <&3, &>f
    (c === '|' && prev !== '>'); // not >| (clobber)
  if (separator) {
    pushSegment(st);
    return (c === '&' && next === '&') || (c === '|' && next === '|') ? i + 1 : i;
  }
  if (c === '`' || (c === '$' && next === '(')) flag(st, 'command substitution');
  else if ((c === '<' || c === '>') && next === '(') flag(st, 'process substitution');
  else if (c === '(' || c === ')') flag(st, 'a subshell, function definition or array');
  st.cur += c;
  return i;
}

interface Word {
  /** After quote removal. */
  text: string;
  /** As written. */
  raw: string;
}

/** Splits one segment into words on unquoted whitespace, removing quotes and escapes. */
function words(segment: string): Word[] {
  const out: Word[] = [];
  let text = '';
  let raw = '';
  let inWord = false;
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < segment.length; i++) {
    const c = segment.charAt(i);
    const next = segment[i + 1];
    if (quote === "'") {
      raw += c;
      if (c === "'") quote = undefined;
      else text += c;
    } else if (quote === '"') {
      raw += c;
      if (c === '"') quote = undefined;
      else if (c === '\\' && next !== undefined && '$`"\\\n'.includes(next)) {
        raw += next;
        if (next !== '\n') text += next;
        i++;
      } else text += c;
    } else if (c === '\\') {
      i++;
      if (next === '\n') continue; // line continuation
      raw += c + (next ?? '');
      text += next ?? '';
      inWord = true;
    } else if (c === "'" || c === '"') {
      quote = c;
      raw += c;
      inWord = true;
    } else if (/\s/.test(c)) {
      if (inWord) out.push({ text, raw });
      text = '';
      raw = '';
      inWord = false;
    } else {
      text += c;
      raw += c;
      inWord = true;
    }
  }
  if (inWord) out.push({ text, raw });
  return out;
}

/**
 * The simple commands of a command line: split on unquoted `&&`, `||`, `;`, `|`, `&` and
 * newlines (quotes and backslash escapes respected, redirections such as `2>&1` and `&>f`
 * kept whole, comments dropped), trimmed, empty ones removed.
 */
export function splitCommands(command: string): string[] {
  return parse(command).segments;
}

/**
 * The command name of each simple command in `command`, in order: leading `VAR=value`
 * assignments are skipped, and an absolute path is reduced to its base name
 * (`/usr/bin/git` → `git`; a relative `./git` stays as written, since it is not the `git`
 * on the PATH). A segment of assignments only has no root.
 *
 * Returns undefined when the roots cannot be trusted: command substitution (`$(…)`,
 * backticks), process substitution (`<(…)`, `>(…)`), subshells, compound commands
 * (`if`, `for`, `{ …; }`…), a leading redirection, a command name built from expansions
 * or globs, `$'…'` / `$"…"` quoting, or an unterminated quote. The caller MUST then ask.
 */
export function rootCommands(command: string): string[] | undefined {
  // ANSI-C ($'…') and locale ($"…") quoting are not modelled by this parser: never trusted.
  if (/\$['"]/.test(command)) return undefined;
  const parsed = parse(command);
  if (parsed.unsafe !== undefined) return undefined;
  const roots: string[] = [];
  for (const segment of parsed.segments) {
    const command = words(segment).find((w) => !ASSIGNMENT.test(w.raw));
    if (command === undefined) continue; // assignments only
    const { raw, text } = command;
    if (KEYWORDS.has(raw) || /^\d*[<>]|^&>/.test(raw)) return undefined;
    if (/[$*?{}~]/.test(raw) || (raw.includes('[') && raw !== '[')) return undefined;
    if (text === '') return undefined;
    roots.push(text.startsWith('/') ? text.slice(text.lastIndexOf('/') + 1) || text : text);
  }
  return roots;
}

/**
 * True when every simple command of `command` starts with the words of `prefix`, compared
 * whole word by whole word after quote removal: prefix `git status` matches `git status`
 * and `git status --short`, but not `git statusx`, `FOO=1 git status` nor
 * `git status && rm -rf x`. False for an empty prefix and for any line
 * {@link rootCommands} cannot read.
 */
export function matchesCommandPrefix(command: string, prefix: string): boolean {
  const want = parse(prefix);
  const [only, ...more] = want.segments;
  if (want.unsafe !== undefined || only === undefined || more.length > 0) return false;
  const prefixWords = words(only).map((w) => w.text);
  if (prefixWords.length === 0) return false;
  if (rootCommands(command) === undefined) return false;
  const segments = parse(command).segments;
  if (segments.length === 0) return false;
  return segments.every((segment) => {
    const have = words(segment).map((w) => w.text);
    return prefixWords.every((w, i) => have[i] === w);
  });
}

/**
 * True when the line redirects output into a file (`>`, `>>`, `&>`, `2>` … outside quotes),
 * other than to /dev/null or to another descriptor (`2>&1`). Such a line writes wherever
 * the redirection points, so "always allow <command>" grants and allowed_tools prefixes
 * must not cover it: it asks.
 */
export function redirectsOutput(command: string): boolean {
  let quote: '"' | "'" | undefined;
  for (let i = 0; i < command.length; i++) {
    const c = command[i];
    if (quote !== undefined) {
      if (c === '\\' && quote === '"') i++;
      else if (c === quote) quote = undefined;
      continue;
    }
    if (c === '\\') {
      i++;
      continue;
    }
    if (c === '"' || c === "'") {
      quote = c;
      continue;
    }
    if (c !== '>') continue;
    let j = i + 1;
    if (command[j] === '>' || command[j] === '|') j++;
    if (command[j] === '&') {
      // >&2, 2>&1, >&-: to another descriptor (or closing it); `>&file` writes to a file.
      if (/^[0-9-]/.test(command[j + 1] ?? '')) continue;
      j++;
    }
    while (command[j] === ' ' || command[j] === '\t') j++;
    const target = /^[^\s;&|<>]*/.exec(command.slice(j))?.[0] ?? '';
    if (target !== '/dev/null') return true;
    i = j + target.length - 1;
  }
  return false;
}

/**
 * True when the line names a path outside the current directory tree: an absolute path,
 * `~`, or a `..` component. Grants and allowed_tools prefixes cover what a command does in
 * the workspace; a line reaching elsewhere asks (the shell itself is not sandboxed).
 */
export function reachesOutside(command: string): boolean {
  command = command.replace(/[0-9&]?>{1,2}\s*\/dev\/null\b/g, ' '); // discarding output is fine
  return /(^|[\s=:'"(<>|&;])[~/]/.test(command) || /(^|[\s=:'"/(])\.\.(\/|\s|$|['"])/.test(command);
}
