import t from 'tap';
import { toGeminiParameters } from '../../../src/mcp/index.js';

t.test('keeps the Gemini subset and drops the rest, recursively', async (t) => {
  const schema = {
    $schema: 'http://json-schema.org/draft-07/schema#',
    type: 'object',
    additionalProperties: false,
    properties: {
      title: { type: 'string', description: 'Issue title', minLength: 1, default: 'x' },
      labels: { type: 'array', items: { type: 'string', format: 'uri', enum: ['bug', 'docs'] }, uniqueItems: true },
      meta: {
        type: 'object',
        additionalProperties: { type: 'string' },
        properties: { owner: { type: 'string' }, count: { type: 'integer', minimum: 0 } },
        required: ['owner', 'ghost'],
      },
      free: { type: 'object', additionalProperties: true },
    },
    required: ['title', 'title', 'nope'],
  };
  t.same(toGeminiParameters(schema), {
    type: 'object',
    properties: {
      title: { type: 'string', description: 'Issue title' },
      labels: { type: 'array', items: { type: 'string', enum: ['bug', 'docs'] } },
      meta: { type: 'object', properties: { owner: { type: 'string' }, count: { type: 'integer' } }, required: ['owner'] },
      free: { type: 'object' },
    },
    required: ['title'],
  });
});

t.test('the result is always an object schema', async (t) => {
  t.same(toGeminiParameters(undefined), { type: 'object', properties: {} });
  t.same(toGeminiParameters({ type: 'object' }), { type: 'object', properties: {} });
  t.same(toGeminiParameters({ type: 'string' }), { type: 'object', properties: {} });
  t.same(toGeminiParameters({ properties: { a: { type: 'boolean' } } }), { type: 'object', properties: { a: { type: 'boolean' } } });
});

t.test('types: unions, nullables, inference, unknowns', async (t) => {
  const r = toGeminiParameters({
    type: 'object',
    properties: {
      nullable: { type: ['string', 'null'] },
      optional: { anyOf: [{ type: 'number', description: 'inner' }, { type: 'null' }], description: 'outer' },
      either: { oneOf: [{ type: 'integer' }, { type: 'string' }] },
      consts: { anyOf: [{ const: 'a' }, { const: 'b' }] },
      inferredArray: { items: { type: 'number' } },
      inferredObject: { properties: { x: { type: 'string' } } },
      bareArray: { type: 'array' },
      tupleArray: { type: 'array', items: [{ type: 'integer' }, { type: 'string' }] },
      anything: {},
      boolSchema: true,
      weird: { type: 'date' },
      numConst: { const: 3 },
      boolConst: { const: true },
      strConst: { const: 'only' },
    },
  });
  t.same(r.properties, {
    nullable: { type: 'string' },
    optional: { type: 'number', description: 'outer' },
    either: { type: 'integer' },
    consts: { type: 'string', enum: ['a', 'b'] },
    inferredArray: { type: 'array', items: { type: 'number' } },
    inferredObject: { type: 'object', properties: { x: { type: 'string' } } },
    bareArray: { type: 'array', items: { type: 'string' } },
    tupleArray: { type: 'array', items: { type: 'integer' } },
    anything: { type: 'string' },
    boolSchema: { type: 'string' },
    weird: { type: 'string' },
    numConst: { type: 'number', description: 'Allowed values: 3.' },
    boolConst: { type: 'boolean', description: 'Allowed values: true.' },
    strConst: { type: 'string', enum: ['only'] },
  });
});

t.test('non-string enums become a description note', async (t) => {
  const r = toGeminiParameters({
    type: 'object',
    properties: {
      level: { type: 'integer', enum: [1, 2, 3], description: 'Log level.' },
      mixed: { enum: ['a', 1] },
      empty: { type: 'string', enum: [] },
    },
  });
  t.same(r.properties, {
    level: { type: 'integer', description: 'Log level. Allowed values: 1, 2, 3.' },
    mixed: { type: 'string', description: 'Allowed values: "a", 1.' },
    empty: { type: 'string' },
  });
});

t.test('$ref and allOf are resolved; cycles are cut', async (t) => {
  const r = toGeminiParameters({
    type: 'object',
    $defs: {
      Person: { type: 'object', properties: { name: { type: 'string' }, friend: { $ref: '#/$defs/Person' } }, required: ['name'] },
      'a/b': { type: 'boolean' },
    },
    definitions: { Old: { type: 'integer' } },
    properties: {
      person: { $ref: '#/$defs/Person', description: 'Who' },
      old: { $ref: '#/definitions/Old' },
      escaped: { $ref: '#/$defs/a~1b' },
      missing: { $ref: '#/$defs/Nope' },
      remote: { $ref: 'https://example.com/schema.json' },
      merged: {
        allOf: [
          { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
          { properties: { b: { type: 'number' } }, required: ['b'], description: 'both' },
          'junk',
        ],
      },
    },
  });
  const props = r.properties as Record<string, any>;
  t.equal(props.person.description, 'Who');
  t.same(props.person.required, ['name']);
  t.equal(props.person.properties.friend.type, 'object');
  t.equal(props.person.properties.friend.properties.friend.properties.name.type, 'string', 'refs are followed a few levels');
  let depth = 0;
  for (let node = props.person; node?.properties?.friend; node = node.properties.friend) depth++;
  t.ok(depth > 3 && depth < 20, `a recursive $ref stops (${depth} levels)`);
  t.same(props.old, { type: 'integer' });
  t.same(props.escaped, { type: 'boolean' });
  t.same(props.missing, { type: 'string' });
  t.same(props.remote, { type: 'string' });
  t.same(props.merged, {
    type: 'object',
    description: 'both',
    properties: { a: { type: 'string' }, b: { type: 'number' } },
    required: ['a', 'b'],
  });
});

t.test('odd property names are safe', async (t) => {
  const props = JSON.parse('{"__proto__": {"type": "string"}, "toString": {"type": "number"}}');
  const r = toGeminiParameters({ type: 'object', properties: props, required: ['__proto__', 'toString', 'constructor'] });
  t.same(Object.keys(r.properties), ['toString']);
  t.same(r.required, ['toString']);
  t.equal(Object.getPrototypeOf(r.properties), Object.prototype);
});
