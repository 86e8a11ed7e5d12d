/**
 * The agent's part of a graceful shutdown (SIGTERM): what runs here gets a grace period to
 * finish; what still runs after it is recorded interrupted — its calls FAILED `interrupted`,
 * their process groups killed, the task `failed` — instead of being left for a lease to lapse;
 * then every write is committed and every lease this instance holds is released, so another
 * instance takes the tasks over at once (a paused task's answer, a sweep of what was left).
 */
import { interruptCall, interruptedWork } from './call-lifecycle.js';
import { failTask } from './task-lifecycle.js';
import type { LiveTask } from './live-task.js';
import type { AgentLogger } from '../logger.js';
import type { TaskCache } from './task-cache.js';
import type { TaskRuns } from './task-runs.js';
import type { TaskStore } from '../task-store.js';
import type { WriteQueue } from './write-queue.js';
import { killRecordedGroup } from '../../tools/index.js';

export interface HandOffOptions {
  cache: TaskCache;
  runs: TaskRuns;
  writes: WriteQueue;
  store: Pick<TaskStore, 'releaseLeases'>;
  logger: AgentLogger;
  instanceId: string;
  /** Runs once nothing runs here any more, before the leases are released (stops the supervisor's renewals). */
  beforeRelease?: () => Promise<void>;
  /** Kills a recorded process group if its leader is still the recorded one (default: killRecordedGroup). */
  killProcessGroup?: (group: { pgid: number; stamp: string }) => boolean;
}

/** What the hand-off did, for the shutdown log line. */
interface HandOffReport {
  /** Tasks whose running work ended within the grace period. */
  finished: boolean;
  /** Tasks recorded interrupted after it. */
  interrupted: string[];
}

/** How long aborted runs may take to end after the grace period (a tool that ignores its abort signal). */
const ABORT_WAIT_MS = 5_000;

/**
 * Waits up to `graceMs` for the runs of this process to settle; interrupts what still runs;
 * commits every queued write; releases this instance's leases. Never rejects: a store that
 * refuses the release is logged (the leases then lapse as after a crash).
 */
export async function handOff(opts: HandOffOptions, graceMs: number): Promise<HandOffReport> {
  const { cache, runs, logger } = opts;
  const finished = cache.busyIds().length === 0 || (await runs.drain(graceMs));
  const interrupted: string[] = [];
  if (!finished) {
    for (const id of cache.busyIds()) {
      const task = cache.peek(id);
      if (task === undefined) continue;
      interruptForShutdown(opts, task, graceMs);
      interrupted.push(id);
    }
    if (!(await runs.drain(ABORT_WAIT_MS))) logger.warn({ tasks: interrupted }, 'interrupted runs still going; handing off anyway');
  }
  await opts.beforeRelease?.();
  await opts.writes.flushed();
  try {
    await opts.store.releaseLeases(opts.instanceId);
  } catch (err) {
    logger.error({ err }, 'releasing the leases failed; they lapse after LEASE_MS');
  }
  return { finished, interrupted };
}

/** Ends `task` here: its running calls FAILED `interrupted` (their processes killed), the task failed. */
function interruptForShutdown(opts: HandOffOptions, task: LiveTask, graceMs: number): void {
  const kill = opts.killProcessGroup ?? killRecordedGroup;
  const why = `the server shut down; SHUTDOWN_GRACE_MS=${graceMs} passed`;
  const running = task.turn.filter((c) => (c.phase === 'executing' || c.phase === 'ready') && c.elsewhere !== true);
  const what = interruptedWork(
    running.map((c) => ({ name: c.snapshot.toolName, started: c.phase === 'executing' })),
    'shut down',
  );
  for (const call of running) {
    const group = call.processGroup;
    const killed = group !== undefined && kill(group) ? group.pgid : undefined;
    interruptCall(task, call, opts.instanceId, killed, why);
  }
  failTask(task, `Interrupted: ${what}; the task cannot go on.`);
  opts.logger.warn(
    { taskId: task.id, contextId: task.task.contextId, calls: running.map((c) => c.snapshot.id) },
    'shutdown: grace period over, running calls recorded interrupted',
  );
}
