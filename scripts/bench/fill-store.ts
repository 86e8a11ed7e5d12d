/**
 * A store as a server that has run for a while leaves it: `n` finished tasks, each in a context
 * of its own, with 10 events (two of them keyed cards), two done calls, a closed turn, four
 * history entries and three audit rows — then ANALYZE, as autovacuum would. `npm run bench --
 * --filled n` measures on such a store (the server starts on it), and
 * test/store/store-size.test.ts counts what the hot path's statements read on one.
 */
import type { Queryable } from '../../src/store/db.js';

/** The statements, in order (plain SQL that PGlite and PostgreSQL both run). */
export function fillStatements(n: number): string[] {
  const tasks = Math.max(0, Math.floor(n));
  return [
    `insert into contexts (id, workspace) select 'ctx-old-' || g, '/tmp/ws' from generate_series(1, ${tasks}) g`,
    `insert into tasks (id, context_id, state, task, last_seq)
       select 'task-old-' || g, 'ctx-old-' || g, 'completed',
              jsonb_build_object('id', 'task-old-' || g, 'contextId', 'ctx-old-' || g, 'pad', repeat('t', 300)), 10
       from generate_series(1, ${tasks}) g`,
    `insert into events (task_id, seq, payload, final, key)
       select 'task-old-' || g, s, jsonb_build_object('pad', repeat('e', 200)), s = 10,
              case when s in (3, 4) then 'card:old-' || g || '-' || s end
       from generate_series(1, ${tasks}) g, generate_series(1, 10) s`,
    `insert into tool_calls (id, task_id, turn, position, tool_name, snapshot, phase, proposed_at)
       select 'call-old-' || g || '-' || c, 'task-old-' || g, 1, c, 'write_file', '{"status":"SUCCEEDED"}', 'done', now()
       from generate_series(1, ${tasks}) g, generate_series(0, 1) c`,
    `insert into closed_turns (task_id, turn) select 'task-old-' || g, 1 from generate_series(1, ${tasks}) g`,
    `insert into context_history (context_id, idx, content)
       select 'ctx-old-' || g, i, jsonb_build_object('role', 'user', 'parts', jsonb_build_array(jsonb_build_object('text', repeat('h', 100))))
       from generate_series(1, ${tasks}) g, generate_series(0, 3) i`,
    `insert into audit_log (task_id, context_id, tool_call_id, decision)
       select 'task-old-' || g, 'ctx-old-' || g, 'call-old-' || g || '-0', d
       from generate_series(1, ${tasks}) g, unnest(array['proposed', 'approved', 'executed']) d`,
    // What autovacuum does on a server that has run for a while: the planner knows the sizes.
    'analyze contexts, tasks, events, tool_calls, closed_turns, context_history, audit_log',
  ];
}

/** Fills a migrated store (see the module comment). */
export async function fillStore(db: Queryable, n: number): Promise<void> {
  for (const statement of fillStatements(n)) await db.query(statement, []);
}
