#!lua
-- upsert_user / increment_score / submit: write the score, merge the metadata, trim the board and
-- read the entry back, atomically. No flags: Redis 7 refuses it up front when out of memory.
-- KEYS: board, the user's metadata hash, then the option keys (see board_spec in _lib.lua).
-- ARGV: "<mode> [<order> <ties> <reply>]" (mode: 'set' | 'best' | 'incr'; reply: 'entry' |
-- 'submit'; the guide's methods on a default board send the mode alone), score or amount,
-- user_id, max_entries, field, value, ...
-- Ranks in replies are zero-based. Returns, for 'entry': {trimmed_ids, score} if the user was
-- trimmed away, else {trimmed_ids, score, rank, {field, value, ...}}; for 'submit':
-- {trimmed_ids, score, rank or nil, {field, value, ...}, previous score or nil, previous rank or
-- nil, 1 if the stored score changed else 0}.
local board, user_key = KEYS[1], KEYS[2]
if not string.find(ARGV[1], ' ', 1, true) and no_options_recorded(KEYS[3]) then
  -- The guide's board, and the guide's methods: mode 'set' or 'incr' alone.
  local mode, number, user_id = ARGV[1], ARGV[2], ARGV[3]
  local prefix = string.sub(user_key, 1, #user_key - #user_id)  -- "<board>:user:"
  local err = check_acl(mode == 'incr' and 'ZINCRBY' or 'ZADD', board, number, user_id)
    or (#ARGV >= 5 and check_acl('HSET', user_key, ARGV[5], ARGV[6] or ''))
    or check_acl('ZSCORE', board, user_id) or check_acl('ZCARD', board)
    or check_acl('ZRANGE', board, '0', '0') or check_acl('ZREVRANK', board, user_id)
    or check_acl('HGETALL', user_key)
  if err then return err end
  local size
  size, err = call_board(board, 'ZCARD')  -- and the board's type
  if err then return err end
  err = check_type(user_key, 'hash')
  if err then return err end
  local old = redis.call('ZSCORE', board, user_id)
  local score = tonumber(number)
  if mode == 'incr' and old then score = tonumber(old) + score end
  if score ~= score then return redis.error_reply('ERR resulting score is not a number (NaN)') end
  local overflow = size + (old and 0 or 1) - tonumber(ARGV[4])
  local trimmed, trimmed_away = {}, false
  if overflow > 0 then
    -- Who the trim after the write removes: the lowest `overflow` entries of the board with the
    -- user at its new score, i.e. the lowest of the others merged with the user, ordered as
    -- Redis orders a sorted set (score, then member bytes).
    local function before(score_a, member_a, score_b, member_b)
      if score_a ~= score_b then return score_a < score_b end
      local n = math.min(#member_a, #member_b)
      for i = 1, n do
        local a, b = string.byte(member_a, i), string.byte(member_b, i)
        if a ~= b then return a < b end
      end
      return #member_a < #member_b
    end
    local lowest = redis.call('ZRANGE', board, 0, overflow, 'WITHSCORES')
    for i = 1, #lowest, 2 do
      if #trimmed == overflow then break end
      local member = lowest[i]
      if member ~= user_id then
        if not trimmed_away and before(score, user_id, tonumber(lowest[i + 1]), member) then
          trimmed[#trimmed + 1] = user_id
          trimmed_away = true
          if #trimmed == overflow then break end
        end
        trimmed[#trimmed + 1] = member
      end
    end
    if #trimmed < overflow and not trimmed_away then
      trimmed[#trimmed + 1] = user_id
      trimmed_away = true
    end
    err = check_remove_lowest(board, prefix, trimmed)
    if err then return err end
  end

  -- The write: nothing below fails but on a server fault.
  if mode == 'incr' then
    score = redis.call('ZINCRBY', board, number, user_id)
  else
    redis.call('ZADD', board, number, user_id)
    score = number
  end
  for i = 5, #ARGV, 1000 do
    redis.call('HSET', user_key, unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
  remove_lowest(board, prefix, trimmed)
  -- The score just written is the stored one, unless the trim took the user (the merge above
  -- said whom the trim removes; their metadata went by that list).
  if trimmed_away then return {trimmed, score} end
  return {trimmed, score, redis.call('ZREVRANK', board, user_id), redis.call('HGETALL', user_key)}
end
-- @options: submit(), boards with options (and a default board's options key that is not absent)
local spec = {ARGV[1]}  -- the guide's methods on a default board: the mode alone
if string.find(ARGV[1], ' ', 1, true) then
  spec = {}
  for word in string.gmatch(ARGV[1], '%S+') do spec[#spec + 1] = word end
end
local mode, number, user_id = spec[1], ARGV[2], ARGV[3]
local max_entries = tonumber(ARGV[4])
local prefix = string.sub(user_key, 1, #user_key - #user_id)  -- "<board>:user:"
local b = board_spec(board, 3, spec[2], spec[3])
local submit = spec[4] == 'submit'
local has_metadata = #ARGV >= 5

-- Everything that can fail is checked before the first write: the caller's permissions for
-- every command below, the key types, then the board's recorded options.
local err = check_acl(mode == 'incr' and 'ZINCRBY' or 'ZADD', board, number, user_id)
  or (has_metadata and check_acl('HSET', user_key, ARGV[5], ARGV[6] or ''))
  or check_acl('ZSCORE', board, user_id) or check_acl('ZCARD', board)
  or check_acl('ZRANGE', b.ranked, '0', '0') or check_acl(b.position_command, board, user_id)
  or check_acl('HGETALL', user_key) or check_type(board, 'zset') or check_type(user_key, 'hash')
  or (not b.default and check_option_keys(b))
if err then return err end
local record, seq
err, record, seq = check_options(b, true)
if err then return err end

local old_text = redis.call('ZSCORE', board, user_id)
local old = old_text and tonumber(old_text)
local score = tonumber(number)
if mode == 'incr' and old then
  score = old + score
elseif mode == 'best' and old and not better(b, score, old) then
  score = old
end
if score ~= score then return redis.error_reply('ERR resulting score is not a number (NaN)') end
local changed = not old or score ~= old
local previous_rank = false
if submit and old then previous_rank = rank_of(b, user_id, old) end

-- Who the trim after the write removes: the worst `overflow` entries of the ranked set with the
-- user at its new place, i.e. the worst of the others merged with the user, ordered as Redis
-- orders a sorted set (score, then member bytes; for 'first' the member starts with the
-- achievement key, and a changed score is the latest achievement).
local member, old_member = user_id, user_id
if b.first then
  old_member = old and ranked_member(b, user_id)
  member = changed and (achievement_key(b, seq + 1) .. user_id) or old_member
end
local overflow = redis.call('ZCARD', board) + (old and 0 or 1) - max_entries
local trimmed, trimmed_scores = {}, {}
if overflow > 0 then
  local worst = range_worst(b, overflow + 1)
  local placed = false
  local function add(id, text)
    trimmed[#trimmed + 1] = id
    trimmed_scores[#trimmed_scores + 1] = text
  end
  for i = 1, #worst, 2 do
    if #trimmed == overflow then break end
    local other = worst[i]
    if other ~= old_member then
      local other_score = tonumber(worst[i + 1])
      if not placed and worse(b, score, member, other_score, other) then
        add(user_id, score_text(score))
        placed = true
        if #trimmed == overflow then break end
      end
      add(b.first and string.sub(other, KEY_WIDTH + 1) or other, worst[i + 1])
    end
  end
  if #trimmed < overflow and not placed then add(user_id, score_text(score)) end
  err = check_remove_worst(b, prefix, trimmed)
  if err then return err end
end

-- The write: nothing below fails but on a server fault.
if record then redis.call('HSET', b.options, 'order', b.order, 'ties', b.ties) end
local produced = old_text
if b.default then
  if mode == 'incr' then
    produced = redis.call('ZINCRBY', board, number, user_id)
  elseif mode == 'set' or changed then
    redis.call('ZADD', board, number, user_id)
    produced = number
  end
elseif changed then
  produced = store_score(b, user_id, mode == 'incr' and 'ZINCRBY' or 'ZADD', number, score, old,
    seq + 1)
end
for i = 5, #ARGV, 1000 do
  redis.call('HSET', user_key, unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
remove_worst(b, prefix, trimmed, trimmed_scores)

local stored = redis.call('ZSCORE', board, user_id)
if not submit then
  if not stored then return {trimmed, produced} end
  return {trimmed, stored, rank_of(b, user_id, tonumber(stored)), redis.call('HGETALL', user_key)}
end
local rank, metadata = false, {}
if stored then
  produced = stored
  rank = rank_of(b, user_id, tonumber(stored))
  metadata = redis.call('HGETALL', user_key)
end
return {trimmed, produced, rank, metadata, old_text or false, previous_rank, changed and 1 or 0}
