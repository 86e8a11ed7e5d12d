/**
 * Reading a bash command line for the approval gate: a parser for the plain subset of bash
 * whose meaning can be read off the text, and a refusal (with the reason) for everything else.
 *
 * A grant ("always allow echo") or an allowed_tools prefix may only cover a line that a person
 * can read exactly as bash will run it. So instead of modelling bash and hoping the model is
 * complete, this reads a deliberately small grammar and answers `readable: false` at the first
 * thing outside it; the caller then asks a person. The grammar:
 *
 *   line     := command (separator command)* [';' | '&']
 *   separator:= '&&' | '||' | '|' | ';' | '&' | newline
 *   command  := (word | redirect)+            at least one word; the first word is the command
 *   word     := plain | '…' | "…"             a whole word, never a mix
 *   plain    := [A-Za-z0-9_./:=+,%@^-]+ with `~` only right after a letter or digit (HEAD~1)
 *   '…'      := printable ASCII, no `'`      (bash takes it literally)
 *   "…"      := printable ASCII, none of $ ` \ " !
 *   redirect := [fd] ('>' | '>>' | '&>' | '&>>' | '<') '/dev/null' | [fd] ('>&' | '<&') ('0' | '1' | '2' | '-')
 *   fd       := one digit, written right before the operator
 *
 * Outside it — and so never covered — are every expansion (`$x`, `${x@P}`, `$(…)`, backticks,
 * `$((…))`, `~`, globs, braces `{a,b}`), every escape and quote inside a word (`\/x`, `.""./x`),
 * assignments (`x=…`, `a[…]=…`), compound commands and keywords, subshells, functions, here
 * documents, redirections into files, comments, and any control or non-ASCII character. Each
 * word's value is therefore its text, and each command's argv is exactly what bash would pass.
 * (test/unit/tools/shell-line.test.ts checks that claim against bash itself on hostile input.)
 */

/** One simple command: its argv as bash would pass it (the first word is the command name). */
export interface ShellCommand {
  argv: string[];
}

export type ShellLine = { readable: true; commands: ShellCommand[] } | { readable: false; reason: string };

/** Lines longer than this are not read (a person cannot review them at a glance either). */
export const MAX_READABLE_LINE = 8192;

const PLAIN = /[A-Za-z0-9_./:=+,%@^-]/;
const ALNUM = /[A-Za-z0-9]/;
const BLANK = /[ \t]/;
/** Characters that end a plain word. */
const DELIMITER = /[ \t\n;&|<>]/;

/** Reserved words that start or shape a compound command: the commands inside are not simple. */
const KEYWORDS: ReadonlySet<string> = new Set([
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
]);

/** What a character outside the grammar means, for the reason given to the caller. */
function why(c: string): string {
  switch (c) {
    case '$':
      return 'a `$` expansion (variable, `${…}`, `$(…)` or `$((…))`)';
    case '`':
      return 'a backquote command substitution';
    case '\\':
      return 'a backslash escape';
    case '{':
    case '}':
      return 'a brace (expansion or group)';
    case '*':
    case '?':
    case '[':
    case ']':
      return 'a glob pattern';
    case '~':
      return 'a `~` home-directory expansion';
    case '(':
    case ')':
      return 'a subshell, function or array';
    case '#':
      return 'a comment';
    case '!':
      return 'a `!`';
    case "'":
    case '"':
      return 'a quote inside a word';
    default: {
      const code = c.codePointAt(0) ?? 0;
      return code < 0x20 || code === 0x7f ? 'a control character' : code > 0x7e ? 'a non-ASCII character' : `\`${c}\``;
    }
  }
}

class Refusal extends Error {}

/** Reads `line`; see the module comment for what is readable. */
export function readShellLine(line: string): ShellLine {
  if (line.length > MAX_READABLE_LINE) return { readable: false, reason: `a line longer than ${MAX_READABLE_LINE} characters` };
  try {
    return { readable: true, commands: new Reader(line).read() };
  } catch (err) {
    if (err instanceof Refusal) return { readable: false, reason: err.message };
    throw err;
  }
}

class Reader {
  private i = 0;
  private readonly commands: ShellCommand[] = [];
  private argv: string[] = [];
  /** The current command has a redirection (so it is not empty even without words yet). */
  private redirected = false;

  constructor(private readonly s: string) {}

  read(): ShellCommand[] {
    const { s } = this;
    let last: string | undefined; // the last separator not yet followed by a command (newlines aside)
    while (this.i < s.length) {
      const c = s.charAt(this.i);
      if (BLANK.test(c)) {
        this.i++;
      } else if (c === '\n' || c === ';' || c === '&' || c === '|') {
        const op = this.operator();
        if (op === '&>' || op === '&>>') this.redirect(op, undefined);
        else {
          const ended = this.end(op);
          if (ended || op !== '\n') last = op;
        }
      } else if (c === '<' || c === '>') {
        this.redirect(this.redirectOperator(), undefined);
      } else if (/[0-9]/.test(c) && this.fdRedirect()) {
        // handled
      } else {
        this.argv.push(this.word());
      }
    }
    if (this.argv.length > 0 || this.redirected) this.end(undefined);
    else if (last === '&&' || last === '||' || last === '|') throw new Refusal(`a line ending in \`${last}\``);
    if (this.commands.length === 0) throw new Refusal('no command');
    return this.commands;
  }

