import t from 'tap';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { loadDevtoolSchema } from '../../../src/protocol/devtool-schema.js';
import type { FileDiffJson, ToolCallJson } from '../../../src/protocol/devtool-schema.js';

const schema = loadDevtoolSchema();

/** The message of the Error thrown by fn, or a marker when nothing was thrown. */
function thrown(fn: () => unknown): string {
  try {
    fn();
  } catch (e) {
    return (e as Error).message;
  }
  return '<no error thrown>';
}

const diff: FileDiffJson = {
  file_name: 'a.ts',
  file_path: '/ws/src/a.ts',
  old_content: 'let a = 1;\n',
  new_content: 'let a = 2;\n',
  formatted_diff: '@@ -1 +1 @@\n-let a = 1;\n+let a = 2;\n',
};
const base = { tool_call_id: 'tc-1', tool_name: 'Edit' } as const;

t.test('PENDING with confirmation_request + file_edit_details round-trips exactly', async (t) => {
  const input: ToolCallJson = {
    ...base,
    status: 'PENDING',
    description: 'Edit a.ts',
    input_parameters: { file_path: '/ws/src/a.ts', old_string: '1', new_string: '2' },
    confirmation_request: {
      options: [
        { id: 'proceed_once', name: 'Allow Once', description: 'Run this edit' },
        { id: 'cancel', name: 'Reject' },
      ],
      file_edit_details: diff,
    },
  };
  const out = schema.toolCall(input);
  t.strictSame(out, input);
  // snake_case keys, enum as a name, in proto field order, no virtual oneof keys
  t.equal(
    JSON.stringify(out),
    '{"tool_call_id":"tc-1","status":"PENDING","tool_name":"Edit","description":"Edit a.ts",' +
      '"input_parameters":{"file_path":"/ws/src/a.ts","old_string":"1","new_string":"2"},' +
      '"confirmation_request":{"options":[{"id":"proceed_once","name":"Allow Once","description":"Run this edit"},' +
      '{"id":"cancel","name":"Reject"}],"file_edit_details":{"file_name":"a.ts","file_path":"/ws/src/a.ts",' +
      '"old_content":"let a = 1;\\n","new_content":"let a = 2;\\n",' +
      '"formatted_diff":"@@ -1 +1 @@\\n-let a = 1;\\n+let a = 2;\\n"}}}',
  );
});

t.test('other confirmation details (execute, mcp, generic) round-trip', async (t) => {
  const options = [{ id: 'proceed_once', name: 'Allow Once' }];
  const cases: ToolCallJson['confirmation_request'][] = [
    { options, execute_details: { command: 'npm test', working_directory: '/ws' } },
    { options, mcp_details: { server_name: 'github', tool_name: 'create_issue' } },
    { options, generic_details: { description: 'Do the thing' } },
  ];
  for (const confirmation_request of cases) {
    const input: ToolCallJson = { ...base, status: 'PENDING', confirmation_request };
    t.strictSame(schema.toolCall(input), input);
  }
});

t.test('EXECUTING with live_content round-trips', async (t) => {
  const input: ToolCallJson = { ...base, tool_name: 'Shell', status: 'EXECUTING', live_content: 'line 1\nline 2\n' };
  t.strictSame(schema.toolCall(input), input);
  t.equal(
    JSON.stringify(schema.toolCall(input)),
    '{"tool_call_id":"tc-1","status":"EXECUTING","tool_name":"Shell","live_content":"line 1\\nline 2\\n"}',
  );
});

t.test('SUCCEEDED with output.text / output.diff / output.structured_data', async (t) => {
  const text: ToolCallJson = { ...base, status: 'SUCCEEDED', output: { text: 'done' } };
  t.strictSame(schema.toolCall(text), text);
  // a oneof member has presence: an empty text survives
  t.strictSame(schema.toolCall({ ...base, status: 'SUCCEEDED', output: { text: '' } }).output, { text: '' });

  const withDiff: ToolCallJson = { ...base, status: 'SUCCEEDED', output: { diff } };
  t.strictSame(schema.toolCall(withDiff), withDiff);

  const structured_data = {
    count: 3,
    ratio: -0.25,
    ok: true,
    off: false,
    none: null,
    name: 'x',
    empty: {},
    list: [1, 'two', null, false, { deep: { deeper: [[], [{ z: 0 }]] } }],
    fields: { nested: 'a user key named "fields" is plain data' },
  };
  const out = schema.toolCall({ ...base, status: 'SUCCEEDED', output: { structured_data } });
  t.strictSame(out, { ...base, status: 'SUCCEEDED', output: { structured_data } });
  t.equal(JSON.stringify(out.output?.structured_data), JSON.stringify(structured_data));
});

