/**
 * A file edit as a unified diff: line numbers on both sides, added and removed lines marked,
 * each line coloured for the file's language. The diff text comes from the card (the server's
 * `formatted_diff`), or, without one, the whole new content as added lines.
 */
import type { JSX } from 'preact';
import { highlight, languageOf } from './highlight.js';

export interface DiffLine {
  kind: 'add' | 'del' | 'ctx' | 'hunk' | 'note';
  oldNo?: number;
  newNo?: number;
  text: string;
}

/** Parses a unified diff; file headers are dropped, hunk headers and `\ No newline` notes kept. */
export function parseUnifiedDiff(diff: string): DiffLine[] {
  const out: DiffLine[] = [];
  let oldNo = 0;
  let newNo = 0;
  let inHunk = false;
  for (const line of diff.split('\n')) {
    const hunk = /^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@/.exec(line);
    if (hunk) {
      oldNo = Number(hunk[1]);
      newNo = Number(hunk[2]);
      inHunk = true;
      out.push({ kind: 'hunk', text: line });
    } else if (!inHunk) {
      continue; // Index:, ===, ---, +++ headers
    } else if (line.startsWith('+')) {
      out.push({ kind: 'add', newNo: newNo++, text: line.slice(1) });
    } else if (line.startsWith('-')) {
      out.push({ kind: 'del', oldNo: oldNo++, text: line.slice(1) });
    } else if (line.startsWith(' ')) {
      out.push({ kind: 'ctx', oldNo: oldNo++, newNo: newNo++, text: line.slice(1) });
    } else if (line.startsWith('\\')) {
      out.push({ kind: 'note', text: line });
    }
  }
  return out;
}

/** Every line of `content` as added (a new file shown without a diff). */
export function addedLines(content: string): DiffLine[] {
  const lines = content.endsWith('\n') ? content.slice(0, -1).split('\n') : content.split('\n');
  return lines.map((text, i) => ({ kind: 'add', newNo: i + 1, text }));
}

const SIGN = { add: '+', del: '-', ctx: ' ', hunk: '', note: '' } as const;

export interface DiffViewProps {
  fileName: string;
  diff?: string;
  newContent?: string;
}

export function DiffView({ fileName, diff, newContent }: DiffViewProps): JSX.Element {
  const lines = diff ? parseUnifiedDiff(diff) : addedLines(newContent ?? '');
  const language = languageOf(fileName);
  return (
    <div class="diff" role="region" aria-label={`changes to ${fileName}`}>
      <div class="diff-file">{fileName}</div>
      <table>
        <tbody>
          {lines.map((l, i) => (
            <tr key={i} class={`diff-${l.kind}`}>
              <td class="ln">{l.oldNo ?? ''}</td>
              <td class="ln">{l.newNo ?? ''}</td>
              <td class="sign">{SIGN[l.kind]}</td>
              {l.kind === 'hunk' || l.kind === 'note' ? (
                <td class="code">{l.text}</td>
              ) : (
                <td class="code hljs" dangerouslySetInnerHTML={{ __html: highlight(l.text, language) }} />
              )}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}
