/** Unified diffs for file-change proposals. */
import { createTwoFilesPatch, FILE_HEADERS_ONLY } from 'diff';

/**
 * A unified diff of `oldContent` → `newContent` with `a/<relPath>` / `b/<relPath>`
 * headers. When `oldContent` is undefined (the file does not exist yet) the old
 * side is `/dev/null`. Returns '' when nothing changes.
 *
 * @param relPath the file's path relative to the workspace, with forward slashes
 */
export function unifiedDiff(relPath: string, oldContent: string | undefined, newContent: string): string {
  if (oldContent !== undefined && oldContent === newContent) return '';
  const oldName = oldContent === undefined ? '/dev/null' : `a/${relPath}`;
  return createTwoFilesPatch(oldName, `b/${relPath}`, oldContent ?? '', newContent, undefined, undefined, {
    headerOptions: FILE_HEADERS_ONLY,
  });
}
