-- upsert_user / increment_score: write the score, merge the metadata, trim the board and read
-- the entry back, atomically.
-- KEYS[1]: board, KEYS[2]: the user's metadata hash.
-- ARGV: 'set' | 'incr', score or amount, user_id, max_entries, metadata prefix, field, value, ...
-- Returns {trimmed_ids, score} if the user was trimmed away, else
-- {trimmed_ids, score, zero-based rank from the top, {field, value, ...}}.
local board, user_key = KEYS[1], KEYS[2]
local user_id = ARGV[3]

local score
if ARGV[1] == 'incr' then
  score = redis.call('ZINCRBY', board, ARGV[2], user_id)
else
  redis.call('ZADD', board, ARGV[2], user_id)
  score = ARGV[2]
end
for i = 6, #ARGV, 1000 do
  redis.call('HSET', user_key, unpack(ARGV, i, math.min(i + 999, #ARGV)))
end

local trimmed = trim_to_max_entries(board, ARGV[5], tonumber(ARGV[4]), nil)
local stored = redis.call('ZSCORE', board, user_id)
if not stored then return {trimmed, score} end
return {trimmed, stored, redis.call('ZREVRANK', board, user_id), redis.call('HGETALL', user_key)}
