/**
 * The prompt box: Enter sends, Shift+Enter starts a new line. A new conversation also picks its
 * workspace (a directory on the server's machine; empty = the server's WORKSPACE_DIR), which
 * then stays the conversation's. Recent workspaces are offered again (kept in localStorage).
 */
import type { JSX } from 'preact';
import { useState } from 'preact/hooks';

const RECENT_KEY = 'devtool-a2a.workspaces';

function recentWorkspaces(): string[] {
  try {
    const list: unknown = JSON.parse(localStorage.getItem(RECENT_KEY) ?? '[]');
    return Array.isArray(list) ? list.filter((w): w is string => typeof w === 'string') : [];
  } catch {
    return [];
  }
}

function remember(workspace: string): void {
  if (workspace === '') return;
  try {
    localStorage.setItem(RECENT_KEY, JSON.stringify([workspace, ...recentWorkspaces().filter((w) => w !== workspace)].slice(0, 10)));
  } catch {
    /* storage disabled: nothing is remembered */
  }
}

export interface ComposerProps {
  /** A new conversation: the workspace can be picked. */
  fresh: boolean;
  /** The task is running: a prompt waits until it pauses or ends. */
  busy: boolean;
  /** The server does not answer: a prompt would be lost, so it waits (the text stays in the box). */
  offline: boolean;
  send: (text: string, workspace: string) => void;
}

export function Composer({ fresh, busy, offline, send }: ComposerProps): JSX.Element {
  const [text, setText] = useState('');
  const [workspace, setWorkspace] = useState(() => recentWorkspaces()[0] ?? '');
  const submit = () => {
    if (busy || offline || text.trim() === '') return;
    remember(workspace.trim());
    send(text, workspace);
    setText('');
  };
  const onKey = (e: KeyboardEvent) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      submit();
    }
  };
  return (
    <div class="composer">
      {fresh && (
        <div class="row">
          <label for="workspace">Workspace</label>
          <input
            id="workspace"
            class="workspace mono"
            list="recent-workspaces"
            placeholder="/absolute/path on the server (empty: the server's WORKSPACE_DIR)"
            value={workspace}
            onInput={(e) => setWorkspace((e.target as HTMLInputElement).value)}
          />
          <datalist id="recent-workspaces">
            {recentWorkspaces().map((w) => (
              <option key={w} value={w} />
            ))}
          </datalist>
        </div>
      )}
      <textarea
        id="prompt"
        aria-label="prompt"
        placeholder={
          offline
            ? 'The server does not answer…'
            : busy
              ? 'The agent is working…'
              : 'Ask the agent (Enter sends, Shift+Enter for a new line)'
        }
        value={text}
        onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        onKeyDown={onKey}
      />
      <div class="row">
        <span class="hint grow">
          <kbd>Enter</kbd> sends · <kbd>Shift</kbd>+<kbd>Enter</kbd> new line · on a focused card <kbd>a</kbd> approves, <kbd>d</kbd>{' '}
          declines
        </span>
        <button class="primary" disabled={busy || offline || text.trim() === ''} onClick={submit}>
          Send
        </button>
      </div>
    </div>
  );
}
