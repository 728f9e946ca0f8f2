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

-- Readers go by (transaction_id, global_position), so that is the primary key (the position alone
-- comes from a sequence). A log created before had the key on global_position and a separate
-- es_events_visibility index on the pair: it keeps both, and works the same.
CREATE TABLE IF NOT EXISTS es_events (
  global_position  bigserial NOT NULL,
  transaction_id   xid8 NOT NULL DEFAULT pg_current_xact_id(),
  stream_id        text NOT NULL,
  stream_revision  bigint NOT NULL,
  event_id         uuid NOT NULL,
  type             text NOT NULL,
  data             json NOT NULL,
  metadata         json NOT NULL,
  recorded_at      timestamptz NOT NULL DEFAULT clock_timestamp(),
  hash             text NOT NULL,
  CONSTRAINT es_events_pkey PRIMARY KEY (transaction_id, global_position),
  CONSTRAINT es_events_stream_revision UNIQUE (stream_id, stream_revision),
  CONSTRAINT es_events_event_id UNIQUE (event_id)
);

-- es_append_batch: several independent append requests in ONE transaction (the adapter's group
-- commit, see postgres.ts). The requests come as typed arrays, in batch order:
--   streams      the batch's streams, each once (any order); appends name them by 1-based index
--   app_req      per append: its request number, 1-based (a request's appends are consecutive)
--   app_stream   per append: index into streams
--   app_expect   per append: 'any' | 'no_stream' | 'stream_exists' | '<revision>'
--   app_count    per append: how many events it has (consecutive in the ev_ arrays)
--   ev_id, ev_type, ev_data, ev_meta, ev_digest   per event
--
-- Each request stays all-or-nothing on its own, without subtransactions: requests are taken in batch
-- order, and each one is checked completely (id idempotency, then every expected revision) BEFORE
-- any of its events is planned, so a request that fails plans nothing. Later requests see the stream
-- states left by earlier ones, so the same stream (or the same event ids) twice in a batch behaves
-- exactly like two sequential calls. Nothing is written until every request has been decided; then
-- one statement moves each touched stream once and writes all planned events in batch order.
--
-- Returns, per request (request_no):
--   success:  one row per stream of the request: its revision after the append and the position of
--             its last event. A retry whose event ids are all stored gets the stored result.
--   failure:  one row with error = 'WRONG_EXPECTED_REVISION' (error_detail = {"stream","actual"})
--             or 'EVENT_ID_CONFLICT' (some but not all of its ids are stored).
-- Anything else (a unique violation when another transaction raced us with the same ids, or created
-- one of our new streams first) raises and rolls the whole batch back; the adapter then retries the
-- requests one at a time, and each finds what the other transaction wrote.
--
-- Gap safety is unchanged: every event of the batch carries this transaction's id and positions rise
-- in batch order, so readers see the whole batch at once, after its commit, in a stable order.
--
-- Plans: the statements below take arrays as parameters, so custom plans would be re-planned on
-- every call (knowing the array lengths, they always look cheaper than the generic plan). Generic
-- plans are built once per connection, often while the tables are still empty, where a sequential
-- scan looks cheapest, and they would keep scanning as the tables grow. Every table access below is
-- a lookup by a unique key (= ANY(array)), so the function pins generic plans and index access.
-- (An earlier draft took the whole batch as one jsonb argument: dropped.)
--
-- Data and metadata are json, not jsonb: they arrive as canonical JSON text (hash.ts), and json keeps
-- that text as sent (only checked to be JSON), where jsonb parsed it into a tree on every append
-- and printed it again on every read (about 4 us per event on the write, 1.5 on a read, measured).
-- A log created before keeps its jsonb columns: the INSERT below then converts, as it always did.
DROP FUNCTION IF EXISTS es_append_batch(jsonb);

CREATE OR REPLACE FUNCTION es_append_batch(streams text[], app_req int[], app_stream int[], app_expect text[], app_count int[],
                                           ev_id uuid[], ev_type text[], ev_data json[], ev_meta json[], ev_digest text[],
                                           probe boolean DEFAULT true)
RETURNS TABLE (request_no int, stream text, next_revision bigint, position_text text, error text, error_detail text)
LANGUAGE plpgsql
SET plan_cache_mode = force_generic_plan
SET enable_seqscan = off
AS $$
#variable_conflict use_column
DECLARE
  genesis      constant text := repeat('0', 64);
  n_apps       constant int := coalesce(cardinality(app_req), 0);
  n_events     constant int := coalesce(cardinality(ev_id), 0);
  n_streams    constant int := coalesce(cardinality(streams), 0);
  -- Set only for the events that will be written (NULL stream = not written). Full length from the
  -- start: assigning into an empty array would give it a lower bound other than 1.
  w_stream     text[] := array_fill(NULL::text, ARRAY[n_events]);
  w_rev        bigint[] := array_fill(NULL::bigint, ARRAY[n_events]);
  w_hash       text[] := array_fill(NULL::text, ARRAY[n_events]);
  w_gp         bigint[] := array_fill(NULL::bigint, ARRAY[n_events]);
  xid_text     text;     -- this transaction's id, as positions show it
  -- Per stream (aligned with streams): state as the batch progresses.
  revs         bigint[];
  hashes       text[];
  touched      boolean[] := array_fill(false, ARRAY[n_streams]);
  existed      boolean[];
  -- Events stored before this batch that carry one of the batch's ids.
  st_id        uuid[];
  st_stream    text[];
  st_rev       bigint[];
  st_pos       text[];
  repeated_ids boolean;  -- some id occurs twice in the batch (e.g. a retry racing its original)
  -- Result rows. Every result assigns all six, so the arrays stay aligned for unnest().
  o_req        int[] := '{}';
  o_stream     text[] := '{}';
  o_rev        bigint[] := '{}';
  o_pos        text[] := '{}';
  o_err        text[] := '{}';
  o_detail     text[] := '{}';
  n_out        int := 0;
  -- Loop state.
  a_next       int := 1;
  e_next       int := 1;
  a_first      int;
  a_last       int;
  e_first      int;
  e_last       int;
  e            int;
  s            int;
  found_ids    int;
  failed       boolean;
  i_failed     int;      -- the append whose expected revision failed
  probed       boolean;  -- the current request's ids have been looked up
  expected     text;
  cur_rev      bigint;
  cur_hash     text;
  known        record;
BEGIN
  IF n_apps = 0 THEN
    RETURN;
  END IF;
  IF cardinality(app_stream) <> n_apps OR cardinality(app_expect) <> n_apps OR cardinality(app_count) <> n_apps
     OR cardinality(ev_type) <> n_events OR cardinality(ev_data) <> n_events OR cardinality(ev_meta) <> n_events
     OR cardinality(ev_digest) <> n_events THEN
    RAISE EXCEPTION 'es_append_batch: array lengths do not match';
  END IF;

  -- Lock every existing stream of the batch, in name order, so that batches (of this node or others)
  -- and es_append calls never wait on each other in a cycle. FOR UPDATE waits for the current holder
  -- and returns the newest row version. A stream not found is new: its row is inserted at the end
  -- with its final revision and hash (one write). Should another transaction create the same stream
  -- meanwhile, that INSERT fails with a unique violation on es_streams_pkey and the whole batch rolls
  -- back; the adapter then retries its requests one at a time, and the retry finds the stream.
  SELECT array_agg(coalesce(l.revision, -1) ORDER BY n.i), array_agg(coalesce(l.last_hash, genesis) ORDER BY n.i),
         array_agg(l.stream_id IS NOT NULL ORDER BY n.i)
    INTO revs, hashes, existed
    FROM unnest(streams) WITH ORDINALITY n(name, i)
    LEFT JOIN (SELECT x.stream_id, x.revision, x.last_hash FROM es_streams x
                WHERE x.stream_id = ANY(streams) ORDER BY x.stream_id FOR UPDATE) l ON l.stream_id = n.name;

  -- One probe for the whole batch, after the locks: whoever wrote these ids to our existing streams
  -- has committed by now, so its events are visible to this statement's snapshot. (A writer of the
  -- same ids to a stream that is new for us may not have: then our INSERT meets its row or its ids,
  -- fails with a unique violation, and the adapter's one-by-one retry finds its events.)
  -- With probe = false (the adapter's first try of a batch) there is no such probe: a request looks
  -- its own ids up only when one of its expected revisions fails (a retry of a stored request
  -- always does, as its events moved the stream on), and a stored id that gets past that (an append
  -- at any revision) makes the INSERT fail with a unique violation, after which the adapter sends
  -- the batch once more, with the probe. New ids, the usual case, then cost no lookups at all.
  IF probe THEN
    SELECT array_agg(x.event_id), array_agg(x.stream_id), array_agg(x.stream_revision),
           array_agg(lpad(x.transaction_id::text, 20, '0') || ':' || lpad(x.global_position::text, 20, '0'))
      INTO st_id, st_stream, st_rev, st_pos
      FROM es_events x WHERE x.event_id = ANY(ev_id);
  END IF;
  repeated_ids := (SELECT count(DISTINCT i) < count(*) FROM unnest(ev_id) i);

  WHILE a_next <= n_apps LOOP
    -- The next request: appends a_first..a_last, events e_first..e_last.
    a_first := a_next;
    WHILE a_next <= n_apps AND app_req[a_next] = app_req[a_first] LOOP
      e_next := e_next + app_count[a_next];
      a_next := a_next + 1;
    END LOOP;
    a_last := a_next - 1;
    e_last := e_next - 1;
    e_first := e_last + 1;
    FOR i IN a_first .. a_last LOOP
      e_first := e_first - app_count[i];
    END LOOP;

    probed := probe;
    <<request>>
    LOOP
      -- 1. Idempotency: only when one of its ids is stored, or may occur earlier in this batch.
      IF repeated_ids OR (st_id IS NOT NULL AND ev_id[e_first:e_last] && st_id) THEN
        -- Known ids: stored before the batch, or planned by an earlier request of this batch.
        SELECT count(*)::int INTO found_ids FROM (
          SELECT 1 FROM unnest(st_id) k(id) WHERE k.id = ANY(ev_id[e_first:e_last])
          UNION ALL
          SELECT 1 FROM unnest(ev_id[1:e_first - 1], w_stream[1:e_first - 1]) k(id, s)
           WHERE k.s IS NOT NULL AND k.id = ANY(ev_id[e_first:e_last])) x;
        IF found_ids > 0 THEN
          IF found_ids <> e_last - e_first + 1 THEN
            n_out := n_out + 1;
            o_req[n_out] := app_req[a_first]; o_stream[n_out] := NULL; o_rev[n_out] := NULL; o_pos[n_out] := NULL;
            o_err[n_out] := 'EVENT_ID_CONFLICT'; o_detail[n_out] := 'some but not all event ids are stored';
          -- A retry carries the same content: a stored event's hash chains its predecessor's hash with
          -- this request's digest of it, and an event planned earlier in this batch has the same digest.
          ELSIF EXISTS (
                  SELECT 1 FROM unnest(ev_id[e_first:e_last], ev_digest[e_first:e_last]) r(id, digest)
                    JOIN es_events x ON x.event_id = r.id
                    LEFT JOIN es_events p ON p.stream_id = x.stream_id AND p.stream_revision = x.stream_revision - 1
                   WHERE x.hash <> encode(sha256(convert_to(coalesce(p.hash, genesis) || r.digest, 'UTF8')), 'hex'))
             OR EXISTS (
                  SELECT 1 FROM unnest(ev_id[e_first:e_last], ev_digest[e_first:e_last]) r(id, digest)
                    JOIN unnest(ev_id[1:e_first - 1], ev_digest[1:e_first - 1], w_stream[1:e_first - 1]) b(id, digest, s)
                      ON b.id = r.id AND b.s IS NOT NULL
                   WHERE b.digest <> r.digest) THEN
            n_out := n_out + 1;
            o_req[n_out] := app_req[a_first]; o_stream[n_out] := NULL; o_rev[n_out] := NULL; o_pos[n_out] := NULL;
            o_err[n_out] := 'EVENT_ID_CONFLICT'; o_detail[n_out] := 'event ids are stored with other content';
          ELSE
            -- A retry: answer what was stored, per stream its last revision and that event's position.
            FOR known IN
              SELECT x.s, max(x.rev) AS rev, (array_agg(x.pos ORDER BY x.rev DESC))[1] AS pos FROM (
                SELECT k.s, k.rev, k.pos FROM unnest(st_id, st_stream, st_rev, st_pos) k(id, s, rev, pos)
                 WHERE k.id = ANY(ev_id[e_first:e_last])
                UNION ALL
                SELECT k.s, k.rev, xid_text || ':' || lpad(k.gp::text, 20, '0')
                  FROM unnest(ev_id[1:e_first - 1], w_stream[1:e_first - 1], w_rev[1:e_first - 1], w_gp[1:e_first - 1]) k(id, s, rev, gp)
                 WHERE k.s IS NOT NULL AND k.id = ANY(ev_id[e_first:e_last])) x
              GROUP BY x.s
            LOOP
              n_out := n_out + 1;
              o_req[n_out] := app_req[a_first]; o_stream[n_out] := known.s; o_rev[n_out] := known.rev; o_pos[n_out] := known.pos;
              o_err[n_out] := NULL; o_detail[n_out] := NULL;
            END LOOP;
          END IF;
          EXIT request;
        END IF;
      END IF;

      -- 2. Every expected revision, before planning anything: a failing request writes nothing.
      failed := false;
      FOR i IN a_first .. a_last LOOP
        cur_rev := revs[app_stream[i]];
        expected := app_expect[i];
        IF (expected = 'no_stream' AND cur_rev <> -1)
           OR (expected = 'stream_exists' AND cur_rev = -1)
           OR (expected NOT IN ('any', 'no_stream', 'stream_exists') AND cur_rev <> expected::bigint) THEN
          failed := true;
          i_failed := i;
          EXIT;
        END IF;
      END LOOP;
      IF failed AND NOT probed THEN
        -- Not looked up yet (probe = false): a retry of a stored request fails here. Its stored ids,
        -- if any, join the known ones, and the request is taken again from step 1.
        probed := true;
        SELECT count(*)::int INTO found_ids FROM es_events x WHERE x.event_id = ANY(ev_id[e_first:e_last]);
        IF found_ids > 0 THEN
          SELECT coalesce(st_id, '{}') || array_agg(x.event_id), coalesce(st_stream, '{}') || array_agg(x.stream_id),
                 coalesce(st_rev, '{}') || array_agg(x.stream_revision),
                 coalesce(st_pos, '{}') || array_agg(lpad(x.transaction_id::text, 20, '0') || ':' || lpad(x.global_position::text, 20, '0'))
            INTO st_id, st_stream, st_rev, st_pos
            FROM es_events x WHERE x.event_id = ANY(ev_id[e_first:e_last]);
          CONTINUE request;
        END IF;
      END IF;
      IF failed THEN
        n_out := n_out + 1;
        o_req[n_out] := app_req[a_first]; o_stream[n_out] := NULL; o_rev[n_out] := NULL; o_pos[n_out] := NULL;
        o_err[n_out] := 'WRONG_EXPECTED_REVISION';
        o_detail[n_out] := json_build_object('stream', streams[app_stream[i_failed]], 'actual', revs[app_stream[i_failed]])::text;
        EXIT request;
      END IF;

      -- 3. Plan its events: revisions and the hash chain continue from the stream's current state.
      -- Positions come from the column's own sequence, taken here rather than by the INSERT's default
      -- (same transaction, same batch order), so that every result knows its position right away.
      IF xid_text IS NULL THEN
        xid_text := lpad(pg_current_xact_id()::text, 20, '0');
      END IF;
      e := e_first;
      FOR i IN a_first .. a_last LOOP
        s := app_stream[i];
        cur_rev := revs[s];
        cur_hash := hashes[s];
        FOR j IN 1 .. app_count[i] LOOP
          cur_rev := cur_rev + 1;
          cur_hash := encode(sha256(convert_to(cur_hash || ev_digest[e], 'UTF8')), 'hex');
          w_stream[e] := streams[s];
          w_rev[e] := cur_rev;
          w_hash[e] := cur_hash;
          w_gp[e] := nextval('es_events_global_position_seq');
          e := e + 1;
        END LOOP;
        revs[s] := cur_rev;
        hashes[s] := cur_hash;
        touched[s] := true;
        n_out := n_out + 1;
        o_req[n_out] := app_req[a_first]; o_stream[n_out] := streams[s]; o_rev[n_out] := cur_rev;
        o_pos[n_out] := xid_text || ':' || lpad(w_gp[e - 1]::text, 20, '0');
        o_err[n_out] := NULL; o_detail[n_out] := NULL;
      END LOOP;
      EXIT request;
    END LOOP request;
  END LOOP;
  IF e_next - 1 <> n_events THEN
    RAISE EXCEPTION 'es_append_batch: app_count does not add up to the events';
  END IF;

  -- New streams first, in name order (so that two batches creating the same streams cannot wait on
  -- each other in a cycle); then one statement moves each touched existing stream once and writes
  -- every planned event, in batch order.
  IF xid_text IS NOT NULL THEN
    WITH born AS (
      INSERT INTO es_streams (stream_id, revision, last_hash)
      SELECT u.name, u.rev, u.hash FROM unnest(streams, revs, hashes, touched, existed) u(name, rev, hash, touched, existed)
       WHERE u.touched AND NOT u.existed ORDER BY u.name
      RETURNING 1),
    moved AS (
      UPDATE es_streams x SET revision = u.rev, last_hash = u.hash
        FROM unnest(streams, revs, hashes, touched, existed) u(name, rev, hash, touched, existed)
       WHERE x.stream_id = ANY(streams) AND x.stream_id = u.name AND u.touched AND u.existed)
    INSERT INTO es_events (global_position, stream_id, stream_revision, event_id, type, data, metadata, hash)
    SELECT w.gp, w.s, w.rev, w.id, w.type, w.data, w.meta, w.hash
      FROM unnest(w_gp, w_stream, w_rev, ev_id, ev_type, ev_data, ev_meta, w_hash) w(gp, s, rev, id, type, data, meta, hash)
     -- Reading born first makes the new streams' rows go in (in name order) before any event.
     WHERE w.s IS NOT NULL AND (SELECT count(*) FROM born) >= 0;
  END IF;

  RETURN QUERY SELECT * FROM unnest(o_req, o_stream, o_rev, o_pos, o_err, o_detail);
END;
$$;

-- One call appends to one or more streams atomically: es_append_batch with a single request, its
-- failure raised as an exception ('WRONG_EXPECTED_REVISION' with DETAIL {"stream","actual"}, or
-- 'EVENT_ID_CONFLICT'). request: [{stream, expected, events: [{id, type, data, metadata, digest}]}].
-- Returns one row per stream: its revision after the append and the position of its last event.
-- A retry whose event ids are all stored returns the stored result. (The adapter itself calls
-- es_append_batch; this stays for scripts and tools.)
CREATE OR REPLACE FUNCTION es_append(request jsonb)
RETURNS TABLE (stream text, next_revision bigint, position_text text)
LANGUAGE plpgsql AS $$
DECLARE
  names    text[];
  a_names  text[];
  a_stream int[];
  a_expect text[];
  a_count  int[];
  res      record;
BEGIN
  SELECT array_agg(a.value->>'stream' ORDER BY a.i), array_agg(a.value->>'expected' ORDER BY a.i),
         array_agg(jsonb_array_length(a.value->'events') ORDER BY a.i), array_agg(DISTINCT a.value->>'stream')
    INTO a_names, a_expect, a_count, names
    FROM jsonb_array_elements(request) WITH ORDINALITY a(value, i);
  SELECT array_agg(array_position(names, n.name) ORDER BY n.i) INTO a_stream FROM unnest(a_names) WITH ORDINALITY n(name, i);
  FOR res IN
    SELECT b.* FROM (
      SELECT array_agg((ev.value->>'id')::uuid ORDER BY ev.i) AS id, array_agg(ev.value->>'type' ORDER BY ev.i) AS type,
             array_agg((ev.value->'data')::json ORDER BY ev.i) AS data, array_agg((ev.value->'metadata')::json ORDER BY ev.i) AS meta,
             array_agg(ev.value->>'digest' ORDER BY ev.i) AS digest
        FROM jsonb_path_query(request, 'strict $[*].events[*]') WITH ORDINALITY ev(value, i)) e,
      es_append_batch(names, array_fill(1, ARRAY[cardinality(a_names)]), a_stream, a_expect, a_count,
                      e.id, e.type, e.data, e.meta, e.digest) b
  LOOP
    IF res.error IS NOT NULL THEN
      RAISE EXCEPTION '%', res.error USING DETAIL = res.error_detail;
    END IF;
    stream := res.stream;
    next_revision := res.next_revision;
    position_text := res.position_text;
    RETURN NEXT;
  END LOOP;
END;
$$;
`;
