#!lua flags=no-writes
-- get_by_score: the entries with min <= score <= max, best first in the board's order, from
-- `offset` for at most `limit`, with their metadata. A read. The window is found by counting
-- (entries strictly better than the range, entries in it), then read by position, so the work
-- is O(log N + limit) whatever the offset.
--: KEYS board: the board
--: KEYS option_keys...: the board's option keys (board_spec in lib/options.lua)
--: ARGV user_prefix: the metadata hashes' prefix, "<board>:user:"
--: ARGV low: the lowest score, an exact text ('-inf' allowed)
--: ARGV high: the highest score, an exact text ('inf' allowed)
--: ARGV offset: how many entries in range to skip
--: ARGV limit: at most how many to answer
--: ARGV order?: on a board with options, its order
--: ARGV ties?: on a board with options, its ties
-- Returns window.lua's reply: {start, entries in range, {user_id, score, {field, value, ...},
-- ...}}, plus the entries' zero-based ranks for competition and dense.
offset, limit = tonumber(offset), tonumber(limit)
local b = board_spec(board, option_keys_at, order, ties)
local err = check_acl('ZCOUNT', b.ranked, '0', '0') or check_acl('ZRANGE', b.ranked, '0', '0')
  or (b.shared and check_acl('ZCOUNT', b.dense or board, '0', '0'))
if err then return err end
err = check_options(b)
if err then return err end
local better
if b.desc then
  better = redis.call('ZCOUNT', b.ranked, '(' .. high, '+inf')
else
  better = redis.call('ZCOUNT', b.ranked, '-inf', '(' .. low)
end
local in_range = redis.call('ZCOUNT', b.ranked, low, high)
if offset >= in_range then return {0, in_range, {}} end
local start = better + offset
local ranged = range_best(b, start, better + math.min(in_range, offset + limit) - 1)
local entries
entries, err = hydrate(b, user_prefix, ranged)
if err then return err end
if b.shared then return {start, in_range, entries, window_ranks(b, ranged, start)} end
return {start, in_range, entries}
