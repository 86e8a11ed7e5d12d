/** The console: the task list beside the selected task's conversation and the prompt box. */
import type { JSX } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import type { ConsoleController, ConsoleState } from './controller.js';
import { Answerable, ServerDown, Undo } from './card.js';
import { Composer } from './composer.js';
import { Sidebar } from './sidebar.js';
import { Transcript } from './transcript.js';

function Login({ controller }: { controller: ConsoleController }): JSX.Element {
  const [value, setValue] = useState('');
  return (
    <form
      class="login"
      onSubmit={(e) => {
        e.preventDefault();
        controller.setCredential(value.trim());
      }}
    >
      <b>This server asks who you are.</b>
      <label for="credential">API key or bearer token</label>
      <input
        id="credential"
        type="password"
        autocomplete="off"
        value={value}
        onInput={(e) => setValue((e.target as HTMLInputElement).value)}
      />
      <span class="hint">Kept in this tab only (sessionStorage) and sent to this server alone.</span>
      <button class="primary" type="submit" disabled={value.trim() === ''}>
        Continue
      </button>
    </form>
  );
}

function Banner({ state }: { state: ConsoleState }): JSX.Element | null {
  if (!state.serverUp || state.view.connection === 'reconnecting') {
    return (
      <div class="banner reconnecting" role="status">
        Reconnecting… {state.serverUp ? '' : '(the server does not answer)'}
      </div>
    );
  }
  if (state.error !== undefined) {
    return (
      <div class="banner error" role="alert">
        {state.error}
      </div>
    );
  }
  return null;
}

export function App({ controller }: { controller: ConsoleController }): JSX.Element {
  const [state, setState] = useState(controller.state);
  useEffect(() => controller.onChange(setState), [controller]);
  // The tab's title counts the cards waiting for an answer, so a waiting task shows from another tab.
  const waiting = state.view.cards.filter((c) => c.waiting).length;
  useEffect(() => {
    document.title = waiting > 0 ? `(${waiting}) waiting · devtool-a2a` : 'devtool-a2a console';
  }, [waiting]);
  if (state.needCredential) return <Login controller={controller} />;
  const { view } = state;
  const busy = view.connection === 'live' && !view.final;
  const canCancel = view.taskId !== '' && !['completed', 'failed', 'canceled', 'rejected'].includes(view.state);
  return (
    <div class="layout">
      <Sidebar
        tasks={state.tasks}
        selected={view.taskId}
        select={(id) => controller.select(id)}
        newConversation={() => controller.newConversation()}
      />
      <main class="main">
        <Banner state={state} />
        <div class="task-head">
          <span class="grow" data-state={view.state}>
            {view.taskId === '' ? 'New task' : `Task ${view.taskId} · ${view.state}`}
            {view.model ? ` · ${view.model}` : ''}
          </span>
          {canCancel && (
            <button disabled={!state.serverUp} onClick={() => controller.cancelTask()}>
              Cancel task
            </button>
          )}
        </div>
        <ServerDown.Provider value={!state.serverUp}>
          <Answerable.Provider value={view.state === 'input-required' || view.state === 'auth-required'}>
            <Undo.Provider value={(card) => controller.undo(card)}>
              <Transcript view={view} answer={(card, option, opts) => controller.answer(card, option, opts)} />
            </Undo.Provider>
          </Answerable.Provider>
        </ServerDown.Provider>
        <Composer
          fresh={view.taskId === ''}
          busy={busy}
          offline={!state.serverUp}
          send={(text, workspace) => controller.send(text, workspace)}
        />
      </main>
    </div>
  );
}
