/**
 * The same client flows in both wire dialects — the development-tool RFC and the legacy
 * `coderAgent` wire of gemini-cli's a2a-server — through one table of adapters: prompt → card →
 * confirm → result, shell with live output, an edit with new content, cancel, two calls answered
 * at once, a thought, a follow-up in the same task, and a refused answer. Only the wire differs.
 */
import t from 'tap';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { FastifyInstance } from 'fastify';
import { rpc } from '../support/sse.js';
import { buildServer, URI } from '../support/server.js';
import { coderAgent, legacyMessage, stream } from '../support/legacy-client.js';

type Status = 'waiting' | 'executing' | 'success' | 'cancelled' | 'error' | 'other';

interface Dialect {
  name: 'rfc' | 'legacy';
  /** The first message's metadata that picks the dialect. */
  marker(workspace: string): Record<string, unknown>;
  /** The tool calls an event carries: id and a status common to both dialects. */
  call(result: any): { id: string; status: Status } | undefined;
  /** One answer's DataPart. */
  answer(id: string, option: 'proceed_once' | 'cancel', newContent?: string): Record<string, unknown>;
  /** Live shell output seen in a stream. */
  liveOutput(results: any[]): string[];
  thought(result: any): { subject: string } | undefined;
  /** The state a finished turn ends in on this wire. */
  turnEnd: string;
}

const firstData = (r: any) => r?.status?.message?.parts?.find((p: any) => p.kind === 'data')?.data;

const DIALECTS: Dialect[] = [
  {
    name: 'rfc',
    marker: (ws) => ({ [URI]: { workspace_path: ws } }),
    call: (r) => {
      const d = firstData(r);
      if (d?.tool_call_id === undefined) return undefined;
      const status: Status =
        d.status === 'PENDING' && d.confirmation_request
          ? 'waiting'
          : (({ EXECUTING: 'executing', SUCCEEDED: 'success', CANCELLED: 'cancelled', FAILED: 'error' } as Record<string, Status>)[
              d.status
            ] ?? 'other');
      return { id: d.tool_call_id, status };
    },
    answer: (id, option, newContent) =>
      newContent === undefined
        ? { tool_call_id: id, selected_option_id: option }
        : { tool_call_id: id, selected_option_id: 'modify_with_editor', file_details: { new_content: newContent } },
    liveOutput: (results) => results.map((r) => firstData(r)?.live_content).filter((x): x is string => typeof x === 'string'),
    thought: (r) => (r?.metadata?.[URI]?.kind === 'THOUGHT' ? firstData(r) : undefined),
    turnEnd: 'completed',
  },
  {
    name: 'legacy',
    marker: (ws) => coderAgent(ws),
    call: (r) => {
      const d = firstData(r);
      if (d?.request?.callId === undefined) return undefined;
      const status: Status =
        (
          { awaiting_approval: 'waiting', executing: 'executing', success: 'success', cancelled: 'cancelled', error: 'error' } as Record<
            string,
            Status
          >
        )[d.status] ?? 'other';
      return { id: d.request.callId, status };
    },
    answer: (id, option, newContent) => ({ callId: id, outcome: option, ...(newContent === undefined ? {} : { newContent }) }),
    liveOutput: (results) => results.filter((r) => r.kind === 'artifact-update').map((r) => r.artifact.parts[0].text as string),
    thought: (r) => (r?.metadata?.coderAgent?.kind === 'thought' ? firstData(r) : undefined),
    turnEnd: 'input-required',
  },
];

function calls(d: Dialect, results: any[], status: Status): string[] {
  return results.flatMap((r) => {
    const c = d.call(r);
    return c && c.status === status ? [c.id] : [];
  });
}

async function begin(app: FastifyInstance, d: Dialect, workspace: string, prompt: string) {
  const first = await stream(app, legacyMessage(prompt, { metadata: d.marker(workspace) }));
  return { first, taskId: first[0].id as string };
}

const reply = (app: FastifyInstance, taskId: string, ...answers: Array<Record<string, unknown>>) =>
  stream(app, legacyMessage(undefined, { taskId, parts: answers.map((data) => ({ kind: 'data', data })) }));

