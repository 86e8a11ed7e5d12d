import t from 'tap';
import { loadDevtoolSchema } from '../../../src/protocol/devtool-schema.js';

const schema = loadDevtoolSchema();
const P = 'message.parts[0].data';

t.test('ToolCallConfirmation: every accepted shape', async (t) => {
  const plain = { ok: true, value: { tool_call_id: 'tc-1', selected_option_id: 'proceed_once' } };
  const edited = { ok: true, value: { tool_call_id: 'tc-1', selected_option_id: 'proceed_once', new_content: 'x = 2\n' } };
  const cases: [string, unknown, unknown][] = [
    ['snake', { tool_call_id: 'tc-1', selected_option_id: 'proceed_once' }, plain],
    ['camel', { toolCallId: 'tc-1', selectedOptionId: 'proceed_once' }, plain],
    ['mixed spelling', { tool_call_id: 'tc-1', selectedOptionId: 'proceed_once' }, plain],
    [
      'proto3 JSON oneof, snake',
      { tool_call_id: 'tc-1', selected_option_id: 'proceed_once', file_details: { new_content: 'x = 2\n' } },
      edited,
    ],
    ['proto3 JSON oneof, camel', { toolCallId: 'tc-1', selectedOptionId: 'proceed_once', fileDetails: { newContent: 'x = 2\n' } }, edited],
    [
      'nested form, snake',
      { tool_call_id: 'tc-1', selected_option_id: 'proceed_once', modified_details: { file_details: { new_content: 'x = 2\n' } } },
      edited,
    ],
    [
      'nested form, camel',
      { toolCallId: 'tc-1', selectedOptionId: 'proceed_once', modifiedDetails: { fileDetails: { newContent: 'x = 2\n' } } },
      edited,
    ],
    [
      'empty new content is a modification',
      { toolCallId: 'tc-1', selectedOptionId: 'proceed_once', fileDetails: { newContent: '' } },
      { ok: true, value: { tool_call_id: 'tc-1', selected_option_id: 'proceed_once', new_content: '' } },
    ],
    ['undefined counts as absent', { tool_call_id: 'tc-1', selected_option_id: 'proceed_once', file_details: undefined }, plain],
    [
      'feedback',
      { tool_call_id: 'tc-1', selected_option_id: 'cancel', feedback: 'use src/, not lib/' },
      { ok: true, value: { tool_call_id: 'tc-1', selected_option_id: 'cancel', feedback: 'use src/, not lib/' } },
    ],
    [
      'feedback beside edited content, camel',
      { toolCallId: 'tc-1', selectedOptionId: 'proceed_once', fileDetails: { newContent: 'x' }, feedback: 'tidied it' },
      { ok: true, value: { tool_call_id: 'tc-1', selected_option_id: 'proceed_once', new_content: 'x', feedback: 'tidied it' } },
    ],
    ['empty feedback counts as absent', { tool_call_id: 'tc-1', selected_option_id: 'proceed_once', feedback: '' }, plain],
  ];
  for (const [name, data, want] of cases) t.strictSame(schema.parseToolCallConfirmation(data, P), want, name);
});

