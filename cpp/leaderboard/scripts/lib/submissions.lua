--: REQUIRES base options guards
-- ---- Submission ids: records ------------------------------------------------------------------
-- A submission id's record "<scope>:submission:<id>" (scope: the board's key; a periodic
-- board's own key for every period, so a resend finds it whatever period the clock says then;
-- a window's key; a league partition's, a tournament's) is the string cmsgpack.pack({2,
-- user_id, fingerprint, applied, reply, written, token = call token, rest = rest}): the user and
-- payload the id belongs to (an id belongs to one user and one payload), the key of the board
-- the write landed on, submit()'s reply (false if upsert_many applied the id: it keeps no
-- result per entry), for upsert_many the score it wrote, the call token of the call that
-- applied it, and the rest of a board type's answer (a league's placement and zone, a
-- tournament's attempts: keep_rest), so that a resend answers the first result whole, nothing
-- recomputed, whatever the clock says then. The one mechanism every board type uses.
-- A call token (the word 'sid:<ttl ms>:<token>': one random token per call, the same in each of
-- its sendings, see new_call_token in operations.hpp) tells this call's own resend after a lost
-- reply (not a duplicate: "duplicate" 0) from another call with the same id (a duplicate: 1).
-- Records an older client wrote (a packed reply, or 'upsert_many <score>') name no user: they
-- are answered as they were then, without the checks.

