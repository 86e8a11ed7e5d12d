/**
 * `devtool-a2a chat`: a conversation with the agent from a terminal or a pipe. Prompts are read
 * line by line; at a pause every waiting card is asked about once; Ctrl-C detaches without
 * cancelling (the task keeps its state, `--resume TASK_ID` comes back to it).
 */
import { parseArgs } from 'node:util';
import { A2AClientError, A2AConnection, DEVTOOL_EXTENSION_URI, TaskSession, TERMINAL_STATES } from '../client/index.js';
import type { SendOptions, TaskView } from '../client/index.js';
import { askCard } from './ask.js';
import type { AskContext } from './ask.js';
import { LineSource } from './lines.js';
import { makeStyle, Renderer } from './render.js';

export const DEFAULT_URL = 'http://127.0.0.1:41242/';

export const USAGE = `Usage: devtool-a2a chat [URL] [--resume TASK_ID] [--context ID] [--workspace PATH] [--api-key KEY | --token TOKEN]

Talks to a devtool-a2a server (default ${DEFAULT_URL}). Type a prompt per line; when a tool call
waits for approval, answer y (once), a (always), e (edit the proposed content) or n (no, then a
note for the model). "/restore <checkpoint>" puts back the file of a checkpointed edit (the name its
card shows, or its id; it asks like any edit), "/restore list" lists the checkpoints. Ctrl-C detaches
without cancelling the task; --resume TASK_ID comes back to it.
Over a pipe the output is plain text: printf 'write a file\\ny\\n' | devtool-a2a chat URL
`;

export interface ChatArgs {
  url: string;
  resume?: string;
  context?: string;
  workspace?: string;
  apiKey?: string;
  token?: string;
}

/** What the chat needs from its process: the streams, whether they are terminals, the editor, Ctrl-C. */
export interface ChatIo {
  input: NodeJS.ReadableStream;
  write: (s: string) => void;
  error: (s: string) => void;
  /** Colours (stdout is a terminal and NO_COLOR is unset). */
  color: boolean;
  /** The input is a terminal (the user's lines are on the screen already, $EDITOR can run). */
  terminal: boolean;
  editor?: string;
  /** Registers the Ctrl-C handler; returns its removal. */
  onInterrupt: (handler: () => void) => () => void;
  fetch?: typeof fetch;
}

/** The arguments after the program name; a string is a usage error (or the help text). */
export function parseChatArgs(argv: string[]): ChatArgs | { message: string; exitCode: number } {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        resume: { type: 'string' },
        context: { type: 'string' },
        workspace: { type: 'string' },
        'api-key': { type: 'string' },
        token: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
    });
  } catch (err) {
    return { message: `${(err as Error).message}\n\n${USAGE}`, exitCode: 2 };
  }
  const { values, positionals } = parsed;
  if (values.help === true) return { message: USAGE, exitCode: 0 };
  const [command, url, ...rest] = positionals;
  if (command !== 'chat' || rest.length > 0) return { message: USAGE, exitCode: 2 };
  if (values['api-key'] !== undefined && values.token !== undefined)
    return { message: `Give --api-key or --token, not both.\n\n${USAGE}`, exitCode: 2 };
  return {
    url: url ?? DEFAULT_URL,
    ...(values.resume !== undefined ? { resume: values.resume } : {}),
    ...(values.context !== undefined ? { context: values.context } : {}),
    ...(values.workspace !== undefined ? { workspace: values.workspace } : {}),
    ...(values['api-key'] !== undefined ? { apiKey: values['api-key'] } : {}),
    ...(values.token !== undefined ? { token: values.token } : {}),
  };
}

function waitingCard(view: TaskView) {
  return view.final ? view.cards.find((c) => c.waiting) : undefined;
}

function describe(err: unknown): string {
  if (err instanceof A2AClientError) return `${err.message} (${err.code})`;
  return (err as Error).message;
}

