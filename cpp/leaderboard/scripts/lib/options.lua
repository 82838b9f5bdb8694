--: REQUIRES base
-- ---- Board options: order and ties ----------------------------------------------------------
-- A script gets the caller's options in ARGV (order: 'desc' | 'asc'; ties: 'lexicographic' |
-- 'first' | 'competition' | 'dense'; absent on a default board, whose commands stay within the
-- 10 arguments Redis accepts before authentication) and the board's own keys in KEYS: the
-- options hash "<board>:options" (order, ties, and 'seq', the last achievement number of ties='first'),
-- then for ties='first' the achievement set "<board>:first" (the true scores; each member is the
-- user's 16-digit achievement key then its id) and its index "<board>:first:keys" (user_id ->
-- achievement key), for ties='dense' the set of distinct scores "<board>:dense" (member and
-- score: the score). A default board (desc, lexicographic) has none of them: its scripts take
-- their guide path, which reads the options hash (no_options_recorded) to refuse a board
-- recorded with other options, and then only the guide's commands. Every option key ends in a
-- suffix after "<board>:" that is not "user:...", so none is a metadata hash.
local KEY_WIDTH = 16  -- digits of an achievement key, and of each tie-break column's

-- The board, its options `order` and `ties` (nil: the default), its option keys from KEYS[k]
-- on. b.ranked is the set whose order is the board's positions: the achievement set for
-- 'first', else the board itself.
-- Tie-break columns (ties "tb:<name>.<desc|asc>,...", at most 4): the ranked set is kept as
-- for 'first' ("<board>:tb" and its index "<board>:tb:keys"), each member's key the columns'
-- values as the client encodes them (16 hex digits each, so that among equal scores Redis's
-- member order is the columns' rank order, see tiebreak_key in operations.hpp), then the user
-- id; b.tiebreak is set, and b.width is the key's length.
-- The compact layout (ties ending "+compact", recorded as the options hash's field 'layout'):
-- every player's metadata in one hash "<board>:meta" (b.meta, the last option key; field: the
-- user id, value: the player's fields, encode_fields), instead of the guide's hash per player
-- "<board>:user:<id>". b.keys: how many option keys the board has.
local function board_spec(board, k, order, ties)
  if not order then  -- the default board: one table constructor, sized once
    return {board = board, order = 'desc', ties = 'lexicographic', options = KEYS[k],
      desc = true, default = true, ranked = board, shared = false, position_command = 'ZREVRANK',
      keys = 1}
  end
  local compact
  ties, compact = tie_rule(ties)
  local tiebreak = string.sub(ties, 1, 3) == 'tb:'
  local desc, first, dense = order == 'desc', ties == 'first' or tiebreak, ties == 'dense'
  local width = KEY_WIDTH
  if tiebreak then width = KEY_WIDTH * (select(2, string.gsub(ties, ',', '')) + 1) end
  local keys = first and 3 or (dense and 2 or 1)
  if compact then keys = keys + 1 end
  return {board = board, order = order, ties = ties, options = KEYS[k], desc = desc,
    default = desc and ties == 'lexicographic' and not compact,
    ranked = first and KEYS[k + 1] or board,
    first = first and KEYS[k + 1] or nil, first_keys = first and KEYS[k + 2] or nil,
    dense = dense and KEYS[k + 1] or nil, shared = dense or ties == 'competition',
    position_command = desc and 'ZREVRANK' or 'ZRANK', tiebreak = tiebreak or nil,
    width = width, compact = compact or nil, meta = compact and KEYS[k + keys - 1] or nil,
    keys = keys}
end

-- The board's recorded options against the caller's, before anything is written (the caller
-- may say it already checked its permission to run HGETALL: the options hash is a declared
-- key, so Redis checked the key before the script ran). Returns
-- nil, whether a write must record the caller's options (a new board with non-default ones),
-- and the last achievement number; or the reply the script must return: an error reply, or the
-- status 'OPTIONS order=<o> ties=<t>' naming the board's options (the client raises
-- ValueError). A board without a record has the default options.
local function check_options(b, hgetall_checked)
  local err = not hgetall_checked and check_acl('HGETALL', b.options)
  if err then return err end
  local recorded = redis.pcall('HGETALL', b.options)
  if recorded.err then return recorded end
  local order, ties, seq, layout
  for i = 1, #recorded, 2 do
    local field = recorded[i]
    if field == 'order' then order = recorded[i + 1]
    elseif field == 'ties' then ties = recorded[i + 1]
    elseif field == 'layout' then layout = recorded[i + 1]
    elseif field == 'seq' then seq = tonumber(recorded[i + 1])
    elseif field == 'rate_limit' then b.recorded_rate = recorded[i + 1]  -- the guards'
    elseif field == 'events' then b.recorded_events = recorded[i + 1]
    elseif field == 'score_range' then b.recorded_range = recorded[i + 1]  -- fair play
    elseif field == 'max_increment' then b.recorded_maxinc = recorded[i + 1]
    elseif field == 'hidden' then b.recorded_hidden = true end  -- fair play: hidden players
  end
  if not order then
    if b.default then return nil, false, 0 end
    err = check_acl('ZCARD', b.board)
    if err then return err end
    if redis.call('ZCARD', b.board) == 0 then return nil, true, 0 end
    order, ties = 'desc', 'lexicographic'
  end
  b.recorded_layout = layout
  local mine = b.compact and 'compact' or nil
  if b.compact and layout == 'migrating' then mine, b.migrating = 'migrating', true end
  if order == b.order and ties == b.ties and layout == mine then return nil, false, seq or 0 end
  return redis.status_reply('OPTIONS order=' .. order .. ' ties=' .. tostring(ties)
    .. (layout and ' layout=' .. layout or ''))
end

-- Records a new board's options (check_options said to): its order, ties and layout.
local function record_options(b)
  if b.compact then
    redis.call('HSET', b.options, 'order', b.order, 'ties', b.ties, 'layout', 'compact')
  else
    redis.call('HSET', b.options, 'order', b.order, 'ties', b.ties)
  end
end

-- A score's text: exact (round-trips), and one text for 0 and -0 (the distinct scores of
-- 'dense' are members, and -0 == 0).
local function score_text(x)
  if x == 0 then return '0' end
  return string.format('%.17g', x)
