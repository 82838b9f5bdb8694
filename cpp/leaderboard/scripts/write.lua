#!lua
-- upsert_user / increment_score / submit: write the score, merge the metadata, trim the board and
-- read the entry back, atomically. No flags: Redis 7 refuses it up front when out of memory.
--: KEYS board: the board
--: KEYS user_key: the user's metadata hash
--: KEYS write_keys...: the board's option keys (board_spec in lib/options.lua), then the keys of the spec's guard words, in their order (GUARD_WORDS in lib/guards.lua)
--: ARGV spec: the guide's methods on a default board, the mode alone ('set' | 'incr'); else "<mode> <order> <ties> <reply>[ <guard word>...]" (mode: 'set' | 'best' | 'incr'; reply: 'entry' | 'submit'; the words: see GUARD_WORDS in lib/guards.lua)
--: ARGV number: the score, or the amount of an 'incr'
--: ARGV user_id: the user
--: ARGV max_entries: the board's max_entries
--: ARGV metadata...: field, value, ...
-- Ranks in replies are zero-based. Returns, for 'entry': {trimmed_ids, score} if the user was
-- trimmed away, else {trimmed_ids, score, rank, {field, value, ...}}; for 'submit':
-- {trimmed_ids, score, rank or nil, {field, value, ...}, previous score or nil, previous rank or
-- nil, 1 if the stored score changed else 0[, with a submission id: 1 if it is the stored
-- reply of an earlier write with that id (nothing was written), else 0; the key of the board
-- the write landed on (an earlier period's, for a resend into a later one)]}; RATELIMITED
-- retry_after=<s> ... when a rate limit refuses the write; SUBMISSIONREUSED ... when the id was
-- applied for another user or payload (see read_submission in lib/submissions.lua).
if not string.find(spec, ' ', 1, true) and no_options_recorded(KEYS[write_keys_at]) then
  -- The guide's board, and the guide's methods: mode 'set' or 'incr' alone.
  local mode = spec
  local prefix = string.sub(user_key, 1, #user_key - #user_id)  -- "<board>:user:"
  local err = check_acl(mode == 'incr' and 'ZINCRBY' or 'ZADD', board, number, user_id)
    or (#ARGV >= metadata_at
      and check_acl('HSET', user_key, ARGV[metadata_at], ARGV[metadata_at + 1] or ''))
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
  if mode == 'incr' and old then
    err = check_exact_sum(tonumber(old), score, tonumber(old) + score)
    if err then return err end
    score = tonumber(old) + score
  end
  if score ~= score then return redis.error_reply('ERR resulting score is not a number (NaN)') end
  local overflow = size + (old and 0 or 1) - tonumber(max_entries)
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
  for i = metadata_at, #ARGV, 1000 do
    redis.call('HSET', user_key, unpack(ARGV, i, math.min(i + 999, #ARGV)))
  end
  remove_lowest(board, prefix, trimmed)
  -- The score just written is the stored one, unless the trim took the user (the merge above
  -- said whom the trim removes; their metadata went by that list).
  if trimmed_away then return {trimmed, score} end
  return {trimmed, score, redis.call('ZREVRANK', board, user_id), redis.call('HGETALL', user_key)}
end
-- @options: submit(), boards with options (and a default board's options key that is not absent)
local words = {spec}  -- the guide's methods on a default board: the mode alone
if string.find(spec, ' ', 1, true) then
  words = {}
  for word in string.gmatch(spec, '%S+') do words[#words + 1] = word end
end
local w = {board = board, user_key = user_key, k = write_keys_at, mode = words[1],
  order = words[2], ties = words[3], submit = words[4] == 'submit', number = number,
  user_id = user_id, max_entries = tonumber(max_entries), fields = ARGV, first_field = metadata_at}
guard_fields(w, words, 5, #KEYS)  -- the guard words, after the 4th: their keys the last
local plan, reply = plan_write(w)
if not plan then return reply end
return apply_write(plan)
