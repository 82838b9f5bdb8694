#!lua flags=allow-oom
-- set_max_entries and the trim after upsert_many: trim the board to max_entries, at most
-- `limit` entries per call so a large trim never blocks the server for long. Only deletes, so
-- it runs when the server is out of memory (allow-oom).
-- KEYS[1]: board. ARGV: metadata prefix, max_entries, limit, how many trimmed ids to return.
-- Returns {entries still over the limit, entries trimmed, the first trimmed ids (lowest first)}.
local board, prefix = KEYS[1], ARGV[1]
local max_entries = tonumber(ARGV[2])
local err = check_acl('ZCARD', board) or check_acl('ZRANGE', board, '0', '0')
  or check_type(board, 'zset')
if err then return err end
local trimmed = lowest_beyond(board, max_entries, tonumber(ARGV[3]))
err = check_remove_lowest(board, prefix, trimmed)
if err then return err end

remove_lowest(board, prefix, trimmed)
local remaining = redis.call('ZCARD', board) - max_entries
if remaining < 0 then remaining = 0 end
local count, report = #trimmed, tonumber(ARGV[4])
if count > report then
  local first = {}
  for i = 1, report do first[i] = trimmed[i] end
  trimmed = first
end
return {remaining, count, trimmed}