-- The fingerprint of a write's payload: what a resend repeats exactly (its mode, its score or
-- amount as sent, its metadata fields[from..to] as field, value pairs, in field order).
local function payload_fingerprint(mode, number, fields, from, to)
  local order = {}
  for i = from, to, 2 do order[#order + 1] = i end
  table.sort(order, function(a, b) return fields[a] < fields[b] end)
  local flat = {mode, number}
  for _, i in ipairs(order) do
    flat[#flat + 1] = fields[i]
    flat[#flat + 1] = fields[i + 1] or ''
  end
  return redis.sha1hex(cmsgpack.pack(flat))
end

-- The record at `key` (its type checked by the caller), decoded: nil if none, else a table with
-- user_id, fingerprint, applied, reply (nil for upsert_many) and written; legacy = true for an
-- older client's record (reply, or written, alone).
local function read_submission(key)
  local stored = redis.call('GET', key)
  if not stored then return nil end
  if string.sub(stored, 1, 12) == 'upsert_many ' then
    return {legacy = true, written = string.sub(stored, 13)}
  end
  local ok, record = pcall(cmsgpack.unpack, stored)
  if not ok or type(record) ~= 'table' then
    return {corrupt = true}
  end
  if record[1] ~= 2 then return {legacy = true, reply = record} end
  return {user_id = record[2], fingerprint = record[3], applied = record[4],
    reply = record[5] or nil, written = record[6] or '', token = record.token,
    rest = record.rest}
end

-- nil, or the SUBMISSIONREUSED error reply (the client raises SubmissionIdReused) if `record`
-- of the id at `key` belongs to another user or another payload than (user_id, fingerprint).
local function check_reuse(record, key, user_id, fingerprint)
  if record.corrupt then
    return redis.error_reply('SUBMISSIONREUSED the record of ' .. key .. ' is not one this '
      .. 'library wrote; nothing was changed')
  end
  if record.legacy then return nil end
  if record.user_id ~= user_id then
    return redis.error_reply('SUBMISSIONREUSED ' .. key .. ' was applied for another user; '
      .. 'a submission id belongs to one user; nothing was changed')
  end
  if record.fingerprint ~= fingerprint then
    return redis.error_reply('SUBMISSIONREUSED ' .. key .. ' was applied for this user with '
      .. 'another score, mode or metadata; a resend must repeat the write exactly; nothing was '
      .. 'changed')
  end
  return nil
end

-- submit()'s reply, marked a duplicate, for a submission id that upsert_many applied: it keeps
-- no result per entry, only the score it wrote (record.written; '' if unknown). So the reply is
-- the user's entry now (score, rank, metadata) on board `b` if upsert_many wrote this board,
-- with no previous score or rank and changed 0; if the user is not on it (trimmed, deleted) or
-- upsert_many wrote another board of the scope (an earlier period), the score written ('nan' if
-- unknown), no rank, no metadata, as a write trimmed away. Its commands' permissions and keys
-- were checked by plan_write.
local function bulk_duplicate(b, w, record)
  local applied = record.applied or b.board
  local written = record.written ~= '' and record.written or 'nan'
  local stored = applied == b.board and redis.call('ZSCORE', b.board, w.user_id)
  if not stored then return {{}, written, false, {}, false, false, 0, 1, applied} end
  return {{}, stored, rank_of(b, w.user_id, tonumber(stored)),
    metadata_of(b, w.user_key, w.user_id), false, false, 0, 1, applied}
end

-- Idempotency (w.submission_key, w.submission_ttl; the payload in w.user_id, w.mode, w.number,
-- w.tb, w.payload, w.fields[w.first_field..]): nil if the write may go ahead (w.fingerprint set
-- for store_submission), else the reply to return: an error reply (SUBMISSIONREUSED: the id was
-- applied for another user or payload), or the stored result of the earlier write with this id
-- (its last elements 1, a duplicate, and the key of the board it landed on; a table with
-- neither 'err' nor 'ok'); for an id upsert_many applied, on board `b`, bulk_duplicate's reply
-- (a window, without `b`: an error).
local function check_submission(w, b)
  local err = check_acl('GET', w.submission_key)
    or check_acl('SET', w.submission_key, 'x', 'PX', w.submission_ttl)
    or check_type(w.submission_key, 'string')
  if err then return err end
  -- (Tie-break columns' values are part of the payload: "<number> <key>"; so is w.payload, what
  -- else a board type's write names: a team board's team.)
  local number = w.tb and (w.number .. ' ' .. w.tb) or w.number
  if w.payload then number = number .. ' ' .. w.payload end
  w.fingerprint = payload_fingerprint(w.mode, number, w.fields, w.first_field, #w.fields)
  local record = read_submission(w.submission_key)
  if not record then return nil end
  err = check_reuse(record, w.submission_key, w.user_id, w.fingerprint)
  if err then return err end
  if not record.reply then
    if b then return bulk_duplicate(b, w, record) end
    return redis.error_reply('ERR submission id ' .. w.submission_key
      .. ' was applied by upsert_many to a board, not to this window; nothing was changed')
  end
  local reply = record.reply
  -- A duplicate, unless the call that applied it sends it again (its own resend: 0).
  reply[#reply + 1] = (w.call_token and record.token == w.call_token) and 0 or 1
  reply[#reply + 1] = record.applied or w.board or w.union
  return reply, record.rest
end

-- Stores a write's reply under its submission id (with the user, the payload's fingerprint,
-- `applied`, the key of the board written, and the call token), then marks it (its last
-- elements 0, not a duplicate, and `applied`); returns it.
local function store_submission(w, reply, applied)
  local record = {2, w.user_id, w.fingerprint, applied, reply, false}
  record.token = w.call_token
  redis.call('SET', w.submission_key, cmsgpack.pack(record), 'PX', w.submission_ttl)
  reply[#reply + 1] = 0
  reply[#reply + 1] = applied
  return reply
end

-- Adds `rest`, the rest of a board type's answer (a table of texts, numbers and booleans), to
-- the record this script has just stored for w's submission id (its time to live kept):
-- check_submission returns it with the stored reply.
local function keep_rest(w, rest)
  local record = cmsgpack.unpack(redis.call('GET', w.submission_key))
  record.rest = rest
  redis.call('SET', w.submission_key, cmsgpack.pack(record), 'KEEPTTL')
end

-- The checks of a write's guards, before anything is written: nil and what apply_guards needs,
-- or nil and the reply to return: an error reply, OPTIONS, the stored result of an earlier
-- write with the same submission id (check_submission), or RATELIMITED.
local function plan_guards(b, w)
  local g = {}
  local err = (w.rate_key or w.events_key or w.limits)
    and check_acl('HSET', b.options, 'x', 'x')
  if err then return nil, err end
  err, g.record = check_guards(b, w)
  if err then return nil, err end
  g.scope_record = scope_record(b, w)
  if g.scope_record then
    err = check_acl('HSET', w.guard_scope, 'x', 'x')
    if err then return nil, err end
  end
  if w.submission_key then
    err = check_submission(w, b)
    if err then return nil, err end
  end
  if w.rate_key then
    local key = w.rate_key
    err = check_acl('ZCOUNT', key, '0', '0') or check_acl('ZADD', key, '0', 'x')
      or check_acl('ZREMRANGEBYSCORE', key, '0', '0') or check_acl('PEXPIRE', key, '1')
      or check_acl('ZSCORE', key, 'x') or check_acl('ZRANGE', key, '0', '0')
      or check_type(key, 'zset')
    if err then return nil, err end
    local time = redis.call('TIME')
    local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
    local since = now - w.rate_per * 1000
    local count = redis.call('ZCOUNT', key, '(' .. string.format('%.0f', since), '+inf')
    if count >= w.rate_max then
      -- The write that frees a place: the (count - max + 1)-th oldest in the window.
      local oldest = redis.call('ZRANGE', key, '(' .. string.format('%.0f', since), '+inf',
        'BYSCORE', 'LIMIT', count - w.rate_max, 1, 'WITHSCORES')
      local retry_after = (tonumber(oldest[2]) + w.rate_per * 1000 - now) / 1000000
      return nil, redis.error_reply(string.format(
        'RATELIMITED retry_after=%.6f user %s may write %d times per %g s to %s; nothing was '
        .. 'changed', math.max(retry_after, 0.000001), w.user_id, w.rate_max, w.rate_per / 1000,
        b.board))
    end
    g.now, g.since = now, since
  end
  if w.events_key then
    err = check_acl('XADD', w.events_key, 'MAXLEN', '~', '1', '*', 'x', 'x')
      or check_type(w.events_key, 'stream')
    if err then return nil, err end
  end
  return g
end

-- The user's 0-based place in the ranked set before a write (its size if absent): where the
-- write's overtakes are counted from.
local function position_before(b, user_id, old)
  if old then return redis.call(b.position_command, b.ranked, ranked_member(b, user_id)) end
  return redis.call('ZCARD', b.ranked)
end

-- Appends a write's change event (kind 'score') to the stream `key` (capped at about
-- `maxlen`): the user, its score and 1-based rank now (rank '' if the write was trimmed away),
-- before ('' if new), who the write trimmed (the first 1,000; any more in 'trim' events right
-- after it) and whom it overtook: the entries that ranked ahead of the user before the write
-- and behind it now (at most 10, nearest first; on boards whose equal scores share a rank, only
-- those now strictly worse). Lists are repeated fields. `kind` (nil: 'score') and `extra` (nil,
-- or more fields: field, value, ...) let another board type say what it ranks: a team board's
-- 'team' event, the team's entry on the teams' board, with the member whose change moved it; a
-- tournament's 'period'.
local function add_event(b, key, maxlen, user_id, score, old_text, previous_rank, old_position,
                         trimmed, kind, extra)
  local stored = redis.call('ZSCORE', b.board, user_id)
  local fields = {'kind', kind or 'score', 'user_id', user_id, 'score', stored or score_text(score),
    'rank', '', 'previous_score', old_text or '', 'previous_rank',
    previous_rank and tostring(previous_rank + 1) or ''}
  if stored then
    local value = tonumber(stored)
    fields[8] = tostring(rank_of(b, user_id, value) + 1)
    local position = redis.call(b.position_command, b.ranked, ranked_member(b, user_id))
    if position < old_position then
      local passed = range_best(b, position + 1, math.min(old_position, position + 10))
      for i = 1, #passed, 2 do
        if not b.shared or better(b, value, tonumber(passed[i + 1])) then
          fields[#fields + 1] = 'overtaken'
          fields[#fields + 1] = b.first and string.sub(passed[i], b.width + 1) or passed[i]
        end
      end
    end
  end
  for i = 1, math.min(#trimmed, 1000) do
    fields[#fields + 1] = 'trimmed'
    fields[#fields + 1] = trimmed[i]
  end
  if extra then
    for i = 1, #extra do fields[#fields + 1] = extra[i] end
  end
  redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', unpack(fields))
  -- A write trimming more (a board over a smaller limit): the rest in 'trim' events, 1,000 each.
  for i = 1001, #trimmed, 1000 do
    local rest = {'kind', 'trim'}
    for j = i, math.min(i + 999, #trimmed) do
      rest[#rest + 1] = 'trimmed'
      rest[#rest + 1] = trimmed[j]
    end
    redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', unpack(rest))
  end
end
