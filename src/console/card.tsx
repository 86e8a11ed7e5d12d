/**
 * One tool call as a live card: a status chip (PENDING → EXECUTING → SUCCEEDED / FAILED /
 * CANCELLED) with the statuses it went through, what it does (the command, the diff, the MCP
 * server and tool, or its arguments), its live output, its result or why it failed; while it
 * waits, a button per offered option, an editor for `modify_with_editor` and a feedback field;
 * once an edit with a checkpoint succeeded, Undo (a restore of it, which asks with its own card).
 * Keyboard, on a focused card: `a` approves once, `d` declines (with the feedback typed).
 */
import { createContext } from 'preact';
import type { JSX } from 'preact';
import { useContext, useEffect, useRef, useState } from 'preact/hooks';
import type { AnswerOptions, CardOption, ToolCardView } from '../client/index.js';
import { AnsiText } from './ansi.js';
import { DiffView } from './diff.js';

export type Answer = (cardId: string, optionId: string, opts: AnswerOptions) => void;

const SHELL = new Set(['run_shell_command']);

/** True while the server does not answer: a card's answer could not reach it, so it is not offered. */
export const ServerDown = createContext(false);

/**
 * True once the task paused (input-required, auth-required): the server takes answers only then.
 * A card is PENDING as soon as the model proposes it, while the model may still be answering; its
 * options appear with the pause, which the server has committed before sending it.
 */
export const Answerable = createContext(false);

/** Restores a succeeded edit's checkpoint (the Undo action); absent: no Undo is offered. */
export const Undo = createContext<((card: ToolCardView) => void) | undefined>(undefined);

/** A succeeded call whose checkpoint can be restored: its Undo button (the restore shows its own card, with the diff). */
function UndoButton({ card }: { card: ToolCardView }): JSX.Element | null {
  const undo = useContext(Undo);
  const down = useContext(ServerDown);
  if (undo === undefined || card.status !== 'SUCCEEDED' || card.checkpoint === undefined) return null;
  return (
    <div class="options">
      <button data-undo={card.checkpoint} disabled={down} title={`Restore checkpoint ${card.checkpoint}`} onClick={() => undo(card)}>
        Undo
      </button>
    </div>
  );
}

/** The option `a` picks: run it once (or the first that is not a decline). */
export function approveOption(options: CardOption[]): CardOption | undefined {
  return options.find((o) => o.id === 'proceed_once') ?? options.find((o) => o.id !== 'cancel' && o.id !== 'modify_with_editor');
}

/** A `<pre>` that stays scrolled to its end while its text grows, unless the reader scrolled up. */
function Terminal({ text }: { text: string }): JSX.Element {
  const ref = useRef<HTMLPreElement>(null);
  const pinned = useRef(true);
  useEffect(() => {
    const el = ref.current;
    if (el && pinned.current) el.scrollTop = el.scrollHeight;
  }, [text]);
  const onScroll = () => {
    const el = ref.current;
    if (el) pinned.current = el.scrollHeight - el.scrollTop - el.clientHeight < 24;
  };
  return (
    <pre class="terminal" ref={ref} onScroll={onScroll}>
      <AnsiText text={text} />
    </pre>
  );
}

/** A read's result: shown when short, folded (with its line count) when long. */
function Output({ text }: { text: string }): JSX.Element {
  const lines = text.split('\n').length;
  if (lines <= 8) return <pre class="output">{text}</pre>;
  return (
    <details>
      <summary class="hint">output ({lines} lines)</summary>
      <pre class="output">{text}</pre>
    </details>
  );
}

function CardHead({ card }: { card: ToolCardView }): JSX.Element {
  const name = card.mcp ? `${card.mcp.server} › ${card.mcp.tool}` : card.toolName;
  return (
    <div class="card-head">
      <span class={`chip ${card.status}`}>{card.status}</span>
      <span class="tool">{name}</span>
      <span class="desc">{card.description ?? ''}</span>
      {card.history.length > 1 && <span class="history">{card.history.map((h) => h.status).join(' → ')}</span>}
    </div>
  );
}

