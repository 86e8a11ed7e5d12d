import type { LiveTask } from './live-task.js';

/** Tasks held by this process, by id. In memory in this version (see README "Durability"). */
export class TaskRegistry {
  private readonly tasks = new Map<string, LiveTask>();

  get(id: string): LiveTask | undefined {
    return this.tasks.get(id);
  }

  add(task: LiveTask): void {
    this.tasks.set(task.id, task);
  }

  all(): IterableIterator<LiveTask> {
    return this.tasks.values();
  }

  get size(): number {
    return this.tasks.size;
  }
}
