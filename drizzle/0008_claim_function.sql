-- The claim of an answer as one statement (src/store/call-queries.ts claimCalls): lock the task
-- row first, as every commit and re-prompt does; move each claimed call awaiting -> ready in id
-- order, all or none; lease the task; commit synchronously. Returns {ok, last_seq} or {ok:false, lost}.
CREATE OR REPLACE FUNCTION devtool_claim_calls(p_task text, p_claims jsonb, p_owner text, p_until timestamptz)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
  c record;
  lost text[] := '{}';
  seq integer;
BEGIN
  SELECT last_seq INTO seq FROM tasks WHERE id = p_task FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('ok', false, 'lost', (SELECT coalesce(jsonb_agg(x->>'id'), '[]'::jsonb) FROM jsonb_array_elements(p_claims) AS x));
  END IF;
  BEGIN
    FOR c IN
      SELECT * FROM jsonb_to_recordset(p_claims) AS x(id text, answer text, args jsonb, snapshot jsonb, shown_hash text)
      ORDER BY x.id COLLATE "C"
    LOOP
      UPDATE tool_calls AS t
        SET phase = 'ready', answer = c.answer, lease_owner = p_owner, lease_until = p_until, updated_at = now(),
            args = coalesce(c.args, t.args), snapshot = coalesce(c.snapshot, t.snapshot)
        WHERE t.task_id = p_task AND t.id = c.id AND t.phase = 'awaiting'
          AND (c.shown_hash IS NULL OR t.shown_hash = c.shown_hash);
      IF NOT FOUND THEN
        lost := lost || c.id;
      END IF;
    END LOOP;
    IF cardinality(lost) > 0 THEN
      -- Undoes the claims this block made (its subtransaction); `lost` keeps its value.
      RAISE EXCEPTION 'claim lost' USING ERRCODE = 'DVCL1';
    END IF;
  EXCEPTION WHEN SQLSTATE 'DVCL1' THEN
    RETURN jsonb_build_object('ok', false, 'lost', to_jsonb(lost));
  END;
  UPDATE tasks SET lease_owner = p_owner, lease_until = p_until WHERE id = p_task;
  PERFORM set_config('synchronous_commit', 'on', true);
  RETURN jsonb_build_object('ok', true, 'last_seq', seq);
END
$$;
