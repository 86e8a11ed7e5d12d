/**
 * Untrusted text to HTML: everything the model or a tool produced (answers, file contents, diffs,
 * shell output, tool and server names) is text. Only two renderers make HTML, both from text they
 * escape themselves — Markdown (marked, with raw HTML escaped) and syntax colouring (highlight.js)
 * — and their output then goes through DOMPurify with a short allow-list, so a bug in either cannot
 * put a script, a handler or a foreign resource on the page. The CSP is the third wall.
 */
import DOMPurify from 'dompurify';

/** Escapes text for an HTML text node or a quoted attribute. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => `&#${c.charCodeAt(0)};`);
}

const MARKDOWN_TAGS = [
  'p',
  'br',
  'hr',
  'em',
  'strong',
  'del',
  'code',
  'pre',
  'blockquote',
  'ul',
  'ol',
  'li',
  'a',
  'span',
  'h1',
  'h2',
  'h3',
  'h4',
  'h5',
  'h6',
  'table',
  'thead',
  'tbody',
  'tr',
  'th',
  'td',
  'input',
];

let hooked = false;
function hookLinks(): void {
  if (hooked) return;
  hooked = true;
  // Links open elsewhere and tell the target nothing about this page.
  DOMPurify.addHook('afterSanitizeAttributes', (node) => {
    if (node.tagName === 'A') {
      node.setAttribute('target', '_blank');
      node.setAttribute('rel', 'noopener noreferrer');
    }
    if (node.tagName === 'INPUT' && node.getAttribute('type') !== 'checkbox') node.remove();
  });
}

/** Markdown's HTML, reduced to formatting tags; links keep only http(s) and mailto targets. */
export function cleanMarkdownHtml(html: string): string {
  hookLinks();
  return DOMPurify.sanitize(html, {
    ALLOWED_TAGS: MARKDOWN_TAGS,
    ALLOWED_ATTR: ['href', 'title', 'class', 'type', 'checked', 'disabled', 'start', 'align'],
    ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  });
}

/** Highlighter output: spans with classes, nothing else. */
export function cleanHighlightHtml(html: string): string {
  return DOMPurify.sanitize(html, { ALLOWED_TAGS: ['span'], ALLOWED_ATTR: ['class'] });
}
