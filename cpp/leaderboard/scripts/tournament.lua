#!lua
-- A tournament's writes (see python/redis_leaderboard/boards/tournament.py for the design): a
-- player's submission (every check, then the attempt and the score, atomically), a join, and
-- attempts granted. No flags: Redis 7 refuses it up front when out of memory. Every check that
-- can fail (key types, permissions, the recorded options, the active window, the period, the
-- capacity, the attempts) runs before the first write, so a refused call changes nothing: no
-- attempt used, no join recorded.
-- A tournament "<T>", its period "<P>". Every key of a period (<T>:<P>:entrants, <T>:<P>:bonus,
-- the board's) expires at the period's deadline, set by whichever call creates or writes it; a
-- write into a period whose deadline has passed on the server's clock (TIME) is refused before
-- anything is written (PERIODCLOSED: a client whose clock is far behind would write keys that
-- are deleted at once). The server's clock decides (see check_clock in lib/clock.lua).
--: KEYS tournament_options: <T>:options, the recorded options
--: KEYS tournament_current: <T>:current, "<start ms> <period id>": the newest period written
--: KEYS entrants: <T>:<P>:entrants, user -> attempts used: a field per player in the period
--: KEYS bonus_key: <T>:<P>:bonus, user -> attempts granted
--: KEYS board: <T>:<P>, the period's board (the guide's layout)
--: ARGV max_size: players a period takes ('': no limit)
--: ARGV join_required: '1' or '0'
--: ARGV max_attempts: attempts a player has per period ('': no limit)
--: ARGV write_rule: the write mode, then the score limits' words if any (see league.lua), then
--   'rate:<max>:<per ms>' (rate_limit) and 'events:<maxlen>' (change events) if the tournament
--   has them: part of the recorded config, so a client with other options is refused
--: ARGV order: the board's order
--: ARGV ties: the board's ties ("tb:<name>.<dir>,...": its tie-break columns, see board_spec)
--: ARGV period: the period's id
--: ARGV period_start: the period's start (unix ms)
--: ARGV window_end: the end of the period's active window (unix ms)
--: ARGV next_start: the next period's start (unix ms)
--: ARGV expire: the period's deadline (unix ms), when its keys expire
--: ARGV period_named: whether the caller named the period (the stale-client guard): '0' no,
--   '1' this one, '2' another one: refused unless the call resends an applied submission id
--: CALL submit: a player's submission (every check, then an attempt used and the score)
--: KEYS user_key: the user's metadata hash <T>:<P>:user:<id>
--: KEYS write_keys...: the period's board's option keys (board_spec in lib/options.lua), then the
--   guards' (guard_fields), in the order of their words: with a submission id its record
--   <T>:submission:<id> (the tournament's, whatever the period), with a rate limit the player's
--   window <T>:rate:<id>, with events the tournament's stream <T>:events
--: ARGV user_id: the player
--: ARGV score: the score
--: ARGV guard_words: '' or the words 'sid:<ttl ms>:<call token>' (see new_call_token in
--   operations.hpp), 'rate:<max>:<per ms>', 'events:<maxlen>' (the rule's, with their keys) and
--   'tb:<key>' (tie-break columns' values, see plan_write), space-separated
--: ARGV metadata...: field, value, ...
--: REPLY submit: submit(user_id), period: text, used: int, bonus: int, size: int
--: CALL join: a player joins the period
--: ARGV user_id: the player
--: REPLY joined_now: bool, used: int, bonus: int, size: int
--: CALL add_attempts: attempts granted to a player in the period
--: ARGV user_id: the player
--: ARGV attempts: how many
--: REPLY used: int, bonus: int, size: int
--: CALL hide: a player hidden from every period (fair play)
--: KEYS user_key: the user's metadata hash <T>:<P>:user:<id>
--: KEYS option_keys...: the period's board's option keys (board_spec in lib/options.lua), then
--   with events the tournament's stream <T>:events
--: ARGV user_id: the player
--: REPLY bool
--: CALL unhide: a hidden player shown again
--: KEYS user_key: the user's metadata hash <T>:<P>:user:<id>
--: KEYS option_keys...: the period's board's option keys (board_spec in lib/options.lua), then
--   with events the tournament's stream <T>:events
--: ARGV user_id: the player
--: REPLY bool
-- Replies: an error 'CLOCK ...' (the server's clock is in another period than the one the call
-- names from the client's clock); a status 'OPTIONS <recorded>' (the tournament records other
-- options); an error
-- 'PERIODCLOSED ...' (outside the active window, a newer period has begun, or the period has
-- expired on the server's clock), 'STALEPERIOD ...'
-- (the caller named a period that is not the current one), 'NOTJOINED ...', 'TOURNAMENTFULL ...',
-- 'NOATTEMPTS ...', 'RATELIMITED ...' (rate_limit: checked after a resend's stored answer, before
-- the period's checks; nothing written, no attempt used); else
--   submit:       {submit()'s reply (see apply_write), period id written, attempts used,
--                  attempts granted, players in the period}; with a submission id, the whole
--                  reply is kept in its record (see keep_first_result) and a resend answers it
--                  as it was, whatever the clock or the period says now (duplicate 0 when the
--                  resend carries the call token that applied it: the same call's own resend)
--   join:         {1 if joined now else 0, attempts used, attempts granted, players}
--   add_attempts: {attempts used, attempts granted, players}
--   hide, unhide: 1 if the player was not hidden before (or was), else 0 (tournament_read.lua
--                 reads who is hidden)
local capacity, attempts_per_period = tonumber(max_size), tonumber(max_attempts)
local rule = {}
for word in string.gmatch(write_rule, '%S+') do rule[#rule + 1] = word end
local mode = rule[1]
local start, window_end_ms = tonumber(period_start), tonumber(window_end)
local next_start_ms = tonumber(next_start)
local named, stale = period_named ~= '0', period_named == '2'
local base = string.sub(tournament_options, 1, #tournament_options - 8)  -- "<T>"
local config = 'max_size=' .. max_size .. ' join_required=' .. join_required .. ' max_attempts='
  .. max_attempts .. ' mode=' .. write_rule .. ' order=' .. order .. ' ties=' .. ties

local err = check_type(tournament_options, 'hash') or check_type(tournament_current, 'string')
  or check_type(entrants, 'hash') or check_type(bonus_key, 'hash')
  or check_acl('HGET', tournament_options, 'config')
  or check_acl('HSET', tournament_options, 'config', 'x')
  or check_acl('GET', tournament_current) or check_acl('SET', tournament_current, 'x')
  or check_acl('HGET', entrants, 'x') or check_acl('HLEN', entrants)
  or check_acl('HINCRBY', entrants, 'x', '1') or check_acl('HGET', bonus_key, 'x')
  or check_acl('HINCRBY', bonus_key, 'x', '1') or check_acl('PEXPIREAT', entrants, expire)
  or check_acl('PEXPIREAT', bonus_key, expire)
if err then return err end
local recorded = redis.call('HGET', tournament_options, 'config')
if recorded and recorded ~= config then return redis.status_reply('OPTIONS ' .. recorded) end

local function refuse(code, why)
  return redis.error_reply(code .. ' period ' .. period .. ' of tournament ' .. base .. ': '
    .. why .. '; nothing was changed')
end

-- nil, or the error refusing a write into this period because its deadline (when its keys
-- expire) has passed on the server's clock: whatever the client's clock says, such a write would
-- be acknowledged and deleted at once (a PEXPIREAT in the past deletes the key).
local function check_expired()
  local now, deadline = server_ms(), tonumber(expire)
  if now < deadline then return nil end
  return refuse('PERIODCLOSED', 'has expired on the server\'s clock (its keys expired at '
    .. utc_text(deadline) .. '; the server\'s time is ' .. utc_text(now) .. ')')
end

-- nil, or the error refusing a write into this period now: outside its active window, or a
-- newer period has begun (by the clock, or written by another client), or it has expired on
-- the server's clock (check_expired).
local function check_period()
  -- The server's clock decides: a call that did not name its period belongs to the one the
  -- server's clock is in (CLOCK otherwise: the client takes the server's time and sends it
  -- again); a named one is judged below (STALEPERIOD once a newer period has begun).
  local err = (not named and check_clock(start, next_start_ms, 'tournament ' .. base .. ' period '
    .. period)) or check_expired()
  if err then return err end
  local now = server_ms()
  local newer = now >= next_start_ms
  local current = redis.call('GET', tournament_current)
  if current then
    local at = string.find(current, ' ', 1, true)
    local current_start = tonumber(string.sub(current, 1, at - 1))
    if current_start > start then newer = string.sub(current, at + 1) end
  end
  if newer then
    local which = newer == true and 'a newer period' or ('period ' .. newer)
    if named then return refuse('STALEPERIOD', 'the submission was meant for this period, and '
      .. which .. ' has begun') end
    return refuse('PERIODCLOSED', 'has ended: ' .. which .. ' has begun')
  end
  if now < start then return refuse('PERIODCLOSED', 'has not begun') end
  if now >= window_end_ms then
    return refuse('PERIODCLOSED', 'is not active: its window closed at ' .. window_end .. ' ms')
  end
  return nil
end

-- The player's state: joined, attempts used, attempts granted.
local function entrant()
  local used = redis.call('HGET', entrants, user_id)
  return used ~= false, tonumber(used or '0'),
    tonumber(redis.call('HGET', bonus_key, user_id) or '0')
end

-- nil, or the error refusing a player who is not in yet: join required, or the tournament full.
local function check_entry(joined, submitting)
  if joined then return nil end
  if submitting and join_required == '1' then
    return refuse('NOTJOINED', 'user ' .. user_id .. ' has not joined (join_required)')
  end
  if capacity and redis.call('HLEN', entrants) >= capacity then
    return refuse('TOURNAMENTFULL', 'it has its ' .. max_size .. ' players (max_size)')
  end
  return nil
end

-- The writes every accepted call makes before its own: the options recorded, the newest period.
local function mark()
  if not recorded then redis.call('HSET', tournament_options, 'config', config) end
  redis.call('SET', tournament_current, period_start .. ' ' .. period)
end

-- ---- Submission records: the whole first reply ----
-- A submission id's record (see read_submission in lib/submissions.lua) keeps submit()'s reply on
-- the period's board and, with keep_rest, the rest of the first reply: {period id, attempts used,
-- attempts granted, players}. A resend answers the first reply whole from it, nothing recomputed
-- (a duplicate unless it is the same call's own resend: check_submission).

-- Keeps the tournament's part of `result` (the reply being returned) in the record the write
-- just stored (apply_guards' store_submission).
local function keep_first_result(w, result)
  keep_rest(w, {result[2], result[3], result[4], result[5]})
end

-- The reply to a resend of an applied submission id, from `reply` (check_submission's: the
-- stored submit() reply, then the duplicate flag and the board the write landed on): the first
-- reply whole. A record without the tournament's part (an older client's) is answered as then:
-- the player's state in the period of this call.
local function first_result(w, reply)
  local record = read_submission(w.submission_key)
  local rest = record and record.rest
  if rest then return {reply, rest[1], rest[2], rest[3], rest[4]} end
  local _, used, bonus = entrant()
  return {reply, string.sub(reply[#reply], #base + 2), used, bonus,
    redis.call('HLEN', entrants)}
end

-- ---- Change events (events: the lib's add_event, one stream for the tournament) ----
-- "<T>:events": each submit that changes a score appends add_event's 'score' event, a hide
-- its 'hide' event, an unhide its 'score' event, each with the field 'period' (the period's
-- id). The stream expires with the newest period written (each event moves its deadline to
-- its period's), so it never outlives the tournament's boards; MAXLEN ~ caps it. (Built only
-- with events: a tournament without them runs none of this.)

-- The events word of the rule (w.events_maxlen), its stream the last of KEYS (hide, unhide),
-- or nil without events.
local function hiding_events()
  local w = guard_fields({}, rule, 2, 0)
  if not w.events_maxlen then return nil end
  return {events_key = KEYS[#KEYS], events_maxlen = w.events_maxlen, expire_at = expire,
    event_fields = {'period', period}}
end

-- ---- Hidden players (fair play, see lib/hiding.lua) ----
-- The tournament records them in "<T>:hidden" (user_id -> '') and 'hidden' '1' in <T>:options,
-- so they are hidden from every period: each period's board keeps their scores aside.
local HIDDEN = base .. ':hidden'

-- Whether the tournament hides `user_id`; or nil and an error reply (the hash is reached
-- through the options hash, see check_present).
local function tournament_hides()
  if not redis.call('HGET', tournament_options, 'hidden') then return false end
  local err = check_type(HIDDEN, 'hash') or check_acl('HEXISTS', HIDDEN, user_id)
    or check_present(tournament_options, {HIDDEN})
  if err then return nil, err end
  return redis.call('HEXISTS', HIDDEN, user_id) == 1
end

if call == 'submit' then
  local w = {board = board, user_key = user_key, k = write_keys_at, mode = mode, order = order,
    ties = ties, submit = true, number = score, user_id = user_id, max_entries = UNLIMITED,
    fields = ARGV, first_field = metadata_at, expire_at = expire}
  -- The rule's words first: its score limits, and its rate limit and events without their keys,
  -- which the guard words (after it) give.
  guard_fields(w, rule, 2, 0)
  if w.events_maxlen then w.event_fields = {'period', period} end  -- its events' own field
  if guard_words ~= '' then
    local spec = {}
    for word in string.gmatch(guard_words, '%S+') do spec[#spec + 1] = word end
    guard_fields(w, spec, 1, #KEYS)  -- the guards' keys: the last ones
  end
  local hidden
  hidden, err = tournament_hides()
  if hidden == nil then return err end
  if hidden then w.scope_hidden, w.scope_options = HIDDEN, tournament_options end
  local plan, reply = plan_write(w)
  if not plan then
    if type(reply) ~= 'table' or reply.err or reply.ok then return reply end
    -- The stored result of an earlier write with this submission id: nothing is written, no
    -- attempt used; the first reply, whole.
    return first_result(w, reply)
  end
  if stale then
    return refuse('STALEPERIOD', 'the submission was meant for another period')
  end
  err = check_period()
  if err then return err end
  local joined, used, bonus = entrant()
  err = check_entry(joined, true)
  if err then return err end
  if attempts_per_period and used >= attempts_per_period + bonus then
    return refuse('NOATTEMPTS', 'user ' .. user_id .. ' has used its '
      .. (attempts_per_period + bonus)
      .. ' attempts')
  end
  mark()
  used = redis.call('HINCRBY', entrants, user_id, 1)
  redis.call('PEXPIREAT', entrants, expire)  -- after the write that may have created it
  reply = apply_write(plan)
  local result = {reply, period, used, bonus, redis.call('HLEN', entrants)}
  if w.submission_key then keep_first_result(w, result) end
  return result
end

if call == 'join' then
  err = check_period()
  if err then return err end
  local joined, used, bonus = entrant()
  local now = 0
  if not joined then
    err = check_entry(false, false)
    if err then return err end
    mark()
    redis.call('HSET', entrants, user_id, 0)
    redis.call('PEXPIREAT', entrants, expire)  -- after the write that may have created it
    now = 1
  end
  return {now, used, bonus, redis.call('HLEN', entrants)}
end

if call == 'add_attempts' then
  -- The period the server's clock is in (a grant into an expired period would be deleted at
  -- once, into the next would be early).
  err = check_clock(start, next_start_ms, 'tournament ' .. base .. ' period ' .. period)
  if err then return err end
  local joined, used = entrant()
  if not recorded then redis.call('HSET', tournament_options, 'config', config) end
  local bonus = redis.call('HINCRBY', bonus_key, user_id, attempts)
  redis.call('PEXPIREAT', bonus_key, expire)
  return {used, bonus, redis.call('HLEN', entrants)}
end

if call == 'hide' or call == 'unhide' then
  local b = board_spec(board, option_keys_at, order, ties)
  local events = hiding_events()
  err = (events and check_removal_events(b, events)) or check_type(HIDDEN, 'hash')
    or check_acl('HSET', HIDDEN, user_id, '')
    or check_acl('HDEL', HIDDEN, user_id) or check_acl('HSET', tournament_options, 'hidden', '1')
    or check_acl('HDEL', tournament_options, 'hidden') or check_type(board, 'zset')
    or check_type(b.options, 'hash') or (not b.default and check_option_keys(b))
    or check_hidden_writes(b, user_id, expire) or check_acl('HDEL', board .. ':hidden', user_id)
    or check_acl('HDEL', b.options, 'hidden') or check_acl('HEXISTS', HIDDEN, user_id)
    or check_acl('HLEN', HIDDEN) or check_acl('HGET', board .. ':hidden', user_id)
    or check_acl('HLEN', board .. ':hidden')  -- forget_hidden's, after the first write
  if err then return err end
  local record
  err, record = check_options(b)
  if err then return err end
  if b.recorded_hidden then
    err = check_present(b.options, {board .. ':hidden'})
    if err then return err end
  end
  local was = redis.call('HEXISTS', HIDDEN, user_id) == 1
  if call == 'hide' then
    if was then return 0 end
    local score = redis.call('ZSCORE', board, user_id)
    if score then  -- this period's entry, kept aside
      local previous_rank = events and rank_of(b, user_id, tonumber(score))
      if record then record_options(b) end
      keep_hidden(b, user_id, score, score, expire)
      if events then
        append_event(events, {'kind', 'hide', 'user_id', user_id, 'score', score, 'rank', '',
          'previous_score', score, 'previous_rank', tostring(previous_rank + 1), 'period', period})
      end
    end
    record_hidden(HIDDEN, tournament_options, user_id)
    return 1
  end
  -- unhide: this period's kept score back on its board, as a write of it.
  if not was then return 0 end
  local kept = b.recorded_hidden and redis.call('HGET', board .. ':hidden', user_id)
  local plan
  if kept and kept ~= '' then
    local score, tb = kept_parts(kept)  -- tie-break columns: kept with the score
    plan, err = plan_write({board = board, user_key = user_key, k = option_keys_at, mode = 'set',
      order = order, ties = ties, number = score, tb = tb, user_id = user_id,
      max_entries = UNLIMITED,
      fields = {}, first_field = 1, expire_at = expire, restore = true,
      events_key = events and events.events_key, events_maxlen = events and events.events_maxlen,
      event_fields = events and events.event_fields})
    if not plan then return err end
  end
  forget_hidden(HIDDEN, tournament_options, user_id)
  if kept then forget_hidden(board .. ':hidden', b.options, user_id) end
  if plan then
    plan.b.recorded_hidden = nil  -- the hash may be gone: not named again (see check_present)
    apply_write(plan)
  end
  return 1
end

return redis.error_reply('ERR unknown tournament operation ' .. tostring(call))
