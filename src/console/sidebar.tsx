/** The task list (v1.0 ListTasks): most recently updated first; one click opens a task. */
import type { JSX } from 'preact';
import type { TaskSummary } from '../client/index.js';

export interface SidebarProps {
  tasks: TaskSummary[];
  selected: string;
  select: (taskId: string) => void;
  newConversation: () => void;
}

function when(iso: string | undefined): string {
  if (iso === undefined) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? '' : d.toLocaleString();
}

export function Sidebar({ tasks, selected, select, newConversation }: SidebarProps): JSX.Element {
  return (
    <nav class="sidebar" aria-label="tasks">
      <header>
        <h1>devtool-a2a</h1>
        <button onClick={newConversation}>New task</button>
      </header>
      <ul class="task-list">
        {tasks.map((t) => (
          <li key={t.id}>
            <button class={t.id === selected ? 'selected' : ''} data-task={t.id} onClick={() => select(t.id)}>
              <span class="task-title">{t.title || t.id}</span>
              <span class="task-meta">
                {t.state} · {when(t.updatedAt)}
              </span>
            </button>
          </li>
        ))}
      </ul>
      <footer>{tasks.length === 0 ? 'No tasks yet.' : `${tasks.length} task${tasks.length === 1 ? '' : 's'}`}</footer>
    </nav>
  );
}