  /** Reads a control operator at `i`. */
  private operator(): string {
    const { s } = this;
    const two = s.slice(this.i, this.i + 2);
    const three = s.slice(this.i, this.i + 3);
    for (const op of ['&>>', '&&', '||', '&>', ';;', '|&', ';&']) {
      const have = op.length === 3 ? three : two;
      if (have === op) {
        if (op === ';;' || op === '|&' || op === ';&') throw new Refusal(`the operator \`${op}\``);
        this.i += op.length;
        return op;
      }
    }
    this.i++;
    return s.charAt(this.i - 1);
  }

  /** Closes the current command at separator `op` (undefined at the end of the line); false when there was none (a blank line). */
  private end(op: string | undefined): boolean {
    if (this.argv.length === 0) {
      if (this.redirected) throw new Refusal('a redirection without a command');
      // Blank lines are fine; `; ;`, `&& &&` or a line starting with `|` are syntax errors.
      if (op === '\n') return false;
      throw new Refusal(op === undefined ? 'no command' : `an empty command before \`${op}\``);
    }
    const [name = ''] = this.argv;
    if (name === '') throw new Refusal('an empty command name');
    if (KEYWORDS.has(name)) throw new Refusal(`the keyword \`${name}\` (a compound command)`);
    if (/^[A-Za-z_][A-Za-z0-9_]*\+?=/.test(name)) throw new Refusal('a variable assignment');
    if (name.includes('=')) throw new Refusal('a command name with `=`');
    if (name.startsWith('%')) throw new Refusal('a job specification (`%…`)');
    this.commands.push({ argv: this.argv });
    this.argv = [];
    this.redirected = false;
    return true;
  }

  /** At a digit: `2>…`, `1>&2` and the like when the digits are a whole word start followed by `<`/`>`. */
  private fdRedirect(): boolean {
    const m = /^[0-9]+(?=[<>])/.exec(this.s.slice(this.i));
    if (m === null) return false;
    if (m[0].length > 1) throw new Refusal(`a redirection of descriptor ${m[0]}`);
    this.i += m[0].length;
    this.redirect(this.redirectOperator(), m[0]);
    return true;
  }

  private redirectOperator(): string {
    const m = /^(?:>>|>&|<&|>\||<<|<>|>|<)/.exec(this.s.slice(this.i));
    const op = m?.[0] ?? '';
    if (op === '<<' || op === '<>' || op === '>|') throw new Refusal(op === '<<' ? 'a here document' : `the redirection \`${op}\``);
    this.i += op.length;
    return op;
  }

  /** After a redirection operator: only /dev/null, or duplicating/closing a descriptor. */
  private redirect(op: string, fd: string | undefined): void {
    const { s } = this;
    if (s.charAt(this.i) === '(') throw new Refusal('a process substitution');
    while (BLANK.test(s.charAt(this.i))) this.i++;
    const rest = s.slice(this.i);
    if (op === '>&' || op === '<&') {
      const m = /^[012-](?=[ \t\n;&|<>]|$)/.exec(rest);
      if (m === null) throw new Refusal(`a redirection \`${fd ?? ''}${op}\` to a file`);
      this.i += m[0].length;
    } else {
      const m = /^\/dev\/null(?=[ \t\n;&|<>]|$)/.exec(rest);
      if (m === null) throw new Refusal(`a redirection \`${fd ?? ''}${op}\` to or from a file other than /dev/null`);
      this.i += m[0].length;
    }
    this.redirected = true;
  }

  /** One whole word: plain, single-quoted or double-quoted. */
  private word(): string {
    const { s } = this;
    const c = s.charAt(this.i);
    let value: string;
    if (c === "'" || c === '"') {
      const close = s.indexOf(c, this.i + 1);
      if (close === -1) throw new Refusal('an unterminated quote');
      value = s.slice(this.i + 1, close);
      for (const ch of value) {
        const code = ch.codePointAt(0) ?? 0;
        if (code < 0x20 || code > 0x7e) throw new Refusal(`${why(ch)} inside quotes`);
        if (c === '"' && '$`\\!'.includes(ch)) throw new Refusal(`${why(ch)} inside double quotes`);
      }
      this.i = close + 1;
    } else {
      const start = this.i;
      while (this.i < s.length && !DELIMITER.test(s.charAt(this.i))) {
        const ch = s.charAt(this.i);
        const ok = PLAIN.test(ch) || (ch === '~' && this.i > start && ALNUM.test(s.charAt(this.i - 1)));
        if (!ok) throw new Refusal(why(ch));
        this.i++;
      }
      value = s.slice(start, this.i);
    }
    // A quoted word must end where the quote closes (`'a'b`, `"a"'b'` mix quoting in one word).
    const next = s.charAt(this.i);
    if (next !== '' && !DELIMITER.test(next)) throw new Refusal(why("'"));
    return value;
  }
}
