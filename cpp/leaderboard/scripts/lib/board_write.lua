--: REQUIRES base options clock guards submissions removal_events expiry hiding
-- ---- One board's write (write.lua's options path; a group write runs several) ---------------
-- A write is planned, then applied: plan_write runs every check that can fail (the caller's
-- permissions for every command the write runs, the key types, the board's recorded options)
-- and works out the write (the new score, who the trim removes); apply_write then only writes,
-- so a script writing several boards plans them all before applying any: all or nothing.
-- `w`: board, user_key (its metadata hash), k (KEYS index of its option keys, see board_spec),
-- mode ('set' | 'best' | 'incr'), order and ties (nil: the default board), submit (the reply
-- shape: submit()'s, else the entry's), number (ARGV text), user_id, max_entries (a number),
-- fields and first_field (the metadata: fields[first_field], fields[first_field + 1], ... as
-- field, value pairs); expire_at (unix ms, or nil: see expire_board). Returns the plan, or nil
-- and the reply to return (an error reply, or check_options' OPTIONS status).
local function plan_write(w)
  local board, user_key, user_id, number = w.board, w.user_key, w.user_id, w.number
  local b = board_spec(board, w.k, w.order, w.ties)
  local fields, first_field = w.fields, w.first_field
  local err = check_acl(w.mode == 'incr' and 'ZINCRBY' or 'ZADD', board, number, user_id)
    or (#fields >= first_field
      and check_acl('HSET', user_key, fields[first_field], fields[first_field + 1] or ''))
    or check_acl('ZSCORE', board, user_id) or check_acl('ZCARD', board)
    or check_acl('ZRANGE', b.ranked, '0', '0') or check_acl(b.position_command, board, user_id)
    or check_acl('HGETALL', user_key) or check_type(board, 'zset')
    -- (a compact board's hash is an option key: check_option_keys checks its type)
    or (not b.compact and check_type(user_key, 'hash'))
    or (not b.default and check_option_keys(b))
  if err then return nil, err end
  -- Expiry (periodic boards): the caller may PEXPIREAT every key of the board.
  if w.expire_at then
    err = check_board_expiry(b, user_key, w.expire_at)
      or (w.events_key and check_acl('PEXPIREAT', w.events_key, w.expire_at))
    if err then return nil, err end
  end
  local record, seq
  err, record, seq = check_options(b, true)
  if err then return nil, err end
  err = check_guide_hashes(b, {user_id})  -- a compact board being migrated to
  if err then return nil, err end
  if w.guard_scope then
    err = merge_scope_guards(b, w)
    if err then return nil, err end
  end
  -- A league's hidden players (its own record of them, see league.lua).
  if w.scope_hidden then b.scope_hidden, b.scope_options = w.scope_hidden, w.scope_options end
  -- Guards: idempotency, rate limit, events; checked here, applied by apply_guards
  -- (a write without them on a board that records some is refused).
  local guards
  if w.restore then  -- unhide(): its events alone (hide.lua checked them)
    guards = w.events_key and {} or nil
  elseif w.submission_key or w.rate_key or w.events_key or w.limits then
    guards, err = plan_guards(b, w)
    if not guards then return nil, err end
  elseif records_guards(b) then
    return nil, check_guards(b, w)
  end
  -- The period the write names, against the server's clock: after the guards, so that a
  -- submission id applied before answers its stored result, whatever the clock says now.
  if w.open_from then
    err = check_clock(w.open_from, w.open_until, 'board ' .. board)
    if err then return nil, err end
  end

  local old_text = redis.call('ZSCORE', board, user_id)
  -- Fair play: a hidden player's write is judged as any, and kept off the board (see above).
  local kept = false
  if (b.recorded_hidden or b.scope_hidden) and not w.restore then
    kept, err = hidden_state(b, user_id)
    if kept == nil then return nil, err end
    err = (kept and check_hidden_writes(b, user_id, w.expire_at)) or (w.expire_at
      and b.recorded_hidden and check_acl('PEXPIREAT', board .. ':hidden', w.expire_at))
    if err then return nil, err end
    if kept then
      -- Their score: the kept one; or the board's, which is the newer if it ranks them too
      -- (a period's board written before they were hidden everywhere, a bulk load's chunk).
      local kept_score, kept_key = kept_parts(kept)
      if old_text then
        kept_key = b.tiebreak and redis.call('HGET', b.first_keys, user_id) or nil
      end
      old_text, w.kept_key = old_text or kept_score, kept_key
    end
  end
  local old = old_text and tonumber(old_text)
  local score
  score, err = next_score(b, w, old)
  if not score then return nil, err end
  if w.limits then  -- fair play: after the guards (a resend answers, a rate limit refuses)
    err = check_score_limits(b, w, score, old)
    if err then return nil, err end
  end
  -- Tie-break columns: the member's key holds the columns' values: the write's, else the stored
  -- ones, else the worst; 'best' keeps the better (score, columns) as a whole, never a mix.
  local key, old_key
  if b.tiebreak then
    if old and kept then
      old_key = w.kept_key  -- a hidden player's columns are kept with their score
    elseif old then
      old_key = redis.call('HGET', b.first_keys, user_id)
    end
    -- A score stored without columns (a hidden player's kept by a bulk load, which carries
    -- none) has the worst ones, as a new entry written without them.
    if old and not old_key then old_key = worst_key(b) end
    key = w.tb or old_key or worst_key(b)
    if w.mode == 'best' and old and score == old then
      local tied = tonumber(w.number) == old  -- else the write's score is worse: nothing changes
      if not tied or not key_better(b, key, old_key) then key = old_key end
    end
  end
  local changed = not old or score ~= old or key ~= old_key
  if kept then
    return {w = w, b = b, record = record, hidden = true, old_text = old_text, old = old,
      score = score, changed = changed, trimmed = {}, guards = guards,
      visible = redis.call('ZSCORE', board, user_id), key = key}
  end
  local previous_rank = false
  if (w.submit or w.events_key) and old then previous_rank = rank_of(b, user_id, old) end
  local old_position = w.events_key and position_before(b, user_id, old)  -- guards

  -- Who the trim after the write removes: the worst `overflow` entries of the ranked set with
  -- the user at its new place, i.e. the worst of the others merged with the user, ordered as
  -- Redis orders a sorted set (score, then member bytes; for 'first' the member starts with the
  -- achievement key, and a changed score is the latest achievement).
  local member, old_member = user_id, user_id
  if b.first then
    old_member = old and ranked_member(b, user_id)
    member = changed and ((key or achievement_key(b, seq + 1)) .. user_id) or old_member
  end
  local overflow = redis.call('ZCARD', board) + (old and 0 or 1) - w.max_entries
  local trimmed, trimmed_scores = {}, {}
  if overflow > 0 then
    local worst = range_worst(b, overflow + 1)
    local placed = false
    for i = 1, #worst, 2 do
      if #trimmed == overflow then break end
      local other = worst[i]
      if other ~= old_member then
        if not placed and worse(b, score, member, tonumber(worst[i + 1]), other) then
          trimmed[#trimmed + 1] = user_id
          trimmed_scores[#trimmed_scores + 1] = score_text(score)
          placed = true
          if #trimmed == overflow then break end
        end
        trimmed[#trimmed + 1] = b.first and string.sub(other, b.width + 1) or other
        trimmed_scores[#trimmed_scores + 1] = worst[i + 1]
      end
    end
    if #trimmed < overflow and not placed then
      trimmed[#trimmed + 1] = user_id
      trimmed_scores[#trimmed_scores + 1] = score_text(score)
    end
    err = check_remove_worst(b, string.sub(user_key, 1, #user_key - #user_id), trimmed)
    if err then return nil, err end
  end
  return {w = w, b = b, record = record, seq = seq, old_text = old_text, old = old,
    score = score, changed = changed, previous_rank = previous_rank, trimmed = trimmed,
    trimmed_scores = trimmed_scores, guards = guards, old_position = old_position, key = key}
end

-- Applies a plan of plan_write: nothing here fails but on a server fault. Returns the reply:
-- the entry's {trimmed_ids, score[, rank, {field, value, ...}]} (no rank if the write was
-- trimmed away), or submit()'s {trimmed_ids, score, rank or false, metadata, previous score or
-- false, previous rank or false, 1 if the stored score changed else 0}.
local function apply_write(p)
  local w, b = p.w, p.b
  local board, user_key, user_id, number = w.board, w.user_key, w.user_id, w.number
  if p.record then record_options(b) end
  if p.hidden then  -- fair play: kept, not ranked; the reply of a write that left the board
    local text = score_text(p.score)
    keep_hidden(b, user_id, text, p.visible, w.expire_at, p.key)
    write_metadata(b, user_key, user_id, w.fields, w.first_field, #w.fields)
    if w.expire_at then redis.call('PEXPIREAT', user_key, w.expire_at) end
    local reply = {{}, text}
    if w.submit then
      reply = {{}, text, false, metadata_of(b, user_key, user_id), p.old_text or false, false,
        p.changed and 1 or 0}
    end
    if p.guards then return apply_guards(p, reply) end
    return reply
  end
  local produced = p.old_text
  if b.default then
    if w.mode == 'incr' then
      produced = redis.call('ZINCRBY', board, number, user_id)
    elseif w.mode == 'set' or p.changed then
      redis.call('ZADD', board, number, user_id)
      produced = number
    end
  elseif p.changed then
    produced = store_score(b, user_id, w.mode == 'incr' and 'ZINCRBY' or 'ZADD', number, p.score,
      p.old, p.seq + 1, p.key)
  end
  write_metadata(b, user_key, user_id, w.fields, w.first_field, #w.fields)
  -- Expiry (periodic boards): every key of the board the write touched or that exists for it
  -- gets the period's deadline, the user's metadata hash included; before the trim, which may
  -- delete that hash (a key the script deleted is not touched again: in a migrating slot that
  -- fails the script after its writes).
  if w.expire_at then expire_board(b, user_key, w.expire_at) end
  remove_worst(b, string.sub(user_key, 1, #user_key - #user_id), p.trimmed, p.trimmed_scores)

  local stored = redis.call('ZSCORE', board, user_id)
  local reply
  if not w.submit then
    if not stored then
      reply = {p.trimmed, produced}
    else
      reply = {p.trimmed, stored, rank_of(b, user_id, tonumber(stored)),
        metadata_of(b, user_key, user_id)}
    end
  else
    local rank, metadata = false, {}
    if stored then
      produced = stored
      rank = rank_of(b, user_id, tonumber(stored))
      metadata = metadata_of(b, user_key, user_id)
    end
    reply = {p.trimmed, produced, rank, metadata, p.old_text or false, p.previous_rank,
      p.changed and 1 or 0}
  end
  if p.guards then return apply_guards(p, reply) end  -- guards
  return reply
end
