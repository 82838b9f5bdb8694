#!lua flags=allow-oom
-- clear, one page: remove up to `page` entries (lowest first) and their metadata. Only deletes,
-- so it runs when the server is out of memory (allow-oom) and frees it.
-- KEYS[1]: board. ARGV: metadata prefix, page. Returns how many entries remain.
local board, prefix = KEYS[1], ARGV[1]
local err = check_acl('ZCARD', board) or check_acl('ZRANGE', board, '0', '0')
  or check_type(board, 'zset')
if err then return err end
local user_ids = redis.call('ZRANGE', board, 0, tonumber(ARGV[2]) - 1)
err = check_remove_lowest(board, prefix, user_ids)
if err then return err end

remove_lowest(board, prefix, user_ids)
return redis.call('ZCARD', board)
