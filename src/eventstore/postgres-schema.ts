/**
 * Schema of the Postgres event log. Idempotent: run at every start.
 *
 * Gap safety: `global_position` comes from a sequence, and a transaction that took a lower number
 * can commit after one that took a higher number. A reader that only remembered "the last position I
 * saw" would then skip the late event forever. So every event also records the id of the transaction
 * that wrote it (`transaction_id xid8`), readers order by (transaction_id, global_position), and they
 * only return rows whose transaction id is below the oldest transaction still running
 * (`pg_snapshot_xmin(pg_current_snapshot())`). Every such transaction has finished, so no event can
 * later appear before a position a reader has passed. The cost: a reader waits for the oldest open
 * writer, which is why connections set idle_in_transaction_session_timeout.
 * Caveat for operators: after pg_dump/restore into a new cluster, the xid counter may be lower than the
 * stored transaction ids; run `select pg_current_xact_id()` past the max stored id before serving.
 */
export const EVENT_LOG_SCHEMA = `
CREATE TABLE IF NOT EXISTS es_streams (
  stream_id  text PRIMARY KEY,
  revision   bigint NOT NULL,
  last_hash  text NOT NULL
);

CREATE TABLE IF NOT EXISTS es_events (
  global_position  bigserial PRIMARY KEY,
  transaction_id   xid8 NOT NULL DEFAULT pg_current_xact_id(),
  stream_id        text NOT NULL,
  stream_revision  bigint NOT NULL,
  event_id         uuid NOT NULL,
  type             text NOT NULL,
  data             jsonb NOT NULL,
  metadata         jsonb NOT NULL,
  recorded_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  hash             text NOT NULL,
  CONSTRAINT es_events_stream_revision UNIQUE (stream_id, stream_revision),
  CONSTRAINT es_events_event_id UNIQUE (event_id)
);

CREATE INDEX IF NOT EXISTS es_events_visibility ON es_events (transaction_id, global_position);

-- One call appends to one or more streams atomically. request: [{stream, expected, events:[{id,type,data,metadata,digest}]}]
-- expected: 'any' | 'no_stream' | 'stream_exists' | '<revision>'.
-- Returns one row per stream: its revision after the append and the position of its last event.
-- A retry whose event ids are all stored returns the stored result and writes nothing.
CREATE OR REPLACE FUNCTION es_append(request jsonb)
RETURNS TABLE (stream text, next_revision bigint, position_text text)
LANGUAGE plpgsql AS $$
DECLARE
  item       jsonb;
  ev         jsonb;
  ids        uuid[];
  stored     int;
  cur_rev    bigint;
  cur_hash   text;
  expected   text;
  new_hash   text;
  last_gp    bigint;
  xid_text   text := lpad(pg_current_xact_id()::text, 20, '0');
BEGIN
  SELECT array_agg((e->>'id')::uuid) INTO ids
    FROM jsonb_array_elements(request) r, jsonb_array_elements(r->'events') e;

  -- Lock every stream in name order (no deadlocks between multi-stream appends).
  FOR item IN SELECT value FROM jsonb_array_elements(request) ORDER BY value->>'stream' LOOP
    INSERT INTO es_streams (stream_id, revision, last_hash)
      VALUES (item->>'stream', -1, repeat('0', 64)) ON CONFLICT (stream_id) DO NOTHING;
    PERFORM 1 FROM es_streams WHERE stream_id = item->>'stream' FOR UPDATE;
  END LOOP;

  -- Idempotent retry: every id stored already -> answer what was stored; some of them -> conflict.
  SELECT count(*) INTO stored FROM es_events WHERE event_id = ANY(ids);
  IF stored > 0 THEN
    IF stored <> coalesce(array_length(ids, 1), 0) THEN
      RAISE EXCEPTION 'EVENT_ID_CONFLICT' USING DETAIL = 'some but not all event ids are stored';
    END IF;
    RETURN QUERY
      SELECT x.stream_id, max(x.stream_revision),
             (array_agg(lpad(x.transaction_id::text, 20, '0') || ':' || lpad(x.global_position::text, 20, '0')
                        ORDER BY x.global_position DESC))[1]
        FROM es_events x WHERE x.event_id = ANY(ids) GROUP BY x.stream_id;
    RETURN;
  END IF;

  FOR item IN SELECT value FROM jsonb_array_elements(request) LOOP
    SELECT s.revision, s.last_hash INTO cur_rev, cur_hash FROM es_streams s WHERE s.stream_id = item->>'stream';
    expected := item->>'expected';
    IF (expected = 'no_stream' AND cur_rev <> -1)
       OR (expected = 'stream_exists' AND cur_rev = -1)
       OR (expected NOT IN ('any', 'no_stream', 'stream_exists') AND cur_rev <> expected::bigint) THEN
      RAISE EXCEPTION 'WRONG_EXPECTED_REVISION' USING DETAIL = json_build_object('stream', item->>'stream', 'actual', cur_rev)::text;
    END IF;
    FOR ev IN SELECT value FROM jsonb_array_elements(item->'events') LOOP
      cur_rev := cur_rev + 1;
      new_hash := encode(sha256(convert_to(cur_hash || (ev->>'digest'), 'UTF8')), 'hex');
      INSERT INTO es_events (stream_id, stream_revision, event_id, type, data, metadata, hash)
        VALUES (item->>'stream', cur_rev, (ev->>'id')::uuid, ev->>'type', ev->'data', ev->'metadata', new_hash)
        RETURNING global_position INTO last_gp;
      cur_hash := new_hash;
    END LOOP;
    UPDATE es_streams SET revision = cur_rev, last_hash = cur_hash WHERE stream_id = item->>'stream';
    stream := item->>'stream';
    next_revision := cur_rev;
    position_text := xid_text || ':' || lpad(last_gp::text, 20, '0');
    RETURN NEXT;
  END LOOP;
END;
$$;
`;
