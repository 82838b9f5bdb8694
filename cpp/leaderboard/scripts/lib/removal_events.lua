--: REQUIRES base guards submissions
-- ---- Removals' events (delete_user, clear, trims) ---------------------------------------------
-- A removal script on a board with events gets, after order and ties, the word
-- 'events:<maxlen>' (and 'expire:<unix ms>' on a periodic board; see guard_fields), the stream
-- the last of its KEYS, and takes its options path; a default board's removals send neither
-- and never build these helpers. Events: 'delete' (the user, its score, its previous rank),
-- 'trim' (the ids removed, at most 1,000 per event, worst first), 'clear' (one per page of a
-- clear: how many it removed and how many are left, no ids).

-- w (events_key, events_maxlen, expire_at) from a removal's guard words, or nil: no events.
local function removal_events(words)
  if not words or words == '' then return nil end
  local spec = {}
  for word in string.gmatch(words, '%S+') do spec[#spec + 1] = word end
  local w = guard_fields({}, spec, 1, #KEYS)
  return w.events_key and w or nil
end

-- nil, or the reply a removal returns before its first write: check_options' OPTIONS status if
-- the board records events and the caller has none (its removals would leave watchers without
-- them), else with events the checks of appending to the stream: its type, and the caller's
-- permissions (XADD, PEXPIREAT with an expiry, the rank of a deleted user).
local function check_removal_events(b, w)
  if b.recorded_events and not w then return recorded_status(b) end
  if not w then return nil end
  return check_acl('XADD', w.events_key, 'MAXLEN', '~', '1', '*', 'x', 'x')
    or check_type(w.events_key, 'stream') or check_acl(b.position_command, b.ranked, 'x')
    or (w.expire_at and check_acl('PEXPIREAT', w.events_key, w.expire_at)) or nil
end

-- Appends a removal's event (`fields`: 'kind', ... ) to the stream of `w` (removal_events); a
-- periodic board's stream expires with it.
local function append_event(w, fields)
  redis.call('XADD', w.events_key, 'MAXLEN', '~', w.events_maxlen, '*', unpack(fields))
  if w.expire_at then redis.call('PEXPIREAT', w.events_key, w.expire_at) end
end

-- A trim's 'trim' events: `user_ids` (worst first), at most 1,000 an event.
local function add_trim_events(w, user_ids)
  for i = 1, #user_ids, 1000 do
    local fields = {'kind', 'trim'}
    for j = i, math.min(i + 999, #user_ids) do
      fields[#fields + 1] = 'trimmed'
      fields[#fields + 1] = user_ids[j]
    end
    append_event(w, fields)
  end
end

-- After a write's own writes: records the guard options, counts the write in the user's rate
-- window (trimmed to the window, expiring when the user goes idle), appends the change event
-- (p.changed, or someone trimmed) and stores the reply under the submission id (then marks
-- it: its last element 0, not a duplicate). `p` is plan_write's plan; w.event_fields (or nil):
-- the board type's own fields of its events (see add_event).
local function apply_guards(p, reply)
  local w, b, g = p.w, p.b, p.guards
  if g.scope_record then redis.call('HSET', w.guard_scope, unpack(g.scope_record)) end
  if g.record then
    redis.call('HSET', b.options, unpack(g.record))
    -- A periodic board's options hash may be created only now, after expire_board ran.
    if w.expire_at then redis.call('PEXPIREAT', b.options, w.expire_at) end
  end
  if w.rate_key then
    local key, member = w.rate_key, string.format('%.0f', g.now)
    redis.call('ZREMRANGEBYSCORE', key, '-inf', string.format('%.0f', g.since))
    while redis.call('ZSCORE', key, member) do member = member .. '+' end
    redis.call('ZADD', key, string.format('%.0f', g.now), member)
    redis.call('PEXPIRE', key, w.rate_per)
  end
  if w.events_key and not p.hidden and (p.changed or #p.trimmed > 0) then
    add_event(b, w.events_key, w.events_maxlen, w.user_id, p.score, p.old_text, p.previous_rank,
      p.old_position, p.trimmed, nil, w.event_fields)
    -- A periodic board's events expire with it.
    if w.expire_at then redis.call('PEXPIREAT', w.events_key, w.expire_at) end
  end
  if w.submission_key then return store_submission(w, reply, w.board) end
  return reply
end
