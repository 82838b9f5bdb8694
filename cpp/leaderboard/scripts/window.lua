#!lua flags=no-writes
-- get_top / get_around_rank / a page of list_all: a rank window with each entry's metadata.
-- A read (no-writes): it runs when the server is out of memory and on read-only replicas.
-- KEYS: board, then the option keys (see board_spec in _lib.lua). ARGV: metadata prefix,
-- 'top' | 'range' | 'around', start (0-based) or rank, count, then on a board with options:
-- order, ties. 'around' centres the window on the 1-based position and clamps it to the board,
-- as the guide. Returns {start, board size (-1 for 'top', which needs none), {user_id, score,
-- {field, value, ...}, ...}}, and for ties where equal scores share a rank (competition, dense)
-- the entries' zero-based ranks.
local board, mode = KEYS[1], ARGV[2]
if not ARGV[5] and no_options_recorded(KEYS[2]) then  -- the guide's board
  local count = tonumber(ARGV[4])
  local err = check_acl('ZRANGE', board, '0', '0') or (mode ~= 'top' and check_acl('ZCARD', board))
  if err then return err end
  local size = -1
  if mode ~= 'top' then size = redis.call('ZCARD', board) end
  local start = tonumber(ARGV[3])
  if mode == 'around' then
    if size <= count then
      start = 0
    else
      start = math.min(math.max(0, start - 1 - math.floor(count / 2)), size - count)
    end
  end
  local entries
  entries, err = hydrate(nil, ARGV[1],
    redis.call('ZRANGE', board, start, start + count - 1, 'REV', 'WITHSCORES'))
  if err then return err end
  return {start, size, entries}
end
-- @options: boards with options (and a default board's options key that is not absent)
local b = board_spec(board, 2, ARGV[5], ARGV[6])
local count = tonumber(ARGV[4])
local err = check_acl('ZRANGE', b.ranked, '0', '0')
  or (mode ~= 'top' and check_acl('ZCARD', board))
  or (b.shared and check_acl('ZCOUNT', b.dense or board, '0', '0'))
if err then return err end
err = check_options(b)
if err then return err end
local size = -1
if mode ~= 'top' then size = redis.call('ZCARD', board) end

local start = tonumber(ARGV[3])
if mode == 'around' then
  if size <= count then
    start = 0
  else
    start = math.min(math.max(0, start - 1 - math.floor(count / 2)), size - count)
  end
end
local ranged = range_best(b, start, start + count - 1)
local entries
entries, err = hydrate(b, ARGV[1], ranged)
if err then return err end
if b.shared then return {start, size, entries, window_ranks(b, ranged, start)} end
return {start, size, entries}
