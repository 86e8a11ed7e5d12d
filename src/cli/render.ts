/**
 * Prints a TaskView as it grows: streamed text as it comes, thoughts, one compact block per
 * tool call with each status change, a unified diff for edits, live shell output. Colours only
 * when the output is a terminal and NO_COLOR is unset; otherwise plain text that scripts can read.
 */
import type { FileDiffView, TaskView, ToolCardView, TranscriptEntry } from '../client/index.js';

export interface Style {
  dim(s: string): string;
  bold(s: string): string;
  red(s: string): string;
  green(s: string): string;
  yellow(s: string): string;
  cyan(s: string): string;
}

const ansi = (code: string) => (s: string) => `\u001b[${code}m${s}\u001b[0m`;
const plain = (s: string) => s;

export function makeStyle(color: boolean): Style {
  if (!color) return { dim: plain, bold: plain, red: plain, green: plain, yellow: plain, cyan: plain };
  return { dim: ansi('2'), bold: ansi('1'), red: ansi('31'), green: ansi('32'), yellow: ansi('33'), cyan: ansi('36') };
}

const RESULT_LINES = 12;

interface CardState {
  statuses: number;
  live: number;
  shown: boolean;
  result: boolean;
}

/** The lines of a unified diff, coloured: additions green, removals red, hunks cyan. */
export function formatDiff(diff: FileDiffView, style: Style): string {
  if (diff.unified.trim() === '') return style.dim('    (no change)\n');
  const lines = diff.unified.replace(/\n$/, '').split('\n');
  return lines
    .map((line) => {
      if (line.startsWith('+++') || line.startsWith('---')) return style.bold(line);
      if (line.startsWith('+')) return style.green(line);
      if (line.startsWith('-')) return style.red(line);
      if (line.startsWith('@@')) return style.cyan(line);
      return line;
    })
    .map((line) => `    ${line}\n`)
    .join('');
}

function clip(text: string): string {
  const lines = text.replace(/\n$/, '').split('\n');
  const shown = lines.slice(0, RESULT_LINES).map((l) => `    ${l}\n`);
  return lines.length > RESULT_LINES ? `${shown.join('')}    … (${lines.length - RESULT_LINES} more lines)\n` : shown.join('');
}

function argsLine(card: ToolCardView): string {
  const parts = Object.entries(card.args).map(([k, v]) => {
    const value = typeof v === 'string' ? v : JSON.stringify(v);
    const short = value.length > 60 ? `${value.slice(0, 57)}…` : value;
    return `${k}=${JSON.stringify(short)}`;
  });
  return parts.join(' ');
}

export class Renderer {
  private taskId = '';
  private entries = 0;
  private textLength = 0;
  private atLineStart = true;
  private cards = new Map<string, CardState>();
  private state = '';
  private connection = 'closed';

  constructor(
    private readonly write: (s: string) => void,
    private readonly style: Style,
    /** Print the user's own messages (the input is not a terminal that shows them, or they are replayed). */
    public echoUser: boolean,
  ) {}

  private print(s: string): void {
    if (s === '') return;
    this.write(s);
    this.atLineStart = s.endsWith('\n');
  }

  /** Starts a line of its own (after streamed text that did not end one). */
  line(s: string): void {
    if (!this.atLineStart) this.print('\n');
    this.print(`${s}\n`);
  }

  update(view: TaskView): void {
    // A view built from a snapshot alone is redrawn by the replay that follows it (attach).
    if (view.lastEventId === undefined) return;
    if (view.taskId !== this.taskId && view.taskId !== '') this.startTask(view);
    this.transcript(view.transcript);
    for (const card of view.cards) this.card(card);
    this.status(view);
  }

  private startTask(view: TaskView): void {
    this.taskId = view.taskId;
    this.entries = 0;
    this.textLength = 0;
    this.cards = new Map();
    this.state = '';
    this.line(this.style.dim(`[task ${view.taskId} in context ${view.contextId}]`));
  }

