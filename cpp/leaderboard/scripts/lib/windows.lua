--: REQUIRES base options
-- ---- Rolling windows (issues 16 and 30) -----------------------------------------------------
-- A rolling board "<key>" keeps each bucket's scores in "<key>:bucket:<i>" (i: unix ms divided by
-- the bucket's length, rounded down), each expiring when it has left the window for one more
-- bucket ((i + 1) * bucket + window). The window ending with bucket c holds buckets c - n + 1 ..
-- c (n = window / bucket). Kept up to date incrementally, never rebuilt whole:
--   "<key>:window:all"     every user's aggregate over the window's buckets (untrimmed);
--   "<key>:window:newest"  every user's newest bucket in the window (its score: the bucket i),
--                          so a user leaves the window when its newest bucket does;
--   "<key>"                the window's board, the guide's layout, so every read of a plain board
--                          reads it, metadata ("<key>:user:<id>") included: a subset of :all,
--                          with the same scores, the best max_entries as of the last bucket
--                          change, then writes (a user trimmed away comes back by writing, or at
--                          the next bucket change);
--   "<key>:window"         the marker, "<c> <f>": the window is complete for bucket c (-1: none);
--                          f = 1 once a score that is not an integer of magnitude < 2^53 was
--                          written since the window was last started afresh (sums are then
--                          recounted from the buckets, never subtracted: no float drift).
--                          During a transition to bucket t: "<c> <f> <t> <k> <offset>".
-- A transition from c to t (a read or write for a later bucket): the buckets that leave (c - n +
-- 1 .. t - n) are subtracted from :all (sum: ZINCRBY-like arithmetic on integers, else a recount
-- of the user from the buckets that stay; max/min: a user whose aggregate is its score in the
-- leaving bucket is recounted from the buckets that stay; a user whose newest bucket leaves is
-- removed), then the buckets that enter (c + 1 .. t: empty unless written behind the window's
-- back) added, every change applied to "<key>" too for the users it holds; then "<key>" refilled
-- with the best max_entries of :all and trimmed. When t - c >= n (or no window, or a marker of
-- the old format: a board written before the window was kept incrementally), :all, :newest and
-- "<key>" are dropped and the n buckets of t added. The work is done in steps of at most
-- STEP_UNITS element operations and about STEP_MICROS per script call ("<key>:window:step", if
-- set, an integer: fewer units, for tests), the position recorded in the marker; every read,
-- write, delete finishes the transition first (a read: its refresh call says 'not yet', and
-- the client calls again; a write: group.lua replies WINDOWBUSY having written nothing of the
-- write, and the client sends it again), so no read or write ever sees a half-done window, and
-- nothing changes a bucket during a transition.
-- "<key>:options" records order=asc, and a window's guards (see plan_window in group.lua).
-- `win`: union, marker, options, prefix ("<key>:bucket:"), bucket (c, a number), bucket_ms,
-- window_ms, aggregate ('sum' | 'max' | 'min'), desc, max_entries.

