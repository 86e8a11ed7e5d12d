/**
 * The workspace's context file (GEMINI.md, as Gemini CLI names it): project notes the
 * model reads with every step, shown by `/memory show`, extended by `/memory add` and
 * drafted by `/init`. It is an ordinary workspace file: writing it asks like any edit.
 */
import { ProtectedPaths, readRegularFile, resolveInWorkspace } from '../../tools/index.js';

export const MEMORY_FILE = 'GEMINI.md';
/** The heading `/memory add` appends under (Gemini CLI's). */
export const MEMORY_SECTION = '## Gemini Added Memories';
/** Larger context files are cut (the model's context is precious). */
export const MAX_MEMORY_BYTES = 64 * 1024;

/**
 * The context file's text, or undefined when there is none (or it is not a readable file inside
 * the workspace, or it is — through a link — one of the server's own files).
 */
export async function readMemory(workspace: string, protectedPaths = ProtectedPaths.NONE): Promise<string | undefined> {
  const resolved = await resolveInWorkspace(workspace, MEMORY_FILE, 'file_path', protectedPaths);
  // None there a moment ago: no read (a file created meanwhile is read at the next step).
  if (!resolved.ok || resolved.missing === true) return undefined;
  // A regular file only, opened without blocking (a FIFO named GEMINI.md must not hold a thread).
  const read = await readRegularFile(resolved.path, MAX_MEMORY_BYTES, { truncate: true });
  if (!read.ok) return undefined;
  const text = read.bytes.toString('utf8');
  return read.truncated === true ? `${text}\n[… ${MEMORY_FILE} truncated at ${MAX_MEMORY_BYTES} bytes]` : text;
}

/** The system-instruction block carrying the context file, or undefined when there is none. */
export async function memoryInstruction(workspace: string, protectedPaths = ProtectedPaths.NONE): Promise<string | undefined> {
  const text = await readMemory(workspace, protectedPaths);
  if (text === undefined || text.trim() === '') return undefined;
  return `The project's context file ${MEMORY_FILE} (notes from the user; follow them):\n--- ${MEMORY_FILE} ---\n${text.trim()}\n--- end of ${MEMORY_FILE} ---`;
}

/** The context file's new content with `fact` added as a bullet under {@link MEMORY_SECTION}. */
export function withMemory(existing: string | undefined, fact: string): string {
  const bullet = `- ${fact.replace(/\s*\n\s*/g, ' ').trim()}`;
  const text = existing ?? '';
  const at = text.indexOf(MEMORY_SECTION);
  if (at < 0) {
    const sep = text === '' ? '' : text.endsWith('\n\n') ? '' : text.endsWith('\n') ? '\n' : '\n\n';
    return `${text}${sep}${MEMORY_SECTION}\n\n${bullet}\n`;
  }
  // Append at the end of the section (before the next heading of the same or higher level).
  const after = at + MEMORY_SECTION.length;
  const next = text.slice(after).search(/\n#{1,2} /);
  const end = next < 0 ? text.length : after + next + 1;
  const head = text.slice(0, end).replace(/\n*$/, '\n');
  return `${head}${bullet}\n${next < 0 ? '' : `\n${text.slice(end)}`}`;
}
