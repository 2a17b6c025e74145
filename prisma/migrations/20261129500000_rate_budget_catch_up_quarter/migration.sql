-- Issue 53: a backlog after an outage may take a quarter of the window at once, not a tenth.
--
-- The cell rate of migration 20261129300000 let 59 writes and read-backs go at once after a quiet
-- stretch (τ = window / 10 at 650/min), then 9.7 a second. A two-broker Kafka outage of 48 s at two
-- payments a second left 97 commands, about 126 Partner requests: the 59 and the pace alone kept the
-- drain over 9 s, beside the payments still arriving, however fast the consumer. τ is now
-- window / 4: up to limit / 5 (130 at 650/min) at once, then r = limit / (window × 1.25), 8.5 a
-- second, while those are in the window. A whole window still holds at most r × (window + τ) = limit
-- of them, so a source that arrives during a burst still waits for one paced slot (0.12 s instead
-- of 0.10 s), never for the window to slide (issue 52; decision 060).
--
-- Same signature and the same body otherwise: the previous release's processes call it once it is
-- applied.

CREATE OR REPLACE FUNCTION rate_budget_try_take(
  p_budget TEXT,
  p_lane TEXT,
  p_rank INTEGER,
  p_waiter TEXT,
  p_limit INTEGER,
  p_window_s DOUBLE PRECISION,
  p_reserve_floor INTEGER,
  p_horizon_ms DOUBLE PRECISION,
  p_pace_s DOUBLE PRECISION,
  p_pace_cap INTEGER,
  p_waiter_ttl_s DOUBLE PRECISION,
  p_source TEXT,
  p_weight DOUBLE PRECISION
) RETURNS TABLE (
  taken BOOLEAN,
  reason TEXT,
  wait_ms DOUBLE PRECISION,
  used INTEGER,
  write_n INTEGER,
  readback_n INTEGER,
  poll_n INTEGER,
  external_n INTEGER
) LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_now TIMESTAMPTZ;
  v_paused TIMESTAMPTZ;
  v_write INTEGER := 0;
  v_readback INTEGER := 0;
  v_poll INTEGER := 0;
  v_external INTEGER := 0;
  v_oldest TIMESTAMPTZ;
  v_used INTEGER := 0;
  v_demand INTEGER;
  v_reserve INTEGER;
  v_allowed INTEGER;
  v_ahead INTEGER;
  v_paced INTEGER;
  v_paced_oldest TIMESTAMPTZ;
  v_mine INTEGER;
  v_others INTEGER;
  v_tolerance DOUBLE PRECISION;
  v_rate DOUBLE PRECISION;
  v_reason TEXT;
  v_wait_ms DOUBLE PRECISION;