  private transcript(transcript: TranscriptEntry[]): void {
    for (let i = Math.max(0, this.entries - 1); i < transcript.length; i++) {
      const entry = transcript[i] as TranscriptEntry;
      if (i < this.entries) {
        // Only the last text entry grows.
        if (entry.role === 'agent' && entry.kind === 'text') this.print(entry.text.slice(this.textLength));
      } else {
        this.entry(entry);
      }
      if (entry.role === 'agent' && entry.kind === 'text') this.textLength = entry.text.length;
    }
    this.entries = transcript.length;
  }

  private entry(entry: TranscriptEntry): void {
    if (entry.role === 'user') {
      if (!this.echoUser) return;
      if (entry.kind === 'text') this.line(this.style.bold(`> ${entry.text}`));
      else this.line(this.style.dim(`> answer ${entry.optionId}${entry.feedback !== undefined ? `: ${entry.feedback}` : ''}`));
      return;
    }
    if (entry.kind === 'text') return this.print(entry.text);
    if (entry.kind === 'thought') return this.line(this.style.dim(`(thinking) ${entry.subject}: ${entry.description}`));
    return undefined; // cards print from the cards pass
  }

  private card(card: ToolCardView): void {
    let seen = this.cards.get(card.id);
    if (seen === undefined) {
      seen = { statuses: 0, live: 0, shown: false, result: false };
      this.cards.set(card.id, seen);
      const mcp = card.mcp !== undefined ? ` (${card.mcp.server}/${card.mcp.tool})` : '';
      const title = card.description ?? argsLine(card);
      this.line(`${this.style.bold(`* ${card.toolName}`)}${mcp} ${title} ${this.style.dim(`[${card.id}]`)}`);
    }
    for (; seen.statuses < card.history.length; seen.statuses++) {
      this.line(`  ${card.toolName} ${this.statusText(card.history[seen.statuses]?.status ?? card.status)}`);
    }
    if (card.waiting && !seen.shown) {
      seen.shown = true;
      if (card.diff !== undefined) this.print(formatDiff(card.diff, this.style));
      if (card.command !== undefined) this.line(`    $ ${card.command}`);
    }
    this.liveOutput(card, seen);
    this.outcome(card, seen);
  }

  private statusText(status: string): string {
    if (status === 'SUCCEEDED') return this.style.green(status);
    if (status === 'FAILED') return this.style.red(status);
    if (status === 'PENDING') return this.style.yellow(status);
    return this.style.cyan(status);
  }

  private liveOutput(card: ToolCardView, seen: CardState): void {
    const live = card.liveOutput ?? '';
    if (live.length <= seen.live) return;
    const fresh = live.slice(seen.live);
    seen.live = live.length;
    const lines = fresh.replace(/\n$/, '').split('\n');
    for (const l of lines) this.line(`    | ${l}`);
  }

  private outcome(card: ToolCardView, seen: CardState): void {
    if (seen.result) return;
    if (card.status === 'FAILED') {
      seen.result = true;
      this.line(this.style.red(`    ! ${card.failureReason ?? 'failed'}`));
    } else if (card.status === 'SUCCEEDED') {
      seen.result = true;
      const text = card.result?.text;
      if (card.result?.diff !== undefined && !seen.shown) this.print(formatDiff(card.result.diff, this.style));
      else if (text !== undefined && text !== '' && seen.live === 0) this.print(clip(text));
      if (card.checkpoint !== undefined) this.line(this.style.dim(`    checkpoint ${card.checkpoint} (undo: /restore ${card.checkpoint})`));
    } else if (card.status === 'CANCELLED') {
      seen.result = true;
    }
  }

  private status(view: TaskView): void {
    if (view.connection !== this.connection) {
      if (view.connection === 'reconnecting') this.line(this.style.yellow('[connection lost; reconnecting…]'));
      else if (this.connection === 'reconnecting' && view.connection === 'live') this.line(this.style.green('[reconnected]'));
      this.connection = view.connection;
    }
    if (view.state === this.state) return;
    this.state = view.state;
    if (view.state === 'completed') this.line(this.style.green('[completed]'));
    else if (view.state === 'failed') this.line(this.style.red(`[failed] ${view.error ?? ''}`.trim()));
    else if (view.state === 'canceled' || view.state === 'rejected') this.line(this.style.yellow(`[${view.state}]`));
    else if (view.state === 'auth-required') this.line(this.style.yellow(`[auth-required] ${view.statusMessage ?? ''}`.trim()));
  }
}
