/**
 * Two answers to two cards of one turn, at once, on two instances. Each call is claimed by one
 * answer; but a turn runs on one instance at a time: the second instance's writes would follow
 * events it never saw, so the store refused them (StaleWriteError) after its claim was won — its
 * call stayed claimed and never ran, and both streams waited for a pause that never came. The
 * claim now waits its turn: it is refused while another instance runs calls of the task.
 */
import t from 'tap';
import { MemoryTaskStore } from '../../src/store/memory-store.js';
import { buildServer, confirmMessage, dataOf, userMessage } from '../support/server.js';
import { rpc } from '../support/sse.js';

/** `work`, or 'timeout' after `ms` (a hung stream keeps nothing else waiting). */
async function within<T>(work: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), ms)));
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

t.test('two answers to two cards of one turn at once, on two instances: one runs, the other waits for the pause', async (t) => {
  const db = new MemoryTaskStore();
  t.teardown(() => db.close());
  const a = await buildServer(t, { app: { store: db.connect(), sweepMs: 60_000 } });
  const b = await buildServer(t, { app: { store: db.connect(), sweepMs: 60_000 } });
  const first = await rpc(a.app, 'message/stream', { message: userMessage('two writes please') });
  const task = first.events?.[0]?.data?.result;
  const cards = (first.events ?? []).map((e) => dataOf(e.data?.result)).filter((d) => d?.confirmation_request);
  t.equal(cards.length, 2, 'two cards');
  const answer = (card: { tool_call_id: string }) =>
    confirmMessage(task.id, task.contextId, { tool_call_id: card.tool_call_id, selected_option_id: 'proceed_once' });

  const both = await within(
    Promise.all([rpc(a.app, 'message/stream', { message: answer(cards[0]) }), rpc(b.app, 'message/stream', { message: answer(cards[1]) })]),
    5_000,
  );
  if (both === 'timeout') {
    t.fail('a stream hung');
    return;
  }
  const refused = both.filter((r) => r.json?.error !== undefined);
  t.equal(refused.length, 1, 'one answer is refused before its stream starts');
  const accepted = both.find((r) => r.json?.error === undefined)!;
  t.equal(accepted.events?.at(-1)?.data?.result?.status?.state, 'input-required', 'the other ran its call and paused on the one left');

  const left = cards[both.indexOf(refused[0])];
  const last = await within(rpc(b.app, 'message/stream', { message: answer(left) }), 5_000);
  if (last === 'timeout') {
    t.fail('a stream hung');
    return;
  }
  t.equal(last.events?.at(-1)?.data?.result?.status?.state, 'completed', 'sent again, it runs and the task completes');
  const store = db.connect();
  for (const card of cards) {
    const audit = await store.listAudit({ taskId: task.id });
    t.same(
      audit.filter((r) => r.toolCallId === card.tool_call_id).map((r) => r.decision),
      ['proposed', 'authorized', 'executed', 'succeeded'],
      'each call authorized and run once',
    );
  }
});
