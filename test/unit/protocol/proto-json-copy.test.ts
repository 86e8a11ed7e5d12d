/**
 * copyProtoJson (json-fields.ts) is the encoder's fast path for the proto3 JSON of an outbound
 * development-tool message: it must give exactly what protobufjs' wire round trip gives
 * (devtool-schema.ts wireProtoJson) for every object checkMessageJson accepts — the same
 * fields, values and key order — or step aside (undefined) where it cannot. Property-based:
 * objects generated from the reflected proto itself, odd strings and Struct keys included.
 */
import t from 'tap';
import fc from 'fast-check';
import protobuf from 'protobufjs';
import { loadDevtoolSchema, wireProtoJson } from '../../../src/protocol/devtool-schema.js';
import { checkMessageJson, copyProtoJson } from '../../../src/protocol/json-fields.js';

loadDevtoolSchema(); // registers the Struct wrapper
const root = new protobuf.Root().loadSync('proto/development_tool.proto', { keepCase: true });
root.resolveAll();

const text = fc.oneof(
  { arbitrary: fc.string(), weight: 8 },
  { arbitrary: fc.string({ unit: 'binary', maxLength: 8 }), weight: 1 },
  { arbitrary: fc.constantFrom('', '\ud800', 'a\udc00b', '😀', '__proto__', 'constructor'), weight: 1 },
);

const jsonValue: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.constant(null),
    fc.boolean(),
    fc.double({ noNaN: true, noDefaultInfinity: true }),
    fc.integer(),
    text,
    fc.array(tie('value'), { maxLength: 3 }),
    fc.dictionary(text, tie('value'), { maxKeys: 3 }),
  ),
})).value;

function messageOf(type: protobuf.Type, depth: number): fc.Arbitrary<Record<string, unknown>> {
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const field of type.fieldsArray) {
    if (field.map) continue;
    const single = singleOf(field, depth);
    if (single === undefined) continue;
    fields[field.name] = field.repeated ? fc.array(single, { maxLength: 3 }) : single;
  }
  // Members of one oneof: at most one is kept (checkMessageJson refuses more).
  return fc.record(fields, { requiredKeys: [] }).map((o) => {
    for (const oneof of type.oneofsArray) for (const name of oneof.oneof.slice(1)) if (o[oneof.oneof[0]] !== undefined) delete o[name];
    return o;
  });
}

function singleOf(field: protobuf.Field, depth: number): fc.Arbitrary<unknown> | undefined {
  const rt = field.resolvedType;
  if (rt instanceof protobuf.Enum) return fc.constantFrom(...Object.keys(rt.values));
  if (rt instanceof protobuf.Type) {
    if (rt.fullName === '.google.protobuf.Struct') return fc.dictionary(text, jsonValue, { maxKeys: 4 });
    return depth > 2 ? undefined : messageOf(rt, depth + 1);
  }
  if (field.type === 'string') return text;
  if (field.type === 'bool') return fc.boolean();
  if (field.type === 'int32') return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
  return undefined;
}

const outbound = ['ToolCall', 'AgentThought', 'DevelopmentToolEvent', 'GetAllSlashCommandsResponse', 'ExecuteSlashCommandResponse'];

for (const name of outbound) {
  t.test(`${name}: the copy is the wire round trip, byte for byte, or steps aside`, async (t) => {
    const type = root.lookupType(`development_tool.v0.${name}`);
    let copied = 0;
    let aside = 0;
    fc.assert(
      fc.property(messageOf(type, 0), (o) => {
        if (checkMessageJson(type, o, name) !== null) return; // the builders refuse it before either runs
        const copy = copyProtoJson(type, o);
        if (copy === undefined) {
          aside++;
          return;
        }
        copied++;
        const wire = wireProtoJson(type, o);
        if (JSON.stringify(copy) !== JSON.stringify(wire)) {
          throw new Error(`copy ${JSON.stringify(copy)}\nwire ${JSON.stringify(wire)}`);
        }
      }),
      { numRuns: 600 },
    );
    t.ok(copied > 200 && aside > 0, `both paths are taken (${copied} copied, ${aside} left to the wire)`);
  });
}

t.test('what the copy leaves to the wire: strings that are not well-formed UTF-16, a Struct key "__proto__"', async (t) => {
  const type = root.lookupType('development_tool.v0.ToolCall');
  const base = { tool_call_id: 'tc', status: 'PENDING', tool_name: 'x' };
  t.ok(copyProtoJson(type, base), 'a plain card is copied');
  t.equal(copyProtoJson(type, { ...base, description: 'half \ud800' }), undefined);
  t.equal(copyProtoJson(type, { ...base, input_parameters: { a: ['\udc00'] } }), undefined);
  t.equal(copyProtoJson(type, { ...base, input_parameters: JSON.parse('{"__proto__": 1}') }), undefined);
  t.same(copyProtoJson(type, { ...base, input_parameters: { n: null, l: [], o: {} } }), {
    ...base,
    input_parameters: { n: null, l: [], o: {} },
  });
});
