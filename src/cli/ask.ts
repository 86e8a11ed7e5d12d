/**
 * The question asked once per waiting card: `[y]es once, [a]lways, [e]dit, [n]o + feedback`
 * (only the letters of the options the card offers), then the edited content or the feedback.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ToolCardView } from '../client/index.js';
import type { LineSource } from './lines.js';
import type { Renderer, Style } from './render.js';

export interface CardAnswer {
  optionId: string;
  newContent?: string;
  feedback?: string;
}

export interface AskContext {
  lines: LineSource;
  renderer: Renderer;
  style: Style;
  /** The editor to run on a terminal ($VISUAL or $EDITOR); without one, or without a terminal, the content is read from the input. */
  editor?: string;
  terminal: boolean;
}

interface Choice {
  key: string;
  label: string;
  optionId: string;
}

/** The letters the card's options get: y once, a always (the first "always" option), e edit, n no. */
export function choicesFor(card: ToolCardView): Choice[] {
  const ids = card.options.map((o) => o.id);
  const choices: Choice[] = [];
  if (ids.includes('proceed_once')) choices.push({ key: 'y', label: '[y]es once', optionId: 'proceed_once' });
  const always = ids.find((id) => id.startsWith('proceed_always'));
  if (always !== undefined) choices.push({ key: 'a', label: '[a]lways', optionId: always });
  if (ids.includes('modify_with_editor')) choices.push({ key: 'e', label: '[e]dit', optionId: 'modify_with_editor' });
  if (ids.includes('cancel')) choices.push({ key: 'n', label: '[n]o + feedback', optionId: 'cancel' });
  return choices;
}

const WORDS: Record<string, string> = { yes: 'y', always: 'a', edit: 'e', no: 'n' };

/** Asks about one waiting card; undefined when the input ended first. */
export async function askCard(card: ToolCardView, ctx: AskContext): Promise<CardAnswer | undefined> {
  const choices = choicesFor(card);
  const question = `Allow ${card.toolName}${card.description !== undefined ? ` (${card.description})` : ''}? ${choices.map((c) => c.label).join(', ')}: `;
  for (;;) {
    ctx.renderer.line(ctx.style.yellow(question));
    const raw = await ctx.lines.next();
    if (raw === undefined) return undefined;
    const word = raw.trim().toLowerCase();
    const key = WORDS[word] ?? word;
    const choice = choices.find((c) => c.key === key);
    if (choice === undefined) {
      ctx.renderer.line(`Answer one of: ${choices.map((c) => c.key).join(', ')}`);
      continue;
    }
    if (choice.key === 'n') {
      ctx.renderer.line('Feedback for the model (an empty line for none):');
      const feedback = (await ctx.lines.next())?.trim();
      return { optionId: choice.optionId, ...(feedback ? { feedback } : {}) };
    }
    if (choice.key === 'e') {
      const newContent = await editContent(card, ctx);
      if (newContent === undefined) return undefined;
      return { optionId: choice.optionId, newContent };
    }
    return { optionId: choice.optionId };
  }
}

/** The edited content: $EDITOR on a temp file holding the proposal (on a terminal), else lines up to a line `.`. */
async function editContent(card: ToolCardView, ctx: AskContext): Promise<string | undefined> {
  const proposal = card.diff?.newContent ?? (typeof card.args.content === 'string' ? card.args.content : '');
  if (ctx.terminal && ctx.editor !== undefined && ctx.editor !== '') return runEditor(ctx, proposal, card.diff?.path);
  ctx.renderer.line(`Enter the new content${card.diff?.path !== undefined ? ` of ${card.diff.path}` : ''}, then a line with a single ".":`);
  const lines: string[] = [];
  for (;;) {
    const line = await ctx.lines.next();
    if (line === undefined) return undefined;
    if (line === '.') return lines.map((l) => `${l}\n`).join('');
    lines.push(line);
  }
}

function runEditor(ctx: AskContext, proposal: string, filePath: string | undefined): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'devtool-a2a-edit-'));
  const file = path.join(dir, path.basename(filePath ?? 'proposal.txt'));
  try {
    writeFileSync(file, proposal);
    ctx.lines.pause();
    // The editor may carry arguments ("code --wait"): the shell splits them.
    spawnSync(`${ctx.editor} "${file}"`, { stdio: 'inherit', shell: true });
    return readFileSync(file, 'utf8');
  } finally {
    ctx.lines.resume();
    rmSync(dir, { recursive: true, force: true });
  }
}
