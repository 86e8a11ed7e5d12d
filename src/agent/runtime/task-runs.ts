/**
 * The owner of everything that runs for a task outside a request: model steps, the calls a
 * person approved, a supervisor's action on a task. Each run goes through here, so an error
 * that escapes it (a store that refused a read, a bug) fails THAT task — its open calls
 * closed with the reason, the task `failed`, the details logged under a reference the client
 * sees — and never the process or the other tasks.
 */
import { randomUUID } from 'node:crypto';
import { Background } from '../../lib/background.js';
import { isStoreUnavailable } from '../../protocol/errors.js';
import { failTask } from './task-lifecycle.js';
import type { LiveTask } from './live-task.js';
import type { AgentLogger } from '../logger.js';

export class TaskRuns {
  private readonly background: Background;

  constructor(private readonly logger: AgentLogger) {
    this.background = new Background((err, what) => this.logger.error({ err }, `${what} failed`));
  }

  /** Starts `work` for `task` and returns at once. */
  detach(task: LiveTask, what: string, work: () => Promise<unknown>): void {
    this.background.run(what, () => this.guard(task, what, work));
  }

  /** Runs `work` for `task` and resolves when it is over; an error fails the task instead of reaching the caller. */
  async guard(task: LiveTask, what: string, work: () => Promise<unknown>): Promise<void> {
    try {
      await work();
    } catch (err) {
      this.fail(task, what, err);
    }
  }

  /**
   * Fails `task` because `what` threw `err`. The client is told what failed and a reference
   * to the log entry; the error itself (it may name database internals) stays in the log.
   */
  fail(task: LiveTask, what: string, err: unknown): void {
    const ref = randomUUID().slice(0, 8);
    // A lost database is no bug: the client is told so, and that sending the message again later works.
    const why = isStoreUnavailable(err)
      ? `The task store became unavailable while ${what} (reference ${ref} in the server log); the task cannot go on. Send the message again in a moment.`
      : `Internal error while ${what} (reference ${ref} in the server log); the task cannot go on.`;
    failTask(task, why);
    try {
      this.logger.error({ err, taskId: task.id, ref }, `${what} failed; the task fails`);
    } catch {
      // A logger that throws must not undo the failure above.
    }
  }

  /** Resolves once every run has settled (shutdown, tests), or after `timeoutMs`; true when all settled. */
  drain(timeoutMs?: number): Promise<boolean> {
    return this.background.drain(timeoutMs);
  }
}
