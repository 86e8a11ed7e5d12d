/** Syntax colouring with highlight.js core and the languages a workspace usually holds. */
import hljs from 'highlight.js/lib/core';
import bash from 'highlight.js/lib/languages/bash';
import css from 'highlight.js/lib/languages/css';
import go from 'highlight.js/lib/languages/go';
import java from 'highlight.js/lib/languages/java';
import javascript from 'highlight.js/lib/languages/javascript';
import json from 'highlight.js/lib/languages/json';
import markdown from 'highlight.js/lib/languages/markdown';
import python from 'highlight.js/lib/languages/python';
import rust from 'highlight.js/lib/languages/rust';
import typescript from 'highlight.js/lib/languages/typescript';
import xml from 'highlight.js/lib/languages/xml';
import yaml from 'highlight.js/lib/languages/yaml';
import { cleanHighlightHtml, escapeHtml } from './sanitize.js';

const LANGUAGES = { bash, css, go, java, javascript, json, markdown, python, rust, typescript, xml, yaml };
for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);

const BY_EXTENSION: Record<string, string> = {
  sh: 'bash',
  bash: 'bash',
  zsh: 'bash',
  css: 'css',
  go: 'go',
  java: 'java',
  js: 'javascript',
  mjs: 'javascript',
  cjs: 'javascript',
  jsx: 'javascript',
  json: 'json',
  md: 'markdown',
  py: 'python',
  rs: 'rust',
  ts: 'typescript',
  tsx: 'typescript',
  mts: 'typescript',
  html: 'xml',
  htm: 'xml',
  xml: 'xml',
  svg: 'xml',
  yml: 'yaml',
  yaml: 'yaml',
};

/** The highlight.js language for a file name or a Markdown fence's info string; undefined = plain text. */
export function languageOf(nameOrFence: string | undefined): string | undefined {
  if (!nameOrFence) return undefined;
  const lower = nameOrFence.trim().toLowerCase();
  if (hljs.getLanguage(lower)) return lower;
  const ext = /\.([a-z0-9]+)$/.exec(lower)?.[1];
  return ext === undefined ? undefined : BY_EXTENSION[ext];
}

/** `code` as safe HTML: coloured spans when the language is known, escaped text otherwise. */
export function highlight(code: string, language: string | undefined): string {
  if (language === undefined || !hljs.getLanguage(language)) return escapeHtml(code);
  return cleanHighlightHtml(hljs.highlight(code, { language, ignoreIllegals: true }).value);
}
