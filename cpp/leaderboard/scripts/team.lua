#!lua
-- A team board's calls (see python/redis_leaderboard/boards/team.py for the design): a member's
-- write (their score on the members' board, their contribution to their team, the team's score
-- on the teams' board, atomically), a move between teams, a member's removal, and hiding a
-- member (fair play); team_read.lua reads. No flags: Redis 7 refuses it up front when out of
-- memory. Every check that can fail (key types, permissions, the recorded options, a submission
-- id's record, a rate or score limit) runs before the first write.
-- A team board "<K>".
--: KEYS team_options: <K>:options, the recorded options: 'team' "aggregate=<a> order=<o>"; on
--   an 'asc' board also order and ties, for the teams' board's reads
--: KEYS memberships: <K>:team_of, member -> team
--: KEYS team_board: <K>, the teams' board (the guide's layout)
--: KEYS member_board: <K>:members, the members' board (the guide's layout, or the compact one)
--: ARGV aggregate: how a team's score follows from its members' ('sum' or 'best')
--: ARGV order: both boards' order
--: ARGV ties: the members' board's tie rule as board_spec reads it ('lexicographic', or 'lexicographic+compact': its metadata in one hash <K>:members:meta)
--: CALL submit: a member's write, into the team named (which moves them there)
--: KEYS member_key: the member's metadata hash <K>:members:user:<id> (compact: <K>:members:meta)
--: KEYS team_key: the team's contributions <K>:team:<t>
--: KEYS write_keys...: the members' board's option keys (board_spec in lib/options.lua), then
--   the guards' (guard_fields), in the words' order: with a submission id its record
--   <K>:submission:<id>, with a rate limit the member's window <K>:rate:<member>, with events
--   the stream <K>:events
--: ARGV member: the member
--: ARGV team: the team
--: ARGV mode: the write mode
--: ARGV score: the score
--: ARGV guard_words: '' or the write's guard words (lib/guards.lua), space-separated:
--   'sid:<ttl ms>:<call token>' (see new_call_token in operations.hpp), 'rate:<max>:<per ms>',
--   'events:<maxlen>', 'range:<min>:<max>', 'maxinc:<n>'
--: ARGV metadata...: field, value, ...
--: REPLY submit: submit(member), team: text, team_score: score?, team_rank: int?,
--:   previous_team: text?
--: CALL submit_own: a member's write, into their own team
--: KEYS member_key: the member's metadata hash <K>:members:user:<id> (compact: <K>:members:meta)
--: KEYS write_keys...: the members' board's option keys, then the guards' (as submit's)
--: ARGV member: the member
--: ARGV mode: the write mode
--: ARGV score: the score
--: ARGV guard_words: '' or 'sid:<ttl ms>:<call token>' (as submit's)
--: ARGV metadata...: field, value, ...
--: REPLY submit: submit(member), team: text, team_score: score?, team_rank: int?,
--:   previous_team: text?
--: CALL move: a member (and their contribution) moved to a team
--: KEYS team_key: the team's contributions <K>:team:<t>
--: KEYS option_keys...: the members' board's option keys (board_spec in lib/options.lua), then
--   with events the stream <K>:events
--: ARGV member: the member
--: ARGV team: the team
--: ARGV guard_words: '' or 'events:<maxlen>' (see removal_events in lib/removal_events.lua)
--: REPLY previous_team: text?, team: text, team_score: score?, team_rank: int?
--: CALL remove: a member removed, with their metadata, contribution and kept score if hidden
--: KEYS member_key: the member's metadata hash <K>:members:user:<id> (compact: <K>:members:meta)
--: KEYS option_keys...: the members' board's option keys (as move's; with events the stream)
--: ARGV member: the member
--: ARGV guard_words: '' or 'events:<maxlen>' (as move's)
--: REPLY bool
--: CALL hide: a member hidden (fair play): off the members' board, their contribution out of
--   their team's score
--: KEYS member_key: the member's metadata hash <K>:members:user:<id> (compact: <K>:members:meta)
--: KEYS option_keys...: the members' board's option keys (as move's; with events the stream)
--: ARGV member: the member
--: ARGV guard_words: '' or 'events:<maxlen>' (as move's)
--: REPLY bool
--: CALL unhide: a hidden member shown again, their contribution back in their team's score
--: KEYS member_key: the member's metadata hash <K>:members:user:<id> (compact: <K>:members:meta)
--: KEYS option_keys...: the members' board's option keys (as move's; with events the stream)
--: ARGV member: the member
--: ARGV guard_words: '' or 'events:<maxlen>' (as move's)
--: REPLY bool
-- Replies: a status 'OPTIONS <recorded>' (the board records other options); an error 'NOTEAM
-- ...' (a member's first write names no team); else
--   submit, submit_own: {submit()'s reply on the members' board (see apply_write), team, the
--            team's score, its 1-based rank, the member's previous team or false}; with a
--            submission id, the whole reply is kept in its record (keep_rest) and a resend
--            answers it as it was (check_submission's duplicate rule)
--   move:    {previous team or false, team, the team's score or false, its rank or false}
--   remove:  1 if the member had a score (on the board, or kept aside while hidden), else 0
--   hide, unhide: 1 if the member was not hidden before (or was), else 0
-- Guards (the members' board's, lib/guards.lua, recorded in <K>:members:options as a plain
-- board's): a rate limit, score limits and events judge a member's own score writes (submit,
-- submit_own: plan_write refuses with RATELIMITED, SCOREREJECTED or the OPTIONS status before
-- anything is written; a resend of an applied submission id answers first); a board recording
-- events refuses a move, removal, hide or unhide from a client without them (OPTIONS, as plain
-- boards' removals: check_removal_events). Events, all in the stream <K>:events: a member's
-- change is the members' board's event (kind 'score', 'delete', 'hide', as a plain board's),
-- then each team whose score changed appends a 'team' event (team_event below).
local config = 'aggregate=' .. aggregate .. ' order=' .. order
local desc = order == 'desc'
local position_command = desc and 'ZREVRANK' or 'ZRANK'  -- the teams' board's (ties lexicographic)

local function contributions_of(t) return team_board .. ':team:' .. t end

local err = check_type(team_options, 'hash') or check_type(memberships, 'hash')
  or check_type(team_board, 'zset') or check_acl('HGET', team_options, 'team')
  or check_acl('HGET', memberships, 'x') or check_acl('ZSCORE', team_board, 'x')
if err then return err end
local recorded = redis.call('HGET', team_options, 'team')
if recorded and recorded ~= config then return redis.status_reply('OPTIONS ' .. recorded) end
local current = member and redis.call('HGET', memberships, member) or nil
local named = team  -- the team as sent: part of a submission id's payload
team = team or current
-- The team's contributions: declared when the caller named the team, else the member's own
-- (reached through the member's entry in memberships, see check_present).
local NEW_TEAM = team_key or (team and contributions_of(team))
if NEW_TEAM then
  err = check_type(NEW_TEAM, 'zset') or check_acl('ZRANGE', NEW_TEAM, '0', '0')
    or (not team_key and check_present(memberships, {NEW_TEAM}))
  if err then return err end
end

err = check_acl('HSET', team_options, 'team', config)
  or check_acl('HSET', memberships, 'x', 'x') or check_acl('HDEL', memberships, 'x')
  or (NEW_TEAM and (check_acl('ZADD', NEW_TEAM, '0', 'x') or check_acl('ZREM', NEW_TEAM, 'x')))
  or check_acl('ZINCRBY', team_board, '0', 'x') or check_acl('ZADD', team_board, '0', 'x')
  or check_acl('ZREM', team_board, 'x') or check_acl(position_command, team_board, 'x')
if err then return err end

-- A team's contributions and score: a member's contribution `old` (nil: none) becomes `new`
-- (nil: none), and the team's score follows: the sum of the contributions (kept by
-- increments: exact for whole scores while a team's total stays below 2^53, see check_sums),
-- or the best one. A team with no member left leaves the teams' board. Returns the team's score
-- (text), nil if it left.
local function contribute(t, key, old, new)
  if new then
    redis.call('ZADD', key, new, member)  -- (the team has a member now: no ZCARD)
  else
    redis.call('ZREM', key, member)
    if redis.call('ZCARD', key) == 0 then
      redis.call('ZREM', team_board, t)
      return
    end
  end
  if aggregate == 'sum' then
    -- (A team not on the teams' board has no other contribution: its score is `new`.)
    local present = redis.call('ZSCORE', team_board, t)
    return redis.call('ZINCRBY', team_board, (new or 0) - (present and old or 0), t)
  end
  local best
  if desc then
    best = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
  else
    best = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  end
  redis.call('ZADD', team_board, best[2], t)
  return best[2]
end

-- The team's score (text; `score` if the caller has it, from contribute) and 1-based rank on the
-- teams' board, or false, false.
local function standing(t, score)
  score = score or redis.call('ZSCORE', team_board, t)
  if not score then return false, false end
  return score, redis.call(position_command, team_board, t) + 1
end

-- ---- Change events (events=True) ----
-- `ev`: the events' fields (events_key, events_maxlen: the write's w, or removal_events'), or
-- nil: no events. A team's change appends a 'team' event (add_event on the teams' board): the
-- team as 'user_id', its score and 1-based rank now, before ('previous_score',
-- 'previous_rank'), the teams it overtook (at most 10, nearest first), and 'member', the member
-- whose change moved it; a team leaving the teams' board (no member with a score left) has no
-- 'score' and an empty 'rank'. No event for a team whose score did not change.

-- Its helpers are built only by a call with events (a closure costs every call that builds it):
-- team_events(ev) sets team_before and team_event for `ev`, and returns nil or the error
-- refusing the caller the teams' board's reads a 'team' event makes. team_before(t): team t's
-- entry before a change, {t, its score's text or nil, its 0-based position (the board's size
-- if absent)}; team_event(before, new) appends its 'team' event if its score changed: `new`,
-- its score's text now (nil: it left the teams' board).
local team_before, team_event
local function team_events(ev)
  local b = board_spec(team_board, 1, order, 'lexicographic')
  team_before = function(t)
    local old = redis.call('ZSCORE', team_board, t)
    return {t = t, old = old, position = position_before(b, t, old)}
  end
  team_event = function(before, new)
    if new == before.old then return end
    local old, position = before.old, before.position
    if new then
      add_event(b, ev.events_key, ev.events_maxlen, before.t, tonumber(new), old, old and position,
        position, {}, 'team', {'member', member})
    else
      append_event(ev, {'kind', 'team', 'user_id', before.t, 'rank', '', 'previous_score', old,
        'previous_rank', tostring(position + 1), 'member', member})
    end
  end
  return check_acl('ZRANGE', team_board, '0', '0') or check_acl('ZCARD', team_board)
end

-- Records the options (an 'asc' board's order too, for the teams' board's own reads).
local function record()
  if recorded then return end
  redis.call('HSET', team_options, 'team', config)
  if not desc then redis.call('HSET', team_options, 'order', order, 'ties', 'lexicographic') end
end

local old_key = current and contributions_of(current)

-- nil, or the error reply refusing a write, move or removal whose sum ('sum' boards) would
-- leave a team's score infinite or not a number: the member's contribution `old` (nil: none)
-- in team `from` (nil: none) becomes `new` (nil: none) in team `to` (nil: none).
local function check_sums(from, old, to, new)
  if aggregate ~= 'sum' then return nil end
  local function finite(t, delta)
    local total = tonumber(redis.call('ZSCORE', team_board, t) or '0') + delta
    if total == total and total ~= math.huge and total ~= -math.huge then return nil end
    return redis.error_reply('ERR team ' .. t .. ' of team board ' .. team_board .. ' would have a '
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
    or check_acl('ZREM', old_key, 'x') or check_present(memberships, {old_key})
  if err then return err end
end

if call == 'submit' or call == 'submit_own' then
  local w = {board = member_board, user_key = member_key, k = write_keys_at, mode = mode,
    order = order, ties = ties, submit = true, number = score, user_id = member,
    max_entries = UNLIMITED, fields = ARGV, first_field = metadata_at}
  local ev
  if guard_words ~= '' then
    local spec = {}
    for word in string.gmatch(guard_words, '%S+') do spec[#spec + 1] = word end
    guard_fields(w, spec, 1, #KEYS)  -- the guards' keys: the last ones
    w.payload = named or ''  -- the team as sent is part of the payload (check_submission)
    ev = w.events_key and w
    err = ev and team_events(ev)
    if err then return err end
  end
  -- The members' board's write, planned: its guards (the submission id's record first, then
  -- the rate limit, then the score limits) refuse it here, before anything is written.
  local plan, reply = plan_write(w)
  if not plan then
    if type(reply) ~= 'table' or reply.err or reply.ok then return reply end
    -- The stored result of an earlier write with this submission id: nothing is written; the
    -- first reply, whole (keep_rest below kept the team's part).
    local rest = read_submission(w.submission_key).rest
    if rest then return {reply, rest[1], rest[2], rest[3], rest[4]} end
    local t_score, t_rank = false, false  -- (upsert_many's record at this key: keeps no rest)
    if team then t_score, t_rank = standing(team) end
    return {reply, team or '', t_score, t_rank, false}
  end
  if not team then
    return redis.error_reply('NOTEAM member ' .. member .. ' of team board ' .. team_board
      .. ' has no team: its first write names one; nothing was changed')
  end
  -- A hidden member's write is kept aside (plan.hidden): no contribution anywhere.
  local hidden = plan.hidden
  if not hidden then
    err = check_sums(current, plan.old, team, plan.score)
    if err then return err end
  end
  -- The writes: nothing below fails but on a server fault.
  record()
  reply = apply_write(plan)  -- (with events, the member's: apply_guards)
  local t_score
  if not hidden then
    local old, new = plan.old, plan.score
    if current and current ~= team and old then
      local before = ev and team_before(current)
      local left = contribute(current, old_key, old, nil)
      if before then team_event(before, left) end
    end
    local before = ev and team_before(team)
    t_score = contribute(team, NEW_TEAM, current == team and old or nil, new)
    if before then team_event(before, t_score) end
  end
  redis.call('HSET', memberships, member, team)
  local t_rank
  t_score, t_rank = standing(team, t_score)
  local result = {reply, team, t_score, t_rank, current or false}
  if w.submission_key then keep_rest(w, {team, t_score, t_rank, current or false}) end
  return result
end

-- @options: the calls below a member's write (move, remove, hiding). The
-- lib/ helpers only they use are built here, after the write has returned (generate.py: a
-- closure costs every call that builds it), so a write builds none of them.

-- The members' board's spec and recorded options for a call that is not a member's score write
-- (move, remove, hide, unhide): the spec, or nil and the reply refusing the call (an error, the
-- OPTIONS status of other recorded options, or of events the caller does not append).
local function members_spec(ev)
  local b = board_spec(member_board, option_keys_at, order, ties)
  local err = check_type(member_board, 'zset') or check_type(b.options, 'hash')
    or check_options(b) or check_removal_events(b, ev) or (ev and team_events(ev))
  if err then return nil, err end
  return b
end

-- ---- Hidden members (fair play, see lib/hiding.lua) ----
-- The members' board hides them as any board does: off it, their score kept aside in its hidden
-- hash "<K>:members:hidden" (member -> score's text, '' if none), 'hidden' '1' in its options
-- hash. Their contribution leaves their team while hidden: a team's score is its visible
-- members' (the sum or the best one; a team whose members are all hidden leaves the teams'
-- board). A hidden member's write is judged as any (mode, submission id) and kept aside: it
-- moves their membership when it names a team, their team's score does not change. unhide()
-- puts the kept score back on the members' board and into their team (the one they are in then).
local HIDDEN = member_board .. ':hidden'

-- Whether the members' board records hidden members (its options hash `options`); or nil and
-- an error reply. The hidden hash is not a declared key: reached through the options hash (see
-- check_present).
local function hides_any(options)
  local err = check_type(options, 'hash') or check_acl('HGET', options, 'hidden')
    or check_type(HIDDEN, 'hash') or check_acl('HGET', HIDDEN, 'x') or check_acl('HKEYS', HIDDEN)
  if err then return nil, err end
  if not redis.call('HGET', options, 'hidden') then return false end
  err = check_present(options, {HIDDEN})
  if err then return nil, err end
  return true
end

if call == 'move' then
  local ev = removal_events(guard_words)
  local b
  b, err = members_spec(ev)
  if not b then return err end
  local score = redis.call('ZSCORE', member_board, member)
  if current ~= team and score then
    err = check_sums(current, tonumber(score), team, tonumber(score))
    if err then return err end
  end
  record()
  local team_score
  if current ~= team then
    if score and current then
      local before = ev and team_before(current)
      local left = contribute(current, old_key, tonumber(score), nil)
      if before then team_event(before, left) end
    end
    if score then
      local before = ev and team_before(team)
      team_score = contribute(team, NEW_TEAM, nil, tonumber(score))
      if before then team_event(before, team_score) end
    end
    redis.call('HSET', memberships, member, team)
  end
  local rank
  team_score, rank = standing(team, team_score)
  return {current or false, team, team_score, rank}
end

if call == 'remove' then
  local options = KEYS[option_keys_at]
  local ev = removal_events(guard_words)
  local b
  b, err = members_spec(ev)
  if not b then return err end
  -- The member's metadata: their hash, or their field of the board's (and their hash while a
  -- conversion moves them: check_guide_hashes).
  err = check_acl('ZREM', member_board, member)
    or (b.compact and check_acl('HDEL', member_key, member))
    or (not b.compact and check_acl('UNLINK', member_key))
    or check_type(member_key, 'hash') or check_guide_hashes(b, {member})
  if err then return err end
  local any
  any, err = hides_any(options)
  if any == nil then return err end
  local kept = any and redis.call('HGET', HIDDEN, member)
  if kept then
    err = check_acl('HDEL', HIDDEN, member) or check_acl('HLEN', HIDDEN)
      or check_acl('HDEL', options, 'hidden')
    if err then return err end
  end
  local score = redis.call('ZSCORE', member_board, member)
  if score and current then
    err = check_sums(current, tonumber(score), nil, nil)
    if err then return err end
  end
  -- (A hidden member has no contribution and no score on the board: `score` is nil.)
  local previous_rank = ev and score and rank_of(b, member, tonumber(score))
  if kept then forget_hidden(HIDDEN, options, member) end
  if score then redis.call('ZREM', member_board, member) end
  delete_metadata(b, member_board .. ':user:', {member})
  if previous_rank then  -- as a plain board's delete_user's
    append_event(ev, {'kind', 'delete', 'user_id', member, 'score', score, 'rank', '',
      'previous_score', score, 'previous_rank', tostring(previous_rank + 1)})
  end
  if current then
    if score then
      local before = ev and team_before(current)
      local left = contribute(current, old_key, tonumber(score), nil)
      if before then team_event(before, left) end
    end
    redis.call('HDEL', memberships, member)
  end
  return (score or (kept and kept ~= '')) and 1 or 0
end

if call == 'hide' or call == 'unhide' then
  local ev = removal_events(guard_words)
  local b = board_spec(member_board, option_keys_at, order, ties)
  err = check_type(member_board, 'zset') or check_type(b.options, 'hash')
    or check_acl('ZSCORE', member_board, member) or check_hidden_writes(b, member, nil)
    or check_acl('HGET', HIDDEN, member) or check_acl('HDEL', HIDDEN, member)
    or check_acl('HLEN', HIDDEN) or check_acl('HDEL', b.options, 'hidden')
  if err then return err end
  local record_order
  err, record_order = check_options(b)
  if err then return err end
  err = check_removal_events(b, ev) or (ev and team_events(ev))
  if err then return err end
  if b.recorded_hidden then
    err = check_present(b.options, {HIDDEN})
    if err then return err end
  end
  local kept = b.recorded_hidden and redis.call('HGET', HIDDEN, member)
  if call == 'hide' then
    if kept then return 0 end
    local text = redis.call('ZSCORE', member_board, member)
    local score = text and tonumber(text)
    if score and current then
      err = check_sums(current, score, nil, nil)
      if err then return err end
    end
    local previous_rank = ev and score and rank_of(b, member, score)
    record()
    if record_order then record_options(b) end
    keep_hidden(b, member, text or '', text)
    if previous_rank then  -- as a plain board's hide
      append_event(ev, {'kind', 'hide', 'user_id', member, 'score', text, 'rank', '',
        'previous_score', text, 'previous_rank', tostring(previous_rank + 1)})
    end
    if score and current then
      local before = ev and team_before(current)
      local left = contribute(current, old_key, score, nil)
      if before then team_event(before, left) end
    end
    return 1
  end
  -- unhide: the kept score back on the members' board as a write of it, and into their team.
  if not kept then return 0 end
  local plan
  if kept ~= '' then
    plan, err = plan_write({board = member_board, user_key = member_key, k = option_keys_at,
      mode = 'set', order = order, ties = ties, number = kept_parts(kept),
      user_id = member, max_entries = UNLIMITED, fields = {}, first_field = 1, restore = true,
      events_key = ev and ev.events_key, events_maxlen = ev and ev.events_maxlen})
    if not plan then return err end
    if current then
      err = check_sums(nil, nil, current, plan.score)
      if err then return err end
    end
  end
  record()
  forget_hidden(HIDDEN, b.options, member)
  if plan then
    plan.b.recorded_hidden = nil  -- the hash may be gone: not named again (see check_present)
    apply_write(plan)  -- (with events, the member's 'score' event: apply_guards)
    if current then
      local before = ev and team_before(current)
      local joined = contribute(current, old_key, nil, plan.score)
      if before then team_event(before, joined) end
    end
  end
  return 1
end

return redis.error_reply('ERR unknown team operation ' .. tostring(call))
