-- devtool_commit (0011) with the same checks and writes, planned by index whatever the store's size.
-- The planner sees a batch's JSON record set as 100 rows of unknown content; joined on its own to
-- a table, or probed by an EXISTS beside an OR, that came out as a hash of the whole table: every
-- commit that closed a turn read every closed turn, one that superseded a card read the whole
-- event log, the task update every task, until the tables were large enough for an index to look
-- cheaper (test/store/store-size.test.ts counts the rows each read). Now every statement that
-- meets a table through the batch also names the batch's keys as `= ANY(ARRAY(...))` (an index
-- condition the planner sizes at a few rows), and the turn-close check probes per row (LATERAL
-- ... LIMIT 1). Same signature: instances of the previous version call this body too.
CREATE OR REPLACE FUNCTION devtool_commit(p jsonb, p_channel text, p_origin text)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
  finished text[] := ARRAY(SELECT jsonb_array_elements_text(p->'finished'));
  phases text[] := ARRAY(SELECT jsonb_array_elements_text(p->'phases'));
  stale jsonb;
  missing text;
  seqs jsonb := '{}'::jsonb;
  notified bigint;
  refusal jsonb;
BEGIN
  -- A task's start: its context (one that exists stays as it is) and the task, before its first events.
  IF jsonb_array_length(p->'new_contexts') > 0 THEN
    INSERT INTO contexts (id, workspace, settings, principal)
    SELECT r.id, r.workspace, r.settings, r.principal FROM jsonb_populate_recordset(NULL::contexts, p->'new_contexts') AS r
    ON CONFLICT DO NOTHING;
  END IF;
  IF jsonb_array_length(p->'new_tasks') > 0 THEN
    INSERT INTO tasks (id, context_id, state, principal, task, dialect, lease_owner, lease_until)
    SELECT r.id, r.context_id, r.state, r.principal, r.task, r.dialect, r.lease_owner, r.lease_until
    FROM jsonb_populate_recordset(NULL::tasks, p->'new_tasks') AS r;
  END IF;

  IF jsonb_array_length(p->'tasks') > 0 THEN
    WITH locked AS (
      SELECT t.id, t.last_seq, t.state FROM tasks t
      WHERE t.id = ANY(ARRAY(SELECT x->>'id' FROM jsonb_array_elements(p->'tasks') x))
      ORDER BY t.id COLLATE "C" FOR NO KEY UPDATE
    ), wanted AS (
      SELECT x.id, x.e, x.s, l.id AS found, l.last_seq, l.state
      FROM jsonb_to_recordset(p->'tasks') AS x(id text, e integer, s text)
      LEFT JOIN locked l ON l.id = x.id
    )
    SELECT (SELECT w.id FROM wanted w WHERE w.found IS NULL LIMIT 1),
           (SELECT jsonb_agg(jsonb_build_object('id', w.id, 'last_seq', w.last_seq, 'state', w.state, 'e', w.e, 's', w.s))
              FROM wanted w
              WHERE w.found IS NOT NULL
                AND (w.state = ANY(finished) OR (w.e IS NOT NULL AND w.last_seq <> w.e) OR (w.s IS NOT NULL AND w.state <> w.s)))
      INTO missing, stale;
    IF missing IS NOT NULL THEN
      refusal := jsonb_build_object('unknown_task', missing);
    ELSIF stale IS NOT NULL THEN
      refusal := jsonb_build_object('stale', stale);
    END IF;
  END IF;

  IF refusal IS NULL AND jsonb_array_length(p->'contexts') > 0 THEN
    WITH wanted AS (SELECT jsonb_array_elements_text(p->'contexts') AS id),
    locked AS (
      SELECT c.id FROM contexts c WHERE c.id = ANY(ARRAY(SELECT id FROM wanted))
      ORDER BY c.id COLLATE "C" FOR NO KEY UPDATE
    )
    SELECT w.id INTO missing FROM wanted w LEFT JOIN locked l ON l.id = w.id WHERE l.id IS NULL LIMIT 1;
    IF missing IS NOT NULL THEN
      refusal := jsonb_build_object('unknown_context', missing);
    END IF;
  END IF;
  IF refusal IS NOT NULL THEN
    -- Nothing may stay written: what this call created goes with an error (its own SQLSTATE,
    -- the refusal as the message), and without creations the answer alone says it.
    IF jsonb_array_length(p->'new_contexts') + jsonb_array_length(p->'new_tasks') > 0 THEN
      RAISE EXCEPTION '%', refusal::text USING ERRCODE = 'DVCM1';
    END IF;
    RETURN refusal;
  END IF;
  IF jsonb_array_length(p->'contexts') > 0 THEN
    -- A changed row version is what TaskStore.loadVersion's context part reads.
    UPDATE contexts SET updated_at = now()
      WHERE id = ANY(ARRAY(SELECT jsonb_array_elements_text(p->'contexts')));
  END IF;

  IF jsonb_array_length(p->'tasks') > 0 THEN
    -- Keyed events superseded by this batch's (same task and key): deleted before the new rows exist.
    IF jsonb_array_length(p->'keyed') > 0 THEN
      DELETE FROM events e USING jsonb_to_recordset(p->'keyed') AS k(task_id text, key text)
        WHERE e.task_id = k.task_id AND e.key = k.key AND e.key IS NOT NULL
          AND e.task_id = ANY(ARRAY(SELECT y->>'task_id' FROM jsonb_array_elements(p->'keyed') y));
    END IF;
    WITH bumped AS (
      UPDATE tasks t SET last_seq = t.last_seq + x.n, task = coalesce(x.task, jsonb_set(t.task, '{status}', x.status)),
        state = x.state, updated_at = now()
      FROM jsonb_to_recordset(p->'tasks') AS x(id text, n integer, task jsonb, status jsonb, state text, f integer)
      WHERE t.id = x.id AND t.id = ANY(ARRAY(SELECT y->>'id' FROM jsonb_array_elements(p->'tasks') y))
      RETURNING t.id, t.last_seq, x.f
    ), logged AS (
      INSERT INTO events (task_id, seq, payload, final, key, span)
      SELECT e.task_id, b.last_seq - e.back, e.payload, e.final, e.key, coalesce(e.span, 1)
      FROM jsonb_to_recordset(p->'events') AS e(task_id text, back integer, payload jsonb, final boolean, key text, span integer)
      JOIN bumped b ON b.id = e.task_id
    )
    SELECT jsonb_object_agg(b.id, b.last_seq),
           count(pg_notify(p_channel, b.id || ':' || b.last_seq || ':' || b.f || ':' || p_origin))
      INTO seqs, notified
      FROM bumped b;
  END IF;

  IF jsonb_array_length(p->'history') > 0 THEN
    INSERT INTO context_history (context_id, idx, content)
    SELECT x.c, coalesce((SELECT max(h.idx) FROM context_history h WHERE h.context_id = x.c), -1) + 1 + x.k, x.content
    FROM jsonb_to_recordset(p->'history') AS x(c text, k integer, content jsonb);
  END IF;

  IF jsonb_array_length(p->'calls') > 0 THEN
    -- Inserted, or replaced (all but the key and the answer) only where the phase moves forward,
    -- and never from awaiting to ready: approving is the claim's alone (TaskStore.saveCalls).
    INSERT INTO tool_calls AS t (id, task_id, turn, position, tool_name, model_call_id, args, snapshot, phase, answer,
      response, shown_hash, proposed_at, expires_at, lease_owner, lease_until, pgid, process_stamp)
    SELECT r.id, r.task_id, r.turn, r.position, r.tool_name, r.model_call_id, r.args, r.snapshot, r.phase, r.answer,
      r.response, r.shown_hash, r.proposed_at, r.expires_at, r.lease_owner, r.lease_until, r.pgid, r.process_stamp
    FROM jsonb_populate_recordset(NULL::tool_calls, p->'calls') AS r
    ORDER BY r.id COLLATE "C"
    ON CONFLICT (id) DO UPDATE SET task_id = excluded.task_id, turn = excluded.turn, position = excluded.position,
      tool_name = excluded.tool_name, model_call_id = excluded.model_call_id, args = excluded.args,
      snapshot = excluded.snapshot, phase = excluded.phase, response = excluded.response,
      shown_hash = excluded.shown_hash, proposed_at = excluded.proposed_at, expires_at = excluded.expires_at,
      lease_owner = excluded.lease_owner, lease_until = excluded.lease_until, pgid = excluded.pgid,
      process_stamp = excluded.process_stamp, updated_at = now()
    WHERE array_position(phases, t.phase) <= array_position(phases, excluded.phase)
      AND NOT (t.phase = 'awaiting' AND excluded.phase = 'ready');
  END IF;

  IF jsonb_array_length(p->'trust') > 0 THEN
    INSERT INTO trust_grants (context_id, tool_name, principal)
    SELECT r.context_id, r.tool_name, r.principal FROM jsonb_populate_recordset(NULL::trust_grants, p->'trust') AS r
    ORDER BY r.context_id COLLATE "C", r.tool_name COLLATE "C"
    ON CONFLICT DO NOTHING;
  END IF;

  IF jsonb_array_length(p->'audit') > 0 THEN
    INSERT INTO audit_log (task_id, context_id, tool_call_id, decision, principal, option_id, shown_hash, detail)
    SELECT r.task_id, r.context_id, r.tool_call_id, r.decision, r.principal, r.option_id, r.shown_hash, r.detail
    FROM jsonb_array_elements(p->'audit') WITH ORDINALITY AS a(row, i), jsonb_populate_record(NULL::audit_log, a.row) AS r
    ORDER BY a.i;
  END IF;

  -- Turns closed by this batch (settle without a read): every call done, not closed before. After
  -- the calls were saved, so the batch's own results count; a refusal rolls everything back.
  IF jsonb_array_length(p->'close_turns') > 0 THEN
    SELECT jsonb_build_array(jsonb_build_object('id', t.id, 'last_seq', t.last_seq, 'state', t.state, 'e', NULL, 's', NULL, 'turn', x.turn))
      INTO stale
      FROM jsonb_to_recordset(p->'close_turns') AS x(task_id text, turn integer)
      JOIN tasks t ON t.id = x.task_id AND t.id = ANY(ARRAY(SELECT y->>'task_id' FROM jsonb_array_elements(p->'close_turns') y))
      LEFT JOIN LATERAL (SELECT 1 AS one FROM tool_calls c WHERE c.task_id = x.task_id AND c.turn = x.turn AND c.phase <> 'done' LIMIT 1) open ON true
      LEFT JOIN LATERAL (SELECT 1 AS one FROM closed_turns k WHERE k.task_id = x.task_id AND k.turn = x.turn LIMIT 1) closed ON true
      WHERE open.one IS NOT NULL OR closed.one IS NOT NULL
      LIMIT 1;
    IF stale IS NOT NULL THEN
      RAISE EXCEPTION '%', jsonb_build_object('stale', stale)::text USING ERRCODE = 'DVCM1';
    END IF;
    INSERT INTO closed_turns (task_id, turn)
    SELECT x.task_id, x.turn FROM jsonb_to_recordset(p->'close_turns') AS x(task_id text, turn integer);
  END IF;

  RETURN jsonb_build_object('seqs', coalesce(seqs, '{}'::jsonb));
END
$$;
