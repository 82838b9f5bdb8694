#!lua flags=no-writes
-- get_around_user: the rank window centred on a user's position, clamped to the board as
-- get_around_rank's (a full window at both ends), with each entry's metadata. A read.
--: KEYS board: the board
--: KEYS option_keys...: the board's option keys (board_spec in lib/options.lua)
--: ARGV user_prefix: the metadata hashes' prefix, "<board>:user:"
--: ARGV user_id: the user
--: ARGV count: the window's size
--: ARGV order?: on a board with options, its order
--: ARGV ties?: on a board with options, its ties
-- Returns nil if the user is not on the board, else window.lua's reply: {start, board size,
-- {user_id, score, {field, value, ...}, ...}}, plus the entries' zero-based ranks for ties where
-- equal scores share a rank (competition, dense). O(log N + count).
count = tonumber(count)
local b = board_spec(board, option_keys_at, order, ties)
local err = check_acl('ZRANGE', b.ranked, '0', '0') or check_acl('ZCARD', board)
  or check_acl(b.position_command, b.ranked, 'x')
  or (b.first and check_acl('HGET', b.first_keys, user_id))
  or (b.shared and check_acl('ZCOUNT', b.dense or board, '0', '0'))
if err then return err end
err = check_options(b)
if err then return err end
-- The user's position (not its rank: competition and dense share ranks, positions are unique).
local member = user_id
if b.first then member = ranked_member(b, user_id) end
local position = member and redis.call(b.position_command, b.ranked, member)
if not position then return false end
local size = redis.call('ZCARD', board)
local start = 0
if size > count then
  start = math.min(math.max(0, position - math.floor(count / 2)), size - count)
end
local ranged = range_best(b, start, start + count - 1)
local entries
entries, err = hydrate(b, user_prefix, ranged)
if err then return err end
if b.shared then return {start, size, entries, window_ranks(b, ranged, start)} end
return {start, size, entries}
