#!lua flags=no-writes
-- get_top / get_around_rank / a page of list_all: a rank window with each entry's metadata.
-- A read (no-writes): it runs when the server is out of memory and on read-only replicas.
--: KEYS board: the board
--: KEYS option_keys...: the board's option keys (board_spec in lib/options.lua)
--: ARGV user_prefix: the metadata hashes' prefix, "<board>:user:"
--: ARGV mode: 'top' | 'range' | 'around' ('around' centres the window on the 1-based position start and clamps it to the board, as the guide)
--: ARGV start: the first position (0-based), or for 'around' the rank
--: ARGV count: the window's size
--: ARGV order?: on a board with options, its order
--: ARGV ties?: on a board with options, its ties
-- Returns {start, board size (-1 for 'top', which needs none), {user_id, score,
-- {field, value, ...}, ...}}, and for ties where equal scores share a rank (competition, dense)
-- the entries' zero-based ranks.
if not order and no_options_recorded(KEYS[option_keys_at]) then  -- the guide's board
  count = tonumber(count)
  local err = check_acl('ZRANGE', board, '0', '0') or (mode ~= 'top' and check_acl('ZCARD', board))
  if err then return err end
  local size = -1
  if mode ~= 'top' then size = redis.call('ZCARD', board) end
  start = tonumber(start)
  if mode == 'around' then
    if size <= count then
      start = 0
    else
      start = math.min(math.max(0, start - 1 - math.floor(count / 2)), size - count)
    end
  end
  local entries
  entries, err = hydrate(nil, user_prefix,
    redis.call('ZRANGE', board, start, start + count - 1, 'REV', 'WITHSCORES'))
  if err then return err end
  return {start, size, entries}
end
-- @options: boards with options (and a default board's options key that is not absent)
local b = board_spec(board, option_keys_at, order, ties)
count = tonumber(count)
local err = check_acl('ZRANGE', b.ranked, '0', '0')
  or (mode ~= 'top' and check_acl('ZCARD', board))
  or (b.shared and check_acl('ZCOUNT', b.dense or board, '0', '0'))
if err then return err end
err = check_options(b)
if err then return err end
local size = -1
if mode ~= 'top' then size = redis.call('ZCARD', board) end

start = tonumber(start)
if mode == 'around' then
  if size <= count then
    start = 0
  else
    start = math.min(math.max(0, start - 1 - math.floor(count / 2)), size - count)
  end
end
local ranged = range_best(b, start, start + count - 1)
local entries
entries, err = hydrate(b, user_prefix, ranged)
if err then return err end
if b.shared then return {start, size, entries, window_ranks(b, ranged, start)} end
return {start, size, entries}
