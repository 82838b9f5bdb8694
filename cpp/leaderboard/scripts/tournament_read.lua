#!lua flags=no-writes
-- A tournament's reads: a player's state in a period, and who is hidden (see tournament.lua for
-- its keys and arguments, which these are of). A read (no-writes): it runs when the server is
-- out of memory and on read-only replicas.
--: KEYS tournament_options: <T>:options, the recorded options
--: KEYS entrants: <T>:<P>:entrants, user -> attempts used: a field per player in the period
--: KEYS bonus_key: <T>:<P>:bonus, user -> attempts granted
--: ARGV max_size: players a period takes ('': no limit)
--: ARGV join_required: '1' or '0'
--: ARGV max_attempts: attempts a player has per period ('': no limit)
--: ARGV write_rule: the write mode, then the score limits' words if any (see league.lua)
--: ARGV order: the board's order
--: ARGV ties: the board's ties
--: CALL status: a player's state in the period
--: ARGV user_id: the player
--: REPLY joined: bool, used: int, bonus: int, size: int
--: CALL hidden: the hidden players
--: REPLY texts
--: CALL is_hidden: whether a player is hidden
--: ARGV user_id: the player
--: REPLY bool
-- Replies: the status 'OPTIONS <recorded>' (see tournament.lua), else
--   status:    {1 if the player is in the period (joined or submitted) else 0, attempts used,
--              attempts granted, players in the period}
--   hidden:    the hidden ids, in byte order; is_hidden: 1 if the player is hidden, else 0
local config = 'max_size=' .. max_size .. ' join_required=' .. join_required .. ' max_attempts='
  .. max_attempts .. ' mode=' .. write_rule .. ' order=' .. order .. ' ties=' .. ties

local err = check_type(tournament_options, 'hash') or check_type(entrants, 'hash')
  or check_type(bonus_key, 'hash') or check_acl('HGET', tournament_options, 'config')
  or check_acl('HGET', entrants, 'x') or check_acl('HLEN', entrants)
  or check_acl('HGET', bonus_key, 'x')
if err then return err end
local recorded = redis.call('HGET', tournament_options, 'config')
if recorded and recorded ~= config then return redis.status_reply('OPTIONS ' .. recorded) end

if call == 'hidden' or call == 'is_hidden' then  -- "<T>:hidden" (see tournament.lua)
  local hidden = string.sub(tournament_options, 1, #tournament_options - 8) .. ':hidden'
  return read_hidden(tournament_options, hidden, call == 'is_hidden' and user_id or nil)
end

local used = redis.call('HGET', entrants, user_id)
return {used and 1 or 0, tonumber(used or '0'),
  tonumber(redis.call('HGET', bonus_key, user_id) or '0'), redis.call('HLEN', entrants)}
