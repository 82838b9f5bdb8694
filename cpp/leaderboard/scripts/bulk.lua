#!lua
-- upsert_many, one chunk, on a board with options or guards (a default board's chunks are
-- MULTI/EXEC): each entry set as upsert_user sets it (ZADD, the option keys, HSET), not
-- trimmed; all or nothing. No flags: Redis 7 refuses it up front when out of memory.
--: KEYS board: the board
--: KEYS bulk_keys...: the board's option keys (board_spec in lib/options.lua), then per entry its metadata hash and, if it carries a submission id, its record "<scope>:submission:<id>" (see read_submission in lib/submissions.lua); then the periodic board's options hash with 'gscope', then the events stream with 'events'
--: ARGV order: the board's order
--: ARGV ties: the board's ties
--: ARGV guard_words: the chunk's guard words, space-separated ('' for none; see GUARD_WORDS in lib/guards.lua); here 'sid' says entries may carry ids (each sends its own record), 'rate' is checked against the record only (a bulk load is not rate limited), a score limit refuses the chunk (SCOREREJECTED)
--: ARGV entries...: per entry: user_id, score, with 'sid' 1 or 0 (it carries an id), the number of its metadata fields, field, value, ...
-- An entry whose id was applied before (by upsert_many or submit, or earlier in the chunk) for
-- the same user and payload (mode 'set', its score, its metadata) is skipped; for another, the
-- chunk is refused (SUBMISSIONREUSED), nothing written. An entry written keeps its record (no
-- reply, the score written) under its id. Returns the number of entries written.
local b = board_spec(board, bulk_keys_at, order, ties)
local words = {}
for word in string.gmatch(guard_words, '%S+') do words[#words + 1] = word end
local first_user_key = bulk_keys_at + b.keys  -- on a compact board, its hash each time
local err = check_acl('ZSCORE', board, 'x') or check_acl('ZADD', board, '0', 'x')
  or check_type(board, 'zset') or (not b.default and check_option_keys(b))
if err then return err end
-- Guards: the chunk's words (see GUARD_WORDS in lib/guards.lua). Their keys here: the periodic
-- board's options hash ('gscope'), then the stream ('events'), the last KEYS; 'sid' and 'rate'
-- name none (each entry sends its own record; a bulk load is only checked against the recorded
-- rate limit).
local w = guard_fields({user_id = ''}, words, 1, nil)
local ids, expire_at, open_from, open_until = w.submission_key, w.expire_at, w.open_from,
  w.open_until
w.submission_key = nil
if w.events_key then w.events_key = KEYS[#KEYS] end
if w.guard_scope then w.guard_scope = KEYS[#KEYS - (w.events_key and 1 or 0)] end
local entries, i, k, seen = {}, entries_at, first_user_key, {}
while i <= #ARGV do
  local has_id = ids and ARGV[i + 2] == '1'
  local at = ids and i + 3 or i + 2
  local fields = tonumber(ARGV[at])
  local entry = {user_id = ARGV[i], number = ARGV[i + 1], key = KEYS[k], from = at + 1,
    to = at + 2 * fields}
  err = check_type(entry.key, 'hash')
    or (fields > 0 and check_acl('HSET', entry.key, ARGV[at + 1], ARGV[at + 2]))
    or (expire_at and check_board_expiry(b, entry.key, expire_at))
  if err then return err end
  k = k + 1
  if has_id then
    entry.sid = KEYS[k]
    k = k + 1
    err = check_acl('GET', entry.sid) or check_acl('SET', entry.sid, 'x', 'PX', w.submission_ttl)
      or check_type(entry.sid, 'string')
    if err then return err end
    entry.fingerprint = payload_fingerprint('set', entry.number, ARGV, entry.from, entry.to)
    local record = seen[entry.sid] or read_submission(entry.sid)
    if record then
      err = check_reuse(record, entry.sid, entry.user_id, entry.fingerprint)
      if err then return err end
      entry.skip = true
    end
    seen[entry.sid] = {user_id = entry.user_id, fingerprint = entry.fingerprint}
  end
  entries[#entries + 1] = entry
  i = entry.to + 1
end
local record, seq
err, record, seq = check_options(b)
if err then return err end
if b.migrating then  -- a compact board being migrated to: the entries' guide hashes
  for _, entry in ipairs(entries) do
    err = check_guide_hashes(b, {entry.user_id})
    if err then return err end
  end
end
if w.guard_scope then
  err = merge_scope_guards(b, w)
  if err then return err end
end
local guard_record
err, guard_record = check_guards(b, w)
if err then return err end
local guard_scope_record = scope_record(b, w)
if guard_scope_record then err = check_acl('HSET', w.guard_scope, 'x', 'x') end
if err then return err end
if w.events_key then
  err = check_acl('XADD', w.events_key, 'MAXLEN', '~', '1', '*', 'x', 'x')
    or check_type(w.events_key, 'stream') or check_acl(b.position_command, b.ranked, 'x')
    or check_acl('ZRANGE', b.ranked, '0', '0') or check_acl('ZCARD', b.ranked)
  if err then return err end
end
-- The period, against the server's clock, unless every entry is a resend of an applied id.
if open_from then
  for _, entry in ipairs(entries) do
    if not entry.skip then
      err = check_clock(open_from, open_until, 'board ' .. board)
      if err then return err end
      break
    end
  end
end
-- Fair play: a hidden player's entry is kept aside, as their writes are (see hidden_state).
if b.recorded_hidden or b.scope_hidden then
  for _, entry in ipairs(entries) do
    entry.kept, err = hidden_state(b, entry.user_id)
    if entry.kept == nil then return err end
    err = entry.kept and check_hidden_writes(b, entry.user_id, expire_at)
    if err then return err end
  end
end
-- An entry's user's score before the chunk: the kept one for a hidden player.
local function old_score(entry)
  local text = redis.call('ZSCORE', board, entry.user_id)
  return text or kept_parts(entry.kept)
end
if w.limits then
  -- Score limits, once the board's options and guards are known to be this client's: an entry
  -- leaving its user's score out of them (an entry improving on the same user's earlier one in
  -- the chunk, as the writes below will) refuses the whole chunk.
  local planned = {}
  for _, entry in ipairs(entries) do
    if not entry.skip then
      local old = planned[entry.user_id]
      if old == nil then
        local text = old_score(entry)
        old = text and tonumber(text) or false
      end
      w.user_id, w.mode = entry.user_id, 'set'
      err = check_score_limits(b, w, tonumber(entry.number), old or nil)
      if err then return err end
      planned[entry.user_id] = tonumber(entry.number)
    end
  end
end

if record then record_options(b) end
if guard_record then redis.call('HSET', b.options, unpack(guard_record)) end
if guard_scope_record then redis.call('HSET', w.guard_scope, unpack(guard_scope_record)) end
local written = 0
for _, entry in ipairs(entries) do
  if not entry.skip then
    written = written + 1
    if entry.kept then
      local _, kept_key = kept_parts(entry.kept)  -- tie-break columns: kept as they were
      keep_hidden(b, entry.user_id, score_text(tonumber(entry.number)),
        redis.call('ZSCORE', board, entry.user_id), expire_at, kept_key)
    end
    local old_text = not entry.kept and redis.call('ZSCORE', board, entry.user_id)
    local old = old_text and tonumber(old_text)
    local score = tonumber(entry.number)
    local previous_rank, old_position = false, 0
    if w.events_key then
      previous_rank = old and rank_of(b, entry.user_id, old)
      old_position = position_before(b, entry.user_id, old)
    end
    if not entry.kept and (not old or score ~= old) then
      seq = seq + 1
      -- Tie-break columns: an entry carries none, so the stored ones stay (the worst if new).
      local key = b.tiebreak and (redis.call('HGET', b.first_keys, entry.user_id) or worst_key(b))
      store_score(b, entry.user_id, 'ZADD', entry.number, score, old, seq, key)
      if w.events_key then
        add_event(b, w.events_key, w.events_maxlen, entry.user_id, score, old_text,
          previous_rank, old_position, {})
      end
    end
    write_metadata(b, entry.key, entry.user_id, ARGV, entry.from, entry.to)
    -- No result per entry, only the score written: submit() with the same id reports the
    -- user's entry as it is then (see bulk_duplicate in lib/submissions.lua).
    if entry.sid then
      redis.call('SET', entry.sid,
        cmsgpack.pack({2, entry.user_id, entry.fingerprint, board, false, entry.number}), 'PX',
        w.submission_ttl)
    end
  end
  if expire_at then expire_board(b, entry.key, expire_at) end
end
return written