BEGIN
  -- The lock is released when the statement's transaction commits, after its commit record is
  -- flushed: under a busy disk that flush, not the work, would be the lock time. A slot row is
  -- worth no flush (a database that crashes loses at most the last few slots, and every process
  -- stops with it), so this transaction's commit does not wait for it.
  PERFORM set_config('synchronous_commit', 'off', true);
  PERFORM pg_advisory_xact_lock(hashtext('rate_budget:' || p_budget));
  v_now := clock_timestamp();
  SELECT s.paused_until INTO v_paused FROM rate_budget_state s WHERE s.budget = p_budget;
  IF v_paused IS NOT NULL AND v_paused > v_now THEN
    v_reason := 'paused';
    v_wait_ms := extract(epoch FROM v_paused - v_now) * 1000;
  ELSE
    DELETE FROM rate_budget_slots s
    WHERE s.budget = p_budget AND s.taken_at <= clock_timestamp() - make_interval(secs => p_window_s);
    DELETE FROM rate_budget_waiters w WHERE w.budget = p_budget AND w.expires_at < clock_timestamp();
    SELECT coalesce(sum(CASE WHEN s.lane = 'write' THEN 1 END), 0)::int,
           coalesce(sum(CASE WHEN s.lane = 'readback' THEN 1 END), 0)::int,
           coalesce(sum(CASE WHEN s.lane = 'poll' THEN 1 END), 0)::int,
           coalesce(sum(CASE WHEN s.lane NOT IN ('write', 'readback', 'poll') THEN 1 END), 0)::int,
           min(s.taken_at)
      INTO v_write, v_readback, v_poll, v_external, v_oldest
      FROM rate_budget_slots s WHERE s.budget = p_budget;
    SELECT count(*)::int INTO v_ahead FROM rate_budget_waiters w
    WHERE w.budget = p_budget AND w.rank < p_rank AND w.id <> p_waiter;
    IF p_lane <> 'poll' THEN
      -- The shares: of this lane's waiters of other sources, those whose next requests come before
      -- ours in the weighted round-robin go first. A source T's k-th next request is placed at
      -- (u_T + k) / w_T, ours at (u_S + 1) / w_S, where u is the source's requests (writes and
      -- read-backs) in the window; a tie goes to the source whose name sorts first. So while two
      -- sources wait, the next slots alternate by weight, and a source that used little of the
      -- window (a small PMS beside a month-end) takes the next free slot.
      SELECT count(*)::int INTO v_mine FROM rate_budget_slots s
      WHERE s.budget = p_budget AND s.lane IN ('write', 'readback')
        AND s.source IS NOT DISTINCT FROM p_source;
      SELECT coalesce(sum(least(w.n, greatest(0,
               CASE WHEN coalesce(w.source, '') < coalesce(p_source, '')
                    THEN floor((v_mine + 1) * w.weight / p_weight - coalesce(u.n, 0))
                    ELSE ceil((v_mine + 1) * w.weight / p_weight - coalesce(u.n, 0)) - 1 END))), 0)::int
        INTO v_others
        FROM (SELECT x.source, count(*) AS n, max(x.weight) AS weight FROM rate_budget_waiters x
              WHERE x.budget = p_budget AND x.rank = p_rank AND x.id <> p_waiter
                AND x.source IS DISTINCT FROM p_source
              GROUP BY x.source) w
        LEFT JOIN (SELECT s.source, count(*) AS n FROM rate_budget_slots s
                   WHERE s.budget = p_budget AND s.lane IN ('write', 'readback')
                   GROUP BY s.source) u ON u.source IS NOT DISTINCT FROM w.source;
      v_ahead := v_ahead + v_others;
    END IF;
    v_used := v_write + v_readback + v_poll + v_external;
    v_demand := v_write + v_readback;
    IF p_lane = 'poll' THEN
      -- The reserve: the higher lanes' last-window demand scaled to the horizon, at least the
      -- floor, at most a tenth of what they leave (rate-budget.ts `reserve`).
      v_reserve := greatest(
        p_reserve_floor,
        least(ceil(v_demand * p_horizon_ms / (p_window_s * 1000))::int, floor((p_limit - v_demand) / 10.0)::int));
      v_allowed := greatest(0, p_limit - v_reserve) - v_ahead;
    ELSE
      v_allowed := p_limit - v_ahead;
    END IF;
    IF v_used >= v_allowed THEN
      v_reason := 'full';
      v_wait_ms := CASE WHEN v_oldest IS NULL THEN 50
                        ELSE extract(epoch FROM v_oldest - v_now) * 1000 + p_window_s * 1000 END;
    ELSIF p_pace_s > 0 AND p_lane = 'poll' THEN
      -- The poll lane's pace: at most p_pace_cap of its slots in any p_pace_s.
      SELECT count(*)::int, min(s.taken_at) INTO v_paced, v_paced_oldest FROM rate_budget_slots s
      WHERE s.budget = p_budget AND s.lane = 'poll'
        AND s.taken_at > clock_timestamp() - make_interval(secs => p_pace_s);
      IF v_paced >= p_pace_cap THEN
        v_reason := 'paced';
        v_wait_ms := extract(epoch FROM v_paced_oldest - v_now) * 1000 + p_pace_s * 1000;
      END IF;
    ELSIF p_pace_s > 0 THEN
      -- The writes' and read-backs' cell rate. The wait is the longest of, for the i-th newest of
      -- their slots (i = 0: none), the time until (i + ahead) / r - τ has passed since it was taken;
      -- ahead of this caller, the waiters who take first. Not positive: this caller may take now.
      v_tolerance := p_window_s / 4;
      v_rate := p_limit / (p_window_s + v_tolerance);
      SELECT greatest(v_ahead / v_rate - v_tolerance,
                      max((r.i + v_ahead) / v_rate - v_tolerance - extract(epoch FROM v_now - r.taken_at)))
        INTO v_wait_ms
        FROM (SELECT s.taken_at, row_number() OVER (ORDER BY s.taken_at DESC) AS i FROM rate_budget_slots s
              WHERE s.budget = p_budget AND s.lane IN ('write', 'readback')) r;
      IF v_wait_ms > 0 THEN
        v_reason := 'paced';
        v_wait_ms := v_wait_ms * 1000;
      END IF;
    END IF;
    IF v_reason IS NULL THEN
      INSERT INTO rate_budget_slots (budget, lane, taken_at, source)
      VALUES (p_budget, p_lane, clock_timestamp(), p_source);
      DELETE FROM rate_budget_waiters w WHERE w.id = p_waiter;
      IF p_lane = 'write' THEN v_write := v_write + 1;
      ELSIF p_lane = 'readback' THEN v_readback := v_readback + 1;
      ELSE v_poll := v_poll + 1;
      END IF;
      RETURN QUERY SELECT true, 'taken'::text, 0::float8, v_used + 1, v_write, v_readback, v_poll, v_external;
      RETURN;
    END IF;
  END IF;
  -- Held (paused, paced or full): a write or read-back waits as a waiter, which the lower lanes
  -- and the other sources see.
  IF p_lane <> 'poll' THEN
    INSERT INTO rate_budget_waiters (id, budget, lane, rank, expires_at, source, weight, since)
    VALUES (p_waiter, p_budget, p_lane, p_rank, clock_timestamp() + make_interval(secs => p_waiter_ttl_s),
            p_source, p_weight, clock_timestamp())
    ON CONFLICT (id) DO UPDATE SET expires_at = EXCLUDED.expires_at;
  END IF;
  RETURN QUERY SELECT false, v_reason, v_wait_ms, v_used, v_write, v_readback, v_poll, v_external;
END;
$$;
