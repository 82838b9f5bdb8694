#!lua
-- upsert_user / increment_score: write the score, merge the metadata, trim the board and read
-- the entry back, atomically. No flags: Redis 7 refuses it up front when out of memory.
-- KEYS[1]: board, KEYS[2]: the user's metadata hash.
-- ARGV: 'set' | 'incr', score or amount, user_id, max_entries, metadata prefix, field, value, ...
-- Returns {trimmed_ids, score} if the user was trimmed away, else
-- {trimmed_ids, score, zero-based rank from the top, {field, value, ...}}.
local board, user_key = KEYS[1], KEYS[2]
local mode, number, user_id = ARGV[1], ARGV[2], ARGV[3]
local max_entries, prefix = tonumber(ARGV[4]), ARGV[5]
local has_metadata = #ARGV >= 6

-- Everything that can fail is checked before the first write: the caller's permissions for
-- every command below, then the key types.
local err = check_acl(mode == 'incr' and 'ZINCRBY' or 'ZADD', board, number, user_id)
  or (has_metadata and check_acl('HSET', user_key, ARGV[6], ARGV[7] or ''))
  or check_acl('ZSCORE', board, user_id) or check_acl('ZCARD', board)
  or check_acl('ZRANGE', board, '0', '0') or check_acl('ZREVRANK', board, user_id)
  or check_acl('HGETALL', user_key) or check_type(board, 'zset') or check_type(user_key, 'hash')
if err then return err end
local old = redis.call('ZSCORE', board, user_id)
local score = tonumber(number)
if mode == 'incr' and old then score = tonumber(old) + score end
if score ~= score then return redis.error_reply('ERR resulting score is not a number (NaN)') end

-- Who the trim after the write removes: the lowest `overflow` entries of the board with the
-- user at its new score, i.e. the lowest of the others merged with the user, ordered as Redis
-- orders a sorted set (score, then member bytes).
local function before(score_a, member_a, score_b, member_b)
  if score_a ~= score_b then return score_a < score_b end
  local n = math.min(#member_a, #member_b)
  for i = 1, n do
    local a, b = string.byte(member_a, i), string.byte(member_b, i)
    if a ~= b then return a < b end
  end
  return #member_a < #member_b
end
local overflow = redis.call('ZCARD', board) + (old and 0 or 1) - max_entries
local trimmed = {}
if overflow > 0 then
  local lowest = redis.call('ZRANGE', board, 0, overflow, 'WITHSCORES')
  local placed = false
  for i = 1, #lowest, 2 do
    if #trimmed == overflow then break end
    local member = lowest[i]
    if member ~= user_id then
      if not placed and before(score, user_id, tonumber(lowest[i + 1]), member) then
        trimmed[#trimmed + 1] = user_id
        placed = true
        if #trimmed == overflow then break end
      end
      trimmed[#trimmed + 1] = member
    end
  end
  if #trimmed < overflow and not placed then trimmed[#trimmed + 1] = user_id end
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
for i = 6, #ARGV, 1000 do
  redis.call('HSET', user_key, unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
remove_lowest(board, prefix, trimmed)

local stored = redis.call('ZSCORE', board, user_id)
if not stored then return {trimmed, score} end
return {trimmed, stored, redis.call('ZREVRANK', board, user_id), redis.call('HGETALL', user_key)}
