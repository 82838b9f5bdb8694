-- clear, one page: remove up to `page` entries (lowest first) and their metadata.
-- KEYS[1]: board. ARGV: metadata prefix, page. Returns how many entries remain.
local user_ids = redis.call('ZRANGE', KEYS[1], 0, tonumber(ARGV[2]) - 1)
unlink_metadata(ARGV[1], user_ids)
if #user_ids > 0 then redis.call('ZREMRANGEBYRANK', KEYS[1], 0, #user_ids - 1) end
return redis.call('ZCARD', KEYS[1])