t.test('ToolCallConfirmation: every rejection names the field', async (t) => {
  const ok = { tool_call_id: 'tc-1', selected_option_id: 'cancel' };
  const cases: [unknown, string][] = [
    [null, `${P} must be a JSON object (ToolCallConfirmation)`],
    ['tc-1', `${P} must be a JSON object (ToolCallConfirmation)`],
    [[ok], `${P} must be a JSON object (ToolCallConfirmation)`],
    [
      { ...ok, foo: 1 },
      `${P}.foo is not a field of ToolCallConfirmation (expected tool_call_id, selected_option_id, file_details, feedback)`,
    ],
    [
      { ...ok, 'new content': 'x' },
      `${P}["new content"] is not a field of ToolCallConfirmation (expected tool_call_id, selected_option_id, file_details, feedback)`,
    ],
    [
      { ...ok, ToolCallId: 'x' },
      `${P}.ToolCallId is not a field of ToolCallConfirmation (expected tool_call_id, selected_option_id, file_details, feedback)`,
    ],
    [{ selected_option_id: 'cancel' }, `${P}.tool_call_id must be a non-empty string`],
    [{ tool_call_id: '', selected_option_id: 'cancel' }, `${P}.tool_call_id must be a non-empty string`],
    [{ toolCallId: 7, selected_option_id: 'cancel' }, `${P}.toolCallId must be a non-empty string`],
    [{ tool_call_id: 'tc-1' }, `${P}.selected_option_id must be a non-empty string`],
    [{ tool_call_id: 'tc-1', selectedOptionId: null }, `${P}.selectedOptionId must be a non-empty string`],
    [{ tool_call_id: 'tc-1', toolCallId: 'tc-1', selected_option_id: 'cancel' }, `${P} sets both tool_call_id and toolCallId`],
    [{ ...ok, file_details: 'x' }, `${P}.file_details must be a JSON object (ModifiedFileDetails)`],
    [{ ...ok, fileDetails: {} }, `${P}.fileDetails.new_content must be a string`],
    [{ ...ok, file_details: { new_content: 5 } }, `${P}.file_details.new_content must be a string`],
    [{ ...ok, fileDetails: { newContent: null } }, `${P}.fileDetails.newContent must be a string`],
    [{ ...ok, file_details: { content: 'x' } }, `${P}.file_details.content is not a field of ModifiedFileDetails (expected new_content)`],
    [{ ...ok, file_details: { new_content: 'a', newContent: 'b' } }, `${P}.file_details sets both new_content and newContent`],
    [
      { ...ok, fileDetails: { newContent: 'a' }, modified_details: { file_details: { new_content: 'b' } } },
      `${P} sets both fileDetails and modified_details; use one form of the modified_details oneof`,
    ],
    [{ ...ok, modified_details: 'x' }, `${P}.modified_details must be a JSON object (modified_details)`],
    [{ ...ok, modifiedDetails: {} }, `${P}.modifiedDetails must set file_details`],
    [
      { ...ok, modified_details: { new_content: 'x' } },
      `${P}.modified_details.new_content is not a field of modified_details (expected file_details)`,
    ],
    [{ ...ok, modified_details: { fileDetails: [] } }, `${P}.modified_details.fileDetails must be a JSON object (ModifiedFileDetails)`],
    [{ ...ok, modifiedDetails: { fileDetails: { newContent: 1 } } }, `${P}.modifiedDetails.fileDetails.newContent must be a string`],
    [{ ...ok, feedback: 7 }, `${P}.feedback must be a string`],
    [{ ...ok, feedback: null }, `${P}.feedback must be a string`],
    [
      { ...ok, feedback: 'a', Feedback: 'b' },
      `${P}.Feedback is not a field of ToolCallConfirmation (expected tool_call_id, selected_option_id, file_details, feedback)`,
    ],
  ];
  for (const [data, message] of cases) {
    t.strictSame(schema.parseToolCallConfirmation(data, P), { ok: false, message }, message);
  }
});

t.test('looksLikeToolCallConfirmation', async (t) => {
  t.equal(schema.looksLikeToolCallConfirmation({ tool_call_id: 'x' }), true);
  t.equal(schema.looksLikeToolCallConfirmation({ toolCallId: 'x' }), true);
  t.equal(schema.looksLikeToolCallConfirmation({ selected_option_id: 'x' }), true);
  t.equal(schema.looksLikeToolCallConfirmation({ selectedOptionId: 1 }), true);
  t.equal(schema.looksLikeToolCallConfirmation({ workspace_path: '/ws' }), false);
  t.equal(schema.looksLikeToolCallConfirmation({}), false);
  t.equal(schema.looksLikeToolCallConfirmation(null), false);
  t.equal(schema.looksLikeToolCallConfirmation(['tool_call_id']), false);
  t.equal(schema.looksLikeToolCallConfirmation('tool_call_id'), false);
  t.equal(schema.looksLikeToolCallConfirmation(Object.create({ tool_call_id: 'inherited' })), false);
});

