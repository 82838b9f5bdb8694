--: REQUIRES base options
-- ---- Hidden players (fair play) --------------------------------------------------------------
-- A hidden player is on no ranked set, so every read leaves them out as it is (and stays
-- O(log N)): hide() takes their entry off the board and keeps it in "<board>:hidden", a hash
-- (user_id -> their score's text, '' if they have none), with their metadata hash where it
-- was; the board's options hash records 'hidden' '1' while that hash holds anyone, so every
-- write (a default board's too: its guide path reads the options hash) takes the options path
-- and looks the user up there. A hidden player's writes are judged as any (mode, score limits,
-- rate limit, submission id) and kept in the hash: never ranked, trimmed or in an event.
-- unhide() puts the kept score back as a write would. A periodic board also records them for
-- every period: "<key>:hidden" (user_id -> '') and 'hidden' in "<key>:options", the guard scope
-- every period's write reads (merge_scope_guards sets b.scope_hidden, b.scope_options).

-- Whether `user_id` is hidden from board b: the hidden hash's value for them (their score's
-- text, '' if none), false if they are not hidden, or nil and an error reply. The hashes are
-- not declared keys: each is reached through check_present, anchored at the options hash that
-- records it (so in a migrating slot a hash not yet on this node refuses the script here).
local function hidden_state(b, user_id)
  if b.recorded_hidden then
    local key = b.board .. ':hidden'
    local err = check_type(key, 'hash') or check_acl('HGET', key, user_id)
      or check_present(b.options, {key})
    if err then return nil, err end
    local kept = redis.call('HGET', key, user_id)
    if kept then return kept end
  end
  if b.scope_hidden then
    local err = check_type(b.scope_hidden, 'hash') or check_acl('HEXISTS', b.scope_hidden, user_id)
      or check_present(b.scope_options, {b.scope_hidden})
    if err then return nil, err end
    if redis.call('HEXISTS', b.scope_hidden, user_id) == 1 then return '' end
  end
  return false
end

-- Who is hidden, read (hidden(), is_hidden() of every board type): the hidden hash `hidden`
-- (user_id -> ...), recorded in the options hash `options` ('hidden' '1') while it holds anyone
-- and reached through it (see check_present). With `user_id`, 1 if they are hidden, else 0;
-- without, the hidden ids in byte order; or an error reply.
local function read_hidden(options, hidden, user_id)
  local err = check_type(options, 'hash') or check_acl('HGET', options, 'hidden')
  if err then return err end
  if not redis.call('HGET', options, 'hidden') then return user_id and 0 or {} end
  err = check_type(hidden, 'hash') or check_present(options, {hidden})
    or (user_id and check_acl('HEXISTS', hidden, user_id)) or check_acl('HKEYS', hidden)
  if err then return err end
  if user_id then return redis.call('HEXISTS', hidden, user_id) end
  local ids = redis.call('HKEYS', hidden)
  table.sort(ids)
  return ids
end

-- nil, or the first error of the checks before keep_hidden and unrank may write: the hidden
-- hash's type and the caller's permissions.
local function check_hidden_writes(b, user_id, expire_at)
  local key = b.board .. ':hidden'
  return check_type(key, 'hash') or check_acl('HSET', key, user_id, '')
    or check_acl('HSET', b.options, 'hidden', '1') or check_acl('ZREM', b.board, user_id)
    or (expire_at and (check_acl('PEXPIREAT', key, expire_at)
      or check_acl('PEXPIREAT', b.options, expire_at))) or nil
end

-- Takes a user (their score's text `text`) off the ranked set, with their traces in the option
-- keys; their metadata stays.
local function unrank(b, user_id, text)
  local emptied = b.dense and redis.call('ZCARD', b.board) == 1
  if b.first then
    redis.call('ZREM', b.first, ranked_member(b, user_id))  -- forget() removes the rest
  else
    redis.call('ZREM', b.board, user_id)
  end
  forget(b, {user_id}, {text}, emptied)
end

-- Keeps `text` as hidden user_id's score (off the board if `visible`, their score's text there),
-- recording the hidden hash in the options hash; both expire at `expire_at` (a period's).
-- A kept value is "<score>", '' (no score) or, on a board with tie-break columns,
-- "<score> <columns' key>": see kept_parts.
local function keep_hidden(b, user_id, text, visible, expire_at, tb_key)
  local key = b.board .. ':hidden'
  -- Tie-break columns: their key is kept after the score ("<score> <key>"), `tb_key` or the
  -- ranked one's.
  if b.tiebreak and text ~= '' then
    tb_key = tb_key or (visible and redis.call('HGET', b.first_keys, user_id))
    if tb_key then text = text .. ' ' .. tb_key end
  end
  if visible then unrank(b, user_id, visible) end
  redis.call('HSET', key, user_id, text)
  redis.call('HSET', b.options, 'hidden', '1')
  b.recorded_hidden = true
  if expire_at then
    redis.call('PEXPIREAT', key, expire_at)
    redis.call('PEXPIREAT', b.options, expire_at)
  end
end

-- A kept value's score text (nil for '') and tie-break columns' key (nil if none).
local function kept_parts(kept)
  if not kept or kept == '' then return nil, nil end
  local space = string.find(kept, ' ', 1, true)
  if not space then return kept, nil end
  return string.sub(kept, 1, space - 1), string.sub(kept, space + 1)
end

-- Records `user_id` in the hidden-players hash `key` (value '' : no score kept there) and the
-- 'hidden' field of its `options` hash: a league's, a tournament's, a periodic board's record.
local function record_hidden(key, options, user_id)
  redis.call('HSET', key, user_id, '')
  redis.call('HSET', options, 'hidden', '1')
end

-- Takes `user_id` out of the hidden-players hash `key`; the last one out takes the 'hidden'
-- field of `options` with them.
local function forget_hidden(key, options, user_id)
  redis.call('HDEL', key, user_id)
  if redis.call('HLEN', key) == 0 then redis.call('HDEL', options, 'hidden') end
end

-- Nil if old + amount = sum exactly, else the INEXACT error reply: beyond 2^53 a double skips
-- integers, and the sum rounded there is a score nobody wrote. TwoSum (Knuth) gives
-- the rounding error of the sum exactly; below 2^53 a fraction's rounding is a double's own.
local function check_exact_sum(old, amount, sum)
  if not (math.abs(sum) >= 2 ^ 53 and math.abs(sum) < math.huge) then return nil end
  local part = sum - old
  if (old - (sum - part)) + (amount - part) == 0 then return nil end
  return redis.error_reply('INEXACT ' .. score_text(old) .. ' + ' .. score_text(amount)
    .. ' is beyond the integers a score holds exactly (2^53); nothing was written')
end

-- The score a write leaves: w.number applied to `old` (nil: none) by w.mode ('set' | 'best' |
-- 'incr'); or nil and the error reply (NaN, INEXACT).
local function next_score(b, w, old)
  local score = tonumber(w.number)
  if w.mode == 'incr' and old then
    local err = check_exact_sum(old, score, old + score)
    if err then return nil, err end
    score = old + score
  elseif w.mode == 'best' and old and not better(b, score, old) then
    score = old
  end
  if score ~= score then
    return nil, redis.error_reply('ERR resulting score is not a number (NaN)')
  end
  return score
end
