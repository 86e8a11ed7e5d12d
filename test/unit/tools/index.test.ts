import t from 'tap';
import {
  createDefaultTools,
  ListDirectoryTool,
  ReadFileTool,
  RunShellCommandTool,
  WriteFileTool,
} from '../../../src/tools/index.js';

t.test('createDefaultTools returns the four Gemini CLI tools', async (t) => {
  const tools = createDefaultTools();
  t.same(
    tools.map((tool) => [tool.name, tool.kind]),
    [
      ['read_file', 'read'],
      ['list_directory', 'read'],
      ['write_file', 'edit'],
      ['run_shell_command', 'execute'],
    ],
  );
  t.type(tools[0], ReadFileTool);
  t.type(tools[1], ListDirectoryTool);
  t.type(tools[2], WriteFileTool);
  t.type(tools[3], RunShellCommandTool);
  for (const tool of tools) {
    t.equal(tool.parameters.type, 'object');
    t.ok(tool.description.length > 20, `${tool.name} has a description`);
    for (const req of tool.parameters.required ?? []) t.ok(req in tool.parameters.properties, `${tool.name}.${req} is declared`);
  }
  t.ok(typeof tools[2].withModifiedContent === 'function', 'write_file offers modify_with_editor');
  t.notOk(tools[0].propose, 'read tools need no proposal');
});

t.test('shell options are passed through', async (t) => {
  const [, , , shell] = createDefaultTools({ shell: { timeoutMs: 100, maxOutputBytes: 10 } });
  const ws = t.testdir({});
  const r = await shell.run({ command: 'echo 0123456789abcdef' }, { workspace: ws, signal: new AbortController().signal });
  t.match(r, { llmContent: /\[\.\.\. 7 bytes truncated \.\.\.\]\n789abcdef\n/ });
  const slow = await shell.run({ command: 'sleep 5' }, { workspace: ws, signal: new AbortController().signal });
  t.match(slow, { isError: true, error: { type: 'shell_timeout', message: /100 ms/ } });
});
