#!lua
-- LeaderboardGroup.submit and the writes of rolling windows: one user's score and
-- metadata written to several boards, atomically: every board's write is planned (every check
-- that can fail) before any is applied, so a refused one leaves every board untouched. No flags:
-- Redis 7 refuses it up front when out of memory.
--: KEYS member_keys...: each member's keys in turn (below)
--: ARGV user_id: the user
--: ARGV number: the score, or the amount of an 'incr'
--: ARGV members: the number of members
--: ARGV member_words...: 9 words per member (below), then the metadata: field, value, ...
-- A member's keys:
--   a board:  its sorted set, the user's metadata hash, its option keys (see board_spec), the
--             keys of its guard words;
--   a window: its bucket's sorted set "<key>:bucket:<i>", the user's metadata hash
--             "<key>:user:<id>", the union "<key>", its marker "<key>:window", its options hash
--             "<key>:options" (see refresh_window in lib/window_ahead.lua), the keys of its
--             guard words.
-- A member's 9 words:
--   a board:  'board', mode, order, ties, max_entries, the number of its keys, '', '', its spec
--             words or '' (as write.lua's guard words: see GUARD_WORDS in lib/guards.lua, the
--             keys of those that name one the board's last)
--   a window: 'window', mode, order, aggregate ('sum' | 'max' | 'min'), max_entries, bucket i
--             (the caller's clock's; the write goes to the server's clock's bucket, see
--             check_clock in lib/clock.lua), bucket length (ms), window length (ms), its spec words
--             or '' (a board's guard words: 'sid', 'rate', 'events', their keys last, then
--             'range', 'maxinc'; see plan_window)
--   (mode: 'set' | 'best' | 'incr').
-- A member whose spec has 'sid:<ttl ms>' (a submission id: its record "<scope>:submission:<id>",
-- see read_submission in lib/submissions.lua) applies the write once, as write.lua: a repeat
-- writes nothing there and replies with the result stored by the first, then 1 (else 0) and the
-- key of the board the first landed on. The members are independent: a member whose id was
-- applied replies its stored result while the others are written; an id applied for another user
-- or payload refuses the whole write (SUBMISSIONREUSED). A window whose transition to the write's
-- bucket takes more than a step (see refresh_window in lib/window_ahead.lua): the reply is the
-- status WINDOWBUSY, nothing of the write done (a step of the transition was): the client sends
-- the write again. Returns one reply per member, submit()'s (see apply_write): {trimmed_ids,
-- score, rank or false, metadata, previous score or false, previous rank or false, 1 if changed
-- else 0[, with a submission id: 1 if a duplicate else 0, the key of the board written]}; for a
-- window, of its union (the window's board): the ids are those the write pushed out of its
-- max_entries (their buckets and metadata stay), the scores the window's aggregates.

local WORDS = 9
members = tonumber(members)
local first_field = member_words_at + WORDS * members

-- The union's order: ZREVRANK for 'desc'.
local function window_rank(win, user)
  if win.desc then return redis.call('ZREVRANK', win.union, user) end
  return redis.call('ZRANK', win.union, user)
end

-- Before any write: the user's window score for the window ending with bucket `last` if its
-- score in the write's bucket were `score`, counted from the buckets oldest first (as a rebuild
-- would: exact, whatever the scores), or nil and the error reply (a bucket of another type, a
-- denied ZSCORE). ZSCORE checks each bucket's type as it reads it (TYPE runs only for the
-- message).
local function count_window(win, last, score, first)
  local total
  local keys = window_buckets(win, last)
  if first then  -- only the buckets first .. last
    keys = {}
    for i = first, last do keys[#keys + 1] = win.prefix .. string.format('%d', i) end
  end
  for _, key in ipairs(keys) do
    if key == win.bucket_key then
      total = aggregate_of(win, total, score)
    else
      local err = check_acl('ZSCORE', key, user_id)
      if err then return nil, err end
      local text = redis.pcall('ZSCORE', key, user_id)
      if type(text) == 'table' and text.err then return nil, check_type(key, 'zset') or text end
      if text then total = aggregate_of(win, total, tonumber(text)) end
    end
  end
  return total
end

-- A window's write, planned: every check, the window brought to the write's bucket (see
-- refresh_window: when that takes more than a step, nothing of the write is done and the reply
-- is the status WINDOWBUSY: the client sends the write again), the bucket's new score and the
-- user's new window score.
-- A window aggregate `current` (nil: none) after the user's score in the written bucket goes from
-- `old` (nil: none) to `score`, where it follows from them alone (a whole-number sum, a max that
-- does not go down, a min that does not go up); nil where the buckets must be counted again.
local function updated_aggregate(win, current, old, score)
  if win.aggregate == 'sum' and not win.frac then return (current or 0) - (old or 0) + score end
  if win.aggregate == 'max' and (not old or score >= old) then
    return math.max(current or score, score)
  end
  if win.aggregate == 'min' and (not old or score <= old) then
    return math.min(current or score, score)
  end
  return nil
end

-- A window's guards are a board's, run by the same functions (plan_guards,
-- check_score_limits, apply_guards) on `b`, a board spec of the union (lexicographic ties): the
-- rate limit over the server's clock (the user's window "<key>:rate:<id>", whatever the bucket),
-- score limits on the user's bucket score (what one write claims; a window's sum is many claims),
-- events about the union (the aggregate, ranks, overtaken and trimmed: add_event's, with the
-- union's state before the write). Checked before the window's transition step, so a refusal
-- changes nothing at all. A bucket leaving the window appends no event.
local function plan_window(win)
  window_names(win)
  local bucket, user_key = win.bucket_key, win.user_key
  local err = check_acl(win.mode == 'incr' and 'ZINCRBY' or 'ZADD', bucket, number, user_id)
    or check_acl('ZSCORE', bucket, user_id) or check_acl('PEXPIREAT', bucket, '0')
    or check_acl('ZSCORE', win.union, user_id) or check_acl('ZADD', win.union, '0', user_id)
    or check_acl(win.desc and 'ZREVRANK' or 'ZRANK', win.union, user_id)
    or check_acl('ZSCORE', win.all, user_id) or check_acl('ZADD', win.all, '0', user_id)
    or check_acl('ZADD', win.newest, '0', user_id) or check_acl('PEXPIREAT', win.all, '0')
    or check_acl('PEXPIREAT', win.newest, '0') or check_acl('SET', win.marker, '0')
    or check_acl('HGETALL', user_key) or check_acl('PTTL', user_key)
    or check_acl('PEXPIREAT', user_key, '0')
    or (#ARGV >= first_field and check_acl('HSET', user_key, ARGV[first_field], ARGV[first_field + 1] or ''))
    or check_acl('HGETALL', win.options)
    or check_acl('GET', win.marker) or check_acl('ZCARD', win.union)
    or check_acl('ZRANGE', win.union, '0', '0') or check_acl('ZREMRANGEBYRANK', win.union, '0', '0')
    or check_acl('PEXPIREAT', win.union, '0') or check_acl('TIME')
    or check_type(bucket, 'zset') or check_type(user_key, 'hash')
  if err then return nil, err end
  err = check_type(win.union, 'zset') or check_type(win.marker, 'string')
    or check_type(win.options, 'hash') or check_type(win.all, 'zset')
    or check_type(win.newest, 'zset')
  if err then return nil, err end
  -- The recorded options: an 'asc' window records its order (expire_window in lib/windows.lua),
  -- a window with guards their fields, as a board's (check_guards in lib/guards.lua); another
  -- order, or a field no window writes, is refused.
  local b = {board = win.union, options = win.options, desc = win.desc, ranked = win.union,
    order = win.desc and 'desc' or 'asc', ties = 'lexicographic', shared = false,
    position_command = win.desc and 'ZREVRANK' or 'ZRANK'}
  local recorded, order, ties, other = redis.call('HGETALL', win.options), nil, nil, nil
  for i = 1, #recorded, 2 do
    local field, value = recorded[i], recorded[i + 1]
    if field == 'rate_limit' then b.recorded_rate = value
    elseif field == 'events' then b.recorded_events = value
    elseif field == 'score_range' then b.recorded_range = value
    elseif field == 'max_increment' then b.recorded_maxinc = value
    elseif field == 'order' then order = value
    elseif field == 'ties' then ties = value
    else other = true end
  end
  if (order and order ~= b.order) or (ties and ties ~= 'lexicographic')
    or (win.desc and (order or other)) then
    return nil, options_status(order or '?', ties or '?', b.recorded_rate, b.recorded_events,
      b.recorded_range, b.recorded_maxinc)
  end
  -- Guards, as a board's write (plan_guards in lib/submissions.lua): the options they record,
  -- an id applied before (its stored result, nothing written), the rate limit; applied by
  -- apply_guards after the window's write.
  if win.rate_key or win.events_key or win.limits then
    win.board, win.b = win.union, b
    win.guards, err = plan_guards(b, win)
    if not win.guards then return nil, err end
  elseif records_guards(b) then  -- a client without the recorded guards would bypass them
    return nil, recorded_status(b)
  elseif win.submission_key then  -- an id applied before: its stored result, nothing written
    err = check_submission(win)
    if err then return nil, err end
  end
  -- The bucket's new score: as mode says, in the board's order.
  local old_text = redis.call('ZSCORE', bucket, user_id)
  local old = old_text and tonumber(old_text)
  local score
  score, err = next_score(win, {number = number, mode = win.mode}, old)
  if not score then return nil, err end
  if win.limits then  -- fair play: on the bucket's score (see RollingLeaderboard's docstring)
    err = check_score_limits(b, win, score, old)
    if err then return nil, err end
  end
  -- The window at the write's bucket (or a later one: a client whose clock lags).
  local done
  done, err = refresh_window(win, win.bucket, true)
  if err then return nil, err end
  if not done then return nil, redis.status_reply('WINDOWBUSY') end
  local st = window_state(win)
  win.state, win.last = st, st.ready
  win.in_window = win.bucket > st.ready - win.n
  win.frac = st.frac or not exact_number(score)
  if win.in_window then
    -- The user's window score: from :all (its aggregate now) where that is exact, else counted
    -- from the buckets.
    local a_text = redis.call('ZSCORE', win.all, user_id)
    local total = updated_aggregate(win, a_text and tonumber(a_text), old, score)
    if total == nil then
      total, err = count_window(win, st.ready, score)
      if err then return nil, err end
    end
    win.total = total
  end
  -- The window ahead (see ahead_slice in lib/window_ahead.lua): the user's aggregate there too,
  -- or dropped (a write to a bucket its job in progress reads).
  if st.ahead == 'L' or st.ahead == 'E' then  -- what the slice after the write may run
    err = check_slice(win)
    if err then return nil, err end
  end
  if st.ahead then
    local first = st.ready - win.n + 2
    local pending = st.ahead ~= 'r'
    err = check_acl('ZSCORE', win.ahead, user_id) or check_acl('ZADD', win.ahead, '0', user_id)
      or check_acl('UNLINK', win.ahead) or check_acl('PEXPIREAT', win.ahead, '0')
      or check_type(win.ahead, 'zset')
    if err then return nil, err end
    if win.bucket < first or (pending and win.bucket ~= st.ready) then
      if pending then win.ahead_op = 'drop' end
    else
      local x_text = redis.call('ZSCORE', win.ahead, user_id)
      local value = updated_aggregate(win, x_text and tonumber(x_text), old, score)
      if value == nil and win.aggregate == 'sum' and st.ahead == 'E' then
        win.ahead_op = 'drop'  -- a recount, then the job adds again
      elseif value == nil then
        value, err = count_window(win, st.ready, score, first)
        if err then return nil, err end
      end
      if value then win.ahead_op, win.ahead_value = 'set', value end
    end
  end
  win.old, win.score = old, score
  return win
end

-- A window's write, applied: the bucket's score, the metadata and its deadline, the user's
-- window score in :all, :newest and the union, the trim. Returns submit()'s reply.
local function apply_window(win)
  local last = win.last
  local previous = redis.call('ZSCORE', win.union, user_id)
  local previous_rank = previous and window_rank(win, user_id) or false
  -- With events: where the user stood in the union before (its size if absent), for the event's
  -- overtaken (see add_event).
  if win.events_key then
    win.old_position = previous_rank or redis.call('ZCARD', win.union)
  end

  local old, score = win.old, win.score
  redis.call('ZADD', win.bucket_key, score_text(score), user_id)
  local deadline = window_deadline(win, win.bucket)
  redis.call('PEXPIREAT', win.bucket_key, deadline)
  for i = first_field, #ARGV, 1000 do
    redis.call('HSET', win.user_key, unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
  -- The metadata lives as long as the user's newest bucket: never shortened by a write to an
  -- older bucket (a client whose clock lags).
  local left, now = redis.call('PTTL', win.user_key), redis.call('TIME')
  local now_ms = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000)
  if left == -1 or (left >= 0 and now_ms + left < tonumber(deadline)) then
    redis.call('PEXPIREAT', win.user_key, deadline)
  end
  local marked = false
  if win.frac and not win.state.frac then  -- sums are recounted from now on (see window_state)
    win.state.frac = true
    marked = true
  end
  if win.ahead_op == 'drop' then
    drop_ahead(win, win.state)
    marked = true
  elseif win.ahead_op == 'set' then
    redis.call('ZADD', win.ahead, score_text(win.ahead_value), user_id)
    redis.call('PEXPIREAT', win.ahead, window_deadline(win, last))
  end
  if marked then redis.call('SET', win.marker, state_text(win.state), 'KEEPTTL') end

  if not win.in_window then  -- a bucket older than the window: only the bucket changed
    slice_window(win, win.state)  -- the window ahead's job: a slice, after the write
    local reply = {{}, score_text(score), false, redis.call('HGETALL', win.user_key), false,
      false, (not old or score ~= old) and 1 or 0}
    if win.guards then  -- counted by the rate limit; no event: the window's board is unchanged
      return apply_guards({w = win, b = win.b, guards = win.guards, changed = false,
        trimmed = {}}, reply)
    end
    return reply
  end
  local total = win.total
  local window_end = window_deadline(win, last)
  redis.call('ZADD', win.all, score_text(total), user_id)
  redis.call('ZADD', win.newest, 'GT', win.bucket, user_id)
  redis.call('ZADD', win.union, score_text(total), user_id)
  for _, key in ipairs({win.all, win.newest, win.union}) do
    redis.call('PEXPIREAT', key, window_end)
  end
  slice_window(win, win.state)  -- the window ahead's job: a slice, after the write
  local trimmed = trim_window(win)
  local stored = redis.call('ZSCORE', win.union, user_id)
  local rank = stored and window_rank(win, user_id) or false
  local changed = not previous or tonumber(previous) ~= total
  local reply = {trimmed, stored or score_text(total), rank, redis.call('HGETALL', win.user_key),
    previous or false, previous_rank, changed and 1 or 0}
  if win.guards then  -- as a board's write: its event about the union (the window's board)
    return apply_guards({w = win, b = win.b, guards = win.guards, changed = changed,
      trimmed = trimmed, score = total, old_text = previous, previous_rank = previous_rank,
      old_position = win.old_position}, reply)
  end
  return reply
