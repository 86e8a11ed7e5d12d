/**
 * What the console knows, outside any component: the connection (with the caller's credential),
 * the task list, the selected task's TaskSession (whose view the client library folds), and
 * whether the server answers. Components read `state` and call the methods; every change is
 * one new state object handed to the listeners.
 *
 * Reloads and restarts: the selected task is in the URL (`#task=<id>`), and attaching to it
 * replays its event log from the start, so a reload shows the transcript and the waiting cards
 * again. The server is probed (its agent card) every few seconds; while it does not answer the
 * console says it is reconnecting, and when it answers again the selected task is attached anew.
 */
import { A2AClientError, A2AConnection, DEVTOOL_EXTENSION_URI, emptyView, TaskSession } from '../client/index.js';
import type { AnswerOptions, TaskSummary, TaskView, ToolCardView } from '../client/index.js';
import { saveCredential, savedCredential } from './credentials.js';

export interface ConsoleState {
  /** The selected task's view; an empty view while a new conversation is being written. */
  view: TaskView;
  tasks: TaskSummary[];
  /** False while the server does not answer its agent card. */
  serverUp: boolean;
  /** The server asked for credentials (HTTP 401) and none (or a wrong one) is set. */
  needCredential: boolean;
  /** The last error a person should see (a refused answer, a failed send). */
  error?: string;
}

/** How often the server is probed while it answers, and while it does not (ms). */
const PROBE_UP_MS = 2000;
const PROBE_DOWN_MS = 700;

function taskFromHash(): string | undefined {
  const m = /^#task=([^&]+)$/.exec(location.hash);
  return m?.[1] !== undefined ? decodeURIComponent(m[1]) : undefined;
}

export class ConsoleController {
  state: ConsoleState = { view: emptyView(), tasks: [], serverUp: true, needCredential: false };
  private readonly listeners = new Set<(state: ConsoleState) => void>();
  private connection: A2AConnection;
  private session: TaskSession;
  private stopSession: () => void = () => undefined;
  private probeTimer: ReturnType<typeof setTimeout> | undefined;

  constructor() {
    this.connection = this.connect(savedCredential());
    this.session = this.newSession();
  }

  onChange(listener: (state: ConsoleState) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private update(patch: Partial<ConsoleState>): void {
    this.state = { ...this.state, ...patch };
    for (const listener of [...this.listeners]) listener(this.state);
  }

  private connect(credential: string | undefined): A2AConnection {
    return new A2AConnection({ baseUrl: `${location.origin}/`, ...(credential ? { bearerToken: credential } : {}) });
  }

  /** A session on the current connection whose every view becomes the state's. */
  private newSession(): TaskSession {
    this.stopSession();
    this.session?.detach();
    const session = new TaskSession(this.connection, { retryBaseMs: 300, retryMaxMs: 2000 });
    let lastState = '';
    this.stopSession = session.onChange((view) => {
      this.update({ view });
      if (view.taskId !== '' && taskFromHash() !== view.taskId) history.replaceState(null, '', `#task=${encodeURIComponent(view.taskId)}`);
      // The sidebar shows each task's state: refresh it when this one's changes.
      if (view.taskId !== '' && view.state !== lastState) {
        lastState = view.state;
        this.refreshTasks();
      }
    });
    return session;
  }

  /** Lists the tasks, opens the one in the URL and starts probing the server. */
  start(): void {
    // Tasks started elsewhere (another tab, a terminal client) appear when the tab is looked at again.
    document.addEventListener('visibilitychange', this.onVisible);
    this.refreshTasks();
    const taskId = taskFromHash();
    if (taskId !== undefined) this.select(taskId);
    this.probe();
  }

  private readonly onVisible = (): void => {
    if (document.visibilityState === 'visible') this.refreshTasks();
  };

  stop(): void {
    document.removeEventListener('visibilitychange', this.onVisible);
    clearTimeout(this.probeTimer);
    this.stopSession();
    this.session.detach();
  }

  /** Shows a task: its whole log is replayed, then live events until it pauses or ends. */
  select(taskId: string): void {
    this.session = this.newSession();
    this.update({ view: { ...emptyView(), taskId }, error: undefined });
    this.run(this.session.attach(taskId));
  }

  /** Starts a new conversation: the next prompt creates a task (in the workspace the person picks). */
  newConversation(): void {
    this.session = this.newSession();
    history.replaceState(null, '', location.pathname);
    this.update({ view: emptyView(), error: undefined });
  }

  /** Sends a prompt: continues the selected task, or starts one with `workspace` (empty: the server's default). */
  send(text: string, workspace: string): void {
    const fresh = this.state.view.taskId === '';
    const metadata = fresh && workspace.trim() !== '' ? { [DEVTOOL_EXTENSION_URI]: { workspace_path: workspace.trim() } } : undefined;
    this.update({ error: undefined });
    this.run(this.session.send(text, metadata ? { metadata } : {}));
  }

  answer(cardId: string, optionId: string, opts: AnswerOptions): void {
    this.update({ error: undefined });
    this.run(this.session.answer(cardId, optionId, opts));
  }

  /**
   * Undo of a succeeded edit: restores its checkpoint in the same conversation. The restore is a
   * task of its own, selected now: its card shows the diff it will apply and waits for an answer.
   */
  undo(card: ToolCardView): void {
    const { contextId } = this.state.view;
    this.session = this.newSession();
    this.update({ view: emptyView(), error: undefined });
    this.run(this.session.restore(card.checkpoint ?? card.id, contextId !== '' ? { contextId } : {}));
  }

  cancelTask(): void {
    this.run(this.session.cancel());
  }

  /** Sets (or clears) the credential the server asked for, and reloads what it guards. */
  setCredential(value: string | undefined): void {
    saveCredential(value);
    this.connection = this.connect(value);
    this.update({ needCredential: false, error: undefined });
    const taskId = this.state.view.taskId;
    if (taskId !== '') this.select(taskId);
    else this.session = this.newSession();
    this.refreshTasks();
  }

  refreshTasks(): void {
    this.connection
      .listTasks({ pageSize: 100 })
      .then((list) => this.update({ tasks: list.tasks }))
      .catch((err: unknown) => this.fail(err));
  }

  /** Waits for a session call and turns its failure into state (a credential prompt or an error line). */
  private run(call: Promise<unknown>): void {
    call.catch((err: unknown) => this.fail(err));
  }

  private fail(err: unknown): void {
    if (err instanceof A2AClientError && err.httpStatus === 401) {
      this.update({ needCredential: true });
      return;
    }
    this.update({ error: err instanceof Error ? err.message : String(err) });
  }

  /** Probes the agent card; when the server comes back, re-attaches the selected task and refreshes the list. */
  private probe(): void {
    void fetch(`${location.origin}/.well-known/agent-card.json`, { cache: 'no-store' })
      .then((res) => res.ok)
      .catch(() => false)
      .then((up) => {
        const wasUp = this.state.serverUp;
        if (up !== wasUp) this.update({ serverUp: up });
        if (up && !wasUp) this.recover();
        this.probeTimer = setTimeout(() => this.probe(), up ? PROBE_UP_MS : PROBE_DOWN_MS);
      });
  }

  private recover(): void {
    this.refreshTasks();
    const { view } = this.state;
    // A session still resubscribing recovers by itself; an idle one (at a pause) replays anew.
    if (view.taskId !== '' && view.connection === 'closed') this.select(view.taskId);
  }
}