for (const d of DIALECTS) {
  t.test(`${d.name}: the client flows`, async (t) => {
    const { app, workspace } = await buildServer(t);

    await t.test('prompt → card → confirm → result, then a follow-up in the same task', async (t) => {
      const { first, taskId } = await begin(app, d, workspace, 'write hello');
      const [id] = calls(d, first, 'waiting');
      t.ok(id, 'a card waits');
      t.equal(first.at(-1).status.state, 'input-required');
      const second = await reply(app, taskId, d.answer(id, 'proceed_once'));
      t.same(calls(d, second, 'success'), [id], 'it ran');
      t.equal(second.at(-1).status.state, d.turnEnd, `the turn ends ${d.turnEnd}`);
      t.equal(second.at(-1).final, true);
      t.equal(readFileSync(path.join(workspace, 'hello.txt'), 'utf8'), 'hello world\n');
      const third = await stream(app, legacyMessage('hello again', { taskId }));
      t.equal(third.at(-1).status.state, d.turnEnd, 'the follow-up ran in the same task');
    });

    await t.test('shell with live output', async (t) => {
      const { first, taskId } = await begin(app, d, workspace, 'shell slow');
      const [id] = calls(d, first, 'waiting');
      const second = await reply(app, taskId, d.answer(id, 'proceed_once'));
      const live = d.liveOutput(second);
      t.ok(live.length >= 2, `live output streamed (${live.length} updates)`);
      t.match(live.at(-1), /line1\nline2/);
      t.same(calls(d, second, 'success'), [id]);
    });

    await t.test('an edit with new content writes the edited content', async (t) => {
      const { first, taskId } = await begin(app, d, workspace, 'write edited');
      const [id] = calls(d, first, 'waiting');
      const second = await reply(app, taskId, d.answer(id, 'proceed_once', `edited by ${d.name}\n`));
      t.same(calls(d, second, 'success'), [id]);
      t.equal(readFileSync(path.join(workspace, 'hello.txt'), 'utf8'), `edited by ${d.name}\n`);
    });

    await t.test('cancel: the call is cancelled, nothing is written, the turn goes on', async (t) => {
      writeFileSync(path.join(workspace, 'hello.txt'), 'kept\n');
      const { first, taskId } = await begin(app, d, workspace, 'write declined');
      const [id] = calls(d, first, 'waiting');
      const second = await reply(app, taskId, d.answer(id, 'cancel'));
      t.same(calls(d, second, 'cancelled'), [id]);
      t.equal(readFileSync(path.join(workspace, 'hello.txt'), 'utf8'), 'kept\n');
      t.equal(second.at(-1).status.state, d.turnEnd);
    });

    await t.test('two calls answered in one message; a thought', async (t) => {
      writeFileSync(path.join(workspace, 'seed.txt'), 'hi\n');
      const { first, taskId } = await begin(app, d, workspace, 'mixed');
      t.equal(first.map((r) => d.thought(r)).find(Boolean)?.subject, 'Looking', 'the thought');
      const waiting = calls(d, first, 'waiting');
      t.equal(waiting.length, 2, 'two cards wait (the read ran without asking)');
      const second = await reply(app, taskId, ...waiting.map((id) => d.answer(id, 'proceed_once')));
      t.same(calls(d, second, 'success').sort(), [...waiting].sort(), 'both ran');
    });

    await t.test('an answer naming no waiting call is refused at once; the task still waits', async (t) => {
      const { first, taskId } = await begin(app, d, workspace, 'write again');
      const [id] = calls(d, first, 'waiting');
      const bad = await rpc(app, 'message/stream', {
        message: legacyMessage(undefined, { taskId, parts: [{ kind: 'data', data: d.answer('nope', 'proceed_once') }] }),
      });
      t.equal(bad.json?.error?.code, -32602);
      const ok = await reply(app, taskId, d.answer(id, 'proceed_once'));
      t.same(calls(d, ok, 'success'), [id], 'the real call still runs');
    });
  });
}
