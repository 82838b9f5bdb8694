#!lua flags=allow-oom
-- delete_user: remove the user from the board and its metadata hash (whether or not it was on
-- the board, as the guide's delete_user). Only deletes, so it runs when the server is out of
-- memory (allow-oom) and frees it.
-- KEYS[1]: board, KEYS[2]: the user's metadata hash. ARGV: user_id.
-- Returns 1 if the user was on the board, else 0.
local board, user_key = KEYS[1], KEYS[2]
local err = check_acl('ZREM', board, ARGV[1]) or check_acl('UNLINK', user_key)
  or check_type(board, 'zset') or check_type(user_key, 'hash')
if err then return err end

local removed = redis.call('ZREM', board, ARGV[1])
redis.call('UNLINK', user_key)
return removed