t.test('FAILED with error including status_code', async (t) => {
  const input: ToolCallJson = {
    ...base,
    status: 'FAILED',
    error: { message: 'file not found', type: 'read_content_failure', status_code: 404 },
  };
  t.strictSame(schema.toolCall(input), input);
  t.strictSame(schema.toolCall({ ...base, status: 'FAILED', error: { message: 'x', status_code: -1 } }).error, {
    message: 'x',
    status_code: -1,
  });
  const cancelled: ToolCallJson = { ...base, status: 'CANCELLED' };
  t.strictSame(schema.toolCall(cancelled), cancelled);
});

t.test('proto3 JSON presence rules', async (t) => {
  // `optional` fields keep an explicit empty value; implicit-presence defaults are omitted
  const out = schema.toolCall({
    ...base,
    status: 'SUCCEEDED',
    description: '',
    output: { diff: { file_name: 'a', file_path: '/a', new_content: '' } },
  });
  t.strictSame(out, { ...base, status: 'SUCCEEDED', description: '', output: { diff: { file_name: 'a', file_path: '/a' } } });
  // undefined counts as absent
  t.strictSame(schema.toolCall({ ...base, status: 'PENDING', description: undefined }), { ...base, status: 'PENDING' });
});

t.test('the verify guard throws naming the field', async (t) => {
  const call = (extra: Record<string, unknown>) => () => schema.toolCall({ ...base, status: 'PENDING', ...extra });
  const P = 'development-tool schema: ';
  const FIELDS = 'tool_call_id, status, tool_name, description, input_parameters, live_content, output, error, confirmation_request';
  const STATUSES = 'STATUS_UNSPECIFIED, PENDING, EXECUTING, SUCCEEDED, FAILED, CANCELLED';
  t.equal(thrown(call({ foo: 1 })), `${P}ToolCall.foo is not a field of ToolCall (expected ${FIELDS})`);
  t.equal(thrown(call({ toolCallId: 'x' })), `${P}ToolCall.toolCallId is not a field of ToolCall (expected ${FIELDS})`);
  t.equal(
    thrown(call({ output: { text: 'a', extra: 1 } })),
    `${P}ToolCall.output.extra is not a field of ToolOutput (expected text, diff, structured_data)`,
  );
  t.equal(thrown(call({ status: 'DONE' })), `${P}ToolCall.status must be a ToolCallStatus name (one of ${STATUSES}), got "DONE"`);
  t.equal(thrown(call({ status: 3 })), `${P}ToolCall.status must be a ToolCallStatus name (one of ${STATUSES}), got 3`);
  t.equal(
    thrown(call({ output: { text: 'a' }, error: { message: 'b' } })),
    `${P}ToolCall sets output and error, but they are members of oneof result (set at most one)`,
  );
  t.equal(
    thrown(call({ output: { text: 'a', structured_data: {} } })),
    `${P}ToolCall.output sets text and structured_data, but they are members of oneof result (set at most one)`,
  );
  t.equal(
    thrown(
      call({
        confirmation_request: { options: [], generic_details: { description: 'd' }, mcp_details: { server_name: 's', tool_name: 't' } },
      }),
    ),
    `${P}ToolCall.confirmation_request sets mcp_details and generic_details, but they are members of oneof details (set at most one)`,
  );
  t.equal(thrown(call({ description: 5 })), `${P}ToolCall.description must be a string`);
  t.equal(thrown(call({ description: null })), `${P}ToolCall.description must not be null (omit the field instead)`);
  t.equal(thrown(call({ error: { message: 'm', status_code: 1.5 } })), `${P}ToolCall.error.status_code must be an int32 integer`);
  t.equal(thrown(call({ error: { message: 'm', status_code: 2 ** 31 } })), `${P}ToolCall.error.status_code must be an int32 integer`);
  t.equal(thrown(call({ confirmation_request: { options: {} } })), `${P}ToolCall.confirmation_request.options must be an array`);
  t.equal(
    thrown(call({ confirmation_request: { options: [{ id: 'a', name: 1 }] } })),
    `${P}ToolCall.confirmation_request.options[0].name must be a string`,
  );
  t.equal(thrown(call({ output: 'text' })), `${P}ToolCall.output must be an object (ToolOutput)`);
  t.equal(thrown(call({ input_parameters: [1] })), `${P}ToolCall.input_parameters must be a plain JSON object`);
  t.equal(thrown(call({ input_parameters: { a: [1, NaN] } })), `${P}ToolCall.input_parameters.a[1] must be a finite number`);
  t.equal(thrown(call({ input_parameters: { d: new Date(0) } })), `${P}ToolCall.input_parameters.d is not a JSON value (object)`);
  t.equal(thrown(call({ input_parameters: { f: () => 1 } })), `${P}ToolCall.input_parameters.f is not a JSON value (function)`);
  t.equal(thrown(call({ input_parameters: { a: [undefined] } })), `${P}ToolCall.input_parameters.a[0] is not a JSON value (undefined)`);
  t.equal(thrown(call({ input_parameters: { 'a b': 1n } })), `${P}ToolCall.input_parameters["a b"] is not a JSON value (bigint)`);
  let deep: unknown = 1;
  for (let i = 0; i < 33; i++) deep = { d: deep };
  t.equal(thrown(call({ input_parameters: deep })), `${P}ToolCall.input_parameters${'.d'.repeat(33)} nests deeper than 32 levels`);
  t.equal(thrown(call({ status: 'STATUS_UNSPECIFIED' })), `${P}ToolCall.status is required (got "STATUS_UNSPECIFIED")`);
  t.equal(thrown(call({ tool_call_id: '' })), `${P}ToolCall.tool_call_id is required (got "")`);
  t.equal(thrown(call({ tool_name: undefined })), `${P}ToolCall.tool_name is required (got undefined)`);
  t.equal(
    thrown(() => schema.toolCall(null as unknown as ToolCallJson)),
    `${P}ToolCall must be an object (ToolCall)`,
  );
});

