#!lua
-- upsert_many, one chunk, on a default board (one with options, guards or hidden players takes
-- bulk.lua): the guide's commands, one variadic ZADD and an HSET per entry with metadata, not
-- trimmed; refused whole, nothing written, if the board's options hash exists: another client
-- recorded options, guards or hidden players since this client checked the board (upsert_many
-- checks it again, then, and its chunks take bulk.lua). No flags: Redis 7 refuses it up front
-- when out of memory. A command that fails as it runs (a key of another type: WRONGTYPE)
-- keeps the writes before it.
-- KEYS: board, its options hash, then the metadata hash of each entry with metadata, in order.
-- ARGV: n, then score and user_id of each of the n entries, then for each entry with metadata
-- its number of fields, then field, value, ...
-- Returns n, or the status 'CHECK' (nothing was written).
-- The caller's permissions for every command first (NOPERM, nothing written).
local err = check_acl('EXISTS', KEYS[2]) or check_acl('ZADD', KEYS[1], '0', 'x')
if err then return err end
for k = 3, #KEYS do
  err = check_acl('HSET', KEYS[k], 'x', 'x')
  if err then return err end
end
if redis.call('EXISTS', KEYS[2]) == 1 then return redis.status_reply('CHECK') end
local last = 1 + 2 * tonumber(ARGV[1])
for i = 2, last, 1000 do  -- unpack() is limited by Lua's C stack
  redis.call('ZADD', KEYS[1], unpack(ARGV, i, math.min(i + 999, last)))
end
local at, k = last + 1, 3
while at <= #ARGV do
  local to = at + 2 * tonumber(ARGV[at])
  for i = at + 1, to, 1000 do
    redis.call('HSET', KEYS[k], unpack(ARGV, i, math.min(i + 999, to)))
  end
  at, k = to + 1, k + 1
end
return tonumber(ARGV[1])
