--: REQUIRES base clock windows
-- ---- The window ahead ("<key>:window:ahead") ----
-- Beside the window at bucket t (buckets t - n + 1 .. t), a "fast" window (see window_names)
-- keeps the window ahead: the aggregates over buckets t - n + 2 .. t, the next window as it
-- will be when bucket t + 1 begins (no write lands in t + 1 before that, and bucket t - n + 1
-- no longer matters to it). Every write to bucket t updates it too. At the change to t + 1 the
-- window ahead becomes the window (an O(1) RENAME; a trimmed union refilled with its best
-- max_entries, at most REFILL_MAX entries), and the old window's storage becomes the new window
-- ahead by its job 'L': buckets t - n + 1 and t - n + 2 leave it (leave_chunk), a slice of a few
-- dozen entries done by each later read or write (ahead_slice), so no call waits for it. After
-- a transition in steps (the window ahead not ready: no calls for a whole bucket, a clock that
-- jumped several buckets, a board of the layout before it), the job 'E' builds it from empty:
-- buckets t - n + 2 .. t - 1 enter. Its state is the marker's third word: 'r' (ready), or the
-- job's kind, bucket number k and offset ("L1.0"); absent: no window ahead. A job in progress
-- accepts only writes to bucket t (whose contributions it adds as they come: the jobs read only
-- buckets no write touches); any other change of the buckets it reads (a writer whose clock
-- lags, delete_user) drops the window ahead (the next change then takes steps).
local AHEAD_UNITS = 160  -- a slice: at most about 32 entries, in chunks of 8, and about
local AHEAD_CHUNK_UNITS = 40  -- AHEAD_MICROS (at 100,000 users a chunk of 8 costs ~100 µs:
local AHEAD_MICROS = 50  -- cache misses; on a small window a slice does 4 chunks)
local AHEAD_GUARD_MS = 50

-- The bucket the job works on now (nil: the job is done).
local function job_bucket(win, st)
  local t = st.ready
  if st.ahead == 'L' then
    if st.job_k <= 2 then return t - win.n + st.job_k - 1 end
    return nil
  end
  local b = t - win.n + 1 + st.job_k
  if b <= t - 1 then return b end
  return nil
end

-- Where the job's chunks land (see leave_chunk).
local function ahead_dst(win, st)
  return {key = win.ahead, union = false, keep_first = st.ready - win.n + 2, keep_last = st.ready,
    frac = st.frac, newest_first = st.ready - win.n + 1}
end

-- Drops the window ahead (the next change takes steps).
local function drop_ahead(win, st)
  redis.call('UNLINK', win.ahead)
  st.ahead, st.job_k, st.job_offset = nil, nil, nil
end