end

-- The words of a member's spec (a string), and how many of them have a key (see guard_fields).
local function spec_words(text)
  local spec, keyed = {}, 0
  for word in string.gmatch(text, '%S+') do
    spec[#spec + 1] = word
    if GUARD_KEYED[string.match(word, '^%a+')] then keyed = keyed + 1 end
  end
  return spec, keyed
end

-- Plan every member, then apply every plan.
local plans, replies, k = {}, {}, member_keys_at
for m = 1, members do
  local a = member_words_at - 1 + WORDS * (m - 1)
  local kind, mode, order = ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local spec, keyed = spec_words(ARGV[a + 9])
  local plan, reply
  if kind == 'board' then
    local nkeys = tonumber(ARGV[a + 6])
    plan, reply = plan_write(guard_fields({board = KEYS[k], user_key = KEYS[k + 1], k = k + 2,
      mode = mode, order = order, ties = ARGV[a + 4], submit = true, number = number,
      user_id = user_id, max_entries = tonumber(ARGV[a + 5]), fields = ARGV,
      first_field = first_field}, spec, 1, k + nkeys - 1))
    k = k + nkeys
  else
    -- The bucket of the server's clock (the caller named its own clock's: KEYS[k]).
    local named, bucket_ms = KEYS[k], tonumber(ARGV[a + 7])
    local prefix = string.sub(named, 1, #named - #ARGV[a + 6])
    local bucket = math.floor(server_ms() / bucket_ms)
    local bucket_key = prefix .. string.format('%d', bucket)
    plan, reply = plan_window(guard_fields({kind = 'window', mode = mode, desc = order == 'desc',
      aggregate = ARGV[a + 4], max_entries = tonumber(ARGV[a + 5]), bucket = bucket,
      bucket_ms = bucket_ms, window_ms = tonumber(ARGV[a + 8]),
      bucket_key = bucket_key, user_key = KEYS[k + 1], union = KEYS[k + 2], marker = KEYS[k + 3],
      options = KEYS[k + 4], prefix = prefix,
      user_id = user_id, number = number, fields = ARGV, first_field = first_field},
      spec, 1, k + 4 + keyed))
    k = k + 5 + keyed
  end
  if not plan then
    if reply.ok == 'WINDOWBUSY' then return reply end  -- a window's transition: send it again
    if reply.ok then  -- OPTIONS order=.. ties=..: the member's number goes first
      return redis.status_reply('OPTIONS member=' .. m .. ' ' .. string.sub(reply.ok, 9))
    end
    if reply.err then return reply end
    plan = false  -- a duplicate submission id: the stored result, nothing to apply
  end
  plans[m], replies[m] = plan, reply
end
for m = 1, members do
  local plan = plans[m]
  if plan and plan.kind == 'window' then
    replies[m] = apply_window(plan)
    if plan.submission_key and not plan.guards then  -- (with guards, apply_guards stored it)
      store_submission(plan, replies[m], plan.union)
    end
  elseif plan then
    replies[m] = apply_write(plan)
  end
end
return replies
