/**
 * Converts an MCP tool's `inputSchema` (any JSON Schema) to the subset Gemini function
 * declarations accept: type, description, properties, required, items, enum. Everything
 * else ($schema, additionalProperties, format, default, …) is dropped, recursively.
 */
import type { ToolParameterSchema } from '../tools/tool.js';
import { isObject } from '../lib/is-object.js';

/** One node of the converted schema. */
export interface GeminiSchema {
  type: string;
  description?: string;
  properties?: Record<string, GeminiSchema>;
  required?: string[];
  items?: GeminiSchema;
  enum?: string[];
}

type Json = Record<string, unknown>;

/** How deep `$ref`s and nesting are followed before a node is cut to a bare type (guards cycles). */
const MAX_DEPTH = 12;
const TYPES = new Set(['string', 'number', 'integer', 'boolean', 'array', 'object']);

/** `v` when it is an array (of unknown items: the schema is any JSON), else undefined. */
function arrayOf(v: unknown): unknown[] | undefined {
  return Array.isArray(v) ? (v as unknown[]) : undefined;
}

/** Resolves a local JSON pointer (`#/$defs/Foo`) against the root schema. */
function resolveRef(ref: string, root: Json): Json | undefined {
  if (!ref.startsWith('#')) return undefined;
  let node: unknown = root;
  for (const raw of ref.slice(1).split('/').filter(Boolean)) {
    const key = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObject(node)) return undefined;
    node = node[key];
  }
  return isObject(node) ? node : undefined;
}

/** Follows `$ref` and folds `allOf` / single-branch `anyOf`/`oneOf` (the optional pattern) into one node. */
function flatten(node: Json, root: Json, depth: number): Json {
  let n = node;
  if (typeof n.$ref === 'string' && depth < MAX_DEPTH) {
    const target = resolveRef(n.$ref, root);
    if (target) n = { ...flatten(target, root, depth + 1), ...(typeof n.description === 'string' ? { description: n.description } : {}) };
  }
  if (Array.isArray(n.allOf)) {
    const parts = n.allOf.filter(isObject).map((p) => flatten(p, root, depth + 1));
    const merged: Json = { ...n, allOf: undefined };
    for (const p of parts) {
      merged.type ??= p.type;
      merged.description ??= p.description;
      if (isObject(p.properties)) merged.properties = { ...p.properties, ...(isObject(merged.properties) ? merged.properties : {}) };
      const required = arrayOf(p.required);
      if (required) merged.required = [...(arrayOf(merged.required) ?? []), ...required];
    }
    n = merged;
  }
  const union = arrayOf(n.anyOf) ?? arrayOf(n.oneOf);
  if (n.type === undefined && union) {
    const branches = union.filter(isObject).filter((b) => b.type !== 'null');
    const consts = branches.map((b) => b.const);
    if (branches.length > 1 && consts.every((c) => typeof c === 'string')) return { ...n, type: 'string', enum: consts };
    const [firstBranch] = branches;
    if (firstBranch !== undefined) {
      const first = flatten(firstBranch, root, depth + 1);
      return { ...first, description: n.description ?? first.description };
    }
  }
  return n;
}

function pickType(n: Json): string {
  const declared = arrayOf(n.type)?.find((t) => t !== 'null') ?? n.type;
  if (typeof declared === 'string' && TYPES.has(declared)) return declared;
  if (isObject(n.properties)) return 'object';
  if (n.items !== undefined) return 'array';
  if (typeof n.const === 'number') return 'number';
  if (typeof n.const === 'boolean') return 'boolean';
  return 'string';
}

/** Keeps enums Gemini can take (strings on a string); folds others into the description. */
function applyEnum(out: GeminiSchema, n: Json): void {
  const values = arrayOf(n.enum) ?? (n.const !== undefined ? [n.const] : undefined);
  if (!values || values.length === 0) return;
  if (out.type === 'string' && values.every((v): v is string => typeof v === 'string')) {
    out.enum = values;
    return;
  }
  const allowed = `Allowed values: ${values.map((v) => JSON.stringify(v)).join(', ')}.`;
  out.description = out.description ? `${out.description} ${allowed}` : allowed;
}

function convertNode(raw: unknown, root: Json, depth: number): GeminiSchema {
  if (!isObject(raw)) return { type: 'string' };
  const n = flatten(raw, root, depth);
  const out: GeminiSchema = { type: pickType(n) };
  if (typeof n.description === 'string' && n.description !== '') out.description = n.description;
  applyEnum(out, n);
  if (depth >= MAX_DEPTH) return out;
  if (out.type === 'array') {
    out.items = convertNode(Array.isArray(n.items) ? n.items[0] : (n.items ?? {}), root, depth + 1);
  } else if (out.type === 'object' && isObject(n.properties)) {
    const props: Record<string, GeminiSchema> = {};
    for (const [key, sub] of Object.entries(n.properties)) {
      if (key !== '__proto__') props[key] = convertNode(sub, root, depth + 1);
    }
    if (Object.keys(props).length > 0) out.properties = props;
    const required = requiredOf(n, props);
    if (required.length > 0) out.required = required;
  }
  return out;
}

/** `required` restricted to declared properties, without duplicates. */
function requiredOf(n: Json, props: Record<string, GeminiSchema>): string[] {
  if (!Array.isArray(n.required)) return [];
  return [...new Set(n.required.filter((r): r is string => typeof r === 'string' && Object.hasOwn(props, r)))];
}

/**
 * The tool's parameters in the Gemini subset. The result is always
 * `{ type: 'object', properties }`, even if the server sent something else.
 */
export function toGeminiParameters(inputSchema: unknown): ToolParameterSchema {
  const root = isObject(inputSchema) ? inputSchema : {};
  const converted = convertNode(root, root, 0);
  const result: ToolParameterSchema = { type: 'object', properties: converted.type === 'object' ? (converted.properties ?? {}) : {} };
  if (converted.type === 'object' && converted.required) result.required = converted.required;
  return result;
}
