import fs from 'node:fs';
import path from 'node:path';
import t from 'tap';
import { ProtectedPaths } from '../../../src/tools/workspace.js';
import {
  createDefaultTools,
  GlobTool,
  ListDirectoryTool,
  ReadFileTool,
  ReadManyFilesTool,
  readShellLine,
  ReplaceTool,
  RunShellCommandTool,
  SearchFileContentTool,
  WriteFileTool,
} from '../../../src/tools/index.js';

t.test('createDefaultTools returns the Gemini CLI tools in order', async (t) => {
  const tools = createDefaultTools();
  t.same(
    tools.map((tool) => [tool.name, tool.kind]),
    [
      ['read_file', 'read'],
      ['read_many_files', 'read'],
      ['list_directory', 'read'],
      ['glob', 'read'],
      ['search_file_content', 'read'],
      ['write_file', 'edit'],
      ['replace', 'edit'],
      ['run_shell_command', 'execute'],
    ],
  );
  const classes = [
    ReadFileTool,
    ReadManyFilesTool,
    ListDirectoryTool,
    GlobTool,
    SearchFileContentTool,
    WriteFileTool,
    ReplaceTool,
    RunShellCommandTool,
  ];
  classes.forEach((cls, i) => t.type(tools[i], cls));
  for (const tool of tools) {
    t.equal(tool.parameters.type, 'object');
    t.ok(tool.description.length > 20, `${tool.name} has a description`);
    for (const req of tool.parameters.required ?? []) t.ok(req in tool.parameters.properties, `${tool.name}.${req} is declared`);
    for (const [name, prop] of Object.entries(tool.parameters.properties)) {
      t.ok(prop.description && prop.description.length > 5, `${tool.name}.${name} is described`);
      if (prop.type === 'array') t.ok(prop.items, `${tool.name}.${name} declares its items`);
    }
    if (tool.kind === 'read') t.equal(typeof tool.propose, 'undefined', `${tool.name}: read tools need no proposal`);
    else t.equal(typeof tool.propose, 'function', `${tool.name} proposes`);
  }
  const byName = new Map(tools.map((tool) => [tool.name, tool]));
  t.ok(typeof byName.get('write_file')?.withModifiedContent === 'function', 'write_file offers modify_with_editor');
  t.ok(typeof byName.get('replace')?.withModifiedContent === 'function', 'replace offers modify_with_editor');
  t.equal(
    tools
      .filter((tool) => tool.commandLine !== undefined)
      .map((tool) => tool.name)
      .join(),
    'run_shell_command',
  );
  t.equal(tools.filter((tool) => tool.mcp !== undefined).length, 0);
});

t.test('run_shell_command exposes its command line for approval rules', async (t) => {
  const shell = new RunShellCommandTool();
  const ws = fs.realpathSync(t.testdir({ sub: {} }));
  t.same(await shell.commandLine({ command: 'git status && npm test', dir_path: 'sub' }, { workspace: ws }), {
    command: 'git status && npm test',
    cwd: path.join(ws, 'sub'),
    protectedPaths: ProtectedPaths.NONE,
  });
  t.equal(
    await shell.commandLine({ command: 'ls', dir_path: 'missing' }, { workspace: ws }),
    undefined,
    'no such directory: nothing to judge',
  );
  t.same(readShellLine('a | b'), { readable: true, commands: [{ argv: ['a'] }, { argv: ['b'] }] });
});

t.test('shell options are passed through', async (t) => {
  const shell = createDefaultTools({ shell: { timeoutMs: 100, maxOutputBytes: 10 } }).find((tool) => tool.name === 'run_shell_command');
  if (shell === undefined) throw new Error('no shell tool');
  const ws = t.testdir({});
  const r = await shell.run({ command: 'echo 0123456789abcdef' }, { workspace: ws, signal: new AbortController().signal });
  t.match(r, { llmContent: /\[\.\.\. 7 bytes truncated: output is capped at its last 10 bytes \.\.\.\]\n789abcdef\n/ });
  const slow = await shell.run({ command: 'sleep 5' }, { workspace: ws, signal: new AbortController().signal });
  t.match(slow, { isError: true, error: { type: 'shell_timeout', message: /100 ms/ } });
});
