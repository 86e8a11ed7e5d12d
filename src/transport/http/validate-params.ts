/**
 * Checks raw JSON-RPC params before the SDK converts them (its converters are lenient:
 * they coerce or drop mistyped fields). Returns a message naming the bad field, or
 * undefined. Field paths are relative to `params`.
 */
import type { A2aVersion } from '../../protocol/a2a.js';
import { isObject } from '../../lib/is-object.js';

export type WireVersion = A2aVersion;

type Json = Record<string, unknown>;

/**
 * A wrong value as a refusal names it: bounded, and without walking it (JSON.stringify of a
 * value nested thousands deep overflows the stack; a huge string would be echoed whole).
 */
function shown(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (isObject(v)) return 'an object';
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 80)}…` : s;
}

function optString(o: Json, key: string, at: string): string | undefined {
  if (o[key] !== undefined && typeof o[key] !== 'string') return `${at}.${key} must be a string`;
  return undefined;
}

function nonNegInt(o: Json, key: string, at: string): string | undefined {
  const v = o[key];
  if (v === undefined) return undefined;
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) return `${at}.${key} must be a non-negative integer, got ${shown(v)}`;
  return undefined;
}

function checkPart(part: unknown, at: string, version: WireVersion): string | undefined {
  if (!isObject(part)) return `${at} must be an object`;
  if (version === '0.3') {
    switch (part.kind) {
      case 'text':
        return typeof part.text === 'string' ? undefined : `${at}.text must be a string`;
      case 'data':
        return isObject(part.data) ? undefined : `${at}.data must be a JSON object`;
      case 'file':
        return isObject(part.file) ? undefined : `${at}.file must be an object with bytes or uri`;
      default:
        return `${at}.kind must be "text", "data" or "file", got ${shown(part.kind)}`;
    }
  }
  const present = ['text', 'data', 'url', 'raw'].filter((k) => part[k] !== undefined);
  if (present.length !== 1) return `${at} must have exactly one of text, data, url, raw`;
  if (part.text !== undefined && typeof part.text !== 'string') return `${at}.text must be a string`;
  if (part.url !== undefined && typeof part.url !== 'string') return `${at}.url must be a string`;
  if (part.raw !== undefined && typeof part.raw !== 'string') return `${at}.raw must be a base64 string`;
  return undefined;
}

/** How deep a message's JSON may nest, and how long its ids may be. */
const MAX_DEPTH = 64;
const MAX_ID_LENGTH = 256;
/** How large metadata (a message's, a request's) may be, as JSON: it is stored with the task and re-sent with it. */
const MAX_METADATA_BYTES = 64 * 1024;
/** A UTF-16 surrogate without its other half: not Unicode text, and PostgreSQL refuses it (as it refuses U+0000). */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

function checkString(s: string, at: string): string | undefined {
  if (s.includes('\u0000')) return `${at} contains a NUL character (U+0000), which cannot be stored; remove it`;
  if (LONE_SURROGATE.test(s)) return `${at} contains an unpaired UTF-16 surrogate, which is not valid text; send valid Unicode`;
  return undefined;
}

/**
 * Every string (and key) of `value` is storable text, and it nests at most MAX_DEPTH levels:
 * what would make the store refuse the task's writes later is refused here, naming the field.
 */
function checkText(value: unknown, at: string, depth = 0): string | undefined {
  if (typeof value === 'string') return checkString(value, at);
  if (typeof value !== 'object' || value === null) return undefined;
  if (depth >= MAX_DEPTH) return `${at} nests deeper than ${MAX_DEPTH} levels`;
  const entries = Array.isArray(value)
    ? value.map((v, i) => [`[${i}]`, v] as const)
    : Object.entries(value).map(([k, v]) => [`.${k}`, v] as const);
  for (const [key, v] of entries) {
    const err = (key.startsWith('.') ? checkString(key.slice(1), `${at} (a key)`) : undefined) ?? checkText(v, `${at}${key}`, depth + 1);
    if (err) return err;
  }
  return undefined;
}

/** Control characters (U+0000–U+001F, U+007F): never part of an id, and U+0000 cannot be stored. */
function hasControl(v: string): boolean {
  for (let i = 0; i < v.length; i++) {
    const c = v.charCodeAt(i);
    if (c < 0x20 || c === 0x7f) return true;
  }
  return false;
}

/**
 * An id (a task's, a context's, a message's, a push config's, a path segment): at most
 * MAX_ID_LENGTH characters, no control characters, valid Unicode. Returns the message naming `at`.
 */
export function checkId(v: string, at: string): string | undefined {
  if (v.length > MAX_ID_LENGTH) return `${at} is ${v.length} characters long; at most ${MAX_ID_LENGTH} are accepted`;
  if (hasControl(v)) return `${at} contains a control character (U+0000–U+001F or U+007F), which an id may not hold`;
  return checkString(v, at);
}

/** The fields that name something stored by id, in both spellings (proto and lowerCamelCase). */
const ID_KEYS = new Set([
  'id',
  'messageId',
  'message_id',
  'taskId',
  'task_id',
  'contextId',
  'context_id',
  'pushNotificationConfigId',
  'configId',
  'tool_call_id',
  'toolCallId',
]);

/** Every id field of `o` (a string under one of ID_KEYS) passes checkId. */
function checkIds(o: Json, at: string): string | undefined {
  for (const [key, v] of Object.entries(o)) {
    if (!ID_KEYS.has(key) || typeof v !== 'string') continue;
    const err = checkId(v, `${at}.${key}`);
    if (err) return err;
  }
  return undefined;
}

/** How long one string of a method's params may be, outside a message (a command's arguments, a URL, a token). */
const MAX_TEXT_LENGTH = 64 * 1024;

/** Strings of `value` (nested) are at most MAX_TEXT_LENGTH characters. */
function checkLengths(value: unknown, at: string, depth = 0): string | undefined {
  if (typeof value === 'string') {
    return value.length > MAX_TEXT_LENGTH ? `${at} is ${value.length} characters long; at most ${MAX_TEXT_LENGTH} are accepted` : undefined;
  }
  if (typeof value !== 'object' || value === null || depth >= MAX_DEPTH) return undefined;
  const entries = Array.isArray(value)
    ? value.map((v, i) => [`[${i}]`, v] as const)
    : Object.entries(value).map(([k, v]) => [`.${k}`, v] as const);
  for (const [key, v] of entries) {
    const err = checkLengths(v, `${at}${key}`, depth + 1);
    if (err) return err;
  }
  return undefined;
}

/**
 * The check every method's params and every REST route's body get, whatever else its own
 * validation does: storable text (no NUL, no lone surrogate, bounded nesting), ids (of the
 * object and of each object directly in it) bounded and free of control characters, strings
 * at most MAX_TEXT_LENGTH. `at` names the whole (`params`, `body`).
 */
export function checkRequestFields(value: unknown, at: string): string | undefined {
  const text = checkText(value, at);
  if (text !== undefined || !isObject(value)) return text;
  const ids = checkIds(value, at);
  if (ids !== undefined) return ids;
  for (const [key, v] of Object.entries(value)) {
    const err = isObject(v) ? checkIds(v, `${at}.${key}`) : undefined;
    if (err) return err;
  }
  return checkLengths(value, at);
}

/** Metadata nests at most MAX_DEPTH levels (checked first: measuring it recurses) and is at most MAX_METADATA_BYTES of JSON. */
function checkMetadata(meta: unknown, at: string): string | undefined {
  if (meta === undefined) return undefined;
  const text = checkText(meta, at);
  if (text !== undefined) return text;
  const bytes = Buffer.byteLength(JSON.stringify(meta));
  return bytes > MAX_METADATA_BYTES ? `${at} is ${bytes} bytes of JSON; at most ${MAX_METADATA_BYTES} are accepted` : undefined;
}

function checkMessage(m: unknown, version: WireVersion): string | undefined {
  const at = 'params.message';
  const shape = checkMessageShape(m, version, at);
  if (shape !== undefined || !isObject(m)) return shape;
  return checkIds(m, at) ?? checkMetadata(m.metadata, `${at}.metadata`) ?? checkText(m, at);
}

function checkMessageShape(m: unknown, version: WireVersion, at: string): string | undefined {
  if (!isObject(m)) return `${at} is required and must be an object`;
  const role = m.role;
  const userRole = version === '0.3' ? 'user' : 'ROLE_USER';
  if (role !== userRole) return `${at}.role must be "${userRole}", got ${shown(role)}`;
  if (typeof m.messageId !== 'string' || m.messageId === '') return `${at}.messageId must be a non-empty string`;
  for (const key of ['taskId', 'contextId']) {
    const err = optString(m, key, at);
    if (err) return err;
  }
  if (m.metadata !== undefined && !isObject(m.metadata)) return `${at}.metadata must be an object`;
  if (!Array.isArray(m.parts)) return `${at}.parts must be an array`;
  if (m.parts.length === 0) return `${at}.parts must not be empty`;
  for (let i = 0; i < m.parts.length; i++) {
    const err = checkPart(m.parts[i], `${at}.parts[${i}]`, version);
    if (err) return err;
  }
  return undefined;
}

function checkConfiguration(c: unknown, version: WireVersion): string | undefined {
  const at = 'params.configuration';
  if (c === undefined) return undefined;
  if (!isObject(c)) return `${at} must be an object`;
  const hl = nonNegInt(c, 'historyLength', at);
  if (hl) return hl;
  const flag = version === '0.3' ? 'blocking' : 'returnImmediately';
  if (c[flag] !== undefined && typeof c[flag] !== 'boolean') return `${at}.${flag} must be a boolean`;
  const modes = c.acceptedOutputModes;
  if (modes !== undefined && (!Array.isArray(modes) || modes.some((x) => typeof x !== 'string'))) {
    return `${at}.acceptedOutputModes must be an array of strings`;
  }
  return undefined;
}

function checkTaskId(p: Json, key: string): string | undefined {
  if (typeof p[key] !== 'string' || p[key] === '') return `params.${key} must be a non-empty string (the task id)`;
  return undefined;
}

const SEND: Record<WireVersion, Set<string>> = {
  '0.3': new Set(['message/send', 'message/stream']),
  '1.0': new Set(['SendMessage', 'SendStreamingMessage']),
};
const BY_ID: Record<WireVersion, Set<string>> = {
  '0.3': new Set(['tasks/get', 'tasks/cancel', 'tasks/resubscribe']),
  '1.0': new Set(['GetTask', 'CancelTask', 'SubscribeToTask']),
};

/**
 * Validates a method's params: the shape of the methods whose inputs a client most often gets
 * wrong, and for every method (push configs, lists, extension methods…) the checks of
 * {@link checkRequestFields}. Called for methods of the request's version only (an unknown
 * method is answered -32601 first).
 */
export function validateParams(method: string, params: unknown, version: WireVersion): string | undefined {
  if (method === '') return undefined; // the SDK answers INVALID_REQUEST
  if (SEND[version].has(method)) {
    if (!isObject(params)) return 'params must be an object';
    return (
      checkMessage(params.message, version) ??
      checkMetadata(params.metadata, 'params.metadata') ??
      checkConfiguration(params.configuration, version) ??
      checkText(params, 'params') ??
      checkIds(params, 'params')
    );
  }
  if (BY_ID[version].has(method)) {
    if (!isObject(params)) return 'params must be an object';
    return checkTaskId(params, 'id') ?? checkRequestFields(params, 'params') ?? nonNegInt(params, 'historyLength', 'params');
  }
  return params === undefined ? undefined : checkRequestFields(params, 'params');
}
