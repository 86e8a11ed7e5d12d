/**
 * Model text as Markdown. Raw HTML in it is shown as text (a model that writes `<img onerror>`
 * gets exactly those characters on screen), images become links (nothing is fetched), code
 * blocks are coloured; the result is sanitised once more (sanitize.ts).
 */
import { Marked } from 'marked';
import { highlight, languageOf } from './highlight.js';
import { cleanMarkdownHtml, escapeHtml } from './sanitize.js';

const marked = new Marked({
  gfm: true,
  async: false,
  renderer: {
    html: ({ text }) => escapeHtml(text),
    image: ({ href, text }) => `<a href="${escapeHtml(href)}">${escapeHtml(text || href)}</a>`,
    code: ({ text, lang }) => {
      const language = languageOf(lang?.split(/\s/)[0]);
      return `<pre><code class="hljs">${highlight(text, language)}</code></pre>`;
    },
  },
});

/** Markdown → sanitised HTML, for `dangerouslySetInnerHTML`. */
export function renderMarkdown(text: string): string {
  return cleanMarkdownHtml(marked.parse(text, { async: false }));
}
