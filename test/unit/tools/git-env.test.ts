/** The git configuration imposed on every command (issue 19, finding 1): what it sets and how it sits on an environment. */
import { execFileSync } from 'node:child_process';
import t from 'tap';
import { GIT_SAFE_CONFIG, gitSafeEnvironment, withGitConfig } from '../../../src/tools/shell/git-env.js';

t.test('the keys, appended after what the environment already imposes', async (t) => {
  const fresh = gitSafeEnvironment();
  t.equal(fresh.GIT_CONFIG_COUNT, String(GIT_SAFE_CONFIG.length));
  t.equal(fresh.GIT_CONFIG_KEY_0, 'safe.bareRepository');
  t.equal(fresh.GIT_CONFIG_VALUE_0, 'explicit');
  t.same(
    GIT_SAFE_CONFIG.map(([k]) => k),
    ['safe.bareRepository', 'core.fsmonitor', 'core.hooksPath', 'protocol.ext.allow'],
  );
  t.match(fresh, { GIT_SSH_COMMAND: 'ssh', GIT_EDITOR: ':', GIT_SEQUENCE_EDITOR: ':', GIT_PAGER: 'cat' });

  const operator = gitSafeEnvironment({ GIT_CONFIG_COUNT: '2', GIT_SSH: '/usr/local/bin/my-ssh' });
  t.equal(operator.GIT_CONFIG_COUNT, String(2 + GIT_SAFE_CONFIG.length), "the operator's entries stay, ours come after them");
  t.equal(operator.GIT_CONFIG_KEY_2, 'safe.bareRepository');
  t.notOk('GIT_CONFIG_KEY_0' in operator);
  t.notOk('GIT_SSH_COMMAND' in operator, "the operator's own ssh program is kept");
  t.equal(gitSafeEnvironment({ GIT_CONFIG_COUNT: 'junk' }).GIT_CONFIG_KEY_0, 'safe.bareRepository', 'a bogus count is replaced');

  const more = withGitConfig(fresh, 'core.excludesFile', '/x');
  t.equal(more.GIT_CONFIG_COUNT, String(GIT_SAFE_CONFIG.length + 1));
  t.equal(more[`GIT_CONFIG_KEY_${GIT_SAFE_CONFIG.length}`], 'core.excludesFile');
});

t.test('git reads them as configuration that wins over the repository', async (t) => {
  const env = { PATH: '/usr/bin:/bin', ...gitSafeEnvironment() };
  const get = (key: string) => execFileSync('git', ['config', '--get', key], { env, encoding: 'utf8' }).trim();
  t.equal(get('core.hooksPath'), '/dev/null');
  t.equal(get('core.fsmonitor'), 'false');
  t.equal(get('safe.bareRepository'), 'explicit');
});