-- A slice of the window ahead's job: at most `units` element operations and about AHEAD_MICROS.
local function ahead_slice(win, st, units)
  local dst = ahead_dst(win, st)
  local budget = units
  local clock = redis.call('TIME')
  local started = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  -- The first bucket that leaves (t - n) expires when bucket t ends by the server's clock: a
  -- job still on it then (a reader whose clock lags) might find it gone. Dropped instead.
  if st.ahead == 'L' and st.job_k == 1
    and started / 1000 + AHEAD_GUARD_MS >= (st.ready + 1) * win.bucket_ms then
    drop_ahead(win, st)
  end
  while st.ahead == 'L' or st.ahead == 'E' do
    local b = job_bucket(win, st)
    if not b then
      st.ahead, st.job_k, st.job_offset = 'r', nil, nil
      break
    end
    local taken, spent
    local chunk = math.max(1, math.min(budget, AHEAD_CHUNK_UNITS))
    dst.later = nil
    if st.ahead == 'L' and st.job_k == 1 then
      dst.later = win.prefix .. string.format('%d', b + 1)
    end
    if st.ahead == 'L' then
      taken, spent = leave_chunk(win, dst, b, st.job_offset, chunk)
    else
      taken, spent = enter_chunk(win, dst, b, st.job_offset, chunk)
    end
    if taken == nil then drop_ahead(win, st); break end  -- a bucket of another type
    if taken == 0 then
      st.job_k, st.job_offset = st.job_k + 1, 0
    else
      st.job_offset = st.job_offset + taken
    end
    budget = budget - spent
    if budget <= 0 then break end
    if taken > 0 then  -- (a bucket found done costs a ZRANGE: up to a budget's worth of them)
      clock = redis.call('TIME')
      if tonumber(clock[1]) * 1000000 + tonumber(clock[2]) - started >= AHEAD_MICROS then
        break
      end
    end
  end
  st.frac = dst.frac
  if st.ahead then redis.call('PEXPIREAT', win.ahead, window_deadline(win, st.ready)) end
end

-- Whether the window at st.ready can become the window at st.ready + 1 by the swap: the window
-- ahead ready, and nothing written to the bucket that enters.
local function can_swap(win, st, want)
  if not (win.fast and st.ready and not st.old and not st.target and st.ahead == 'r'
    and want == st.ready + 1) then
    return false
  end
  local key = win.prefix .. string.format('%d', want)
  if check_type(key, 'zset') or check_acl('ZCARD', key) then return false end
  for b = want - win.n, want - win.n + 1 do  -- the buckets its job reads: else steps (and errors)
    local leaving = win.prefix .. string.format('%d', b)
    if check_type(leaving, 'zset') or check_acl('ZRANGE', leaving, '0', '0')
      or check_acl('ZMSCORE', leaving, 'x') then
      return false
    end
  end
  return redis.call('ZCARD', key) == 0
end

-- The window ahead becomes the window (see above); the old window's storage the new window
-- ahead, its job 'L' to do.
local function swap_window(win, st)
  local has_all = redis.call('EXISTS', win.all) == 1
  if redis.call('EXISTS', win.ahead) == 1 then
    if has_all then redis.call('RENAME', win.all, win.swap) end
    redis.call('RENAME', win.ahead, win.all)
    if has_all then
      redis.call('RENAME', win.swap, win.ahead)
      st.ahead, st.job_k, st.job_offset = 'L', 1, 0
    else
      st.ahead = 'r'
    end
  else  -- nobody in buckets t - n + 2 .. t: the next window is empty
    redis.call('UNLINK', win.all, win.newest)
    st.ahead = 'r'
  end
  if not win.unlimited then  -- the union: the best max_entries of the window (replaced)
    if win.desc then  -- REV: a small set is a listpack, each insert found at its head (in
      -- ascending order each insert would scan it all: 2.5x slower at 100)
      redis.call('ZRANGESTORE', win.union, win.all, 0, win.max_entries - 1, 'REV')
    else
      redis.call('ZRANGESTORE', win.union, win.all, -win.max_entries, -1, 'REV')  -- the same
    end
  end
  st.ready = st.ready + 1
end

-- A slice of the window ahead's job, if one is under way (a write's, after it was applied).
local function slice_window(win, st)
  if st.ahead ~= 'L' and st.ahead ~= 'E' then return end
  local slice = AHEAD_UNITS
  local step = redis.call('GET', win.step_key)
  if step and tonumber(step) and tonumber(step) >= 1 then slice = math.min(slice, tonumber(step)) end
  ahead_slice(win, st, slice)
  redis.call('SET', win.marker, state_text(st), 'KEEPTTL')
end

