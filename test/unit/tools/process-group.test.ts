/**
 * Recorded process groups (process-group.ts): the recovery kills a group only while its leader
 * is still the recorded process — a real detached group here, and stamps that do not match.
 */
import { spawn } from 'node:child_process';
import t from 'tap';
import { killRecordedGroup, processStamp, recordGroup } from '../../../src/tools/shell/process-group.js';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

t.test('a recorded group is killed whole; a wrong stamp, a non-leader or a bad pgid is left alone', async (t) => {
  const child = spawn('bash', ['-c', 'sleep 60 & sleep 60; wait'], { detached: true, stdio: 'ignore' });
  const exited = new Promise((resolve) => child.on('exit', resolve));
  const pid = child.pid!;
  t.teardown(() => {
    if (alive(pid)) process.kill(-pid, 'SIGKILL');
  });
  const group = recordGroup(pid);
  t.ok(group, 'a live leader can be stamped');
  if (!group) return;
  t.equal(group.pgid, pid);
  t.match(group.stamp, /^[0-9a-f-]+:\d+$/, '<boot id>:<start time>');
  t.equal(processStamp(pid), group.stamp, 'the stamp is stable');

  t.notOk(killRecordedGroup({ pgid: pid, stamp: `${group.stamp}0` }), 'another start time: a reused pid, left alone');
  t.notOk(killRecordedGroup({ pgid: pid, stamp: group.stamp.replace(/^[0-9a-f]/, (c) => (c === 'a' ? 'b' : 'a')) }), 'another boot');
  t.notOk(killRecordedGroup({ pgid: process.pid, stamp: processStamp(process.pid)! }), 'a process that leads no group of that id');
  t.notOk(killRecordedGroup({ pgid: 1, stamp: 'x' }), 'never init');
  t.notOk(killRecordedGroup({ pgid: 1.5, stamp: 'x' }));
  t.ok(alive(pid), 'still running after the refusals');

  t.ok(killRecordedGroup(group), 'the recorded group is killed');
  await exited;
  t.notOk(killRecordedGroup(group), 'gone: nothing to kill');
  t.equal(processStamp(pid), undefined);
});

t.test('a pid that does not exist has no stamp', async (t) => {
  t.equal(processStamp(2 ** 22 + 12345), undefined);
  t.equal(recordGroup(2 ** 22 + 12345), undefined);
});