t.test('agentThought and developmentToolEvent', async (t) => {
  t.strictSame(schema.agentThought({ subject: 'Planning', description: 'Read the file first.' }), {
    subject: 'Planning',
    description: 'Read the file first.',
  });
  t.strictSame(schema.developmentToolEvent({ kind: 'TOOL_CALL_UPDATE', model: 'gemini-2.5-pro', user_tier: '', error: '' }), {
    kind: 'TOOL_CALL_UPDATE',
    model: 'gemini-2.5-pro',
  });
  t.strictSame(schema.developmentToolEvent({ kind: 'STATE_CHANGE', model: 'm', user_tier: 'free', error: 'quota exceeded' }), {
    kind: 'STATE_CHANGE',
    model: 'm',
    user_tier: 'free',
    error: 'quota exceeded',
  });
  for (const kind of ['TOOL_CALL_CONFIRMATION', 'TEXT_CONTENT', 'THOUGHT'] as const) {
    t.equal(schema.developmentToolEvent({ kind, model: 'm' }).kind, kind);
  }
  t.equal(
    thrown(() => schema.developmentToolEvent({ kind: 'TOOL_CALL' as 'THOUGHT', model: 'm' })),
    'development-tool schema: DevelopmentToolEvent.kind must be a DevelopmentToolEventKind name (one of ' +
      'DEVELOPMENT_TOOL_EVENT_KIND_UNSPECIFIED, TOOL_CALL_CONFIRMATION, TOOL_CALL_UPDATE, TEXT_CONTENT, STATE_CHANGE, THOUGHT), got "TOOL_CALL"',
  );
  t.equal(
    thrown(() => schema.agentThought({ subject: 's', description: 'd', extra: 1 } as never)),
    'development-tool schema: AgentThought.extra is not a field of AgentThought (expected subject, description)',
  );
});

