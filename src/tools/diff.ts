/** Unified diffs for file-change proposals. */
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from 'diff';

/**
 * Bounds on the line diff of a card. It is computed on the event loop when a call is proposed,
 * and Myers' algorithm costs time in proportion to the file's length times the number of lines
 * changed: a 2 MiB file with every line changed took minutes (8000 changed lines: 40 s). Past
 * either bound the card shows the whole file replaced instead (every old line removed, every new
 * line added): still exactly what will be written, only not the shortest diff.
 */
export const DIFF_LIMITS = {
  /** Lines removed plus lines added that the shortest diff may have. */
  maxEditLength: 1_000,
  /** Milliseconds the search for the shortest diff may take. */
  timeoutMs: 200,
  /** Characters of both sides together above which the shortest diff is not searched for at all (splitting them into lines alone took seconds). */
  maxSearchedChars: 256 * 1024,
} as const;

const NO_NEWLINE = '\\ No newline at end of file';

/** The number of lines of `text` (a last line without a newline counts), counted natively. */
function lineCount(text: string): number {
  let n = 0;
  for (let i = text.indexOf('\n'); i !== -1; i = text.indexOf('\n', i + 1)) n++;
  return text === '' || text.endsWith('\n') ? n : n + 1;
}

/** The lines of `text`, each prefixed with `mark`, and git's marker when the last has no newline. */
function marked(text: string, mark: '-' | '+'): string {
  if (text === '') return '';
  const complete = text.endsWith('\n');
  // split/join: several times faster than replaceAll on a million short lines.
  const body = mark + (complete ? text.slice(0, -1) : text).split('\n').join('\n' + mark) + '\n';
  return complete ? body : `${body}${NO_NEWLINE}\n`;
}

/** A diff that replaces the whole of `oldText` by `newText` in one hunk (string operations only: linear and native). */
function wholeFileDiff(oldName: string, newName: string, oldText: string, newText: string): string {
  const oldLines = lineCount(oldText);
  const newLines = lineCount(newText);
  const range = (lines: number) => `${lines === 0 ? 0 : 1},${lines}`;
  const head = `--- ${oldName}\n+++ ${newName}\n@@ -${range(oldLines)} +${range(newLines)} @@\n`;
  return head + marked(oldText, '-') + marked(newText, '+');
}

/**
 * A unified diff of `oldContent` → `newContent` with `a/<relPath>` / `b/<relPath>`
 * headers. When `oldContent` is undefined (the file does not exist yet) the old
 * side is `/dev/null`; when `newContent` is (the file is removed) the new side is, so a
 * removal never reads as emptying the file (or, for an empty file, as no change). Returns '' when nothing changes. Bounded by {@link DIFF_LIMITS}.
 *
 * @param relPath the file's path relative to the workspace, with forward slashes
 */
export function unifiedDiff(relPath: string, oldContent: string | undefined, newContent: string | undefined): string {
  if (oldContent === newContent) return '';
  const oldName = oldContent === undefined ? '/dev/null' : `a/${relPath}`;
  const newName = newContent === undefined ? '/dev/null' : `b/${relPath}`;
  const [oldText, newText] = [oldContent ?? '', newContent ?? ''];
  if (oldText.length + newText.length > DIFF_LIMITS.maxSearchedChars) return wholeFileDiff(oldName, newName, oldText, newText);
  const diff = createTwoFilesPatch(oldName, newName, oldText, newText, undefined, undefined, {
    headerOptions: FILE_HEADERS_ONLY,
    maxEditLength: DIFF_LIMITS.maxEditLength,
    timeout: DIFF_LIMITS.timeoutMs,
  });
  return diff ?? wholeFileDiff(oldName, newName, oldText, newText);
}