end

-- Whether score x is strictly better than y in the board's order.
local function better(b, x, y)
  if b.desc then return x > y end
  return x < y
end

-- How many members of `set` have a score strictly better than x: O(log N).
local function count_better(b, set, x)
  if b.desc then return redis.call('ZCOUNT', set, '(' .. score_text(x), '+inf') end
  return redis.call('ZCOUNT', set, '-inf', '(' .. score_text(x))
end

-- The achievement key of achievement number `seq`: fixed width, so within equal scores the
-- members of the achievement set order by it; reversed for 'desc', whose reads go in reverse
-- member order, so the earlier achiever always comes first.
local function achievement_key(b, seq)
  if b.desc then seq = 9007199254740991 - seq end
  return string.format('%016.0f', seq)
end

-- A board with tie-break columns: the key of the worst columns (the member's key of a write
-- without them, for a new entry), and whether key x ranks before key y.
local function worst_key(b)
  return string.rep(b.desc and '0' or 'f', b.width)
end

local function key_better(b, x, y)
  if b.desc then return x > y end
  return x < y
end

-- The user's member in the ranked set (nil if it is not on the board).
local function ranked_member(b, user_id)
  if not b.first then return user_id end
  local key = redis.call('HGET', b.first_keys, user_id)
  return key and key .. user_id
end

-- The zero-based rank of a user on the board with score `score` (a number), under the board's
-- tie rule: its position (lexicographic, first), the entries strictly better (competition), the
-- distinct scores strictly better (dense). Every rule is one O(log N) command.
local function rank_of(b, user_id, score)
  if b.ties == 'competition' then return count_better(b, b.board, score) end
  if b.ties == 'dense' then return count_better(b, b.dense, score) end
  return redis.call(b.position_command, b.ranked, b.first and ranked_member(b, user_id) or user_id)
end

-- Positions start..stop of the ranked set, best first, WITHSCORES.
local function range_best(b, start, stop)
  if b.desc then return redis.call('ZRANGE', b.ranked, start, stop, 'REV', 'WITHSCORES') end
  return redis.call('ZRANGE', b.ranked, start, stop, 'WITHSCORES')
end

-- The `count` worst entries of the ranked set, worst first, WITHSCORES: what trims remove.
local function range_worst(b, count)
  if b.desc then return redis.call('ZRANGE', b.ranked, 0, count - 1, 'WITHSCORES') end
  return redis.call('ZRANGE', b.ranked, 0, count - 1, 'REV', 'WITHSCORES')
end

