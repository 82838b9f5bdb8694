--: REQUIRES base options
-- ---- Guards: idempotency keys, rate limits, change events, score limits -----------------------
-- A write may carry guards, each a field of `w` (plan_write) set by guard_fields from words of
-- the caller's spec: 'sid:<ttl ms>' (w.submission_key: the stored result of an idempotent
-- write, "<board>:submission:<id>"), 'rate:<max>:<per ms>' (w.rate_key: the user's sliding
-- window, "<board>:rate:<user_id>", a sorted set of write times in microseconds of the server's
-- TIME), 'events:<maxlen>' (w.events_key: the stream "<board>:events"). The guards' keys are the
-- script's last KEYS, in the order of the words. A write without guards runs none of this.
-- rate_limit and events are recorded in the options hash (fields 'rate_limit' "<max>/<per ms>"
-- and 'events' '1') the first time a write carries them, and a write whose guards differ from
-- the recorded ones is refused with check_options' OPTIONS status (ValueError in the client):
-- a client without them would silently bypass the limit or leave watchers without events.
-- Removals (delete_user, clear, a trim) append events too (see removal_events): every change
-- of a board with events is in its stream, each event's 'kind' saying what made it.

-- The guard words, each declared once here: C++ builds them (generate.py's script_words.hpp,
-- `word::sid{...}`) and read_guard_word reads them, both generated from these lines. A word
-- travels as "name:field:field..." in a script's spec; its fields set the fields of `w` (the
-- write's plan) named here, an empty one left nil (`#`: they are numbers); a word with a [key]
-- names one of the script's KEYS, which goes to that field of `w` (GUARD_KEYED: those words).
--: WORD sid submission_ttl call_token [submission_key]: an idempotent write: the id's record "<scope>:submission:<id>" (see read_submission), its time to live (ms), this call's token (see store_submission)
--: WORD rate# rate_max rate_per [rate_key]: a rate limit: at most rate_max writes per rate_per ms, the user's sliding window "<scope>:rate:<user_id>"
--: WORD events events_maxlen [events_key]: change events: the stream "<board>:events", its MAXLEN
--: WORD gscope [guard_scope]: a period's board: its periodic board's options hash (see merge_scope_guards)
--: WORD expire expire_at: a periodic board's deadline, unix ms (see expire_board)
--: WORD open open_from open_until: the span of the server's clock, unix ms, its writes belong to its period (see check_clock)
--: WORD range# score_min score_max: fair play: the lowest and highest score a write may leave, either may be empty (see check_score_limits)
--: WORD maxinc# max_increment: fair play: the most one write may improve a score by, in the board's order (see check_score_limits)
--: WORD tb tb: tie-break columns: the ranked member's key of the write's values (see plan_write)

-- Sets w's fields from the guard words spec[from], spec[from + 1], ... (see read_guard_word),
-- the keys of those that name one ending at KEYS[last_key], in the words' order (last_key nil:
-- the caller sent none, a keyed word's key field is set to true); and w.limits if a score limit
-- is among them (see check_score_limits).
local function guard_fields(w, spec, from, last_key)
  local k = last_key
  for i = #spec, from, -1 do  -- from the last: its key is the last
    local field = read_guard_word(w, spec[i])
    if field then
      w[field] = not k or KEYS[k]
      k = k and k - 1
    end
  end
  if w.score_min or w.score_max or w.max_increment then w.limits = true end
  return w
end

-- The 'OPTIONS ...' status naming the board's recorded options (the client raises ValueError).
local function options_status(order, ties, rate, events, range, maxinc, layout)
  return redis.status_reply('OPTIONS order=' .. order .. ' ties=' .. ties .. ' rate_limit='
    .. (rate or '-') .. ' events=' .. (events or '-') .. ' score_range=' .. (range or '-')
    .. ' max_increment=' .. (maxinc or '-') .. (layout and ' layout=' .. layout or ''))
end

-- A board's recorded options as options_status says them.
local function recorded_status(b)
  return options_status(b.order, b.ties, b.recorded_rate, b.recorded_events, b.recorded_range,
    b.recorded_maxinc, b.recorded_layout)
end

-- The guards a write carries as the options hash records them ({rate_limit, events,
-- score_range, max_increment}: texts, nil for those it does not carry).
local function guard_texts(w)
  local t = {}
  if w.rate_key then
    t.rate_limit = string.format('%d', w.rate_max) .. '/' .. string.format('%d', w.rate_per)
  end
  if w.events_key then t.events = '1' end
  if w.score_min or w.score_max then
    t.score_range = (w.score_min and score_text(w.score_min) or '') .. '/'
      .. (w.score_max and score_text(w.score_max) or '')
  end
  if w.max_increment then t.max_increment = score_text(w.max_increment) end
  return t
