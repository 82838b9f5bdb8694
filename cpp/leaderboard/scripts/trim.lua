-- set_max_entries and the trim after upsert_many: trim the board to max_entries, at most
-- `limit` entries per call so a large trim never blocks the server for long.
-- KEYS[1]: board. ARGV: metadata prefix, max_entries, limit, how many trimmed ids to return.
-- Returns {entries still over the limit, entries trimmed, the first trimmed ids (lowest first)}.
local max_entries = tonumber(ARGV[2])
local trimmed = trim_to_max_entries(KEYS[1], ARGV[1], max_entries, tonumber(ARGV[3]))
local remaining = redis.call('ZCARD', KEYS[1]) - max_entries
if remaining < 0 then remaining = 0 end
local count, report = #trimmed, tonumber(ARGV[4])
if count > report then
  local first = {}
  for i = 1, report do first[i] = trimmed[i] end
  trimmed = first
end
return {remaining, count, trimmed}
