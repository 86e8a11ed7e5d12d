/**
 * google.protobuf.Struct <-> plain JSON, as a protobufjs type wrapper.
 *
 * protobufjs does not map Struct to JSON by itself: `fromObject({city: 'x'})`
 * yields an empty Struct and `toObject` yields `{fields: {...}}`. The
 * {@link structWrapper} below is registered on
 * `protobuf.wrappers['.google.protobuf.Struct']` (by devtool-schema.ts, the only
 * module importing protobufjs) so that a Struct field accepts and returns a
 * plain JSON object. A plain object is ALWAYS read as JSON, so a user object
 * with a key named `fields` is not ambiguous.
 *
 * The Value message is addressed by field number (1 null_value, 2
 * number_value, 3 string_value, 4 bool_value, 5 struct_value, 6 list_value)
 * because protobufjs' built-in struct.proto uses camelCase names regardless of
 * `keepCase`.
 */

/** Deepest JSON nesting accepted in a Struct (protobufjs decodes at most 100 message levels; each JSON level costs two). */
export const MAX_JSON_DEPTH = 32;

/** Structural view of the protobufjs reflection used by the wrapper (`this` of a wrapper is the Struct `Type`). */
interface PbType {
  readonly fullName: string;
  readonly ctor: new (props?: Record<string, unknown>) => object;
  readonly fieldsArray: readonly { readonly id: number; readonly name: string; readonly resolvedType: unknown }[];
  readonly oneofsArray: readonly { readonly name: string }[];
}

function isPlain(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto: unknown = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

function field(type: PbType, id: number): { name: string; type: PbType } {
  const f = type.fieldsArray.find((x) => x.id === id);
  if (!f) throw new Error(`${type.fullName} has no field number ${id}`);
  return { name: f.name, type: f.resolvedType as PbType };
}

/**
 * Checks that `v` is a JSON value that a Struct can carry losslessly.
 *
 * Contract: returns `null` if valid, else a message naming the offending path
 * (`<path>.a[2]`). Accepted: null, booleans, strings, finite numbers, arrays of
 * JSON values (no `undefined` elements), plain objects of JSON values (keys with
 * an `undefined` value are ignored, as JSON.stringify does), nested at most
 * {@link MAX_JSON_DEPTH} levels.
 */
export function checkJsonValue(v: unknown, path: string, depth = 0): string | null {
  if (depth > MAX_JSON_DEPTH) return `${path} nests deeper than ${MAX_JSON_DEPTH} levels`;
  if (v === null || typeof v === 'string' || typeof v === 'boolean') return null;
  if (typeof v === 'number') return Number.isFinite(v) ? null : `${path} must be a finite number`;
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) {
      const err = checkJsonValue(v[i], `${path}[${i}]`, depth + 1);
      if (err) return err;
    }
    return null;
  }
  if (isPlain(v)) {
    for (const [k, x] of Object.entries(v)) {
      if (x === undefined) continue;
      const p = /^[A-Za-z_$][\w$]*$/.test(k) ? `${path}.${k}` : `${path}[${JSON.stringify(k)}]`;
      const err = checkJsonValue(x, p, depth + 1);
      if (err) return err;
    }
    return null;
  }
  return `${path} is not a JSON value (${v === undefined ? 'undefined' : typeof v})`;
}

/** Like {@link checkJsonValue}, but the top level must be a plain object (a Struct). */
export function checkJsonObject(v: unknown, path: string): string | null {
  return isPlain(v) ? checkJsonValue(v, path) : `${path} must be a plain JSON object`;
}

function toValue(valueType: PbType, v: unknown, depth: number): object {
  const mk = (id: number, x: unknown) => new valueType.ctor({ [field(valueType, id).name]: x });
  if (v === null) return mk(1, 0);
  if (typeof v === 'number') return mk(2, v);
  if (typeof v === 'string') return mk(3, v);
  if (typeof v === 'boolean') return mk(4, v);
  if (Array.isArray(v)) {
    const listType = field(valueType, 6).type;
    const values = v.map((x) => toValue(valueType, x, depth + 1));
    return mk(6, new listType.ctor({ [field(listType, 1).name]: values }));
  }
  return mk(5, toStruct(field(valueType, 5).type, v, depth + 1));
}

function toStruct(structType: PbType, obj: unknown, depth: number): object {
  const err = depth === 0 ? checkJsonObject(obj, structType.fullName.slice(1)) : null;
  if (err) throw new TypeError(err);
  const { name, type: valueType } = field(structType, 1);
  const fields = Object.create(null) as Record<string, object>;
  for (const [k, x] of Object.entries(obj as Record<string, unknown>)) {
    if (x !== undefined) fields[k] = toValue(valueType, x, depth);
  }
  return new structType.ctor({ [name]: fields });
}

function fromValue(valueType: PbType, m: Record<string, unknown>): unknown {
  const kind = m[valueType.oneofsArray[0]!.name] as string | undefined;
  const id = valueType.fieldsArray.find((f) => f.name === kind)?.id;
  switch (id) {
    case 1:
    case undefined: // a Value with no kind set is not valid JSON content; map it to null
      return null;
    case 5:
      return fromStruct(field(valueType, 5).type, m[kind!] as Record<string, unknown>);
    case 6: {
      const list = field(valueType, 6);
      const values = (m[kind!] as Record<string, unknown>)[field(list.type, 1).name] as Record<string, unknown>[] | undefined;
      return (values ?? []).map((x) => fromValue(valueType, x));
    }
    default:
      return m[kind!];
  }
}

function fromStruct(structType: PbType, m: Record<string, unknown>): Record<string, unknown> {
  const { name, type: valueType } = field(structType, 1);
  const fields = (m[name] ?? {}) as Record<string, Record<string, unknown>>;
  // Object.fromEntries defines own properties, so a "__proto__" key stays data.
  return Object.fromEntries(Object.keys(fields).map((k) => [k, fromValue(valueType, fields[k]!)]));
}

/**
 * protobufjs wrapper for `.google.protobuf.Struct`.
 *
 * Contract: `fromObject(json)` returns the Struct message instance for a plain
 * JSON object (a message instance is returned unchanged; anything else, or a
 * non-JSON value inside, throws TypeError naming the path). `toObject(message)`
 * returns the plain JSON object (nested objects, arrays, null, booleans,
 * numbers, strings), ignoring conversion options.
 */
export const structWrapper = {
  fromObject(this: PbType, object: unknown): object {
    if (object instanceof this.ctor) return object;
    return toStruct(this, object, 0);
  },
  toObject(this: PbType, message: object): Record<string, unknown> {
    return fromStruct(this, message as Record<string, unknown>);
  },
};
