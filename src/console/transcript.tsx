/**
 * The conversation of one task, in order: the person's prompts and answers, the agent's text
 * (Markdown, rendered safely), its thoughts (collapsed), and its tool-call cards.
 */
import type { JSX } from 'preact';
import { useEffect, useMemo, useRef } from 'preact/hooks';
import type { TaskView, TranscriptEntry } from '../client/index.js';
import { Card } from './card.js';
import type { Answer } from './card.js';
import { renderMarkdown } from './markdown.js';

function Markdown({ text }: { text: string }): JSX.Element {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return <div class="md" dangerouslySetInnerHTML={{ __html: html }} />;
}

const ANSWERED: Record<string, string> = {
  proceed_once: 'Approved once',
  proceed_always: 'Approved always',
  proceed_always_tool: 'Approved this tool always',
  proceed_always_server: 'Approved this server always',
  modify_with_editor: 'Approved my edited version',
  cancel: 'Declined',
};

function Entry({ entry, view, answer }: { entry: TranscriptEntry; view: TaskView; answer: Answer }): JSX.Element | null {
  if (entry.role === 'user' && entry.kind === 'text') return <div class="msg user">{entry.text}</div>;
  if (entry.role === 'user' && entry.kind === 'answer') {
    return (
      <div class="msg user">
        {ANSWERED[entry.optionId] ?? entry.optionId}
        {entry.feedback ? `: ${entry.feedback}` : ''}
      </div>
    );
  }
  if (entry.role === 'agent' && entry.kind === 'text') {
    return (
      <div class="msg agent">
        <Markdown text={entry.text} />
      </div>
    );
  }
  if (entry.role === 'agent' && entry.kind === 'thought') {
    return (
      <details class="thought">
        <summary>{entry.subject || 'Thinking'}</summary>
        {entry.description}
      </details>
    );
  }
  if (entry.role === 'agent' && entry.kind === 'card') {
    const card = view.cards.find((c) => c.id === entry.cardId);
    const firstWaiting = view.cards.find((c) => c.waiting)?.id === entry.cardId;
    return card ? <Card card={card} answer={answer} autoFocus={firstWaiting} /> : null;
  }
  return null;
}

function StateNote({ view }: { view: TaskView }): JSX.Element | null {
  if (view.state === 'failed') return <div class="state-note failed">Task failed: {view.error ?? view.statusMessage ?? ''}</div>;
  if (view.state === 'canceled') return <div class="state-note">Task canceled.</div>;
  if (view.state === 'auth-required') return <div class="state-note failed">{view.statusMessage ?? 'Approving needs another role.'}</div>;
  if (view.state === 'working' || view.state === 'submitted') return <div class="state-note">Working…</div>;
  return null;
}

export function Transcript({ view, answer }: { view: TaskView; answer: Answer }): JSX.Element {
  const ref = useRef<HTMLDivElement>(null);
  const pinned = useRef(true);
  useEffect(() => {
    const el = ref.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  }, [view]);
  const onScroll = () => {
    const el = ref.current;
    if (el) pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 40;
  };
  if (view.taskId === '' && view.transcript.length === 0) {
    return (
      <div class="transcript">
        <div class="empty">
          Ask the agent for something below. Calls that change files or run commands wait for your approval as cards here:
          <br />
          <kbd>Enter</kbd> sends, <kbd>Shift</kbd>+<kbd>Enter</kbd> starts a new line; on a focused card <kbd>a</kbd> approves once and{' '}
          <kbd>d</kbd> declines.
        </div>
      </div>
    );
  }
  return (
    <div class="transcript" ref={ref} onScroll={onScroll} aria-live="polite">
      {view.transcript.map((entry, i) => (
        <Entry key={entry.role === 'agent' && entry.kind === 'card' ? entry.cardId : i} entry={entry} view={view} answer={answer} />
      ))}
      <StateNote view={view} />
    </div>
  );
}
