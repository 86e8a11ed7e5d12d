/**
 * Glob patterns from the model, made safe to match. picomatch compiles a glob to a
 * backtracking RegExp: `{?,??}*` repeated eight times costs seconds on one 29-character
 * name, `*a*a*a*a*b` a minute on a 255-character one. So a pattern must first pass a
 * complexity limit (checked before anything compiles it), and the compiled RegExp only
 * ever runs in the search worker, with a time budget (see regex-worker.ts).
 */
import picomatch from 'picomatch';
import type { ToolError } from '../tool.js';

/** What a glob pattern may cost. Ordinary globs (`src/**\/*.{ts,tsx}`) stay far below every limit. */
export const GLOB_LIMITS = Object.freeze({
  /** Characters in the whole pattern (an absolute path included). */
  maxLength: 1024,
  /** `*` runs (`**` is one), `?`, and the `+(` / `!(` extglobs: each lets the RegExp backtrack. */
  maxWildcards: 16,
  /** Alternatives of `{a,b}` and `@(a|b)` groups, multiplied out: `{a,b}{c,d}` is 4. */
  maxAlternatives: 64,
  /** Groups (`{…}`, `(…)`) inside groups. */
  maxNesting: 6,
});

/** The measures {@link GLOB_LIMITS} bounds. */
export interface GlobComplexity {
  length: number;
  wildcards: number;
  alternatives: number;
  nesting: number;
}

/** Alternatives are counted up to here (a product of many groups would lose precision). */
const ALTERNATIVES_CAP = 1e9;

interface Group {
  close: '}' | ')';
  separator: ',' | '|';
  /** Alternatives of the branches before the current one. */
  done: number;
  /** Alternatives of the current branch (the product of its groups). */
  branch: number;
}

/** Index of the `]` closing a bracket expression opened at `open`, or -1 when `[` is literal. */
function bracketEnd(pattern: string, open: number): number {
  let i = open + 1;
  if (pattern[i] === '!' || pattern[i] === '^') i++;
  if (pattern[i] === ']') i++; // a leading `]` is a member
  for (; i < pattern.length; i++) {
    if (pattern[i] === '\\') i++;
    else if (pattern[i] === ']') return i;
  }
  return -1;
}

/**
 * Measures a pattern in one linear pass (a 10 kB pattern takes microseconds). Unclosed
 * groups are counted as if closed at the end: an over-estimate, never an under-estimate.
 */
export function measureGlob(pattern: string): GlobComplexity {
  const root: Group = { close: '}', separator: ',', done: 0, branch: 1 };
  const stack: Group[] = [root];
  let wildcards = 0;
  let nesting = 0;
  const closeTop = (): void => {
    const group = stack.pop() as Group;
    const parent = stack[stack.length - 1] as Group;
    parent.branch = Math.min(ALTERNATIVES_CAP, parent.branch * Math.max(1, group.done + group.branch));
  };
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    const top = stack[stack.length - 1] as Group;
    if (c === '\\') {
      i++;
    } else if (c === '[') {
      const end = bracketEnd(pattern, i);
      if (end > 0) i = end; // a bracket expression matches one character
    } else if (c === '*' || c === '?') {
      wildcards++;
      while (c === '*' && pattern[i + 1] === '*') i++;
    } else if ((c === '+' || c === '!') && pattern[i + 1] === '(') {
      wildcards++;
    } else if (c === '{' || c === '(') {
      stack.push(c === '{' ? { close: '}', separator: ',', done: 0, branch: 1 } : { close: ')', separator: '|', done: 0, branch: 1 });
      nesting = Math.max(nesting, stack.length - 1);
    } else if (c === top.separator && stack.length > 1) {
      top.done = Math.min(ALTERNATIVES_CAP, top.done + top.branch);
      top.branch = 1;
    } else if (c === top.close && stack.length > 1) {
      closeTop();
    }
  }
  while (stack.length > 1) closeTop();
  return { length: pattern.length, wildcards, alternatives: root.branch, nesting };
}

/** The pattern as quoted in a message: long ones are cut. */
function quoted(pattern: string): string {
  return JSON.stringify(pattern.length > 80 ? `${pattern.slice(0, 60)}…` : pattern);
}

/** A `pattern_too_complex` error naming every limit the pattern breaks, or undefined when it is within them. */
export function checkGlobComplexity(pattern: string, argName: string): ToolError | undefined {
  const m = measureGlob(pattern);
  const broken: string[] = [];
  const advice: string[] = [];
  if (m.length > GLOB_LIMITS.maxLength) {
    broken.push(`is ${m.length} characters long (limit ${GLOB_LIMITS.maxLength})`);
    advice.push('name a directory in path instead of spelling it out in the pattern');
  }
  if (m.wildcards > GLOB_LIMITS.maxWildcards) {
    broken.push(`has ${m.wildcards} wildcards (*, ? and +( / !( groups; limit ${GLOB_LIMITS.maxWildcards})`);
    advice.push('use one * per path segment and ** for any depth');
  }
  if (m.alternatives > GLOB_LIMITS.maxAlternatives) {
    const count = m.alternatives >= ALTERNATIVES_CAP ? `over ${ALTERNATIVES_CAP}` : String(m.alternatives);
    broken.push(`expands to ${count} alternatives from {a,b} and (a|b) groups (limit ${GLOB_LIMITS.maxAlternatives})`);
    advice.push('use fewer groups, or run several simpler searches');
  }
  if (m.nesting > GLOB_LIMITS.maxNesting) {
    broken.push(`nests groups ${m.nesting} deep (limit ${GLOB_LIMITS.maxNesting})`);
    advice.push('flatten nested {…} groups into one list');
  }
  if (broken.length === 0) return undefined;
  return {
    type: 'pattern_too_complex',
    message: `${argName} ${quoted(pattern)} is too complex to match safely: it ${broken.join('; it ')}. Simplify it: ${advice.join('; ')}.`,
  };
}

/** A glob compiled for the search worker: picomatch's RegExp plus the rules picomatch applies around it. */
export interface CompiledGlob {
  /** The pattern itself: a path equal to it matches whatever the RegExp says (picomatch's rule). */
  glob: string;
  source: string;
  flags: string;
  /** Match the RegExp against the path's base name only. */
  basename: boolean;
  /** Match directories only (a `.gitignore` line ending in `/`). */
  dirOnly?: boolean;
}

/** Checks the complexity limit, then compiles with picomatch (dot files match). */
export function compileGlob(
  pattern: string,
  options: { nocase?: boolean; basename?: boolean },
  argName: string,
): { ok: true; glob: CompiledGlob } | { ok: false; error: ToolError } {
  const tooComplex = checkGlobComplexity(pattern, argName);
  if (tooComplex) return { ok: false, error: tooComplex };
  try {
    const re = picomatch.makeRe(pattern, { dot: true, nocase: options.nocase === true });
    return { ok: true, glob: { glob: pattern, source: re.source, flags: re.flags, basename: options.basename === true } };
  } catch (err) {
    return { ok: false, error: { type: 'invalid_argument', message: `${argName} ${quoted(pattern)} is not a valid glob: ${String(err)}` } };
  }
}