/** Runs one chat; resolves with the process's exit code. */
export async function runChat(args: ChatArgs, io: ChatIo): Promise<number> {
  const style = makeStyle(io.color);
  const connection = new A2AConnection({
    baseUrl: args.url,
    ...(args.apiKey !== undefined ? { apiKey: args.apiKey } : {}),
    ...(args.token !== undefined ? { bearerToken: args.token } : {}),
    ...(io.fetch !== undefined ? { fetch: io.fetch } : {}),
  });
  const session = new TaskSession(connection);
  const renderer = new Renderer(io.write, style, !io.terminal);
  session.onChange((view) => renderer.update(view));
  const lines = new LineSource(io.input);
  const ask: AskContext = { lines, renderer, style, terminal: io.terminal, ...(io.editor !== undefined ? { editor: io.editor } : {}) };
  let interrupted = false;
  const off = io.onInterrupt(() => {
    interrupted = true;
    session.detach();
    lines.close();
  });
  let code: number;
  try {
    code = await converse(args, session, renderer, ask, () => interrupted);
  } finally {
    off();
    session.detach();
    lines.close();
  }
  const view = session.view;
  if (interrupted) renderer.line('Detached; the task was not cancelled.');
  if (view.taskId !== '' && !TERMINAL_STATES.has(view.state)) {
    renderer.line(`The task goes on (${view.state}). To come back to it: devtool-a2a chat ${args.url} --resume ${view.taskId}`);
  }
  return interrupted ? 130 : code;
}

/** The loop: answer waiting cards, else read and send a prompt; until the input ends. */
async function converse(
  args: ChatArgs,
  session: TaskSession,
  renderer: Renderer,
  ask: AskContext,
  interrupted: () => boolean,
): Promise<number> {
  if (args.resume !== undefined) {
    renderer.echoUser = true; // the replay redraws the whole conversation
    const attached = await attempt(renderer, () => session.attach(args.resume as string));
    renderer.echoUser = !ask.terminal;
    if (!attached) return 1;
  }
  let first = args.resume === undefined;
  while (!interrupted()) {
    const card = waitingCard(session.view);
    if (card !== undefined) {
      const answer = await askCard(card, ask);
      if (answer === undefined || interrupted()) return 0;
      await attempt(renderer, () => session.answer(card.id, answer.optionId, answer));
      continue;
    }
    if (ask.terminal) renderer.line('>');
    const line = await ask.lines.next();
    if (line === undefined || interrupted()) return 0;
    if (line.trim() === '') continue;
    const restore = /^\/restore(?:\s+(.*))?$/.exec(line.trim());
    if (restore !== null) {
      // A restore's card (with its diff) is asked about at the top of the loop, like any card.
      const key = (restore[1] ?? '').trim();
      await attempt(renderer, () => (key === 'list' ? session.command(['restore', 'list']) : session.restore(key)));
      continue;
    }
    const opts: SendOptions = {};
    if (first && args.context !== undefined) opts.contextId = args.context;
    if (first && args.workspace !== undefined) opts.metadata = { [DEVTOOL_EXTENSION_URI]: { workspace_path: args.workspace } };
    if (await attempt(renderer, () => session.send(line, opts))) first = false;
  }
  return 0;
}

/** Runs a session call; a server's refusal or a lost connection is printed, and the chat goes on. */
async function attempt(renderer: Renderer, call: () => Promise<unknown>): Promise<boolean> {
  try {
    await call();
    return true;
  } catch (err) {
    renderer.line(`error: ${describe(err)}`);
    return false;
  }
}

/** The command line after the program name: usage errors, help, or the chat. */
export async function main(argv: string[], io: ChatIo): Promise<number> {
  const args = parseChatArgs(argv);
  if ('message' in args) {
    (args.exitCode === 0 ? io.write : io.error)(args.message);
    return args.exitCode;
  }
  return runChat(args, io);
}
