-- delete_user. KEYS[1]: board, KEYS[2]: the user's metadata hash. ARGV[1]: user_id.
-- Returns 1 if the user was on the board, else 0; the metadata goes either way, as the guide.
local removed = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('UNLINK', KEYS[2])
return removed
