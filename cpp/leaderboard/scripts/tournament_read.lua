#!lua flags=no-writes
-- A tournament's read of a player's state in a period (see tournament.lua for its KEYS, the
-- first five, and its ARGV up to user_id). A read (no-writes): it runs when the server is out of
-- memory and on read-only replicas.
-- Replies: the status 'OPTIONS <recorded>' (see tournament.lua), else {1 if the player is in the
-- period (joined or submitted) else 0, attempts used, attempts granted, players in the period}.
local OPTIONS, ENTRANTS, BONUS = KEYS[1], KEYS[3], KEYS[4]
local user_id = ARGV[15]
local config = 'max_size=' .. ARGV[2] .. ' join_required=' .. ARGV[3] .. ' max_attempts='
  .. ARGV[4] .. ' mode=' .. ARGV[5] .. ' order=' .. ARGV[6] .. ' ties=' .. ARGV[7]

local err = check_type(OPTIONS, 'hash') or check_type(ENTRANTS, 'hash')
  or check_type(BONUS, 'hash') or check_acl('HGET', OPTIONS, 'config')
  or check_acl('HGET', ENTRANTS, 'x') or check_acl('HLEN', ENTRANTS)
  or check_acl('HGET', BONUS, 'x')
if err then return err end
local recorded = redis.call('HGET', OPTIONS, 'config')
if recorded and recorded ~= config then return redis.status_reply('OPTIONS ' .. recorded) end
local used = redis.call('HGET', ENTRANTS, user_id)
return {used and 1 or 0, tonumber(used or '0'), tonumber(redis.call('HGET', BONUS, user_id) or '0'),
  redis.call('HLEN', ENTRANTS)}
