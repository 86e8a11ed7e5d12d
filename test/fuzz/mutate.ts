/**
 * Mutations of a valid JSON request: at a chosen path, delete the field, replace it by a value
 * of another type (null, numbers as strings, NaN-ish and huge numbers, huge and odd Unicode
 * strings, another principal's ids), add a key (`__proto__`, `constructor`, unknown names), or
 * splice in raw JSON text that JSON.stringify cannot make (an own `__proto__` key, nesting
 * thousands deep, 1e999, duplicate keys). Raw pieces travel as `@@RAW<n>@@` strings and are
 * spliced in by {@link serialize}.
 */
import fc from 'fast-check';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

const nest = (open: string, inner: string, close: string, depth: number) => open.repeat(depth) + inner + close.repeat(depth);

/** JSON text no JS value serialises to. */
export const RAW: readonly string[] = [
  '{"__proto__":{"polluted":true,"role":"ROLE_AGENT"},"constructor":{"prototype":{"polluted":true}}}',
  '{"__proto__":null}',
  nest('[', '1', ']', 5_000),
  nest('[', '', ']', 60_000),
  nest('{"a":', '1', '}', 5_000),
  nest('{"parts":[{"kind":"data","data":', '{}', '}]}', 2_000),
  '1e999',
  '-1e999',
  '-0',
  '123456789012345678901234567890',
  '{"a":1,"a":"two","a":[3]}',
  '"\\ud800"',
  '"\\u0000\\u0001\\u001f"',
];

const raw = fc.integer({ min: 0, max: RAW.length - 1 }).map((i) => `@@RAW${i}@@`);

/** Strings a parser or a store may trip over. */
export const oddString: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    '',
    ' ',
    'NaN',
    'Infinity',
    '-1',
    '1e3',
    '0x10',
    'null',
    'undefined',
    'true',
    '__proto__',
    'constructor',
    'prototype',
    'toString',
    'hasOwnProperty',
    '\u0000',
    'a\u0000b',
    '\ud800',
    '\udfff',
    '\u202eevil',
    '\ufeffbom',
    '🙂'.repeat(3_000),
    'a'.repeat(70_000),
    'x'.repeat(300_000),
    '../../etc/passwd',
    '/etc/passwd',
    '%00',
    '%2e%2e%2f',
    '<script>alert(1)</script>',
    '${process.env}',
    'ROLE_AGENT',
    'TASK_STATE_COMPLETED',
  ),
  fc.string({ maxLength: 30 }),
  fc.string({ unit: 'binary', maxLength: 30 }),
  fc.string({ unit: 'grapheme', maxLength: 30 }),
);

/** Any value of another type than expected. */
export function oddValue(ids: readonly string[]): fc.Arbitrary<Json> {
  return fc.oneof(
    { weight: 3, arbitrary: oddString },
    { weight: 2, arbitrary: fc.constantFrom(...ids) },
    fc.constantFrom<Json>(null, true, false, 0, -1, -0.5, 1.5, 2 ** 31, 2 ** 53 + 1, -(2 ** 63), 1e308, [], {}, [null], ['x']),
    fc.integer().map((n): Json => n),
    fc.double({ noNaN: true, noDefaultInfinity: true }).map((n): Json => n),
    fc.array(fc.oneof(oddString, fc.integer()), { maxLength: 4 }),
    fc.dictionary(oddString, oddString, { maxKeys: 3 }) as fc.Arbitrary<Json>,
    raw,
  );
}

type Op =
  { kind: 'delete' } | { kind: 'set'; value: Json } | { kind: 'add'; key: string; value: Json } | { kind: 'stringify' } | { kind: 'wrap' };

function opArb(ids: readonly string[]): fc.Arbitrary<Op> {
  const value = oddValue(ids);
  return fc.oneof(
    fc.constant<Op>({ kind: 'delete' }),
    { weight: 4, arbitrary: value.map((v): Op => ({ kind: 'set', value: v })) },
    fc
      .tuple(fc.oneof(fc.constantFrom('__proto__', 'constructor', 'prototype', 'toString', 'kind', 'metadata', 'extra'), oddString), value)
      .map(([key, v]): Op => ({ kind: 'add', key, value: v })),
    fc.constant<Op>({ kind: 'stringify' }),
    fc.constant<Op>({ kind: 'wrap' }),
  );
}

type Path = Array<string | number>;

function paths(v: Json, at: Path = []): Path[] {
  const out: Path[] = [at];
  if (Array.isArray(v)) v.forEach((x, i) => out.push(...paths(x, [...at, i])));
  else if (v !== null && typeof v === 'object') for (const [k, x] of Object.entries(v)) out.push(...paths(x, [...at, k]));
  return out;
}

/** Sets an own property, `__proto__` included (a plain assignment would change the prototype instead). */
function own(o: Record<string, Json> | Json[], key: string | number, value: Json): void {
  Object.defineProperty(o, key, { value, enumerable: true, writable: true, configurable: true });
}

function applyAt(v: Json, path: Path, op: Op): Json {
  if (path.length === 0) {
    switch (op.kind) {
      case 'delete':
        return null;
      case 'set':
        return op.value;
      case 'stringify':
        return typeof v === 'string' ? v : JSON.stringify(v);
      case 'wrap':
        return [v];
      case 'add': {
        if (v === null || typeof v !== 'object' || Array.isArray(v)) return v;
        const copy = { ...v };
        own(copy, op.key, op.value);
        return copy;
      }
    }
  }
  const [head, ...rest] = path as [string | number, ...Path];
  if (Array.isArray(v)) {
    const copy = [...v];
    if (rest.length === 0 && op.kind === 'delete') copy.splice(Number(head), 1);
    else copy[Number(head)] = applyAt(v[Number(head)], rest, op);
    return copy;
  }
  if (v === null || typeof v !== 'object') return v;
  const copy: Record<string, Json> = {};
  for (const [k, x] of Object.entries(v)) own(copy, k, x);
  if (rest.length === 0 && op.kind === 'delete') delete copy[head];
  else own(copy, head, applyAt(v[head], rest, op));
  return copy;
}

/** `base`, unchanged (a valid request) or with one to three mutations. */
export function mutated(base: fc.Arbitrary<Json>, ids: readonly string[]): fc.Arbitrary<Json> {
  const ops = fc.array(fc.tuple(fc.nat(), opArb(ids)), { minLength: 1, maxLength: 3 });
  return fc.oneof(base, {
    weight: 3,
    arbitrary: fc.tuple(base, ops).map(([value, list]) =>
      list.reduce<Json>((v, [at, op]) => {
        const all = paths(v);
        return applyAt(v, all[at % all.length], op);
      }, value),
    ),
  });
}

/** JSON text of `v`, with the raw pieces spliced in. */
export function serialize(v: unknown): string {
  return JSON.stringify(v).replace(/"@@RAW(\d+)@@"/g, (_, i: string) => RAW[Number(i)]);
}
