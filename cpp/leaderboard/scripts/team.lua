#!lua
-- A team board's calls (see python/redis_leaderboard/boards/team.py for the design): a member's
-- write (their score on the members' board, their contribution to their team, the team's score
-- on the teams' board, atomically), a move between teams, a member's removal, and a team's
-- members. No flags: Redis 7 refuses it up front when out of memory. Every check that can fail
-- (key types, permissions, the recorded options) runs before the first write.
-- KEYS (a team board "<K>"): <K>:options (the recorded options: 'team' "aggregate=<a>
-- order=<o>"; on an 'asc' board also order and ties, for the teams' board's reads), <K>:team_of
-- (member -> team), <K> (the teams' board, the guide's layout), <K>:members (the members' board,
-- the guide's layout), the member's metadata hash <K>:members:user:<id>, <K>:members:options,
-- then the team's contributions <K>:team:<t> (the team named, or the member's).
-- ARGV: op ('submit' | 'move' | 'remove' | 'members' | 'team_of'), aggregate ('sum' | 'best'), order, member
-- ('' for 'members'), team ('' : the member's own), then for submit: mode, score, field, value...
-- Replies: a status 'OPTIONS <recorded>' (the board records other options); an error 'NOTEAM
-- ...' (a member's first write names no team); else
--   submit:  {submit()'s reply on the members' board (see apply_write), team, the team's score,
--             its 1-based rank, the member's previous team or false}
--   move:    {previous team or false, team, the team's score or false, its rank or false}
--   remove:  1 if the member was on the board, else 0
--   members: {member, contribution, ...} best first
--   team_of: the member's team, or nil
local OPTIONS, TEAM_OF, TEAMS, MEMBERS = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local MEMBER_KEY = KEYS[5]
local op, aggregate, order, member, team = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local config = 'aggregate=' .. aggregate .. ' order=' .. order
local desc = order == 'desc'
local teams = board_spec(TEAMS, 1, order, 'lexicographic')

local function team_key(t) return TEAMS .. ':team:' .. t end

local err = check_type(OPTIONS, 'hash') or check_type(TEAM_OF, 'hash')
  or check_type(TEAMS, 'zset') or check_acl('HGET', OPTIONS, 'team')
  or check_acl('HGET', TEAM_OF, 'x') or check_acl('ZSCORE', TEAMS, 'x')
if err then return err end
local recorded = redis.call('HGET', OPTIONS, 'team')
if recorded and recorded ~= config then return redis.status_reply('OPTIONS ' .. recorded) end
local current = member ~= '' and redis.call('HGET', TEAM_OF, member) or nil
if team == '' then team = current end
-- The team's contributions: declared when the caller named the team, else the member's own
-- (reached through the member's entry in TEAM_OF, see check_present).
local NEW_TEAM = KEYS[7] or (team and team_key(team))
if NEW_TEAM then
  err = check_type(NEW_TEAM, 'zset') or check_acl('ZRANGE', NEW_TEAM, '0', '0')
    or (not KEYS[7] and check_present(TEAM_OF, {NEW_TEAM}))
  if err then return err end
end

if op == 'team_of' then return current or false end

if op == 'members' then
  local ranged
  if desc then
    ranged = redis.call('ZRANGE', NEW_TEAM, 0, -1, 'REV', 'WITHSCORES')
  else
    ranged = redis.call('ZRANGE', NEW_TEAM, 0, -1, 'WITHSCORES')
  end
  return ranged
end

err = check_acl('HSET', OPTIONS, 'team', config) or check_acl('HSET', TEAM_OF, 'x', 'x')
  or check_acl('HDEL', TEAM_OF, 'x') or (NEW_TEAM and (check_acl('ZADD', NEW_TEAM, '0', 'x')
    or check_acl('ZREM', NEW_TEAM, 'x'))) or check_acl('ZINCRBY', TEAMS, '0', 'x')
  or check_acl('ZADD', TEAMS, '0', 'x') or check_acl('ZREM', TEAMS, 'x')
  or check_acl(teams.position_command, TEAMS, 'x')
if err then return err end

-- A team's contributions and score: a member's contribution `old` (nil: none) becomes `new`
-- (nil: none), and the team's score follows: the sum of the contributions (kept by
-- increments: exact for whole scores while a team's total stays below 2^53, see check_sums),
-- or the best one. A team with no member left leaves the teams' board.
local function contribute(t, key, old, new)
  if new then redis.call('ZADD', key, new, member) else redis.call('ZREM', key, member) end
  if redis.call('ZCARD', key) == 0 then
    redis.call('ZREM', TEAMS, t)
    return
  end
  if aggregate == 'sum' then
    if not redis.call('ZSCORE', TEAMS, t) then
      redis.call('ZADD', TEAMS, new or 0, t)
    else
      redis.call('ZINCRBY', TEAMS, (new or 0) - (old or 0), t)
    end
    return
  end
  local best
  if desc then
    best = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  else
    best = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  end
  redis.call('ZADD', TEAMS, best[2], t)
end

-- The team's score (text) and 1-based rank on the teams' board, or false, false.
local function standing(t)
  local score = redis.call('ZSCORE', TEAMS, t)
  if not score then return false, false end
  return score, redis.call(teams.position_command, TEAMS, t) + 1
end

-- Records the options (an 'asc' board's order too, for the teams' board's own reads).
local function record()
  if recorded then return end
  redis.call('HSET', OPTIONS, 'team', config)
  if not desc then redis.call('HSET', OPTIONS, 'order', order, 'ties', 'lexicographic') end
end

local old_key = current and team_key(current)

-- nil, or the error reply refusing a write, move or removal whose sum ('sum' boards) would
-- leave a team's score infinite or not a number: the member's contribution `old` (nil: none)
-- in team `from` (nil: none) becomes `new` (nil: none) in team `to` (nil: none).
local function check_sums(from, old, to, new)
  if aggregate ~= 'sum' then return nil end
  local function finite(t, delta)
    local total = tonumber(redis.call('ZSCORE', TEAMS, t) or '0') + delta
    if total == total and total ~= math.huge and total ~= -math.huge then return nil end
    return redis.error_reply('ERR team ' .. t .. ' of team board ' .. TEAMS .. ' would have a '
      .. 'score that is not a finite number; nothing was changed')
  end
  if from and old and from ~= to then
    local err = finite(from, -old)
    if err then return err end
  end
  if to and new then return finite(to, new - (from == to and old or 0)) end
  return nil
end
if old_key then
  err = check_type(old_key, 'zset') or check_acl('ZADD', old_key, '0', 'x')
    or check_acl('ZREM', old_key, 'x') or check_present(TEAM_OF, {old_key})
  if err then return err end
end

if op == 'submit' then
  if not team then
    return redis.error_reply('NOTEAM member ' .. member .. ' of team board ' .. TEAMS
      .. ' has no team: its first write names one; nothing was changed')
  end
  local mode = ARGV[6]
  local plan, reply = plan_write({board = MEMBERS, user_key = MEMBER_KEY, k = 6, mode = mode,
    order = order, ties = 'lexicographic', submit = true, number = ARGV[7], user_id = member,
    max_entries = 4294967296, fields = ARGV, first_field = 8})
  if not plan then return reply end
  err = check_sums(current, plan.old, team, plan.score)
  if err then return err end
  -- The writes: nothing below fails but on a server fault.
  record()
  reply = apply_write(plan)
  local old, new = plan.old, plan.score
  if current and current ~= team and old then contribute(current, old_key, old, nil) end
  contribute(team, NEW_TEAM, current == team and old or nil, new)
  redis.call('HSET', TEAM_OF, member, team)
  local score, rank = standing(team)
  return {reply, team, score, rank, current or false}
end

if op == 'move' then
  local score = redis.call('ZSCORE', MEMBERS, member)
  if current ~= team and score then
    err = check_sums(current, tonumber(score), team, tonumber(score))
    if err then return err end
  end
  record()
  if current ~= team then
    if score and current then contribute(current, old_key, tonumber(score), nil) end
    if score then contribute(team, NEW_TEAM, nil, tonumber(score)) end
    redis.call('HSET', TEAM_OF, member, team)
  end
  local team_score, rank = standing(team)
  return {current or false, team, team_score, rank}
end

if op == 'remove' then
  local b = board_spec(MEMBERS, 6, order, 'lexicographic')
  err = check_acl('ZREM', MEMBERS, member) or check_acl('UNLINK', MEMBER_KEY)
    or check_type(MEMBERS, 'zset') or check_type(MEMBER_KEY, 'hash')
  if err then return err end
  local score = redis.call('ZSCORE', MEMBERS, member)
  if score and current then
    err = check_sums(current, tonumber(score), nil, nil)
    if err then return err end
  end
  if score then redis.call('ZREM', b.board, member) end
  redis.call('UNLINK', MEMBER_KEY)
  if current then
    if score then contribute(current, old_key, tonumber(score), nil) end
    redis.call('HDEL', TEAM_OF, member)
  end
  return score and 1 or 0
end

return redis.error_reply('ERR unknown team operation ' .. tostring(op))