end

local GUARD_FIELDS = {'rate_limit', 'events', 'score_range', 'max_increment'}

-- A period's board (seasons): the guards its periodic board recorded ("<key>:options", the
-- word 'gscope' and its key, w.guard_scope), merged into b's recorded ones, so that a client
-- without them is refused in a period no write has opened yet, as in the others. Sets
-- b.scope_recorded; nil, or an error reply.
local function merge_scope_guards(b, w)
  local err = check_type(w.guard_scope, 'hash') or check_acl('HGETALL', w.guard_scope)
  if err then return err end
  local recorded, names = redis.call('HGETALL', w.guard_scope), {
    rate_limit = 'recorded_rate', events = 'recorded_events', score_range = 'recorded_range',
    max_increment = 'recorded_maxinc'}
  b.scope_recorded = {}
  for i = 1, #recorded, 2 do
    local field = names[recorded[i]]
    if recorded[i] == 'hidden' then  -- fair play: players hidden in every period
      b.scope_options = w.guard_scope
      b.scope_hidden = string.sub(w.guard_scope, 1, #w.guard_scope - 8) .. ':hidden'
    elseif field then
      b.scope_recorded[recorded[i]] = recorded[i + 1]
      b[field] = b[field] or recorded[i + 1]
    end
  end
  return nil
end

-- The recorded guards (b.recorded_*: check_options, and merge_scope_guards, read them) against
-- the write's: nil and the fields to record (a table, or nil), or the reply to return.
local function check_guards(b, w)
  local t = guard_texts(w)
  local old = {rate_limit = b.recorded_rate, events = b.recorded_events,
    score_range = b.recorded_range, max_increment = b.recorded_maxinc}
  -- Every recorded guard must be carried (a client without a limit would bypass it); those no
  -- write recorded yet are recorded by this one.
  for _, name in ipairs(GUARD_FIELDS) do
    if old[name] and old[name] ~= t[name] then return recorded_status(b) end
  end
  local record = {}
  for _, name in ipairs(GUARD_FIELDS) do
    if t[name] and not old[name] then
      record[#record + 1] = name
      record[#record + 1] = t[name]
    end
  end
  if #record == 0 then return nil, nil end
  return nil, record
end

-- The guards a write carries that its periodic board's record lacks (merge_scope_guards read
-- it): the fields to record there, or nil.
local function scope_record(b, w)
  if not b.scope_recorded then return nil end
  local t, record = guard_texts(w), {}
  for _, name in ipairs(GUARD_FIELDS) do
    if t[name] and not b.scope_recorded[name] then
      record[#record + 1] = name
      record[#record + 1] = t[name]
    end
  end
  return #record > 0 and record or nil
end

-- Whether the board records guards a write must carry (or be refused by check_guards).
local function records_guards(b)
  return b.recorded_rate or b.recorded_events or b.recorded_range or b.recorded_maxinc
end

-- Score limits (fair play): nil if a write leaving the user's score at `score` (from `old`, nil
-- for a new entry, whose 'incr' counts from 0) is within w's limits, else the SCOREREJECTED
-- error reply (the client raises ScoreRejected, a ValueError). A write that leaves the score as
-- it was (a 'best' that is not better) is never refused.
local function check_score_limits(b, w, score, old)
  if old and score == old then return nil end
  local what
  if (w.score_min and score < w.score_min) or (w.score_max and score > w.score_max) then
    what = 'score ' .. score_text(score) .. ' is outside score_range ['
      .. (w.score_min and score_text(w.score_min) or '-inf') .. ', '
      .. (w.score_max and score_text(w.score_max) or '+inf') .. ']'
  elseif w.max_increment then
    local from = old or (w.mode == 'incr' and 0 or nil)
    if from then
      local gain = b.desc and score - from or from - score
      if gain > w.max_increment then
        what = 'an improvement of ' .. score_text(gain) .. ' (from ' .. score_text(from)
          .. ' to ' .. score_text(score) .. ') is more than max_increment '
          .. score_text(w.max_increment)
      end
    end
  end
  if not what then return nil end
  return redis.error_reply('SCOREREJECTED user ' .. w.user_id .. ' on ' .. b.board .. ': '
    .. what .. '; nothing was changed')
end
