-- get_user_entry. KEYS[1]: board, KEYS[2]: the user's metadata hash. ARGV[1]: user_id.
-- Returns nil if the user is not on the board, else {score, zero-based rank, {field, value, ...}}.
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return false end
return {score, redis.call('ZREVRANK', KEYS[1], ARGV[1]), redis.call('HGETALL', KEYS[2])}
