-- set_max_entries: trim the board to max_entries, at most `limit` entries per call so a large
-- trim never blocks the server for long.
-- KEYS[1]: board. ARGV: metadata prefix, max_entries, limit.
-- Returns {entries still over the limit, trimmed_ids}.
local max_entries = tonumber(ARGV[2])
local trimmed = trim_to_max_entries(KEYS[1], ARGV[1], max_entries, tonumber(ARGV[3]))
local remaining = redis.call('ZCARD', KEYS[1]) - max_entries
if remaining < 0 then remaining = 0 end
return {remaining, trimmed}
