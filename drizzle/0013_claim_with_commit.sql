-- An answer's claim and the writes that follow it as ONE statement (src/store/call-queries.ts
-- claimAndCommit): the claim as devtool_claim_calls/5 decides it (the task row locked first, each
-- claimed call awaiting -> ready, all or none, the task leased, the commit synchronous), and only
-- when it is won, in the same transaction, the batch of the answering copy as devtool_commit does
-- it: the user's message, the task working again, the answers' audit and grants, the first
-- approved call's EXECUTING card and its `executed` audit. The claim holds the task row, so the
-- batch's writes follow it: they are expected at the last seq the claim found (what a copy that
-- wins a claim adopts), whatever the copy expected when it built them. A claim that is not won
-- writes nothing and answers as devtool_claim_calls does; a batch the commit refuses rolls the
-- claim back with it (DVCM1, its refusal as the message).
CREATE OR REPLACE FUNCTION devtool_claim_commit(p_task text, p_claims jsonb, p_owner text, p_until timestamptz, p_expect integer,
  p jsonb, p_channel text, p_origin text)
RETURNS jsonb
LANGUAGE plpgsql
AS $$
DECLARE
  claimed jsonb;
  seq integer;
  committed jsonb;
BEGIN
  claimed := devtool_claim_calls(p_task, p_claims, p_owner, p_until, p_expect);
  IF NOT (claimed->>'ok')::boolean THEN
    RETURN claimed;
  END IF;
  seq := (claimed->>'last_seq')::integer;
  committed := devtool_commit(
    jsonb_set(p, '{tasks}', coalesce((
      SELECT jsonb_agg(CASE WHEN x->>'id' = p_task THEN (x - 's') || jsonb_build_object('e', seq) ELSE x END ORDER BY i)
      FROM jsonb_array_elements(p->'tasks') WITH ORDINALITY AS a(x, i)), '[]'::jsonb)),
    p_channel, p_origin);
  IF NOT committed ? 'seqs' THEN
    RAISE EXCEPTION '%', committed::text USING ERRCODE = 'DVCM1';
  END IF;
  RETURN claimed || jsonb_build_object('seqs', committed->'seqs');
END
$$;