t.test('slash command responses', async (t) => {
  const commands = {
    commands: [
      {
        name: 'memory',
        description: 'Manage memory',
        sub_commands: [
          {
            name: 'add',
            description: 'Add a memory',
            arguments: [
              { name: 'text', description: 'What to remember', is_required: true },
              { name: 'scope', description: 'project or global' },
            ],
          },
          { name: 'show', description: 'Show memory' },
        ],
      },
    ],
  };
  t.strictSame(schema.getAllSlashCommandsResponse(commands), commands);
  // is_required: false is the proto3 default and is omitted
  t.strictSame(schema.getAllSlashCommandsResponse({ commands: [{ name: 'x', arguments: [{ name: 'a', is_required: false }] }] }), {
    commands: [{ name: 'x', arguments: [{ name: 'a' }] }],
  });
  t.strictSame(schema.getAllSlashCommandsResponse({ commands: [] }), {});
  t.equal(
    thrown(() =>
      schema.getAllSlashCommandsResponse({
        commands: [{ name: 'x', sub_commands: [{ name: 'y', arguments: [{ name: 'a', is_required: 'yes' }] }] }],
      } as never),
    ),
    'development-tool schema: GetAllSlashCommandsResponse.commands[0].sub_commands[0].arguments[0].is_required must be a boolean',
  );

  t.strictSame(schema.executeSlashCommandResponse({ execution_id: 'ex-1', status: 'STARTED' }), {
    execution_id: 'ex-1',
    status: 'STARTED',
  });
  t.strictSame(schema.executeSlashCommandResponse({ execution_id: 'ex-2', status: 'FAILED_TO_START', message: 'no such command' }), {
    execution_id: 'ex-2',
    status: 'FAILED_TO_START',
    message: 'no such command',
  });
  for (const status of ['AWAITING_SHELL_CONFIRMATION', 'AWAITING_ACTION_CONFIRMATION'] as const) {
    t.equal(schema.executeSlashCommandResponse({ execution_id: 'e', status }).status, status);
  }
  t.strictSame(schema.executeSlashCommandResponse({ status: 'FAILED_TO_START', message: 'unknown' }), {
    status: 'FAILED_TO_START',
    message: 'unknown',
  });
  t.equal(
    thrown(() => schema.executeSlashCommandResponse({ status: 'STARTED' })),
    'development-tool schema: ExecuteSlashCommandResponse.execution_id is required when status is STARTED',
  );
  t.equal(
    thrown(() => schema.executeSlashCommandResponse({ execution_id: 'e', status: 'COMMAND_EXECUTION_STATUS_UNSPECIFIED' as 'STARTED' })),
    'development-tool schema: ExecuteSlashCommandResponse.status is required (got "COMMAND_EXECUTION_STATUS_UNSPECIFIED")',
  );
});

t.test('loadDevtoolSchema', async (t) => {
  t.equal(loadDevtoolSchema(), schema, 'cached per path');
  t.equal(
    thrown(() => loadDevtoolSchema('/nonexistent/dir/development_tool.proto')),
    'development-tool schema: proto file not found: /nonexistent/dir/development_tool.proto',
  );
  const dir = t.testdir({
    'broken.proto': 'syntax = "proto3";\npackage development_tool.v0;\nmessage ToolCall { string x = ; }\n',
    'partial.proto': 'syntax = "proto3";\npackage development_tool.v0;\nmessage ToolCall { string tool_call_id = 1; }\n',
  });
  const broken = join(dir, 'broken.proto');
  const msg = thrown(() => loadDevtoolSchema(broken));
  t.match(msg, new RegExp(`^development-tool schema: cannot load ${broken.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: .+`));
  t.equal(
    thrown(() => loadDevtoolSchema(join(dir, 'partial.proto'))),
    `development-tool schema: ${join(dir, 'partial.proto')} does not define message development_tool.v0.ToolCallConfirmation`,
  );
  // a proto whose inbound message drifted from what the hand-written parsers implement
  const real = await import('node:fs').then((fs) =>
    fs.readFileSync(new URL('../../../proto/development_tool.proto', import.meta.url), 'utf8'),
  );
  const drifted = join(dir, 'drifted.proto');
  writeFileSync(drifted, real.replace('string workspace_path = 1;', 'string workspace_path = 1;\n  string model = 9;'));
  t.equal(
    thrown(() => loadDevtoolSchema(drifted)),
    'development-tool schema: development_tool.v0.AgentSettings has fields workspace_path, model, approval_mode, allowed_tools, mcp_servers; the parsers expect workspace_path, approval_mode, allowed_tools, mcp_servers',
  );
});