-- The user ids and scores of a range of the ranked set.
local function split_range(b, ranged)
  local user_ids, scores = {}, {}
  for i = 1, #ranged, 2 do
    user_ids[#user_ids + 1] = b.first and string.sub(ranged[i], b.width + 1) or ranged[i]
    scores[#scores + 1] = ranged[i + 1]
  end
  return user_ids, scores
end

-- Whether (score_a, member_a) comes before (score_b, member_b) in the ranked set's worst-first
-- order: Redis orders a sorted set by score, then member bytes; 'asc' boards trim from its end.
local function worse(b, score_a, member_a, score_b, member_b)
  if not b.desc then
    score_a, member_a, score_b, member_b = score_b, member_b, score_a, member_a
  end
  if score_a ~= score_b then return score_a < score_b end
  local n = math.min(#member_a, #member_b)
  for i = 1, n do
    local x, y = string.byte(member_a, i), string.byte(member_b, i)
    if x ~= y then return x < y end
  end
  return #member_a < #member_b
end

-- nil, or the first error of the checks on an option board's own keys before a write: their
-- types, and the caller's permissions for the commands a write may run on them.
local function check_option_keys(b)
  local err = check_type(b.options, 'hash') or check_acl('HSET', b.options, 'order', b.order)
    or check_acl('ZCOUNT', b.board, '0', '0') or check_acl('ZREM', b.board, 'x')
    or check_acl(b.position_command, b.board, 'x')
  if err then return err end
  if b.first then
    err = check_type(b.first, 'zset') or check_type(b.first_keys, 'hash')
      or check_acl('ZADD', b.first, '0', 'x') or check_acl('ZREM', b.first, 'x')
      or check_acl('ZRANGE', b.first, '0', '0') or check_acl('ZREMRANGEBYRANK', b.first, '0', '0')
      or check_acl(b.position_command, b.first, 'x') or check_acl('HGET', b.first_keys, 'x')
      or check_acl('HSET', b.first_keys, 'x', 'x') or check_acl('HDEL', b.first_keys, 'x')
    if err then return err end
  end
  if b.dense then
    err = check_type(b.dense, 'zset') or check_acl('ZADD', b.dense, '0', 'x')
      or check_acl('ZREM', b.dense, 'x') or check_acl('ZCOUNT', b.dense, '0', '0')
    if err then return err end
  end
  if b.compact then
    return check_type(b.meta, 'hash') or check_acl('HSET', b.meta, 'x', 'x')
      or check_acl('HGET', b.meta, 'x') or check_acl('HDEL', b.meta, 'x')
  end
  return nil
end

-- The zero-based ranks of a window of the ranked set (ZRANGE ... WITHSCORES, best first) that
-- starts at position `start`, for the rules where equal scores share a rank: one count for the
-- first entry, then each entry's rank follows from its predecessor's.
local function window_ranks(b, ranged, start)
  local ranks, previous, rank = {}, nil, 0
  for i = 1, #ranged, 2 do
    local score = tonumber(ranged[i + 1])
    if previous == nil then
      rank = rank_of(b, nil, score)
    elseif score ~= previous then
      if b.ties == 'competition' then rank = start + (i - 1) / 2 else rank = rank + 1 end
    end
    ranks[#ranks + 1] = rank
    previous = score
  end
  return ranks
end

-- Calls `command` on `key` with `args`, in slices (unpack() is limited by Lua's C stack).
local function call_sliced(command, key, args)
  for i = 1, #args, 1000 do
    redis.call(command, key, unpack(args, i, math.min(i + 999, #args)))
  end
end

-- ---- Metadata in either layout (the compact layout's values: encode_fields in lib/base.lua) ---
-- During a migration from the guide's layout (layout.lua; the options record layout
-- 'migrating', b.migrating), a compact board's player whose field is not in the hash yet has
-- their fields in the guide's hash "<board>:user:<id>" (guide_key): reads take them from there,
-- a write moves them (merged) into the board's hash, a removal deletes both.
local function guide_key(b, user_id)
  return b.board .. ':user:' .. user_id
end

-- The user's metadata as replies carry it: {field, value, ...} (the guide's hash `user_key`),
-- or on a compact board the encoded text ('' for none).
local function metadata_of(b, user_key, user_id)
  if not b.compact then return redis.call('HGETALL', user_key) end
  local text = redis.call('HGET', b.meta, user_id)
  if not text and b.migrating then
    local fields = redis.call('HGETALL', guide_key(b, user_id))
    if #fields > 0 then return encode_fields(fields) end
  end
  return text or ''
end

-- nil, or the first error of the checks on the guide's hashes of `user_ids` that a compact
-- board being migrated to reads and deletes (their type, the caller's permissions).
local function check_guide_hashes(b, user_ids)
  if not b.migrating then return nil end
  for _, user_id in ipairs(user_ids) do
    local key = guide_key(b, user_id)
    local err = check_acl('HGETALL', key) or check_acl('UNLINK', key) or check_type(key, 'hash')
    if err then return err end
  end
  return nil
end

-- Writes fields[from..to] (field, value, ...) into the user's metadata, as HSET does: the
-- fields given replace theirs, the others stay.
local function write_metadata(b, user_key, user_id, fields, from, to)
  if from > to then return end
  if not b.compact then
    for i = from, to, 1000 do
      redis.call('HSET', user_key, unpack(fields, i, math.min(i + 999, to)))
    end
    return
  end
  local old = redis.call('HGET', b.meta, user_id)
  local merged, at = {}, {}
  if old then
    merged = decode_fields(old)
  elseif b.migrating then  -- not moved yet: moved now
    merged = redis.call('HGETALL', guide_key(b, user_id))
    if #merged > 0 then redis.call('UNLINK', guide_key(b, user_id)) end
  end
  for i = 1, #merged, 2 do at[merged[i]] = i end
  for i = from, to, 2 do
    local j = at[fields[i]]
    if j then
      merged[j + 1] = fields[i + 1]
    else
      merged[#merged + 1] = fields[i]
      merged[#merged + 1] = fields[i + 1]
      at[fields[i]] = #merged - 1
    end
  end
  redis.call('HSET', b.meta, user_id, encode_fields(merged))
end

-- Deletes the metadata of `user_ids` (the guide's hashes "<prefix><id>", or their fields of a
-- compact board's hash).
local function delete_metadata(b, prefix, user_ids)
  if #user_ids == 0 then return end
  if b.compact then
    call_sliced('HDEL', b.meta, user_ids)
    if b.migrating then unlink_metadata(b.board .. ':user:', user_ids) end
  else
    unlink_metadata(prefix, user_ids)
  end
end

-- After users left the ranked set: their other traces (the board itself and the achievement
-- index for 'first'; for 'dense', each of their scores no one else holds any more). `emptied`:
-- the removal left the board empty, so Redis deleted it: it is not read again (in a migrating
-- slot, a read of a key no longer on this node would fail the script after its writes).
local function forget(b, user_ids, scores, emptied)
  if b.first then
    call_sliced('ZREM', b.board, user_ids)
    call_sliced('HDEL', b.first_keys, user_ids)
  elseif b.dense then
    local last
    for _, text in ipairs(scores) do
      local score = tonumber(text)
      if score ~= last and (emptied or redis.call('ZCOUNT', b.board, text, text) == 0) then
        redis.call('ZREM', b.dense, score_text(score))
      end
      last = score
    end
  end
end

-- An option board's write of a user's new score (`command` 'ZADD' or 'ZINCRBY' with `number`;
-- `score` the resulting number, `old` the previous one or nil), with its traces in the option
-- keys; `seq` is the next achievement number ('first'), `key` the member's key on a board with
-- tie-break columns. Returns the stored score's text.
local function store_score(b, user_id, command, number, score, old, seq, key)
  local stored = redis.call(command, b.board, number, user_id)
  if command == 'ZADD' then stored = number end
  if b.first then
    local previous = redis.call('HGET', b.first_keys, user_id)
    if previous then redis.call('ZREM', b.first, previous .. user_id) end
    key = key or achievement_key(b, seq)
    redis.call('ZADD', b.first, stored, key .. user_id)
    redis.call('HSET', b.first_keys, user_id, key)
    if not b.tiebreak then redis.call('HSET', b.options, 'seq', seq) end
  elseif b.dense then
    local text = score_text(score)
    redis.call('ZADD', b.dense, text, text)
    if old and redis.call('ZCOUNT', b.board, score_text(old), score_text(old)) == 0 then
      redis.call('ZREM', b.dense, score_text(old))
    end
  end
  return stored
end

-- The checks before removing `user_ids`, the worst entries of the board, and their metadata
-- (the compact layout's hash is an option key: check_option_keys checked it).
local function check_remove_worst(b, prefix, user_ids)
  if b.compact then
    return (#user_ids > 0 and check_acl('ZREMRANGEBYRANK', b.ranked, '0', '0'))
      or check_guide_hashes(b, user_ids) or nil
  end
  return check_remove_lowest(b.ranked, prefix, user_ids)
end

-- Removes `user_ids` (with their `scores`), the worst entries of the board, and their metadata.
local function remove_worst(b, prefix, user_ids, scores)
  local n = #user_ids
  if n == 0 then return end
  local emptied = b.dense and redis.call('ZCARD', b.ranked) == n
  if b.desc then
    redis.call('ZREMRANGEBYRANK', b.ranked, 0, n - 1)
  else
    redis.call('ZREMRANGEBYRANK', b.ranked, -n, -1)
  end
  if not b.default then forget(b, user_ids, scores, emptied) end
  delete_metadata(b, prefix, user_ids)
end