local STEP_UNITS = 2000
-- ... and at most this long (µs, the server's clock, read between chunks of at most CHUNK_ROWS
-- entries): on a large window an entry costs more (cache misses).
local STEP_MICROS = 2000
local CHUNK_ROWS = 64
-- What one entry of a bucket costs a step (a ZRANGE's, two ZMSCOREs', two ZADDs' share).
local ROW_UNITS = 5
local EXACT = 2 ^ 53

-- The buckets in the window ending with bucket `last`, oldest first: n = window / bucket.
local function window_buckets(win, last)
  local keys, n = {}, win.window_ms / win.bucket_ms
  for i = last - n + 1, last do keys[#keys + 1] = win.prefix .. string.format('%d', i) end
  return keys
end

-- When the window ending with bucket `last` ends for good: its newest bucket's deadline.
local function window_deadline(win, last)
  return string.format('%d', (last + 1) * win.bucket_ms + win.window_ms)
end

-- Whether x is an integer that sums of integers keep exact.
local function exact_number(x)
  return x == math.floor(x) and x > -EXACT and x < EXACT
end

-- The window's derived key names. An unlimited board (max_entries >= UNLIMITED: no write ever
-- trims) keeps its aggregates in the union itself (":window:all" is then the union: the
-- layout before the window-ahead kept a copy there, "old_all", dropped by the next transition).
-- A window whose union is refilled cheaply (unlimited, or max_entries <= REFILL_MAX) keeps the
-- next window ready ("fast").
local REFILL_MAX = 1000
local function window_names(win)
  win.old_all = win.union .. ':window:all'
  win.unlimited = win.max_entries ~= nil and win.max_entries >= UNLIMITED
  win.all = win.unlimited and win.union or win.old_all
  win.newest = win.union .. ':window:newest'
  win.ahead = win.union .. ':window:ahead'
  win.swap = win.union .. ':window:swap'
  win.step_key = win.union .. ':window:step'
  win.n = win.window_ms / win.bucket_ms
  win.fast = win.unlimited or (win.max_entries ~= nil and win.max_entries <= REFILL_MAX)
  return win
end

-- The marker, parsed: {text, ready (a bucket or nil), frac, old (a marker of the old format:
-- rebuild), target, k, offset (a transition's, or nil)}.
local function window_state(win)
  local text = redis.call('GET', win.marker)
  local st = {text = text, frac = false}
  if not text then return st end
  local f = {}
  for word in string.gmatch(text, '%S+') do f[#f + 1] = word end
  if #f < 2 or #f > 5 or #f == 4 then st.old = true; return st end
  st.ready = tonumber(f[1])
  if st.ready and st.ready < 0 then st.ready = nil end
  st.frac = f[2] == '1'
  if #f == 5 then st.target, st.k, st.offset = tonumber(f[3]), tonumber(f[4]), tonumber(f[5]) end
  if #f == 3 then  -- the window ahead: 'r' (ready), or its job: '<L|E><k>.<offset>'
    if f[3] == 'r' then
      st.ahead = 'r'
    else
      local kind, k, offset = string.match(f[3], '^([LE])(%d+)%.(%d+)$')
      if kind then st.ahead, st.job_k, st.job_offset = kind, tonumber(k), tonumber(offset) end
    end
  end
  return st
end

-- The marker's text for `st`.
local function state_text(st)
  local text = string.format('%d', st.ready or -1) .. (st.frac and ' 1' or ' 0')
  if st.target then
    text = text .. ' ' .. string.format('%d %d %d', st.target, st.k, st.offset)
  elseif st.ahead == 'r' then
    text = text .. ' r'
  elseif st.ahead then
    text = text .. ' ' .. st.ahead .. string.format('%d.%d', st.job_k, st.job_offset)
  end
  return text
end

-- x and y combined by the window's aggregate (nil: none); inf + -inf is 0 (ZUNIONSTORE's rule).
local function aggregate_of(win, x, y)
  if x == nil then return y end
  if y == nil then return x end
  if win.aggregate == 'sum' then
    local z = x + y
    if z ~= z then return 0 end
    return z
  end
  if win.aggregate == 'max' then return math.max(x, y) end
  return math.min(x, y)
end

-- nil, or the first error of the checks before a transition step: the types of the window's
-- keys and the caller's permissions for what a step runs.
local function check_window(win)
  window_names(win)
  local err = check_type(win.union, 'zset') or check_type(win.marker, 'string')
    or check_type(win.options, 'hash') or check_type(win.all, 'zset')
    or check_type(win.newest, 'zset') or check_type(win.step_key, 'string')
    or check_acl('GET', win.marker) or check_acl('SET', win.marker, '0')
    or check_acl('GET', win.step_key) or check_acl('TIME')
    or check_acl('ZCARD', win.union) or check_acl('ZREMRANGEBYRANK', win.union, '0', '0')
    or check_acl('ZADD', win.union, '0', 'x') or check_acl('ZREM', win.union, 'x')
    or check_acl('PEXPIREAT', win.union, '0') or check_acl('UNLINK', win.union)
    or check_acl('ZMSCORE', win.all, 'x') or check_acl('ZADD', win.all, '0', 'x')
    or check_acl('ZREM', win.all, 'x') or check_acl('ZRANGE', win.all, '0', '0')
    or check_acl('ZCARD', win.all) or check_acl('PEXPIREAT', win.all, '0')
    or check_acl('UNLINK', win.all)
    or check_acl('ZMSCORE', win.newest, 'x') or check_acl('ZADD', win.newest, '0', 'x')
    or check_acl('ZREM', win.newest, 'x') or check_acl('PEXPIREAT', win.newest, '0')
    or check_acl('UNLINK', win.newest)
    or check_acl('PEXPIREAT', win.options, '0') or check_acl('HSET', win.options, 'order', 'asc')
    or check_type(win.ahead, 'zset') or check_type(win.swap, 'zset')
    or check_acl('ZMSCORE', win.ahead, 'x') or check_acl('ZADD', win.ahead, '0', 'x')
    or check_acl('ZREM', win.ahead, 'x') or check_acl('PEXPIREAT', win.ahead, '0')
    or check_acl('UNLINK', win.ahead) or check_acl('UNLINK', win.swap)
    or check_acl('UNLINK', win.old_all) or check_acl('EXISTS', win.all)
    or check_acl('EXISTS', win.ahead) or check_acl('RENAME', win.all, win.swap)
    or check_acl('RENAME', win.ahead, win.all) or check_acl('RENAME', win.swap, win.ahead)
    or check_acl('ZRANGESTORE', win.union, win.all, '0', '0')
  return err
end

-- nil, or the first error of the checks before a slice of the window ahead's job (fewer than
-- check_window's: a slice touches only the window ahead, :newest and the marker).
local function check_slice(win)
  return check_type(win.ahead, 'zset') or check_type(win.newest, 'zset')
    or check_acl('ZMSCORE', win.ahead, 'x') or check_acl('ZADD', win.ahead, '0', 'x')
    or check_acl('ZREM', win.ahead, 'x') or check_acl('PEXPIREAT', win.ahead, '0')
    or check_acl('UNLINK', win.ahead) or check_acl('ZMSCORE', win.newest, 'x')
    or check_acl('ZADD', win.newest, '0', 'x') or check_acl('ZREM', win.newest, 'x')
    or check_acl('SET', win.marker, '0') or check_acl('GET', win.step_key)
    or check_type(win.step_key, 'string') or check_acl('TIME')
end

-- nil, or the first error of the checks before the swap (see swap_window).
local function check_swap(win)
  return check_type(win.union, 'zset') or check_type(win.all, 'zset')
    or check_type(win.ahead, 'zset') or check_type(win.swap, 'zset')
    or check_type(win.newest, 'zset') or check_type(win.options, 'hash')
    or check_acl('EXISTS', win.all) or check_acl('EXISTS', win.ahead)
    or check_acl('RENAME', win.all, win.swap) or check_acl('RENAME', win.ahead, win.all)
    or check_acl('RENAME', win.swap, win.ahead) or check_acl('UNLINK', win.all)
    or check_acl('ZRANGESTORE', win.union, win.all, '0', '0')
    or check_acl('PEXPIREAT', win.union, '0') or check_acl('PEXPIREAT', win.all, '0')
    or check_acl('PEXPIREAT', win.newest, '0') or check_acl('PEXPIREAT', win.ahead, '0')
    or check_acl('PEXPIREAT', win.options, '0') or check_acl('HSET', win.options, 'order', 'asc')
    or check_acl('SET', win.marker, '0') or check_acl('ZCARD', win.union)
end

-- Removes the worst entries of the union beyond max_entries (their buckets, metadata and
-- :all entries stay: they may climb back); returns their ids, worst first.
local function trim_window(win)
  local over = redis.call('ZCARD', win.union) - win.max_entries
  if over <= 0 then return {} end
  if win.desc then
    local ids = redis.call('ZRANGE', win.union, 0, over - 1)
    redis.call('ZREMRANGEBYRANK', win.union, 0, over - 1)
    return ids
  end
  local ids = redis.call('ZRANGE', win.union, 0, over - 1, 'REV')
  redis.call('ZREMRANGEBYRANK', win.union, -over, -1)
  return ids
end

-- A transition's plan: reset (start afresh), the first leaving bucket and how many leave, the
-- first entering bucket and how many enter.
local function transition_plan(win, st)
  local t, c = st.target, st.ready
  if not c or t - c >= win.n then return true, 0, 0, t - win.n + 1, win.n end
  return false, c - win.n + 1, t - c, c + 1, t - c
end

-- ZMSCORE of `members` in `key`, as numbers (false: absent).
local function scores_of(key, members)
  local found = redis.call('ZMSCORE', key, unpack(members))
  for i = 1, #found do found[i] = found[i] and tonumber(found[i]) end
  return found
end

-- ZADD key [flag] score member ... for the parallel lists (nothing if empty).
local function add_all(key, flag, members, values)
  if #members == 0 then return end
  local args = {'ZADD', key}
  if flag then args[#args + 1] = flag end
  for i = 1, #members do
    args[#args + 1] = score_text(values[i])
    args[#args + 1] = members[i]
  end
  redis.call(unpack(args))
end

-- Each of `members` recounted from the buckets first .. last (oldest first): the aggregate of
-- its scores there, or false (in none). Costs a ZMSCORE per bucket.
local function recount_members(win, members, first, last)
  local totals = {}
  for i = 1, #members do totals[i] = false end
  if #members == 0 then return totals end
  for b = first, last do
    local found = scores_of(win.prefix .. string.format('%d', b), members)
    for i = 1, #members do
      if found[i] then totals[i] = aggregate_of(win, totals[i] or nil, found[i]) end
    end
  end
  return totals
end

-- Where a chunk lands: `dst` = {key (:all or :ahead), union (true: the union too, for the users
-- it holds), keep_first, keep_last (the buckets that stay), frac, newest_first (a user leaving
-- whose newest bucket is older than this leaves :newest too)}.
-- One chunk of a leaving bucket: at most `units` element operations. Returns the rows it took
-- (0: the bucket is done) and the units spent, or nil and an error.
local function leave_chunk(win, dst, bucket, offset, units)
  local key = win.prefix .. string.format('%d', bucket)
  local err = check_type(key, 'zset') or check_acl('ZRANGE', key, '0', '0')
    or check_acl('ZMSCORE', key, 'x')
    or (dst.later and (check_type(dst.later, 'zset') or check_acl('ZMSCORE', dst.later, 'x')))
  if err then return nil, err end
  local keep_first, keep_last = dst.keep_first, dst.keep_last  -- the buckets that stay
  -- A recount: a ZMSCORE per bucket that stays (2 units a call), a quarter unit a user a call.
  local kept = math.max(0, keep_last - keep_first + 1)
  local recount_cost = math.ceil(kept / 4)
  local want = math.max(1, math.min(CHUNK_ROWS, math.floor(units / ROW_UNITS)))
  local rows = redis.call('ZRANGE', key, offset, offset + want - 1, 'WITHSCORES')
  if #rows == 0 then return 0, 1 end
  local members, values = {}, {}
  for i = 1, #rows, 2 do
    members[#members + 1] = rows[i]
    values[#values + 1] = tonumber(rows[i + 1])
  end
  local totals = scores_of(dst.key, members)
  local newest = scores_of(win.newest, members)
  -- A user also in a bucket that leaves later in the same job is not removed yet: a write may
  -- bring it back meanwhile (the window ahead's job runs between writes), and that bucket's
  -- score is then subtracted from what the write left.
  local later = dst.later and scores_of(dst.later, members) or {}
  local spent, taken = 0, 0
  local gone, changed, new_values, recount, stale = {}, {}, {}, {}, {}
  for i = 1, #members do
    local a = totals[i]
    spent = spent + ROW_UNITS
    if a then
      if newest[i] and newest[i] < keep_first and not later[i] then
        gone[#gone + 1] = members[i]
        if newest[i] < dst.newest_first then stale[#stale + 1] = members[i] end
      elseif win.aggregate == 'sum' and not dst.frac then
        changed[#changed + 1] = members[i]
        new_values[#new_values + 1] = a - values[i]
      elseif win.aggregate == 'sum' or a == values[i] then
        recount[#recount + 1] = members[i]
        spent = spent + recount_cost + (#recount == 1 and 2 * kept or 0)
      end
    end
    taken = i
    if spent >= units then break end
  end
  local recounted = recount_members(win, recount, keep_first, keep_last)
  for i = 1, #recount do
    if recounted[i] then
      changed[#changed + 1] = recount[i]
      new_values[#new_values + 1] = recounted[i]
    else
      gone[#gone + 1] = recount[i]
    end
  end
  add_all(dst.key, nil, changed, new_values)
  if dst.union then add_all(win.union, 'XX', changed, new_values) end
  for i = 1, #gone, 1000 do
    local slice = {unpack(gone, i, math.min(i + 999, #gone))}
    redis.call('ZREM', dst.key, unpack(slice))
    if dst.union then redis.call('ZREM', win.union, unpack(slice)) end
  end
  for i = 1, #stale, 1000 do
    redis.call('ZREM', win.newest, unpack(stale, i, math.min(i + 999, #stale)))
  end
  return taken, spent
end

-- One chunk of an entering bucket (see leave_chunk).
local function enter_chunk(win, dst, bucket, offset, units)
  local key = win.prefix .. string.format('%d', bucket)
  local err = check_type(key, 'zset') or check_acl('ZRANGE', key, '0', '0')
  if err then return nil, err end
  local want = math.max(1, math.min(CHUNK_ROWS, math.floor(units / ROW_UNITS)))
  local rows = redis.call('ZRANGE', key, offset, offset + want - 1, 'WITHSCORES')
  if #rows == 0 then return 0, 1 end
  local members, values, newest = {}, {}, {}
  for i = 1, #rows, 2 do
    members[#members + 1] = rows[i]
    local v = tonumber(rows[i + 1])
    values[#values + 1] = v
    newest[#newest + 1] = bucket
    if not exact_number(v) then dst.frac = true end
  end
  local totals = scores_of(dst.key, members)
  for i = 1, #members do totals[i] = aggregate_of(win, totals[i] or nil, values[i]) end
  add_all(dst.key, nil, members, totals)
  add_all(win.newest, 'GT', members, newest)
  if dst.union then add_all(win.union, 'XX', members, totals) end
  return #members, ROW_UNITS * #members
end

-- One chunk of the refill: the union gets :all's best max_entries (ranks offset ..), then the
-- trim. Returns the rows taken (0: done) and the units spent.
local function refill_chunk(win, st, units)
  local size = redis.call('ZCARD', win.all)
  if st.offset == 0 and redis.call('ZCARD', win.union) == size then return 0, 2 end
  local stop = math.min(win.max_entries, size)
  if st.offset >= stop then return 0, 1 end
  local want = math.max(1, math.min(4 * CHUNK_ROWS, math.floor(units / 2), stop - st.offset))
  local rows
  if win.desc then
    rows = redis.call('ZRANGE', win.all, st.offset, st.offset + want - 1, 'REV', 'WITHSCORES')
  else
    rows = redis.call('ZRANGE', win.all, st.offset, st.offset + want - 1, 'WITHSCORES')
  end
  local members, values = {}, {}
  for i = 1, #rows, 2 do
    members[#members + 1] = rows[i]
    values[#values + 1] = tonumber(rows[i + 1])
  end
  add_all(win.union, nil, members, values)
  return math.max(1, #members), 2 * #members
end

-- One chunk of the trim: the worst of the union beyond max_entries, at most `units` of them.
local function trim_chunk(win, units)
  local over = redis.call('ZCARD', win.union) - win.max_entries
  if over <= 0 then return 0, 1 end
  local count = math.max(1, math.min(over, units, 4 * CHUNK_ROWS))
  if win.desc then
    redis.call('ZREMRANGEBYRANK', win.union, 0, count - 1)
  else
    redis.call('ZREMRANGEBYRANK', win.union, -count, -1)
  end
  return count, count
end

-- Sets the deadlines of the window's keys for the window ending with bucket `last`.
local function expire_window(win, last)
  local deadline = window_deadline(win, last)
  for _, key in ipairs({win.union, win.all, win.newest, win.ahead}) do
    redis.call('PEXPIREAT', key, deadline)
  end
  if not win.desc then
    redis.call('HSET', win.options, 'order', 'asc', 'ties', 'lexicographic')
    redis.call('PEXPIREAT', win.options, deadline)
  end
  return deadline
end
