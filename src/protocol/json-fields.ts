/**
 * JSON-object field helpers for the development-tool schema.
 *
 * - Inbound: {@link readFields} reads a client's JSON object whose keys may use
 *   either the proto field name (`tool_call_id`) or its proto3-JSON
 *   lowerCamelCase name (`toolCallId`), and rejects anything else.
 * - Outbound: {@link checkMessageJson} checks that an object the server is about
 *   to emit matches a reflected message exactly (field names, scalar types,
 *   enum names, oneofs), because protobufjs' `fromObject` silently drops or
 *   coerces what does not fit.
 *
 * This module does not import protobufjs; it works on a structural view of its
 * reflection objects (see {@link ReflectedMessage}).
 */
import { checkJsonObject } from './struct-json.js';

/** The subset of a protobufjs `Enum` used here. */
export interface ReflectedEnum {
  readonly name: string;
  readonly values: { readonly [name: string]: number };
}
/** The subset of a protobufjs `OneOf` used here. */
export interface ReflectedOneOf {
  readonly name: string;
  readonly oneof: readonly string[];
}
/** The subset of a protobufjs `Field` used here. */
export interface ReflectedField {
  readonly name: string;
  readonly type: string;
  readonly repeated: boolean;
  readonly map: boolean;
  readonly resolvedType: ReflectedMessage | ReflectedEnum | null;
  /** The oneof the field is a member of (a proto3 `optional` field's is synthetic): it has presence. */
  readonly partOf?: ReflectedOneOf | null;
}
/** The subset of a protobufjs `Type` used here. */
export interface ReflectedMessage {
  readonly name: string;
  readonly fullName: string;
  readonly fieldsArray: readonly ReflectedField[];
  readonly oneofsArray: readonly ReflectedOneOf[];
}

/** Result of a strict inbound parse: the normalised value, or a message naming the bad field. */
export type ParseResult<T> = { ok: true; value: T } | { ok: false; message: string };

/** proto3 JSON name of a proto field name: `tool_call_id` -> `toolCallId`. */
export function lowerCamel(protoName: string): string {
  return protoName.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase());
}

