/**
 * An extension's `excludeTools` is never weaker than written: every spelling gemini-cli accepts
 * for a built-in tool — its name, its class name (`ShellTool`), either with a per-command part,
 * with stray spaces — takes the whole tool away from every context.
 */
import t from 'tap';
import { Toolbox } from '../../../src/agent/runtime/toolbox.js';
import { createDefaultTools } from '../../../src/tools/index.js';

const offered = async (excludeTools: string[]) => {
  const box = new Toolbox({ builtin: createDefaultTools(), defaultCwd: '/tmp', logger: { warn: () => {} }, excludeTools });
  const set = await box.forContext({ id: 'c', workspace: '/tmp', settings: {} });
  await box.close();
  return { names: set.declarations.map((d) => d.name), byName: [...set.byName.keys()], builtin: box.builtin.map((b) => b.name) };
};

t.test('each spelling gemini-cli accepts excludes the whole tool', async (t) => {
  for (const entry of [
    'run_shell_command',
    'run_shell_command(rm -rf)',
    ' run_shell_command ',
    'run_shell_command(rm -rf) ',
    'run_shell_command (rm -rf)',
    'ShellTool',
    'ShellTool(rm -rf)',
  ]) {
    const { names, byName, builtin } = await offered([entry]);
    t.notOk(names.includes('run_shell_command'), `${JSON.stringify(entry)}: not declared to the model`);
    t.notOk(byName.includes('run_shell_command') || builtin.includes('run_shell_command'), `${JSON.stringify(entry)}: not callable`);
    t.ok(names.includes('read_file'), `${JSON.stringify(entry)}: the other tools stay`);
  }
  const classes: Record<string, string> = {
    ReadFileTool: 'read_file',
    ReadManyFilesTool: 'read_many_files',
    LSTool: 'list_directory',
    GlobTool: 'glob',
    GrepTool: 'search_file_content',
    RipGrepTool: 'search_file_content',
    WriteFileTool: 'write_file',
    EditTool: 'replace',
    SmartEditTool: 'replace',
  };
  for (const [cls, name] of Object.entries(classes)) {
    t.notOk((await offered([cls])).names.includes(name), `${cls} excludes ${name}`);
  }
});

t.test('an entry of a million "(" is read in linear time (a regex on it took minutes: the server did not start)', async (t) => {
  const started = performance.now();
  const { names } = await offered([`run_shell_command${'('.repeat(1_000_000)}`, `ShellTool${'('.repeat(1_000_000)})`]);
  t.ok(performance.now() - started < 1_000, 'read at once');
  t.notOk(names.includes('run_shell_command'), 'the one ending in ")" excludes the tool');
});
