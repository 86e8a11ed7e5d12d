/**
 * Process groups that outlive their server. A shell command leads its own process group; its
 * id and a stamp of the leader (the machine's boot id and the leader's start time) are recorded
 * with the running call, so that after a crash the recovery can kill that group — and only that
 * group: a pid reused by another process, or a group on another machine, has another stamp.
 * Linux only (/proc); elsewhere there is no stamp and nothing is killed.
 */
import fs from 'node:fs';
import type { ProcessGroupRecord } from '../tool.js';

export type { ProcessGroupRecord };

let bootId: string | undefined;

function readBootId(): string | undefined {
  try {
    bootId ??= fs.readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return undefined;
  }
  return bootId;
}

/** `/proc/<pid>/stat` fields after the command name: state, ppid, pgrp, … (field 3 onwards). */
function statFields(pid: number): string[] | undefined {
  let stat: string;
  try {
    stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined;
  }
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ');
}

/** The stamp of a live process, or undefined (gone, a zombie, or no /proc). */
export function processStamp(pid: number): string | undefined {
  const boot = readBootId();
  const fields = statFields(pid);
  // fields[0] is field 3 of stat (state); the start time is field 22.
  const start = fields?.[19];
  if (boot === undefined || fields === undefined || fields[0] === 'Z' || start === undefined) return undefined;
  return `${boot}:${start}`;
}

/** The record of the group `pid` leads, if it can be stamped. */
export function recordGroup(pid: number): ProcessGroupRecord | undefined {
  const stamp = processStamp(pid);
  return stamp === undefined ? undefined : { pgid: pid, stamp };
}

/**
 * SIGKILLs the recorded group when its leader is still the very process that was recorded
 * (same machine boot, same start time, still leading its group). Returns whether it did.
 * A group whose leader has exited is left alone: its id could already be someone else's.
 */
export function killRecordedGroup(record: ProcessGroupRecord): boolean {
  if (!Number.isInteger(record.pgid) || record.pgid <= 1) return false;
  const fields = statFields(record.pgid);
  if (fields === undefined || Number(fields[2]) !== record.pgid) return false;
  if (processStamp(record.pgid) !== record.stamp) return false;
  try {
    process.kill(-record.pgid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}
