/** The approval policy: modes, allowed_tools, grants, options (by default reads run, writes wait for a person). */
import t from 'tap';
import {
  approves,
  autoApproval,
  grantsFor,
  needsApproval,
  optionsFor,
  serverGrant,
  shellGrant,
} from '../../../src/agent/policy/approval-policy.js';
import type { ApprovalScope } from '../../../src/agent/policy/approval-policy.js';
import type { ContextSettings } from '../../../src/agent/task-store.js';
import { createDefaultTools, redirectsOutput } from '../../../src/tools/index.js';
import type { AnyTool } from '../../../src/tools/tool.js';

const tools = new Map(createDefaultTools().map((tool) => [tool.name, tool]));
const tool = (name: string) => tools.get(name) as AnyTool;
const mcpTool = (server: string, name: string): AnyTool =>
  ({
    ...tool('write_file'),
    name: `${server}__${name}`,
    kind: 'other',
    withModifiedContent: undefined,
    commandLine: undefined,
    mcp: { serverName: server, toolName: name },
  }) as unknown as AnyTool;
const scope = (settings: ContextSettings = {}, grants: string[] = []): ApprovalScope => ({ settings, trustedTools: new Set(grants) });
const sh = (command: string) => ({ command });
const ids = (tool: AnyTool, args: Record<string, unknown>) => optionsFor(tool, args).map((o) => o.id);

t.test('modes', async (t) => {
  const write = { file_path: 'a', content: 'x' };
  t.equal(autoApproval(tool('read_file'), { file_path: 'a' }, scope()), 'read-only');
  t.ok(needsApproval(tool('write_file'), write, scope()), 'DEFAULT: writes wait');
  t.ok(needsApproval(tool('replace'), { file_path: 'a', old_string: 'x', new_string: 'y' }, scope({ approvalMode: 'DEFAULT' })));
  t.ok(needsApproval(tool('run_shell_command'), sh('ls'), scope()), 'DEFAULT: shell waits');
  t.equal(autoApproval(tool('write_file'), write, scope({ approvalMode: 'AUTO_EDIT' })), 'approval mode AUTO_EDIT');
  t.equal(autoApproval(tool('replace'), {}, scope({ approvalMode: 'AUTO_EDIT' })), 'approval mode AUTO_EDIT');
  t.ok(needsApproval(tool('run_shell_command'), sh('ls'), scope({ approvalMode: 'AUTO_EDIT' })), 'AUTO_EDIT: shell still asks');
  t.ok(needsApproval(mcpTool('gh', 'create'), {}, scope({ approvalMode: 'AUTO_EDIT' })), 'AUTO_EDIT: MCP still asks');
  t.equal(autoApproval(tool('run_shell_command'), sh('rm -rf x'), scope({ approvalMode: 'YOLO' })), 'approval mode YOLO');
  t.equal(autoApproval(mcpTool('gh', 'create'), {}, scope({ approvalMode: 'YOLO' })), 'approval mode YOLO');
});

t.test('allowed_tools: names and shell prefixes', async (t) => {
  const allowed = scope({ allowedTools: ['write_file', 'run_shell_command(git status)', 'gh__list', 'run_shell_command()'] });
  t.equal(autoApproval(tool('write_file'), {}, allowed), 'allowed_tools');
  t.equal(autoApproval(mcpTool('gh', 'list'), {}, allowed), 'allowed_tools');
  t.ok(needsApproval(mcpTool('gh', 'create'), {}, allowed));
  for (const ok of ['git status', 'git status --short', '  git status  ', 'git status; git status -s']) {
    t.equal(autoApproval(tool('run_shell_command'), sh(ok), allowed), 'allowed_tools', ok);
  }
  for (const no of [
    'git statusx',
    'git status && rm x',
    'git push',
    'git status > ~/.bashrc',
    'echo $(git status)',
    'ls',
    `git status $'\\'"' ; touch pwned ; echo "'"'\\'`,
    'git status /etc',
  ]) {
    t.ok(needsApproval(tool('run_shell_command'), sh(no), allowed), no);
  }
  t.ok(needsApproval(tool('run_shell_command'), {}, allowed), 'no command: asks');
  t.equal(
    autoApproval(tool('run_shell_command'), sh('anything'), scope({ allowedTools: ['run_shell_command'] })),
    'allowed_tools',
    'the bare name allows every command',
  );
});

