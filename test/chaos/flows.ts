/**
 * The clients of the chaos suites: a mix of development-tool flows played against real server
 * processes, each recording every SSE event it saw (what the consistency checker compares with
 * the replay after the crash). A flow never throws: a stream cut by a kill ends its record there.
 *
 * Each flow has a workspace of its own, so what a shell command did (a line appended to
 * `ran.log`) belongs to exactly one task.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { ModelScript } from '../../src/agent/model/scripted-model-client.js';
import { TEST_SCRIPT } from '../fixtures/test-script.js';
import { openStream } from '../support/process.js';
import { confirmMessage, dataOf, tempDir, URI, userMessage } from '../support/server.js';

const call = (name: string, args: Record<string, unknown>) => ({ functionCall: { name, args } });

/**
 * The shell command of the `chaos shell` flow: one `start` line when it begins (the observable
 * side effect), live output for a while (a call's EXECUTING cards, which compaction supersedes),
 * one `end` line when it finishes.
 */
/** The suites' load: rounds (1 in `npm test`, 10 with CHAOS_LONG=1 or CHAOS_ROUNDS), flows per round, a short lease. */
export const ROUNDS = Number(process.env.CHAOS_ROUNDS ?? (process.env.CHAOS_LONG === '1' ? 10 : 1));
export const FLOWS = 30;
export const LEASE_MS = 1500;
/** The clients start this far apart, so the load ramps up and the kill finds flows at every step. */
export const STAGGER_MS = 20;
/** A client thinks up to this long before it answers a pause: a kill finds some tasks paused. */
export const THINK_MS = 1500;
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export const SHELL_COMMAND = 'echo "start $$" >> ran.log; for i in 1 2 3 4; do echo tick$i; sleep 0.1; done; echo "end $$" >> ran.log';

/** TEST_SCRIPT (write, read, mixed…) plus the observable shell command. */
export const CHAOS_SCRIPT: ModelScript = {
  ...TEST_SCRIPT,
  scripts: [
    {
      when: '^chaos shell',
      steps: [{ chunks: [[call('run_shell_command', { command: SHELL_COMMAND })]] }, { chunks: [[{ text: 'Ran.' }]] }],
    },
    ...TEST_SCRIPT.scripts,
  ],
};

/** What a flow does: confirm a write, confirm a shell command, auto-run a read, decline a write, a mixed turn. */
export type FlowKind = 'write' | 'shell' | 'read' | 'decline' | 'mixed';

/** The mix of 10 flows that a load repeats (confirm flows dominate: they are what a crash can break). */
export const FLOW_MIX: FlowKind[] = ['shell', 'write', 'shell', 'read', 'decline', 'shell', 'mixed', 'write', 'shell', 'read'];

const PROMPTS: Record<FlowKind, string> = {
  write: 'write a greeting',
  shell: 'chaos shell',
  read: 'read the seed',
  decline: 'write something I will decline',
  mixed: 'mixed turn',
};

/** One SSE event as a client saw it: its id (the task's sequence number; undefined on a snapshot) and its result. */
export interface SeenEvent {
  id?: number;
  result: any;
}

/** Everything one client saw and did. */
export interface FlowRecord {
  n: number;
  kind: FlowKind;
  workspace: string;
  taskId?: string;
  contextId?: string;
  /** Every stream the client read, in order, each as far as it got. */
  streams: SeenEvent[][];
  /** The answers it sent (call id → option), whether or not their stream got through. */
  answers: Map<string, string>;
  /** How the flow ended: 'done' (terminal state seen), 'paused', or the error that cut it. */
  outcome: string;
  /** How long the client thinks before answering a pause, ms (so a kill finds tasks paused too). */
  thinkMs: number;
}

export function newFlow(n: number, kind: FlowKind, thinkMs = 0): FlowRecord {
  const workspace = tempDir('devtool-chaos-');
  writeFileSync(path.join(workspace, 'seed.txt'), 'hi\n');
  mkdirSync(path.join(workspace, 'sub'), { recursive: true });
  return { n, kind, workspace, streams: [], answers: new Map(), outcome: 'not started', thinkMs };
}

