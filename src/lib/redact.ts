/**
 * Keeping secrets out of the log. Two layers, because neither alone is enough:
 * - `LOG_REDACT_PATHS`: pino paths censored wherever a known-secret field is logged (request
 *   headers, a push config's token or credentials), whatever its value;
 * - `secretScrubber`: the process's own secrets (GEMINI_API_KEY, the DATABASE_URL password,
 *   API keys) replaced by value in every line written, wherever they turn up (an error message
 *   or stack that quotes a URL, a config echoed by a library).
 * And `withoutQueryParams`: a failed statement's parameters, which drizzle quotes in its error
 * message (`Failed query: … params: …`), are cut from every line: they hold what a task wrote
 * (file contents, messages), which may be anyone's secret.
 */

/** Fields that carry credentials wherever they are logged. */
export const LOG_REDACT_PATHS = [
  'req.headers.authorization',
  'req.headers["x-api-key"]',
  'req.headers["x-goog-api-key"]',
  'req.headers.cookie',
  'headers.authorization',
  'headers["x-api-key"]',
  'headers["x-goog-api-key"]',
  'headers.cookie',
  'token',
  '*.token',
  '*.*.token',
  'credentials',
  '*.credentials',
  '*.*.credentials',
  'apiKey',
  '*.apiKey',
  'databaseUrl',
  '*.databaseUrl',
];

export const REDACTED = '[REDACTED]';

/** Secrets shorter than this are not scrubbed by value (they would match ordinary text). */
const MIN_SECRET = 6;

/** The password of a database URL (as written and decoded), if it has one. */
export function urlPassword(url: string | undefined): string[] {
  if (url === undefined) return [];
  try {
    const raw = new URL(url).password;
    return raw === '' ? [] : [raw, decodeURIComponent(raw)];
  } catch {
    return [];
  }
}

/**
 * A function that replaces every occurrence of each secret in a text — as written, URL-encoded,
 * and escaped as in a JSON string — with `[REDACTED]`. Secrets shorter than 6 characters are
 * ignored. Cheap when there is nothing to scrub.
 */
export function secretScrubber(secrets: ReadonlyArray<string | undefined>): (text: string) => string {
  const forms = new Set<string>();
  for (const s of secrets) {
    if (s === undefined || s.length < MIN_SECRET) continue;
    forms.add(s);
    forms.add(encodeURIComponent(s));
    forms.add(JSON.stringify(s).slice(1, -1));
  }
  const list = [...forms].sort((a, b) => b.length - a.length); // the longest first: a form that contains another
  if (list.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const form of list) if (out.includes(form)) out = out.split(form).join(REDACTED);
    return out;
  };
}

/** Inside a JSON line: drizzle's `\nparams: <values>` up to the end of the string it is in, or of the message in a stack. */
const QUERY_PARAMS = /\\nparams: (?:[^"\\]|\\(?!n {4}at )[^])*/g;

/** `line` (a JSON log line) with the parameters quoted by failed-query messages replaced by `[REDACTED]`. */
export function withoutQueryParams(line: string): string {
  return line.includes('params: ') ? line.replace(QUERY_PARAMS, `\\nparams: ${REDACTED}`) : line;
}
