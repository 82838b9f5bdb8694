#!lua flags=no-writes
-- get_top / get_around_rank / a page of list_all: a rank window with each entry's metadata.
-- A read (no-writes): it runs when the server is out of memory and on read-only replicas.
-- KEYS[1]: board. ARGV: metadata prefix, 'top' | 'range' | 'around', start (0-based) or rank,
-- count. 'around' centres the window on the 1-based rank and clamps it to the board, as the
-- guide. Returns {start, board size (-1 for 'top', which needs none), {user_id, score,
-- {field, value, ...}, ...}}.
local board, mode = KEYS[1], ARGV[2]
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
local ranged = redis.call('ZRANGE', board, start, start + count - 1, 'REV', 'WITHSCORES')
local entries
entries, err = hydrate(ARGV[1], ranged)
if err then return err end
return {start, size, entries}
