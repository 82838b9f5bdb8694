#!lua flags=allow-oom
-- set_max_entries and the trim after upsert_many: trim the board to max_entries, at most
-- `limit` entries per call so a large trim never blocks the server for long. Only deletes
-- (with events, also appends the ids it removed), so it runs when the server is out of memory
-- (allow-oom).
--: KEYS board: the board
--: KEYS removal_keys...: the board's option keys (board_spec in lib/options.lua), then with events its stream "<board>:events"
--: ARGV user_prefix: the metadata hashes' prefix, "<board>:user:"
--: ARGV max_entries: the board's limit
--: ARGV limit: at most how many entries this call removes
--: ARGV report: how many trimmed ids to return
--: ARGV order?: on a board with options or events, its order
--: ARGV ties?: on a board with options or events, its ties
--: ARGV removal?: with events, 'events:<maxlen>[ expire:<unix ms>]' (see removal_events in lib/removal_events.lua)
-- Returns {entries still over the limit, entries trimmed, the first trimmed ids (worst first)}.
-- With events, a call that trimmed appends 'trim' events listing them (1,000 ids an event).
local prefix = user_prefix
max_entries, limit, report = tonumber(max_entries), tonumber(limit), tonumber(report)
if not order and no_options_recorded(KEYS[removal_keys_at]) then  -- the guide's board
  local err = check_acl('ZCARD', board) or check_acl('ZRANGE', board, '0', '0')
  if err then return err end
  local size
  size, err = call_board(board, 'ZCARD')  -- and the board's type
  if err then return err end
  local over = size - max_entries
  local trimmed = {}
  if over > 0 then
    trimmed = redis.call('ZRANGE', board, 0, math.min(over, limit) - 1)
  end
  err = check_remove_lowest(board, prefix, trimmed)
  if err then return err end
  remove_lowest(board, prefix, trimmed)
  return {math.max(0, over - #trimmed), #trimmed, first_of(trimmed, report)}
end
-- @options: boards with options or events (and a default board's options key that is not absent)
local b = board_spec(board, removal_keys_at, order, ties)
local w = removal_events(removal)  -- change events: the stream is the last of KEYS
local err = check_acl('ZCARD', board) or check_acl('ZRANGE', b.ranked, '0', '0')
  or check_type(board, 'zset') or (not b.default and check_option_keys(b))
if err then return err end
err = check_options(b) or check_removal_events(b, w)
if err then return err end
-- Fair play: a player hidden while a bulk load that had checked the board earlier was under
-- way may have been ranked by its MULTI/EXEC chunks, which check nothing; the load's closing
-- trim (this script) puts them aside again, with that newer score.
local strays = {}
if b.recorded_hidden then
  local hidden = board .. ':hidden'
  err = check_type(hidden, 'hash') or check_acl('HGETALL', hidden)
    or check_present(b.options, {hidden}) or check_hidden_writes(b, 'x', nil)
  if err then return err end
  local kept = redis.call('HGETALL', hidden)
  for i = 1, #kept, 2 do
    local score = redis.call('ZSCORE', board, kept[i])
    if score then strays[#strays + 1] = {kept[i], score} end
  end
end
-- Counted before the writes (see check_present in lib/base.lua).
local size = redis.call('ZCARD', board) - #strays
for _, stray in ipairs(strays) do keep_hidden(b, stray[1], stray[2], stray[2], nil) end
local overflow = math.min(size - max_entries, limit)
local trimmed, scores = {}, {}
if overflow > 0 then trimmed, scores = split_range(b, range_worst(b, overflow)) end
err = check_remove_worst(b, prefix, trimmed)
if err then return err end

remove_worst(b, prefix, trimmed, scores)
if w then add_trim_events(w, trimmed) end
-- Counted, not read again: after a write, a script reads no key it may have deleted (see
-- check_present in lib/base.lua).
local remaining = math.max(0, size - #trimmed - max_entries)
return {remaining, #trimmed, first_of(trimmed, report)}
