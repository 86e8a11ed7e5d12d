/**
 * The grant catalogue skips the word after an option it lists as taking a value: that word is
 * never checked as an option. So git must really read a value there. For every such option of a
 * catalogued git subcommand, real git is run with a word after it that, read as an option, would
 * write a file (`--output=PROBE`) or run a command (`-O'touch PROBE;'`): no PROBE may appear.
 * (`git grep --and` and `git diff -U` were listed as taking a value: attack review of issue 19.)
 */
import t from 'tap';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { GRANT_CATALOGUE } from '../../../src/agent/policy/grant-catalogue.js';
import { ownDir } from '../../support/own-dir.js';

const dir = ownDir('git-values', { 'a.txt': 'alpha\n' });
const git = (...args: string[]) =>
  spawnSync('git', ['-c', 'user.name=a', '-c', 'user.email=a@b', ...args], { cwd: dir, encoding: 'utf8', timeout: 10_000 });
git('init', '-q');
git('add', '.');
git('commit', '-qm', 'a');
fs.writeFileSync(path.join(dir, 'a.txt'), 'alpha\nbeta\n');

/** Words that, read as options by this subcommand, would write PROBE or run `touch PROBE`. */
const HIDDEN: Record<string, string[]> = {
  diff: ['--output=PROBE'],
  log: ['--output=PROBE'],
  show: ['--output=PROBE'],
  grep: ['--open-files-in-pager=touch PROBE;', '-e', 'alpha'],
};

for (const [key, spec] of Object.entries(GRANT_CATALOGUE)) {
  const [name, sub] = key.split(' ');
  if (name !== 'git' || sub === undefined || HIDDEN[sub] === undefined) continue;
  t.test(`git ${sub}: every option listed with a value reads the next word as its value`, async (t) => {
    for (const opt of spec.valued ?? []) {
      const before = sub === 'grep' ? ['-e', 'alpha'] : sub === 'log' ? ['-p'] : [];
      git(sub, ...before, opt, ...(HIDDEN[sub] ?? []));
      t.notOk(fs.existsSync(path.join(dir, 'PROBE')), `git ${sub} ${opt} <word>: the word is not read as an option`);
      fs.rmSync(path.join(dir, 'PROBE'), { force: true });
    }
  });
}
