/**
 * Shell output with ANSI colours, as Preact text nodes in spans: no HTML is ever parsed, so
 * output that prints `<script>` shows those characters. Colours are classes (console.css), since
 * the CSP allows no inline style.
 */
import Anser from 'anser';
import type { JSX } from 'preact';

const DECORATIONS = new Set(['bold', 'dim', 'italic', 'underline', 'strikethrough']);

function classOf(entry: Anser.AnserJsonEntry): string {
  const classes: string[] = [];
  if (entry.fg) classes.push(`${entry.fg}-fg`);
  if (entry.bg) classes.push(`${entry.bg}-bg`);
  for (const d of entry.decorations) if (DECORATIONS.has(d)) classes.push(`ansi-${d}`);
  return classes.join(' ');
}

/** The spans of `text`'s coloured runs. */
export function AnsiText({ text }: { text: string }): JSX.Element {
  const entries = Anser.ansiToJson(text, { use_classes: true, remove_empty: true });
  return (
    <>
      {entries.map((e, i) => {
        const cls = classOf(e);
        return cls ? (
          <span key={i} class={cls}>
            {e.content}
          </span>
        ) : (
          e.content
        );
      })}
    </>
  );
}
