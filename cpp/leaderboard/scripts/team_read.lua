#!lua flags=no-writes
-- A team board's reads (see team.lua for its keys and arguments, which these are of): a
-- member's team, a team's members, who is hidden. A read (no-writes): it runs when the server is
-- out of memory and on read-only replicas, and needs no write permission.
--: KEYS team_options: <K>:options, the recorded options (see team.lua)
--: KEYS memberships: <K>:team_of, member -> team
--: KEYS team_board: <K>, the teams' board (the guide's layout)
--: KEYS member_board: <K>:members, the members' board (the guide's layout)
--: ARGV aggregate: how a team's score follows from its members' ('sum' or 'best')
--: ARGV order: both boards' order
--: CALL team_of: a member's team
--: ARGV member: the member
--: REPLY text?
--: CALL members: a team's members
--: KEYS team_key: the team's contributions <K>:team:<t>
--: ARGV team: the team
--: REPLY [user_id: text, contribution: score]
--: CALL hidden: the hidden members
--: KEYS option_keys...: the members' board's option keys (board_spec in lib/options.lua)
--: REPLY texts
--: CALL is_hidden: whether a member is hidden
--: KEYS option_keys...: the members' board's option keys (board_spec in lib/options.lua)
--: ARGV member: the member
--: REPLY bool
-- Replies: a status 'OPTIONS <recorded>' (the board records other options); else
--   team_of: the member's team, or nil
--   members: {member, contribution, ...} best first
--   hidden:  the hidden members, in byte order; is_hidden: 1 or 0
local config = 'aggregate=' .. aggregate .. ' order=' .. order

local err = check_type(team_options, 'hash') or check_type(memberships, 'hash')
  or check_acl('HGET', team_options, 'team')
if err then return err end
local recorded = redis.call('HGET', team_options, 'team')
if recorded and recorded ~= config then return redis.status_reply('OPTIONS ' .. recorded) end

if call == 'team_of' then
  err = check_acl('HGET', memberships, member)
  if err then return err end
  return redis.call('HGET', memberships, member)
end

if call == 'members' then
  err = check_type(team_key, 'zset') or check_acl('ZRANGE', team_key, '0', '0')
  if err then return err end
  if order == 'desc' then return redis.call('ZRANGE', team_key, 0, -1, 'REV', 'WITHSCORES') end
  return redis.call('ZRANGE', team_key, 0, -1, 'WITHSCORES')
end

-- The members' board hides them as any board does (see team.lua), in "<K>:members:hidden".
return read_hidden(KEYS[option_keys_at], member_board .. ':hidden',
  call == 'is_hidden' and member or nil)