const TERMINAL = new Set(['completed', 'failed', 'canceled', 'rejected']);

export const stateOf = (r: any): string | undefined => (r?.kind === 'status-update' || r?.kind === 'task' ? r.status?.state : undefined);

/** Posts one JSON-RPC streaming request and reads it to its end, recording every event as it arrives (a cut stream keeps what it got). */
export async function readStream(flow: FlowRecord, url: string, method: string, params: unknown, headers?: Record<string, string>) {
  const seen: SeenEvent[] = [];
  flow.streams.push(seen);
  const stream = await openStream(url, method, params, { headers });
  if (stream.json !== undefined) {
    flow.streams.pop();
    return { seen, error: stream.json?.error as { code: number; message: string } | undefined };
  }
  await stream.until((ev) => {
    const result = ev.data.result ?? { error: ev.data.error };
    seen.push({ id: ev.id === undefined ? undefined : Number(ev.id), result });
    if (result.kind === 'task' && flow.taskId === undefined) [flow.taskId, flow.contextId] = [result.id, result.contextId];
    return false;
  }, 30_000);
  return { seen, error: undefined };
}

/** The cards still waiting at the end of `events` (PENDING, with no later card of the same call). */
export function waitingCards(events: SeenEvent[]): any[] {
  const last = new Map<string, any>();
  for (const { result } of events) {
    const card = dataOf(result);
    if (card?.tool_call_id !== undefined && card.status !== undefined) last.set(card.tool_call_id, card);
  }
  return [...last.values()].filter((c) => c.status === 'PENDING');
}

/** The id of the last event this client saw of its task (0: none). */
export const lastSeenId = (flow: FlowRecord): number => Math.max(0, ...flow.streams.flatMap((s) => s.map((e) => e.id ?? 0)));

/**
 * Plays one flow on `urlOf()` (read again before each request, so a two-instance client can
 * move to the survivor): the prompt — or, with `resume`, a resubscribe from the last event it
 * saw — then answers to every pause (decline flows answer `cancel`) until the task ends. Stops
 * at the first cut stream or refusal; the record says where.
 */
export async function playFlow(flow: FlowRecord, urlOf: () => string, resume = false): Promise<void> {
  try {
    const metadata = { [URI]: { workspace_path: flow.workspace } };
    let { seen } =
      resume && flow.taskId !== undefined
        ? await readStream(flow, urlOf(), 'tasks/resubscribe', { id: flow.taskId }, { 'Last-Event-ID': String(lastSeenId(flow)) })
        : await readStream(flow, urlOf(), 'message/stream', { message: userMessage(PROMPTS[flow.kind], { metadata }) });
    for (let pauses = 0; pauses < 4; pauses++) {
      const state = stateOf(seen.at(-1)?.result);
      if (state !== undefined && TERMINAL.has(state)) {
        flow.outcome = 'done';
        return;
      }
      if (state !== 'input-required' || flow.taskId === undefined || flow.contextId === undefined) {
        flow.outcome = `stream cut (last state ${state ?? 'none'})`;
        return;
      }
      await new Promise((r) => setTimeout(r, flow.thinkMs));
      const option = flow.kind === 'decline' ? 'cancel' : 'proceed_once';
      const cards = waitingCards(seen);
      for (const c of cards) flow.answers.set(c.tool_call_id, option);
      const answer = confirmMessage(
        flow.taskId,
        flow.contextId,
        ...cards.map((c) => ({ tool_call_id: c.tool_call_id, selected_option_id: option })),
      );
      const res = await readStream(flow, urlOf(), 'message/stream', { message: answer });
      if (res.error) {
        flow.outcome = `answer refused ${res.error.code}: ${res.error.message}`;
        return;
      }
      seen = res.seen;
    }
    flow.outcome = 'paused';
  } catch (err) {
    flow.outcome = `cut: ${(err as Error).message.slice(0, 120)}`;
  }
}