t.test('AgentSettings', async (t) => {
  const M = 'message.metadata["https://example/ext"]';
  t.strictSame(schema.parseAgentSettings({ workspace_path: '/ws' }, M), { ok: true, value: { workspace_path: '/ws' } });
  t.strictSame(schema.parseAgentSettings({ workspacePath: '/ws' }, M), { ok: true, value: { workspace_path: '/ws' } });
  t.strictSame(schema.parseAgentSettings({}, M), { ok: true, value: {} });
  t.strictSame(schema.parseAgentSettings({ workspace_path: '' }, M), { ok: true, value: {} });
  t.strictSame(schema.parseAgentSettings({ workspace_path: '/does/not/exist' }, M), {
    ok: true,
    value: { workspace_path: '/does/not/exist' },
  });
  t.strictSame(schema.parseAgentSettings({ workspace_path: 1 }, M), { ok: false, message: `${M}.workspace_path must be a string` });
  t.strictSame(schema.parseAgentSettings({ workspacePath: ['/ws'] }, M), { ok: false, message: `${M}.workspacePath must be a string` });
  t.strictSame(schema.parseAgentSettings({ workspace: '/ws' }, M), {
    ok: false,
    message: `${M}.workspace is not a field of AgentSettings (expected workspace_path, approval_mode, allowed_tools, mcp_servers)`,
  });
  t.strictSame(schema.parseAgentSettings({ workspace_path: '/a', workspacePath: '/b' }, M), {
    ok: false,
    message: `${M} sets both workspace_path and workspacePath`,
  });
  t.strictSame(schema.parseAgentSettings('/ws', M), { ok: false, message: `${M} must be a JSON object (AgentSettings)` });
});