/** `path.key` for identifier-like keys, `path["key"]` otherwise. */
export function fieldPath(path: string, key: string): string {
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** True for `{}`-style objects (not arrays, null, class instances such as Date). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** One field found by {@link readFields}: the key as the client spelled it, its path, its value. */
export interface FieldRead {
  readonly key: string;
  readonly path: string;
  readonly value: unknown;
}

/**
 * Reads the fields of a client JSON object.
 *
 * Contract: `data` must be a plain object (else error `<path> must be a JSON
 * object (<typeName>)`). Every own key must be one of `accepted` (proto names)
 * or its lowerCamelCase form; keys whose value is `undefined` are ignored. Any
 * other key fails with `<path>.<key> is not a field of <typeName> (expected
 * <expected joined by ", ">)`; `expected` defaults to `accepted`. Giving both
 * spellings of one field fails with `<path> sets both <a> and <b>`.
 * On success returns the present fields keyed by proto name; values are not
 * type-checked here.
 */
export function readFields(
  data: unknown,
  path: string,
  typeName: string,
  accepted: readonly string[],
  expected: readonly string[] = accepted,
): ParseResult<Map<string, FieldRead>> {
  if (!isPlainObject(data)) return { ok: false, message: `${path} must be a JSON object (${typeName})` };
  const byKey = new Map<string, string>();
  for (const name of accepted) {
    byKey.set(name, name);
    byKey.set(lowerCamel(name), name);
  }
  const out = new Map<string, FieldRead>();
  for (const key of Object.keys(data)) {
    const value = data[key];
    if (value === undefined) continue;
    const name = byKey.get(key);
    if (name === undefined) {
      const list = expected.join(', ');
      return { ok: false, message: `${fieldPath(path, key)} is not a field of ${typeName} (expected ${list})` };
    }
    const prior = out.get(name);
    if (prior) return { ok: false, message: `${path} sets both ${prior.key} and ${key}` };
    out.set(name, { key, path: fieldPath(path, key), value });
  }
  return { ok: true, value: out };
}

const INT32_MIN = -2147483648;
const INT32_MAX = 2147483647;

function isEnum(t: ReflectedMessage | ReflectedEnum): t is ReflectedEnum {
  return 'values' in t;
}

function checkSingle(field: ReflectedField, v: unknown, p: string): string | null {
  const rt = field.resolvedType;
  if (rt && isEnum(rt)) {
    if (typeof v === 'string' && Object.hasOwn(rt.values, v)) return null;
    return `${p} must be a ${rt.name} name (one of ${Object.keys(rt.values).join(', ')}), got ${JSON.stringify(v)}`;
  }
  if (rt) {
    if (rt.fullName === '.google.protobuf.Struct') return checkJsonObject(v, p);
    return checkMessageJson(rt, v, p);
  }
  switch (field.type) {
    case 'string':
      return typeof v === 'string' ? null : `${p} must be a string`;
    case 'bool':
      return typeof v === 'boolean' ? null : `${p} must be a boolean`;
    case 'int32':
      return Number.isInteger(v) && (v as number) >= INT32_MIN && (v as number) <= INT32_MAX ? null : `${p} must be an int32 integer`;
    default:
      return `${p} has type ${field.type}, which this checker does not support`;
  }
}

/**
 * Checks that `obj` is exactly the proto-JSON form of `type` (snake_case proto
 * field names, enum values as names, Struct fields as plain JSON objects).
 *
 * Contract: returns `null` when valid, else a message starting with the path of
 * the first offending field (`<path>.<field>...`). Rejected: non-objects,
 * unknown keys, `null` values, wrong scalar types, enum values that are not
 * names of the enum (numbers included), non-arrays for repeated fields, and
 * two members of one oneof set at once. Keys whose value is `undefined` count
 * as absent.
 */
export function checkMessageJson(type: ReflectedMessage, obj: unknown, path: string): string | null {
  if (!isPlainObject(obj)) return `${path} must be an object (${type.name})`;
  for (const key of Object.keys(obj)) {
    const v = obj[key];
    if (v === undefined) continue;
    const p = fieldPath(path, key);
    const field = type.fieldsArray.find((f) => f.name === key);
    if (!field) {
      const list = type.fieldsArray.map((f) => f.name).join(', ');
      return `${p} is not a field of ${type.name} (expected ${list})`;
    }
    if (v === null) return `${p} must not be null (omit the field instead)`;
    if (field.map) return `${p} is a map field, which this checker does not support`;
    if (field.repeated) {
      if (!Array.isArray(v)) return `${p} must be an array`;
      for (let i = 0; i < v.length; i++) {
        const err = checkSingle(field, v[i], `${p}[${i}]`);
        if (err) return err;
      }
      continue;
    }
    const err = checkSingle(field, v, p);
    if (err) return err;
  }
  for (const oneof of type.oneofsArray) {
    const set = oneof.oneof.filter((name) => obj[name] !== undefined);
    if (set.length > 1) {
      return `${path} sets ${set.join(' and ')}, but they are members of oneof ${oneof.name} (set at most one)`;
    }
  }
  return null;
}

/** String.prototype.isWellFormed (Node 20; the ES2023 library the project compiles against predates it). */
const wellFormed = (s: string): boolean => (s as unknown as { isWellFormed(): boolean }).isWellFormed();

/** Struct keys the wire round trip cannot keep as data (a decoded map assigns them to a plain object). */
const UNSAFE_STRUCT_KEYS = new Set(['__proto__']);

/**
 * The proto3 JSON that protobufjs' wire round trip (fromObject → encode → decode → toObject with
 * enums as names, no defaults, no virtual oneof fields) makes of `obj`, which
 * {@link checkMessageJson} has accepted — built by copying, without protobufjs: fields in
 * declaration order; `undefined`, empty repeated fields and scalars without presence at their
 * default left out; Struct values copied as JSON. `undefined` when a string is not well-formed UTF-16 or a Struct has a key the round trip
 * mangles: what the wire makes of those is left to the wire.
 */
export function copyProtoJson(type: ReflectedMessage, obj: Record<string, unknown>): Record<string, unknown> | undefined {
  const out: Record<string, unknown> = {};
  for (const field of type.fieldsArray) {
    const v = obj[field.name];
    if (v === undefined) continue;
    if (field.repeated) {
      const list = v as unknown[];
      if (list.length === 0) continue;
      const copy = new Array<unknown>(list.length);
      for (let i = 0; i < list.length; i++) {
        const c = copySingle(field, list[i]);
        if (c === undefined) return undefined;
        copy[i] = c;
      }
      out[field.name] = copy;
      continue;
    }
    if (field.partOf == null && isImplicitDefault(field, v)) continue; // the wire has no bytes for it
    const c = copySingle(field, v);
    if (c === undefined) return undefined;
    out[field.name] = c;
  }
  return out;
}

/** A scalar field without presence holding its default (empty string, false, 0, the enum's zero). */
function isImplicitDefault(field: ReflectedField, v: unknown): boolean {
  const rt = field.resolvedType;
  if (rt && isEnum(rt)) return rt.values[v as string] === 0;
  return !rt && (v === '' || v === false || v === 0);
}

function copySingle(field: ReflectedField, v: unknown): unknown {
  const rt = field.resolvedType;
  if (rt && !isEnum(rt)) {
    if (rt.fullName === '.google.protobuf.Struct') return copyJson(v);
    return copyProtoJson(rt, v as Record<string, unknown>);
  }
  return typeof v === 'string' && !wellFormed(v) ? undefined : v;
}

/** A JSON value copied (null, number, string, boolean, array, object); undefined where the wire would differ. */
function copyJson(v: unknown): unknown {
  if (typeof v === 'string') return wellFormed(v) ? v : undefined;
  if (v === null || typeof v !== 'object') return v;
  if (Array.isArray(v)) {
    const copy = new Array<unknown>(v.length);
    for (let i = 0; i < v.length; i++) {
      // An undefined array element is a JSON null (checkJsonValue allows none; kept exact anyway).
      const c = v[i] === undefined ? null : copyJson(v[i]);
      if (c === undefined) return undefined;
      copy[i] = c;
    }
    return copy;
  }
  const out: Record<string, unknown> = {};
  for (const k of Object.keys(v)) {
    const x = (v as Record<string, unknown>)[k];
    if (x === undefined) continue;
    if (UNSAFE_STRUCT_KEYS.has(k) || !wellFormed(k)) return undefined;
    const c = copyJson(x);
    if (c === undefined) return undefined;
    out[k] = c;
  }
  return out;
}