-- Brings the window to bucket `want` (never back: a reader whose clock lags reads the newer
-- window): by the swap if the window ahead is ready for it, else finishing a transition under
-- way first, in steps of at most the step's units; a window already there does a slice of the
-- window ahead's job, if any (unless `no_slice`: a write does it once it is applied, see
-- slice_window).
-- Returns true (done: the marker says the window is complete for `want` or a later bucket),
-- false (more steps needed: the position is recorded), or nil and an error reply (before
-- anything was changed by this call's step).
local function refresh_window(win, want, no_slice)
  local err = check_acl('GET', win.marker) or check_type(win.marker, 'string')
  if err then return nil, err end
  local st = window_state(win)
  local ready = st.ready and not st.old and not st.target and st.ready >= want
  if ready and (no_slice or not st.ahead or st.ahead == 'r') then return true end
  if ready then  -- a slice of the window ahead's job
    err = check_slice(win)
    if err then return nil, err end
    slice_window(win, st)
    return true
  end
  if can_swap(win, st, want) and not check_swap(win) then
    swap_window(win, st)
    local deadline = expire_window(win, st.ready)
    redis.call('SET', win.marker, state_text(st), 'PXAT', deadline)
    return true
  end
  err = check_window(win)
  if err then return nil, err end
  -- A bucket expires one bucket after it left the window (window_deadline), and a transition
  -- subtracts the buckets that leave from the window's aggregates: the oldest of them, bucket
  -- ready - n + 1, is gone once the server's clock reaches bucket ready + 2. From then on a
  -- transition (starting, or under way since) counts the window afresh from its own buckets.
  if st.ready and not st.old and server_ms() >= (st.ready + 2) * win.bucket_ms then
    st = {frac = false}
  end
  local units = STEP_UNITS
  local step = redis.call('GET', win.step_key)
  if step and tonumber(step) and tonumber(step) >= 1 then units = tonumber(step) end
  local budget = units
  local clock = redis.call('TIME')
  local started = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  while true do
    if not st.target then
      if st.ready and not st.old and st.ready >= want then
        if budget ~= units then  -- this call changed the window: its marker and deadlines
          local deadline = expire_window(win, st.ready)
          redis.call('SET', win.marker, state_text(st), 'PXAT', deadline)
        end
        return true
      end
      -- A transition starts: to `want`, or afresh. Every bucket it may read is checked first.
      if st.old then st = {frac = false} end
      local from = want - win.n + 1
      if st.ready and want - st.ready < win.n then from = st.ready - win.n + 1 end
      for b = from, want do
        local key = win.prefix .. string.format('%d', b)
        err = check_type(key, 'zset') or check_acl('ZRANGE', key, '0', '0')
          or check_acl('ZMSCORE', key, 'x')
        if err then break end
      end
      if err then  -- what this call did before is kept (a transition it finished)
        if budget ~= units then
          local deadline = expire_window(win, st.ready)
          redis.call('SET', win.marker, state_text(st), 'PXAT', deadline)
        end
        return nil, err
      end
      st.target, st.k, st.offset = want, 1, 0
      st.ahead, st.job_k, st.job_offset = nil, nil, nil  -- the window ahead is built afresh after
      redis.call('UNLINK', win.ahead, win.swap)
      if win.old_all ~= win.all then redis.call('UNLINK', win.old_all) end
      if not st.ready or want - st.ready >= win.n then
        redis.call('UNLINK', win.all, win.newest, win.union)
        st.ready, st.frac = nil, false
      end
      budget = budget - 1
    end
    local reset, leave_first, leaving, enter_first, entering = transition_plan(win, st)
    local dst = {key = win.all, union = true, keep_first = st.target - win.n + 1,
      keep_last = st.ready, frac = st.frac, newest_first = st.target - win.n + 1}
    local taken, spent
    if st.k <= leaving then
      taken, spent = leave_chunk(win, dst, leave_first + st.k - 1, st.offset, math.max(1, budget))
    elseif st.k <= leaving + entering then
      taken, spent = enter_chunk(win, dst, enter_first + st.k - leaving - 1, st.offset,
        math.max(1, budget))
    elseif st.k == leaving + entering + 1 then
      taken, spent = refill_chunk(win, st, math.max(1, budget))
    elseif st.k == leaving + entering + 2 then
      taken, spent = trim_chunk(win, math.max(1, budget))
    else
      st = {ready = st.target, frac = st.frac}
      if win.fast and win.n >= 2 then  -- the window ahead, built by later calls (job 'E')
        local key = win.prefix .. string.format('%d', st.ready)
        if not check_acl('ZCARD', key) and redis.call('ZCARD', key) == 0 then
          st.ahead, st.job_k, st.job_offset = 'E', 1, 0
        end
      end
      taken, spent = 0, 1
    end
    st.frac = dst.frac
    if taken == nil then  -- a bucket of another type: what this call did is kept, then the error
      if budget ~= units then
        local deadline = expire_window(win, st.target or st.ready)
        redis.call('SET', win.marker, state_text(st), 'PXAT', deadline)
      end
      return nil, spent
    end
    if st.target then
      if taken == 0 then
        st.k, st.offset = st.k + 1, 0
      elseif st.k <= leaving + entering + 1 then
        st.offset = st.offset + taken
      end
    end
    budget = budget - spent
    if budget > 0 and st.target then  -- out of time?
      clock = redis.call('TIME')
      if tonumber(clock[1]) * 1000000 + tonumber(clock[2]) - started >= STEP_MICROS then
        budget = 0
      end
    end
    if budget <= 0 and (st.target or st.ready < want) then
      local deadline = expire_window(win, st.target or st.ready)
      redis.call('SET', win.marker, state_text(st), 'PXAT', deadline)
      return false
    end
  end
end