t.test('AgentSettings extension fields: approval_mode, allowed_tools, mcp_servers', async (t) => {
  const M = 'm';
  const ok = (data: unknown) => schema.parseAgentSettings(data, M);
  t.strictSame(ok({ approval_mode: 'YOLO' }), { ok: true, value: { approval_mode: 'YOLO' } });
  t.strictSame(ok({ approvalMode: 'auto_edit' }), { ok: true, value: { approval_mode: 'AUTO_EDIT' } }, 'camelCase key, lowercase value');
  t.strictSame(ok({ approval_mode: 'default' }), { ok: true, value: { approval_mode: 'DEFAULT' } });
  t.strictSame(ok({ approval_mode: 'APPROVAL_MODE_UNSPECIFIED' }), { ok: true, value: {} }, 'the proto3 default counts as unset');
  for (const bad of ['sometimes', 3, null, '']) {
    t.match(ok({ approval_mode: bad }), { ok: false, message: /^m\.approval_mode must be one of DEFAULT, AUTO_EDIT, YOLO/ }, String(bad));
  }
  t.strictSame(ok({ allowed_tools: ['write_file', ' run_shell_command(git status) '] }), {
    ok: true,
    value: { allowed_tools: ['write_file', 'run_shell_command(git status)'] },
  });
  t.strictSame(ok({ allowedTools: 'write_file' }), { ok: false, message: 'm.allowedTools must be an array of strings' });
  t.strictSame(ok({ allowed_tools: ['a', 1] }), { ok: false, message: 'm.allowed_tools[1] must be a string' });
  t.match(ok({ allowed_tools: [' '] }), { ok: false, message: /^m\.allowed_tools\[0\] must be a non-empty tool name/ });

  t.strictSame(
    ok({
      mcp_servers: {
        fs: { command: 'node', args: ['s.js'], env: { A: '1' }, cwd: '/w', timeout: 5000 },
        web: { httpUrl: 'http://x/mcp', headers: { Authorization: 'Bearer t' } },
      },
    }),
    {
      ok: true,
      value: {
        mcp_servers: {
          fs: { command: 'node', cwd: '/w', args: ['s.js'], env: { A: '1' }, timeout: 5000 },
          web: { url: 'http://x/mcp', headers: { Authorization: 'Bearer t' } },
        },
      },
    },
    'http_url folds into url; camelCase accepted',
  );
  const bad: [unknown, string][] = [
    [{ mcp_servers: [] }, 'm.mcp_servers must be a JSON object mapping server names to McpServerConfig'],
    [{ mcpServers: { a: 'node' } }, 'm.mcpServers.a must be a JSON object (McpServerConfig)'],
    [{ mcp_servers: { a: { command: 1 } } }, 'm.mcp_servers.a.command must be a non-empty string'],
    [{ mcp_servers: { a: { command: 'x', args: 'y' } } }, 'm.mcp_servers.a.args must be an array of strings'],
    [{ mcp_servers: { a: { command: 'x', env: { A: 1 } } } }, 'm.mcp_servers.a.env.A must be a string'],
    [{ mcp_servers: { a: { url: 'http://x', headers: [] } } }, 'm.mcp_servers.a.headers must be a JSON object of strings'],
    [{ mcp_servers: { a: { url: 'http://x', http_url: 'http://y' } } }, 'm.mcp_servers.a sets both url and http_url; use one'],
    [{ mcp_servers: { a: { command: 'x', timeout: -1 } } }, 'm.mcp_servers.a.timeout must be a positive integer (milliseconds)'],
    [
      { mcp_servers: { a: { command: 'x', trust: true } } },
      'm.mcp_servers.a.trust is not a field of McpServerConfig (expected command, args, env, cwd, url, http_url, headers, timeout)',
    ],
  ];
  for (const [data, message] of bad) t.strictSame(ok(data), { ok: false, message }, message);
});

t.test('ExecuteSlashCommandRequest', async (t) => {
  const R = 'params';
  t.strictSame(schema.parseExecuteSlashCommandRequest({ command_path: ['memory', 'add'], args: 'remember this' }, R), {
    ok: true,
    value: { command_path: ['memory', 'add'], args: 'remember this' },
  });
  t.strictSame(schema.parseExecuteSlashCommandRequest({ commandPath: ['about'] }, R), {
    ok: true,
    value: { command_path: ['about'], args: '' },
  });
  t.strictSame(schema.parseExecuteSlashCommandRequest({ commandPath: ['tools'], contextId: 'c-1' }, R), {
    ok: true,
    value: { command_path: ['tools'], args: '', context_id: 'c-1' },
  });
  const bad: [unknown, string][] = [
    [{}, `${R}.command_path must be a non-empty array of strings`],
    [{ command_path: [] }, `${R}.command_path must be a non-empty array of strings`],
    [{ commandPath: 'memory add' }, `${R}.commandPath must be a non-empty array of strings`],
    [{ command_path: ['memory', 3] }, `${R}.command_path[1] must be a non-empty string`],
    [{ commandPath: [''] }, `${R}.commandPath[0] must be a non-empty string`],
    [{ command_path: ['memory'], args: ['a'] }, `${R}.args must be a string`],
    [
      { command_path: ['memory'], argv: 'a' },
      `${R}.argv is not a field of ExecuteSlashCommandRequest (expected command_path, args, context_id)`,
    ],
    [{ command_path: ['tools'], context_id: 7 }, `${R}.context_id must be a string`],
    [{ command_path: ['a'], commandPath: ['b'] }, `${R} sets both command_path and commandPath`],
    [null, `${R} must be a JSON object (ExecuteSlashCommandRequest)`],
  ];
  for (const [data, message] of bad) {
    t.strictSame(schema.parseExecuteSlashCommandRequest(data, R), { ok: false, message }, message);
  }
});
