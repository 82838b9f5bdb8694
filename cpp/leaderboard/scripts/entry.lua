#!lua flags=no-writes
-- get_user_entry: the user's score, rank and metadata in one consistent read. A read
-- (no-writes), so it runs when the server is out of memory and on read-only replicas.
-- KEYS[1]: board, KEYS[2]: the user's metadata hash. ARGV: user_id.
-- Returns nil if the user is not on the board, else {score, zero-based rank from the top,
-- {field, value, ...}}.
local err = check_acl('ZSCORE', KEYS[1], ARGV[1]) or check_acl('ZREVRANK', KEYS[1], ARGV[1])
  or check_acl('HGETALL', KEYS[2])
if err then return err end
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return false end
return {score, redis.call('ZREVRANK', KEYS[1], ARGV[1]), redis.call('HGETALL', KEYS[2])}
