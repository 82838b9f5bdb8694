#!lua
-- LeaderboardGroup.submit and the writes of rolling windows (issue 16): one user's score and
-- metadata written to several boards, atomically: every board's write is planned (every check
-- that can fail) before any is applied, so a refused one leaves every board untouched. No flags:
-- Redis 7 refuses it up front when out of memory.
-- KEYS, for each member in turn:
--   a board:  its sorted set, the user's metadata hash, its option keys (see board_spec), the
--             keys of its guard words;
--   a window: its bucket's sorted set "<key>:bucket:<i>", the user's metadata hash
--             "<key>:user:<id>", the union "<key>", its marker "<key>:window", its options hash
--             "<key>:options" (see refresh_window in _lib.lua), the keys of its guard words.
-- ARGV: user_id, score, the number of members, then 9 words per member, then field, value, ...
--   a board:  'board', mode, order, ties, max_entries, the number of its keys, '', '', its spec
--             words or '' (as write.lua's, see guard_fields: issue 17's 'sid:..', 'rate:..',
--             'events:..', their keys the board's last; issue 16's 'expire:<unix ms>', no key)
--   a window: 'window', mode, order, aggregate ('sum' | 'max' | 'min'), max_entries, bucket i,
--             bucket length (ms), window length (ms), its spec words or '' ('sid:..' alone)
--   (mode: 'set' | 'best' | 'incr').
-- A member whose spec has 'sid:<ttl ms>' (a submission id: its record "<scope>:submission:<id>",
-- see read_submission in _lib.lua) applies the write once, as write.lua: a repeat writes nothing
-- there and replies with the result stored by the first, then 1 (else 0) and the key of the
-- board the first landed on. The members are independent: a member whose id was applied
-- replies its stored result while the others are written; an id applied for another user or
-- payload refuses the whole write (SUBMISSIONREUSED).
-- Returns one reply per member, submit()'s (see apply_write): {trimmed_ids, score, rank or
-- false, metadata, previous score or false, previous rank or false, 1 if changed else 0[, with
-- a submission id: 1 if a duplicate else 0, the key of the board written]}; for a window, of
-- its union (the window's board):
-- the ids are those the write pushed out of its max_entries (their buckets and metadata stay),
-- the scores the window's aggregates.

local WORDS = 9
local user_id, number = ARGV[1], ARGV[2]
local members, first_field = tonumber(ARGV[3]), 4 + WORDS * tonumber(ARGV[3])

-- The union's order: ZREVRANK for 'desc'.
local function window_rank(win, user)
  if win.desc then return redis.call('ZREVRANK', win.union, user) end
  return redis.call('ZRANK', win.union, user)
end

-- x and y combined by the window's aggregate (nil: none).
local function combine(win, x, y)
  if x == nil then return y end
  if y == nil then return x end
  if win.aggregate == 'sum' then return x + y end
  if win.aggregate == 'max' then return math.max(x, y) end
  return math.min(x, y)
end

-- The user's window score, counted from the buckets of the window ending with bucket `last`.
local function recount(win, last)
  local total
  for _, key in ipairs(window_buckets(win, last)) do
    local text = redis.call('ZSCORE', key, user_id)
    if text then total = combine(win, total, tonumber(text)) end
  end
  return total
end

-- Before any write: the user's scores in the window's other buckets combined (nil: none), or
-- nil and the error reply (a bucket of another type, a denied ZSCORE). ZSCORE checks each
-- bucket's type as it reads it (TYPE runs only for the message).
local function count_others(win, last)
  local total
  for _, key in ipairs(window_buckets(win, last)) do
    if key ~= win.bucket_key then
      local err = check_acl('ZSCORE', key, user_id)
      if err then return nil, err end
      local text = redis.pcall('ZSCORE', key, user_id)
      if type(text) == 'table' and text.err then return nil, check_type(key, 'zset') or text end
      if text then total = combine(win, total, tonumber(text)) end
    end
  end
  return total
end

-- A window's write, planned: every check, and the bucket's new score.
local function plan_window(win)
  local bucket, user_key = win.bucket_key, win.user_key
  local err = check_acl(win.mode == 'incr' and 'ZINCRBY' or 'ZADD', bucket, number, user_id)
    or check_acl('ZSCORE', bucket, user_id) or check_acl('PEXPIREAT', bucket, '0')
    or check_acl('ZSCORE', win.union, user_id) or check_acl('ZADD', win.union, '0', user_id)
    or check_acl(win.desc and 'ZREVRANK' or 'ZRANK', win.union, user_id)
    or check_acl('HGETALL', user_key) or check_acl('PTTL', user_key)
    or check_acl('PEXPIREAT', user_key, '0')
    or (#ARGV >= first_field and check_acl('HSET', user_key, ARGV[first_field], ARGV[first_field + 1] or ''))
    or check_acl('HGET', win.options, 'order') or check_acl('EXISTS', win.options)
    or check_acl('GET', win.marker) or check_acl('ZCARD', win.union)
    or check_acl('ZRANGE', win.union, '0', '0') or check_acl('ZREMRANGEBYRANK', win.union, '0', '0')
    or check_acl('PEXPIREAT', win.union, '0') or check_acl('TIME')
    or check_type(bucket, 'zset') or check_type(user_key, 'hash')
  if err then return nil, err end
  err = check_type(win.union, 'zset') or check_type(win.marker, 'string')
    or check_type(win.options, 'hash')
  if err then return nil, err end
  if not win.desc then  -- an 'asc' window records it; another order recorded is refused
    local recorded = redis.call('HGET', win.options, 'order')
    if recorded and recorded ~= 'asc' then
      return nil, redis.status_reply('OPTIONS order=' .. recorded .. ' ties=lexicographic')
    end
  elseif redis.call('EXISTS', win.options) == 1 then
    return nil, redis.status_reply('OPTIONS order=' .. tostring(redis.call('HGET', win.options,
      'order')) .. ' ties=' .. tostring(redis.call('HGET', win.options, 'ties')))
  end
  if win.submission_key then  -- an id applied before: its stored result, nothing written
    err = check_submission(win)
    if err then return nil, err end
  end
  -- The bucket's new score: as mode says, in the board's order.
  local old_text = redis.call('ZSCORE', bucket, user_id)
  local old = old_text and tonumber(old_text)
  local score
  score, err = next_score(win, {number = number, mode = win.mode}, old)
  if not score then return nil, err end
  -- Every bucket of the window is checked when the write reads them: when it rebuilds the
  -- union (the first write or read of a bucket), or counts the user's window score from them
  -- (apply_window: the union does not hold it, or a max/min went the other way). Else the
  -- write touches one bucket.
  local built = built_bucket(win)
  if not built or built < win.bucket or score == math.huge or score == -math.huge then
    err = check_window(win, math.max(win.bucket, built or win.bucket))  -- a rebuild reads all
    if err then return nil, err end
  else
    local previous = redis.call('ZSCORE', win.union, user_id)
    local full = redis.call('ZCARD', win.union) >= win.max_entries
    if not (previous or (not full and not old))
      or (old and win.aggregate == 'max' and score < old)
      or (old and win.aggregate == 'min' and score > old)
      or (previous and math.abs(tonumber(previous)) == math.huge) then
      -- The union cannot say the user's window score: the other buckets, counted now.
      local others
      others, err = count_others(win, built)
      if err then return nil, err end
      win.others = others or false
    end
  end
  win.old, win.score = old, score
  return win
end

-- A window's write, applied: the union brought to the write's bucket, the bucket's score, the
-- metadata and its deadline, the union's score for the user, the trim. Returns submit()'s reply.
local function apply_window(win)
  refresh_window(win, win.bucket)
  local last = built_bucket(win)  -- the write's bucket, or a later one (a client ahead)
  local in_union = last and win.bucket > last - win.window_ms / win.bucket_ms
  local previous = redis.call('ZSCORE', win.union, user_id)
  local previous_rank = previous and window_rank(win, user_id) or false
  local full = redis.call('ZCARD', win.union) >= win.max_entries

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

  if not in_union then  -- a bucket older than the union's window: only the bucket changed
    return {{}, score_text(score), false, redis.call('HGETALL', win.user_key), false, false,
      (not old or score ~= old) and 1 or 0}
  end
  -- The union's score: updated from what it holds when that is the user's whole window (the
  -- user is in it, or not and the union never trimmed since built: not full, no old score),
  -- else counted from the buckets.
  local known = previous or (not full and not old)
  local p = previous and tonumber(previous)
  local total
  if known and win.aggregate == 'sum' then
    total = (p or 0) + score - (old or 0)
  elseif known and win.aggregate == 'max' and (not old or score >= old) then
    total = math.max(p or score, score)
  elseif known and win.aggregate == 'min' and (not old or score <= old) then
    total = math.min(p or score, score)
  elseif win.others ~= nil then  -- counted by plan_window, this bucket left out
    total = combine(win, win.others or nil, score)
  else  -- after a rebuild (every bucket checked)
    total = recount(win, last)
  end
  if total ~= total then total = score end  -- inf and -inf in two buckets
  redis.call('ZADD', win.union, score_text(total), user_id)
  redis.call('PEXPIREAT', win.union, window_deadline(win, last))
  local trimmed = trim_window(win)
  local stored = redis.call('ZSCORE', win.union, user_id)
  local rank = stored and window_rank(win, user_id) or false
  return {trimmed, stored or score_text(total), rank, redis.call('HGETALL', win.user_key),
    previous or false, previous_rank, (not previous or tonumber(previous) ~= total) and 1 or 0}
end

-- The words of a member's spec (a string), and how many of them have a key (see guard_fields).
local function spec_words(text)
  local spec, keyed = {}, 0
  for word in string.gmatch(text, '%S+') do
    spec[#spec + 1] = word
    if not KEYLESS_WORDS[string.match(word, '^(%a+)')] then keyed = keyed + 1 end
  end
  return spec, keyed
end

-- Plan every member, then apply every plan.
local plans, replies, k = {}, {}, 1
for m = 1, members do
  local a = 3 + WORDS * (m - 1)
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
    local bucket_key = KEYS[k]
    local bucket_text = ARGV[a + 6]
    plan, reply = plan_window(guard_fields({kind = 'window', mode = mode, desc = order == 'desc',
      aggregate = ARGV[a + 4], max_entries = tonumber(ARGV[a + 5]), bucket = tonumber(bucket_text),
      bucket_ms = tonumber(ARGV[a + 7]), window_ms = tonumber(ARGV[a + 8]),
      bucket_key = bucket_key, user_key = KEYS[k + 1], union = KEYS[k + 2], marker = KEYS[k + 3],
      options = KEYS[k + 4], prefix = string.sub(bucket_key, 1, #bucket_key - #bucket_text),
      user_id = user_id, number = number, fields = ARGV, first_field = first_field},
      spec, 1, k + 4 + keyed))
    k = k + 5 + keyed
  end
  if not plan then
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
    if plan.submission_key then store_submission(plan, replies[m], plan.union) end
  elseif plan then
    replies[m] = apply_write(plan)
  end
end
return replies