function Details({ card }: { card: ToolCardView }): JSX.Element {
  const diff = card.result?.diff ?? card.diff;
  const shell = SHELL.has(card.toolName) || card.command !== undefined;
  const output = card.status === 'EXECUTING' ? card.liveOutput : (card.result?.text ?? card.liveOutput);
  return (
    <>
      {card.mcp && (
        <div class="hint">
          MCP server <b>{card.mcp.server}</b>, tool <b>{card.mcp.tool}</b>
        </div>
      )}
      {card.command !== undefined && <div class="command mono">$ {card.command}</div>}
      {diff && (
        <DiffView
          fileName={diff.path ?? (typeof card.args.file_path === 'string' ? card.args.file_path : '')}
          diff={diff.unified}
          newContent={diff.newContent}
        />
      )}
      {!diff && card.command === undefined && Object.keys(card.args).length > 0 && (
        <details>
          <summary class="hint">arguments</summary>
          <pre class="args">{JSON.stringify(card.args, null, 2)}</pre>
        </details>
      )}
      {output !== undefined && output !== '' && (shell ? <Terminal text={output} /> : <Output text={output} />)}
      {card.failureReason !== undefined && <div class="failure">{card.failureReason}</div>}
    </>
  );
}

interface AnswerBoxProps {
  card: ToolCardView;
  answer: Answer;
  feedback: string;
  setFeedback: (text: string) => void;
}

function AnswerBox({ card, answer, feedback, setFeedback }: AnswerBoxProps): JSX.Element {
  const [editing, setEditing] = useState<string | undefined>(undefined);
  const down = useContext(ServerDown);
  const note = () => (feedback.trim() !== '' ? { feedback: feedback.trim() } : {});
  const pick = (o: CardOption) => {
    if (o.id === 'modify_with_editor') {
      setEditing(editing ?? card.diff?.newContent ?? '');
      return;
    }
    answer(card.id, o.id, note());
  };
  return (
    <div class="answer">
      {editing !== undefined && (
        <>
          <textarea
            class="editor"
            aria-label="edited content"
            value={editing}
            onInput={(e) => setEditing((e.target as HTMLTextAreaElement).value)}
          />
          <div class="options">
            <button
              class="primary"
              disabled={down}
              onClick={() => answer(card.id, 'modify_with_editor', { newContent: editing, ...note() })}
            >
              Write my version
            </button>
            <button onClick={() => setEditing(undefined)}>Close editor</button>
          </div>
        </>
      )}
      <input
        class="feedback"
        type="text"
        placeholder="Feedback for the model (optional, sent with your answer)"
        aria-label="feedback"
        value={feedback}
        onInput={(e) => setFeedback((e.target as HTMLInputElement).value)}
      />
      <div class="options">
        {card.options.map((o) => (
          <button
            key={o.id}
            class={o.id === 'proceed_once' ? 'primary' : ''}
            title={o.description ?? o.id}
            data-option={o.id}
            disabled={down}
            onClick={() => pick(o)}
          >
            {o.label}
          </button>
        ))}
      </div>
      {down ? (
        <div class="hint">The server does not answer: the card keeps waiting, answer it once the console has reconnected.</div>
      ) : (
        <div class="hint">
          <kbd>a</kbd> approves once, <kbd>d</kbd> declines (with the feedback) while the card has focus.
        </div>
      )}
    </div>
  );
}

export interface CardProps {
  card: ToolCardView;
  answer: Answer;
  /** Take focus when it starts waiting (nothing else has focus). */
  autoFocus: boolean;
}

export function Card({ card, answer, autoFocus }: CardProps): JSX.Element {
  const [feedback, setFeedback] = useState('');
  const down = useContext(ServerDown);
  const answerable = useContext(Answerable);
  const ref = useRef<HTMLElement>(null);
  useEffect(() => {
    if (card.waiting && autoFocus && (document.activeElement === null || document.activeElement === document.body)) ref.current?.focus();
  }, [card.waiting, autoFocus]);
  const onKey = (e: KeyboardEvent) => {
    if (!card.waiting || !answerable || down || e.target !== ref.current || e.ctrlKey || e.metaKey || e.altKey) return;
    const note = feedback.trim() !== '' ? { feedback: feedback.trim() } : {};
    if (e.key === 'a') {
      const option = approveOption(card.options);
      if (option) answer(card.id, option.id, note);
      e.preventDefault();
    } else if (e.key === 'd' && card.options.some((o) => o.id === 'cancel')) {
      answer(card.id, 'cancel', note);
      e.preventDefault();
    }
  };
  return (
    <section
      ref={ref}
      class={`card${card.waiting ? ' waiting' : ''}`}
      tabIndex={0}
      aria-label={`${card.toolName} ${card.status}`}
      data-card={card.id}
      data-status={card.status}
      onKeyDown={onKey}
    >
      <CardHead card={card} />
      <div class="card-body">
        <Details card={card} />
        {card.waiting && card.options.length > 0 && answerable && (
          <AnswerBox card={card} answer={answer} feedback={feedback} setFeedback={setFeedback} />
        )}
        {card.waiting && !answerable && <div class="hint">Proposed. You can answer once the agent has finished its turn and paused.</div>}
        <UndoButton card={card} />
      </div>
    </section>
  );
}