t.test('grants: tools, shell roots, MCP tools and servers', async (t) => {
  const shell = tool('run_shell_command');
  t.same(grantsFor(shell, sh('echo a && ls -l | wc -l'), 'proceed_always'), [
    shellGrant('run_shell_command', 'echo'),
    shellGrant('run_shell_command', 'ls'),
    shellGrant('run_shell_command', 'wc'),
  ]);
  t.same(grantsFor(shell, sh('echo a'), 'proceed_once'), []);
  t.same(grantsFor(shell, sh('echo $(id)'), 'proceed_always'), [], 'command substitution: nothing to trust');
  t.same(grantsFor(shell, sh('echo a > f'), 'proceed_always'), [], 'output redirection: nothing to trust');
  t.same(grantsFor(tool('write_file'), {}, 'proceed_always'), ['write_file']);
  t.same(grantsFor(mcpTool('gh', 'create'), {}, 'proceed_always_tool'), ['gh__create']);
  t.same(grantsFor(mcpTool('gh', 'create'), {}, 'proceed_always_server'), [serverGrant('gh')]);
  t.same(grantsFor(mcpTool('gh', 'create'), {}, 'cancel'), []);

  const granted = scope({}, [shellGrant('run_shell_command', 'echo')]);
  t.equal(autoApproval(shell, sh('echo b'), granted), 'allowed always in this conversation', 'echo a trusted echo b');
  t.ok(needsApproval(shell, sh('pwd'), granted), 'pwd still asks');
  t.ok(needsApproval(shell, sh('echo b && pwd'), granted), 'every root must be trusted');
  t.ok(needsApproval(shell, sh('echo b > ~/.profile'), granted), 'a redirection asks even for a trusted root');
  t.ok(needsApproval(shell, sh('$(echo rm) -rf x'), granted), 'unparsable: asks');
  t.ok(needsApproval(shell, sh(`echo $'\\'"' ; touch pwned ; echo "'"'\\'`), granted), "ANSI-C quoting ($'…') is never trusted");
  t.ok(needsApproval(shell, sh('echo owned >&/tmp/x'), granted), '>&file writes a file: asks');
  t.ok(needsApproval(shell, sh('echo ~/.ssh/id_rsa'), granted), 'a path outside the workspace: asks');
  t.ok(needsApproval(shell, sh('echo ../../etc/passwd'), granted), '.. : asks');
  t.equal(autoApproval(shell, sh('echo b 2>/dev/null'), granted), 'allowed always in this conversation', 'discarding output is fine');
  t.equal(autoApproval(mcpTool('gh', 'x'), {}, scope({}, [serverGrant('gh')])), 'allowed always in this conversation');
  t.ok(needsApproval(mcpTool('other', 'x'), {}, scope({}, [serverGrant('gh')])));
  t.equal(autoApproval(tool('write_file'), {}, scope({}, ['write_file'])), 'allowed always in this conversation');
});

t.test('options', async (t) => {
  t.same(ids(tool('write_file'), {}), ['proceed_once', 'proceed_always', 'modify_with_editor', 'cancel']);
  t.same(ids(tool('run_shell_command'), sh('npm test')), ['proceed_once', 'proceed_always', 'cancel']);
  t.match(
    optionsFor(tool('run_shell_command'), sh('npm test && npm run lint')).find((o) => o.id === 'proceed_always')?.description,
    /"npm" commands/,
  );
  t.same(ids(tool('run_shell_command'), sh('for f in *; do rm $f; done')), ['proceed_once', 'cancel'], 'no "always" for what has no root');
  t.same(ids(tool('run_shell_command'), sh('echo hi > out.txt')), ['proceed_once', 'cancel'], 'no "always" for a redirection');
  t.same(ids(mcpTool('gh', 'create'), {}), ['proceed_once', 'proceed_always_tool', 'proceed_always_server', 'cancel']);
  t.ok(approves('proceed_once'));
  t.notOk(approves('cancel'));
});

t.test('redirectsOutput', async (t) => {
  const cases: Array<[string, boolean]> = [
    ['git status', false],
    ['git status > ~/.bashrc', true],
    ['echo a >> f', true],
    ['a &> out', true],
    ['x >| f', true],
    ['ls 2>&1', false],
    ['cat x >&2', false],
    ['ls 2>/dev/null', false],
    ['ls > /dev/null; echo done > f', true],
    ['echo owned >&/tmp/x', true],
    ['x >&-', false],
    ['echo ">" x', false],
    ["echo '>'", false],
    ['echo a\\>b', false],
  ];
  for (const [cmd, want] of cases) t.equal(redirectsOutput(cmd), want, cmd);
});
