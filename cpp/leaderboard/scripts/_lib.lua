-- Helpers shared by the scripts. At build time each script gets the helpers it uses (and those
-- they use), after its #!lua line (see CMakeLists.txt): this file holds only `local function`
-- blocks, ending at a line "end", and `local NAME = <value>` lines, each with the comment lines
-- right above it, and a helper uses only helpers above it. Redis runs a script's whole chunk on
-- every call, building every helper it carries, so a helper costs only the scripts that use it.
-- Metadata hashes live at prefix .. user_id, prefix being "<board>:user:".
--
-- A write that raises must change nothing, and Redis keeps the writes a script made before an
-- error: so every writing script first checks the caller's ACL permissions for every command it
-- will run and reads what it will touch to check key types, and only then writes. A check
-- returns an error reply (a table), which the script returns before its first write. Commands
-- are checked before they run even in reads: a command an ACL denies inside a script fails
-- with "ERR The user executing the script can't run this command", and NOPERM is the clearer.

-- redis.acl_check_cmd, looked up once per call of a script (it exists from Redis 7.0; before, a
-- denied command fails where it runs).
local acl_check_cmd = redis.acl_check_cmd

-- nil, or a NOPERM error reply if the caller may not run the command (ACL commands and keys).
local function check_acl(...)
  if not acl_check_cmd or acl_check_cmd(...) then return nil end
  local argv = {...}
  return redis.error_reply("NOPERM this user has no permissions to run the '" .. argv[1]
    .. "' command or to access its key '" .. tostring(argv[2]) .. "'; nothing was changed")
end

-- nil, or an error reply if `key` exists and is not of type `wanted` (WRONGTYPE), or if the
-- caller may not ask (NOPERM).
local function check_type(key, wanted)
  local err = check_acl('TYPE', key)
  if err then return err end
  local found = redis.call('TYPE', key)['ok']
  if found == 'none' or found == wanted then return nil end
  return redis.error_reply('WRONGTYPE Operation against a key holding the wrong kind of value: '
    .. key .. ' is a ' .. found .. ', not a ' .. wanted .. '; nothing was changed')
end

-- redis.pcall(command, board, ...) on a board the script has not type-checked: its reply, or
-- nil and the error reply to return, check_type's (WRONGTYPE naming what the key is) if the
-- board is not a sorted set. So a command the script runs anyway checks the board's type, and
-- TYPE runs only when it failed; a failed command changed nothing.
local function call_board(board, command, ...)
  local reply = redis.pcall(command, board, ...)
  if type(reply) == 'table' and reply.err then return nil, check_type(board, 'zset') or reply end
  return reply
end

-- nil, or the first error of check_type(prefix .. id, 'hash') and of the caller's permission to
-- UNLINK it, for the metadata hashes of `user_ids` (a key of another type there is not the
-- board's: it is never deleted).
local function check_metadata(prefix, user_ids)
  for _, user_id in ipairs(user_ids) do
    local key = prefix .. user_id
    local err = check_acl('UNLINK', key) or check_type(key, 'hash')
    if err then return err end
  end
  return nil
end

-- In a cluster, a command a script runs on a key it did not declare passes the same check as a
-- command from a client: while its slot migrates, a key that is not on this node (or, for a
-- command on several keys, any key missing there) makes the command, and with it the script,
-- fail ("non local key", "undeclared keys ... rehashing of the slot"); on the importing node a
-- command on one missing key runs there as if the key did not exist. So before its first write,
-- a script reaches the undeclared keys it will write with a command on several keys, `anchor`
-- (a key of the script known to exist: the ranked set it removes from) and a slice of them, as
-- unlink_metadata will: a key missing on this node fails there, having changed nothing, and the
-- cluster client sends the script again (to where the slot is served once it has moved). A
-- stable slot checks nothing. Returns nil, or an error reply (EXISTS refused by the ACLs of
-- Redis < 7.0 is skipped: such a server has no acl_check_cmd, and the write checks again).
local function check_present(anchor, keys)
  for i = 1, #keys, 1000 do
    local slice = {anchor, unpack(keys, i, math.min(i + 999, #keys))}
    if acl_check_cmd then
      if acl_check_cmd('EXISTS', unpack(slice)) then redis.call('EXISTS', unpack(slice)) end
    else
      local reply = redis.pcall('EXISTS', unpack(slice))
      if type(reply) == 'table' and reply.err
        and not string.find(reply.err, "can't run this command", 1, true) then
        return reply
      end
    end
  end
  return nil
end

-- The metadata hashes of `user_ids`.
local function metadata_keys(prefix, user_ids)
  local keys = {}
  for i, user_id in ipairs(user_ids) do keys[i] = prefix .. user_id end
  return keys
end

-- UNLINK in slices: unpack() is limited by Lua's C stack.
local function unlink_metadata(prefix, user_ids)
  local keys = {}
  for _, user_id in ipairs(user_ids) do
    keys[#keys + 1] = prefix .. user_id
    if #keys == 1000 then
      redis.call('UNLINK', unpack(keys))
      keys = {}
    end
  end
  if #keys > 0 then redis.call('UNLINK', unpack(keys)) end
end

-- The checks before removing `user_ids`, the lowest entries of the sorted set `set`, and their
-- metadata (reached as check_present says, so that a slot migration refuses the script here).
local function check_remove_lowest(set, prefix, user_ids)
  if #user_ids == 0 then return nil end
  return check_acl('ZREMRANGEBYRANK', set, '0', tostring(#user_ids - 1))
    or check_metadata(prefix, user_ids) or check_present(set, metadata_keys(prefix, user_ids))
end

-- Removes `user_ids`, the lowest entries of a default board, and their metadata: the guide's trim.
local function remove_lowest(board, prefix, user_ids)
  if #user_ids == 0 then return end
  redis.call('ZREMRANGEBYRANK', board, 0, #user_ids - 1)
  unlink_metadata(prefix, user_ids)
end

-- The first `n` elements of `list` (the list itself if it has no more).
local function first_of(list, n)
  if #list <= n then return list end
  local first = {}
  for i = 1, n do first[i] = list[i] end
  return first
end

-- Whether a default board may take a script's guide path (the guide's commands only): the client
-- sends no options key once a reply has shown it the board records no options (`options` nil),
-- or the board's options hash does not exist. Anything else (options recorded, a key of another
-- type, a denied HGETALL) is for check_options, on the path of boards with options.
local function no_options_recorded(options)
  return not options or next(redis.pcall('HGETALL', options)) == nil
end

-- {user_id, score, {field, value, ...}, ...} from a ZRANGE ... WITHSCORES reply of the board's
-- ranked set (see board_spec; b nil: the guide's board), or an error reply (NOPERM) as its
-- second value. An empty prefix: the client caches metadata (see connection/cache.hpp), so
-- every entry's is left empty ({}) and no hash is read.
local function hydrate(b, prefix, ranged)
  local out, first, lean = {}, b and b.first, prefix == ''
  local none, empty = {}, {}
  for i = 1, #ranged, 2 do
    local user_id = first and string.sub(ranged[i], b.width + 1) or ranged[i]
    -- Tie-break columns: the whole member, the client reads the columns' values from its key.
    out[#out + 1] = first and b.tiebreak and ranged[i] or user_id
    out[#out + 1] = ranged[i + 1]
    if lean then
      out[#out + 1] = none
    else
      local key = prefix .. user_id
      local err = check_acl('HGETALL', key)
      if err then return nil, err end
      local metadata = redis.call('HGETALL', key)
      if #metadata == 0 then empty[#empty + 1] = key end
      out[#out + 1] = metadata
    end
  end
  -- An empty hash may be one that has not moved yet (see check_present): on the node importing
  -- the slot it reads as absent. The board (the anchor: the entries came from it) and those
  -- keys together fail there, and the cluster client reads again; elsewhere they cost one
  -- EXISTS, and only for entries without metadata.
  if #empty > 0 then
    local err = check_present(string.sub(prefix, 1, #prefix - 6), empty)
    if err then return nil, err end
  end
  return out
end

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
local function board_spec(board, k, order, ties)
  if not order then  -- the default board: one table constructor, sized once
    return {board = board, order = 'desc', ties = 'lexicographic', options = KEYS[k],
      desc = true, default = true, ranked = board, shared = false, position_command = 'ZREVRANK'}
  end
  local tiebreak = string.sub(ties, 1, 3) == 'tb:'
  local desc, first, dense = order == 'desc', ties == 'first' or tiebreak, ties == 'dense'
  local width = KEY_WIDTH
  if tiebreak then width = KEY_WIDTH * (select(2, string.gsub(ties, ',', '')) + 1) end
  return {board = board, order = order, ties = ties, options = KEYS[k], desc = desc,
    default = desc and ties == 'lexicographic', ranked = first and KEYS[k + 1] or board,
    first = first and KEYS[k + 1] or nil, first_keys = first and KEYS[k + 2] or nil,
    dense = dense and KEYS[k + 1] or nil, shared = dense or ties == 'competition',
    position_command = desc and 'ZREVRANK' or 'ZRANK', tiebreak = tiebreak or nil,
    width = width}
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
  local order, ties, seq
  for i = 1, #recorded, 2 do
    local field = recorded[i]
    if field == 'order' then order = recorded[i + 1]
    elseif field == 'ties' then ties = recorded[i + 1]
    elseif field == 'seq' then seq = tonumber(recorded[i + 1])
    elseif field == 'rate_limit' then b.recorded_rate = recorded[i + 1]  -- issue 17's guards
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
  if order == b.order and ties == b.ties then return nil, false, seq or 0 end
  return redis.status_reply('OPTIONS order=' .. order .. ' ties=' .. tostring(ties))
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
    return check_type(b.first, 'zset') or check_type(b.first_keys, 'hash')
      or check_acl('ZADD', b.first, '0', 'x') or check_acl('ZREM', b.first, 'x')
      or check_acl('ZRANGE', b.first, '0', '0') or check_acl('ZREMRANGEBYRANK', b.first, '0', '0')
      or check_acl(b.position_command, b.first, 'x') or check_acl('HGET', b.first_keys, 'x')
      or check_acl('HSET', b.first_keys, 'x', 'x') or check_acl('HDEL', b.first_keys, 'x')
  end
  if b.dense then
    return check_type(b.dense, 'zset') or check_acl('ZADD', b.dense, '0', 'x')
      or check_acl('ZREM', b.dense, 'x') or check_acl('ZCOUNT', b.dense, '0', '0')
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

-- The checks before removing `user_ids`, the worst entries of the board, and their metadata.
local function check_remove_worst(b, prefix, user_ids)
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
  unlink_metadata(prefix, user_ids)
end

-- ---- The server's clock -----------------------------------------------------------------------
-- The server's clock (TIME) decides which period, bucket or window a write belongs to, and when
-- anything closes or expires: a client's clock never does. A client names the period it writes
-- (its keys are in the call) from its own clock corrected by what the server told it before, and
-- says when, on the server's clock, that write belongs there: the span [from, until) (the word
-- 'open:<from ms>:<until ms>', see guard_fields). A write outside it is refused before anything
-- is written, with the server's time (check_clock): the client corrects its clock and sends it
-- again, or raises (see ServerClock in boards/seasons.py).

-- The server's clock: unix milliseconds.
local function server_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- Unix ms as an ISO 8601 UTC time, "2026-12-06T10:51:03.123Z" (days to a civil date: H.
-- Hinnant's algorithm; Redis's Lua has no os.date).
local function utc_text(ms)
  local seconds = math.floor(ms / 1000)
  local rest = seconds % 86400
  local z = (seconds - rest) / 86400 + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
    - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local day = doy - math.floor((153 * mp + 2) / 5) + 1
  local month = mp < 10 and mp + 3 or mp - 9
  local year = yoe + era * 400 + (month <= 2 and 1 or 0)
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', year, month, day,
    math.floor(rest / 3600), math.floor(rest % 3600 / 60), rest % 60, ms % 1000)
end

-- nil, or the CLOCK error if the server's time is outside [from, until) (unix ms, numbers or
-- texts): 'CLOCK <server ms> <from> <until> <what>' (the client raises ClockSkew with the
-- server's time). `what` names what the span is (a period, a bucket).
local function check_clock(from, till, what)
  local now = server_ms()
  if now >= tonumber(from) and now < tonumber(till) then return nil end
  return redis.error_reply(string.format('CLOCK %d %d %d ', now, tonumber(from), tonumber(till))
    .. what .. ' takes writes from ' .. utc_text(tonumber(from)) .. ' to '
    .. utc_text(tonumber(till)) .. ' on the server\'s clock, which says ' .. utc_text(now)
    .. '; nothing was changed')
end

-- ---- Guards (issue 17): idempotency keys, rate limits, change events ---------------------------
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

-- The guard words without a key of their own (see guard_fields).
local KEYLESS_WORDS = {expire = true, range = true, maxinc = true, tb = true, open = true}

-- The score limits' words (fair play, see guard_fields) into w: true if `name` is one of them.
local function limit_word(w, name, a, b)
  if name == 'range' then
    w.score_min, w.score_max, w.limits = tonumber(a), tonumber(b), true
  elseif name == 'maxinc' then
    w.max_increment, w.limits = tonumber(a), true
  else
    return false
  end
  return true
end

-- Sets w's guard fields from the words spec[from], spec[from + 1], ... (see above), the keys of
-- those that have one ending at KEYS[last_key]; and w.expire_at from a word 'expire:<unix ms>'
-- (issue 16: a periodic board's deadline, see expire_board), which has no key; and the score
-- limits (fair play), keyless too: 'range:<min>:<max>' (w.score_min, w.score_max: the lowest
-- and highest score a write may leave; either may be empty) and 'maxinc:<n>' (w.max_increment:
-- the most one write may improve a score by, in the board's order): see check_score_limits.
-- 'gscope:' has a key: a period's board's periodic board's options (see merge_scope_guards).
-- 'open:<from ms>:<until ms>' (w.open_from, w.open_until), keyless: when, on the server's clock,
-- the write belongs to the period it names (see check_clock).
local function guard_fields(w, spec, from, last_key)
  local k = last_key
  for i = from, #spec do
    if not KEYLESS_WORDS[string.match(spec[i], '^(%a+)')] then k = k - 1 end
  end
  for i = from, #spec do
    local name, a, b = string.match(spec[i], '^(%a+):([^:]*):?(.*)$')
    if name == 'expire' then
      w.expire_at = a
    elseif name == 'open' then  -- the span of the server's clock the write belongs to
      w.open_from, w.open_until = a, b
    elseif name == 'tb' then  -- tie-break columns: the member's key of the write's values
      w.tb = a
    elseif not limit_word(w, name, a, b) then  -- the score limits are keyless too
      k = k + 1
      if name == 'gscope' then  -- a period's board: its periodic board's options (see below)
        w.guard_scope = KEYS[k]
      elseif name == 'sid' then  -- 'sid:<ttl ms>:<call token>' (see store_submission)
        w.submission_key, w.submission_ttl = KEYS[k], a
        if b ~= '' then w.call_token = b end
      elseif name == 'rate' then
        w.rate_key, w.rate_max, w.rate_per = KEYS[k], tonumber(a), tonumber(b)
      elseif name == 'events' then
        w.events_key, w.events_maxlen = KEYS[k], a
      end
    end
  end
  return w
end

-- The 'OPTIONS ...' status naming the board's recorded options (the client raises ValueError).
local function options_status(order, ties, rate, events, range, maxinc)
  return redis.status_reply('OPTIONS order=' .. order .. ' ties=' .. ties .. ' rate_limit='
    .. (rate or '-') .. ' events=' .. (events or '-') .. ' score_range=' .. (range or '-')
    .. ' max_increment=' .. (maxinc or '-'))
end

-- A board's recorded options as options_status says them.
local function recorded_status(b)
  return options_status(b.order, b.ties, b.recorded_rate, b.recorded_events, b.recorded_range,
    b.recorded_maxinc)
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
  return {{}, stored, rank_of(b, w.user_id, tonumber(stored)), redis.call('HGETALL', w.user_key),
    false, false, 0, 1, applied}
end

-- Idempotency (w.submission_key, w.submission_ttl; the payload in w.user_id, w.mode, w.number,
-- w.fields[w.first_field..]): nil if the write may go ahead (w.fingerprint set for
-- store_submission), else the reply to return: an error reply (SUBMISSIONREUSED: the id was
-- applied for another user or payload), or the stored result of the earlier write with this id
-- (its last elements 1, a duplicate, and the key of the board it landed on; a table with
-- neither 'err' nor 'ok'); for an id upsert_many applied, on board `b`, bulk_duplicate's reply
-- (a window, without `b`: an error).
local function check_submission(w, b)
  local err = check_acl('GET', w.submission_key)
    or check_acl('SET', w.submission_key, 'x', 'PX', w.submission_ttl)
    or check_type(w.submission_key, 'string')
  if err then return err end
  -- (Tie-break columns' values are part of the payload: "<number> <key>".)
  w.fingerprint = payload_fingerprint(w.mode, w.tb and (w.number .. ' ' .. w.tb) or w.number,
    w.fields, w.first_field, #w.fields)
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
-- those now strictly worse). Lists are repeated fields.
local function add_event(b, key, maxlen, user_id, score, old_text, previous_rank, old_position,
                         trimmed)
  local stored = redis.call('ZSCORE', b.board, user_id)
  local fields = {'kind', 'score', 'user_id', user_id, 'score', stored or score_text(score),
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
-- it: its last element 0, not a duplicate). `p` is plan_write's plan.
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
      p.old_position, p.trimmed)
    -- A periodic board's events expire with it (issue 16).
    if w.expire_at then redis.call('PEXPIREAT', w.events_key, w.expire_at) end
  end
  if w.submission_key then return store_submission(w, reply, w.board) end
  return reply
end

-- ---- Expiry (periodic boards, issue 16) -----------------------------------------------------
-- A periodic board (one per period: "<key>:<period id>") expires as a whole at its period's
-- deadline (unix ms, the same for every key of the period): every write PEXPIREATs the sorted
-- set, the option keys and the metadata hash it wrote, so every user's hash carries the
-- period's deadline too (the trim UNLINKs the hashes of those it removes).

-- The keys of board `b` that expire with it (absent ones are skipped by PEXPIREAT).
local function board_keys(b, user_key)
  local keys = {b.board, user_key}
  if b.options then keys[#keys + 1] = b.options end
  if b.first then keys[#keys + 1] = b.first; keys[#keys + 1] = b.first_keys end
  if b.dense then keys[#keys + 1] = b.dense end
  if b.recorded_hidden then keys[#keys + 1] = b.board .. ':hidden' end  -- fair play
  return keys
end

-- nil, or a NOPERM error reply if the caller may not PEXPIREAT the board's keys.
local function check_board_expiry(b, user_key, expire_at)
  for _, key in ipairs(board_keys(b, user_key)) do
    local err = check_acl('PEXPIREAT', key, expire_at)
    if err then return err end
  end
  return nil
end

-- PEXPIREAT every key of board `b` (and the user's metadata hash) at `expire_at` (unix ms).
local function expire_board(b, user_key, expire_at)
  for _, key in ipairs(board_keys(b, user_key)) do redis.call('PEXPIREAT', key, expire_at) end
end

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
-- integers, and the sum rounded there is a score nobody wrote (issue 39). TwoSum (Knuth) gives
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
    or check_type(user_key, 'hash') or (not b.default and check_option_keys(b))
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
  if w.guard_scope then
    err = merge_scope_guards(b, w)
    if err then return nil, err end
  end
  -- A league's hidden players (its own record of them, see league.lua).
  if w.scope_hidden then b.scope_hidden, b.scope_options = w.scope_hidden, w.scope_options end
  -- Guards (issue 17): idempotency, rate limit, events; checked here, applied by apply_guards
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
  local old_position = w.events_key and position_before(b, user_id, old)  -- guards (issue 17)

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
  if p.record then redis.call('HSET', b.options, 'order', b.order, 'ties', b.ties) end
  if p.hidden then  -- fair play: kept, not ranked; the reply of a write that left the board
    local text = score_text(p.score)
    keep_hidden(b, user_id, text, p.visible, w.expire_at, p.key)
    local fields = w.fields
    for i = w.first_field, #fields, 1000 do
      redis.call('HSET', user_key, unpack(fields, i, math.min(i + 999, #fields)))
    end
    if w.expire_at then redis.call('PEXPIREAT', user_key, w.expire_at) end
    local reply = {{}, text}
    if w.submit then
      reply = {{}, text, false, redis.call('HGETALL', user_key), p.old_text or false, false,
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
  local fields = w.fields
  for i = w.first_field, #fields, 1000 do
    redis.call('HSET', user_key, unpack(fields, i, math.min(i + 999, #fields)))
  end
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
        redis.call('HGETALL', user_key)}
    end
  else
    local rank, metadata = false, {}
    if stored then
      produced = stored
      rank = rank_of(b, user_id, tonumber(stored))
      metadata = redis.call('HGETALL', user_key)
    end
    reply = {p.trimmed, produced, rank, metadata, p.old_text or false, p.previous_rank,
      p.changed and 1 or 0}
  end
  if p.guards then return apply_guards(p, reply) end  -- guards (issue 17)
  return reply
end

-- ---- Rolling windows (issues 16 and 30) -----------------------------------------------------
-- A rolling board "<key>" keeps each bucket's scores in "<key>:bucket:<i>" (i: unix ms divided by
-- the bucket's length, rounded down), each expiring when it has left the window for one more
-- bucket ((i + 1) * bucket + window). The window ending with bucket c holds buckets c - n + 1 ..
-- c (n = window / bucket). Kept up to date incrementally (issue 30), never rebuilt whole:
--   "<key>:window:all"     every user's aggregate over the window's buckets (untrimmed);
--   "<key>:window:newest"  every user's newest bucket in the window (its score: the bucket i),
--                          so a user leaves the window when its newest bucket does;
--   "<key>"                the window's board, the guide's layout, so every read of a plain board
--                          reads it, metadata ("<key>:user:<id>") included: a subset of :all,
--                          with the same scores, the best max_entries as of the last bucket
--                          change, then writes (a user trimmed away comes back by writing, or at
--                          the next bucket change);
--   "<key>:window"         the marker, "<c> <f>": the window is complete for bucket c (-1: none);
--                          f = 1 once a score that is not an integer of magnitude < 2^53 was
--                          written since the window was last started afresh (sums are then
--                          recounted from the buckets, never subtracted: no float drift).
--                          During a transition to bucket t: "<c> <f> <t> <k> <offset>".
-- A transition from c to t (a read or write for a later bucket): the buckets that leave (c - n +
-- 1 .. t - n) are subtracted from :all (sum: ZINCRBY-like arithmetic on integers, else a recount
-- of the user from the buckets that stay; max/min: a user whose aggregate is its score in the
-- leaving bucket is recounted from the buckets that stay; a user whose newest bucket leaves is
-- removed), then the buckets that enter (c + 1 .. t: empty unless written behind the window's
-- back) added, every change applied to "<key>" too for the users it holds; then "<key>" refilled
-- with the best max_entries of :all and trimmed. When t - c >= n (or no window, or a marker of
-- the old format: a board written before issue 30), :all, :newest and "<key>" are dropped and
-- the n buckets of t added. The work is done in steps of at most STEP_UNITS element operations
-- and about STEP_MICROS per script call ("<key>:window:step", if set, an integer: fewer units,
-- for tests), the position recorded in the marker; every read, write, delete finishes the
-- transition first
-- (a read: its refresh call says 'not yet', and the client calls again; a write: group.lua
-- replies WINDOWBUSY having written nothing of the write, and the client sends it again), so no
-- read or write ever sees a half-done window, and nothing changes a bucket during a transition.
-- "<key>:options" records order=asc. `win`: union, marker, options, prefix ("<key>:bucket:"),
-- bucket (c, a number), bucket_ms, window_ms, aggregate ('sum' | 'max' | 'min'), desc,
-- max_entries.

local STEP_UNITS = 2000
-- ... and at most this long (µs, the server's clock, read between chunks of at most CHUNK_ROWS
-- entries): on a large window an entry costs more (cache misses).
local STEP_MICROS = 2000
local CHUNK_ROWS = 64
-- What one entry of a bucket costs a step (a ZRANGE's, two ZMSCOREs', two ZADDs' share).
local ROW_UNITS = 5
local EXACT = 2 ^ 53

-- The buckets in the window ending with bucket `last`, oldest first: n = window / bucket.
local function window_buckets(win, last)
  local keys, n = {}, win.window_ms / win.bucket_ms
  for i = last - n + 1, last do keys[#keys + 1] = win.prefix .. string.format('%d', i) end
  return keys
end

-- When the window ending with bucket `last` ends for good: its newest bucket's deadline.
local function window_deadline(win, last)
  return string.format('%d', (last + 1) * win.bucket_ms + win.window_ms)
end

-- Whether x is an integer that sums of integers keep exact.
local function exact_number(x)
  return x == math.floor(x) and x > -EXACT and x < EXACT
end

-- The window's derived key names. An unlimited board (max_entries >= UNLIMITED: no write ever
-- trims) keeps its aggregates in the union itself (":window:all" is then the union: the
-- layout before the window-ahead kept a copy there, "old_all", dropped by the next transition).
-- A window whose union is refilled cheaply (unlimited, or max_entries <= REFILL_MAX) keeps the
-- next window ready ("fast").
local UNLIMITED = 2 ^ 32
local REFILL_MAX = 1000
local function window_names(win)
  win.old_all = win.union .. ':window:all'
  win.unlimited = win.max_entries ~= nil and win.max_entries >= UNLIMITED
  win.all = win.unlimited and win.union or win.old_all
  win.newest = win.union .. ':window:newest'
  win.ahead = win.union .. ':window:ahead'
  win.swap = win.union .. ':window:swap'
  win.step_key = win.union .. ':window:step'
  win.n = win.window_ms / win.bucket_ms
  win.fast = win.unlimited or (win.max_entries ~= nil and win.max_entries <= REFILL_MAX)
  return win
end

-- The marker, parsed: {text, ready (a bucket or nil), frac, old (a marker of the old format:
-- rebuild), target, k, offset (a transition's, or nil)}.
local function window_state(win)
  local text = redis.call('GET', win.marker)
  local st = {text = text, frac = false}
  if not text then return st end
  local f = {}
  for word in string.gmatch(text, '%S+') do f[#f + 1] = word end
  if #f < 2 or #f > 5 or #f == 4 then st.old = true; return st end
  st.ready = tonumber(f[1])
  if st.ready and st.ready < 0 then st.ready = nil end
  st.frac = f[2] == '1'
  if #f == 5 then st.target, st.k, st.offset = tonumber(f[3]), tonumber(f[4]), tonumber(f[5]) end
  if #f == 3 then  -- the window ahead: 'r' (ready), or its job: '<L|E><k>.<offset>'
    if f[3] == 'r' then
      st.ahead = 'r'
    else
      local kind, k, offset = string.match(f[3], '^([LE])(%d+)%.(%d+)$')
      if kind then st.ahead, st.job_k, st.job_offset = kind, tonumber(k), tonumber(offset) end
    end
  end
  return st
end

-- The marker's text for `st`.
local function state_text(st)
  local text = string.format('%d', st.ready or -1) .. (st.frac and ' 1' or ' 0')
  if st.target then
    text = text .. ' ' .. string.format('%d %d %d', st.target, st.k, st.offset)
  elseif st.ahead == 'r' then
    text = text .. ' r'
  elseif st.ahead then
    text = text .. ' ' .. st.ahead .. string.format('%d.%d', st.job_k, st.job_offset)
  end
  return text
end

-- x and y combined by the window's aggregate (nil: none); inf + -inf is 0 (ZUNIONSTORE's rule).
local function aggregate_of(win, x, y)
  if x == nil then return y end
  if y == nil then return x end
  if win.aggregate == 'sum' then
    local z = x + y
    if z ~= z then return 0 end
    return z
  end
  if win.aggregate == 'max' then return math.max(x, y) end
  return math.min(x, y)
end

-- nil, or the first error of the checks before a transition step: the types of the window's
-- keys and the caller's permissions for what a step runs.
local function check_window(win)
  window_names(win)
  local err = check_type(win.union, 'zset') or check_type(win.marker, 'string')
    or check_type(win.options, 'hash') or check_type(win.all, 'zset')
    or check_type(win.newest, 'zset') or check_type(win.step_key, 'string')
    or check_acl('GET', win.marker) or check_acl('SET', win.marker, '0')
    or check_acl('GET', win.step_key) or check_acl('TIME')
    or check_acl('ZCARD', win.union) or check_acl('ZREMRANGEBYRANK', win.union, '0', '0')
    or check_acl('ZADD', win.union, '0', 'x') or check_acl('ZREM', win.union, 'x')
    or check_acl('PEXPIREAT', win.union, '0') or check_acl('UNLINK', win.union)
    or check_acl('ZMSCORE', win.all, 'x') or check_acl('ZADD', win.all, '0', 'x')
    or check_acl('ZREM', win.all, 'x') or check_acl('ZRANGE', win.all, '0', '0')
    or check_acl('ZCARD', win.all) or check_acl('PEXPIREAT', win.all, '0')
    or check_acl('UNLINK', win.all)
    or check_acl('ZMSCORE', win.newest, 'x') or check_acl('ZADD', win.newest, '0', 'x')
    or check_acl('ZREM', win.newest, 'x') or check_acl('PEXPIREAT', win.newest, '0')
    or check_acl('UNLINK', win.newest)
    or check_acl('PEXPIREAT', win.options, '0') or check_acl('HSET', win.options, 'order', 'asc')
    or check_type(win.ahead, 'zset') or check_type(win.swap, 'zset')
    or check_acl('ZMSCORE', win.ahead, 'x') or check_acl('ZADD', win.ahead, '0', 'x')
    or check_acl('ZREM', win.ahead, 'x') or check_acl('PEXPIREAT', win.ahead, '0')
    or check_acl('UNLINK', win.ahead) or check_acl('UNLINK', win.swap)
    or check_acl('UNLINK', win.old_all) or check_acl('EXISTS', win.all)
    or check_acl('EXISTS', win.ahead) or check_acl('RENAME', win.all, win.swap)
    or check_acl('RENAME', win.ahead, win.all) or check_acl('RENAME', win.swap, win.ahead)
    or check_acl('ZRANGESTORE', win.union, win.all, '0', '0')
  return err
end

-- nil, or the first error of the checks before a slice of the window ahead's job (fewer than
-- check_window's: a slice touches only the window ahead, :newest and the marker).
local function check_slice(win)
  return check_type(win.ahead, 'zset') or check_type(win.newest, 'zset')
    or check_acl('ZMSCORE', win.ahead, 'x') or check_acl('ZADD', win.ahead, '0', 'x')
    or check_acl('ZREM', win.ahead, 'x') or check_acl('PEXPIREAT', win.ahead, '0')
    or check_acl('UNLINK', win.ahead) or check_acl('ZMSCORE', win.newest, 'x')
    or check_acl('ZADD', win.newest, '0', 'x') or check_acl('ZREM', win.newest, 'x')
    or check_acl('SET', win.marker, '0') or check_acl('GET', win.step_key)
    or check_type(win.step_key, 'string') or check_acl('TIME')
end

-- nil, or the first error of the checks before the swap (see swap_window).
local function check_swap(win)
  return check_type(win.union, 'zset') or check_type(win.all, 'zset')
    or check_type(win.ahead, 'zset') or check_type(win.swap, 'zset')
    or check_type(win.newest, 'zset') or check_type(win.options, 'hash')
    or check_acl('EXISTS', win.all) or check_acl('EXISTS', win.ahead)
    or check_acl('RENAME', win.all, win.swap) or check_acl('RENAME', win.ahead, win.all)
    or check_acl('RENAME', win.swap, win.ahead) or check_acl('UNLINK', win.all)
    or check_acl('ZRANGESTORE', win.union, win.all, '0', '0')
    or check_acl('PEXPIREAT', win.union, '0') or check_acl('PEXPIREAT', win.all, '0')
    or check_acl('PEXPIREAT', win.newest, '0') or check_acl('PEXPIREAT', win.ahead, '0')
    or check_acl('PEXPIREAT', win.options, '0') or check_acl('HSET', win.options, 'order', 'asc')
    or check_acl('SET', win.marker, '0') or check_acl('ZCARD', win.union)
end

-- Removes the worst entries of the union beyond max_entries (their buckets, metadata and
-- :all entries stay: they may climb back); returns their ids, worst first.
local function trim_window(win)
  local over = redis.call('ZCARD', win.union) - win.max_entries
  if over <= 0 then return {} end
  if win.desc then
    local ids = redis.call('ZRANGE', win.union, 0, over - 1)
    redis.call('ZREMRANGEBYRANK', win.union, 0, over - 1)
    return ids
  end
  local ids = redis.call('ZRANGE', win.union, 0, over - 1, 'REV')
  redis.call('ZREMRANGEBYRANK', win.union, -over, -1)
  return ids
end

-- A transition's plan: reset (start afresh), the first leaving bucket and how many leave, the
-- first entering bucket and how many enter.
local function transition_plan(win, st)
  local t, c = st.target, st.ready
  if not c or t - c >= win.n then return true, 0, 0, t - win.n + 1, win.n end
  return false, c - win.n + 1, t - c, c + 1, t - c
end

-- ZMSCORE of `members` in `key`, as numbers (false: absent).
local function scores_of(key, members)
  local found = redis.call('ZMSCORE', key, unpack(members))
  for i = 1, #found do found[i] = found[i] and tonumber(found[i]) end
  return found
end

-- ZADD key [flag] score member ... for the parallel lists (nothing if empty).
local function add_all(key, flag, members, values)
  if #members == 0 then return end
  local args = {'ZADD', key}
  if flag then args[#args + 1] = flag end
  for i = 1, #members do
    args[#args + 1] = score_text(values[i])
    args[#args + 1] = members[i]
  end
  redis.call(unpack(args))
end

-- Each of `members` recounted from the buckets first .. last (oldest first): the aggregate of
-- its scores there, or false (in none). Costs a ZMSCORE per bucket.
local function recount_members(win, members, first, last)
  local totals = {}
  for i = 1, #members do totals[i] = false end
  if #members == 0 then return totals end
  for b = first, last do
    local found = scores_of(win.prefix .. string.format('%d', b), members)
    for i = 1, #members do
      if found[i] then totals[i] = aggregate_of(win, totals[i] or nil, found[i]) end
    end
  end
  return totals
end

-- Where a chunk lands: `dst` = {key (:all or :ahead), union (true: the union too, for the users
-- it holds), keep_first, keep_last (the buckets that stay), frac, newest_first (a user leaving
-- whose newest bucket is older than this leaves :newest too)}.
-- One chunk of a leaving bucket: at most `units` element operations. Returns the rows it took
-- (0: the bucket is done) and the units spent, or nil and an error.
local function leave_chunk(win, dst, bucket, offset, units)
  local key = win.prefix .. string.format('%d', bucket)
  local err = check_type(key, 'zset') or check_acl('ZRANGE', key, '0', '0')
    or check_acl('ZMSCORE', key, 'x')
    or (dst.later and (check_type(dst.later, 'zset') or check_acl('ZMSCORE', dst.later, 'x')))
  if err then return nil, err end
  local keep_first, keep_last = dst.keep_first, dst.keep_last  -- the buckets that stay
  -- A recount: a ZMSCORE per bucket that stays (2 units a call), a quarter unit a user a call.
  local kept = math.max(0, keep_last - keep_first + 1)
  local recount_cost = math.ceil(kept / 4)
  local want = math.max(1, math.min(CHUNK_ROWS, math.floor(units / ROW_UNITS)))
  local rows = redis.call('ZRANGE', key, offset, offset + want - 1, 'WITHSCORES')
  if #rows == 0 then return 0, 1 end
  local members, values = {}, {}
  for i = 1, #rows, 2 do
    members[#members + 1] = rows[i]
    values[#values + 1] = tonumber(rows[i + 1])
  end
  local totals = scores_of(dst.key, members)
  local newest = scores_of(win.newest, members)
  -- A user also in a bucket that leaves later in the same job is not removed yet: a write may
  -- bring it back meanwhile (the window ahead's job runs between writes), and that bucket's
  -- score is then subtracted from what the write left.
  local later = dst.later and scores_of(dst.later, members) or {}
  local spent, taken = 0, 0
  local gone, changed, new_values, recount, stale = {}, {}, {}, {}, {}
  for i = 1, #members do
    local a = totals[i]
    spent = spent + ROW_UNITS
    if a then
      if newest[i] and newest[i] < keep_first and not later[i] then
        gone[#gone + 1] = members[i]
        if newest[i] < dst.newest_first then stale[#stale + 1] = members[i] end
      elseif win.aggregate == 'sum' and not dst.frac then
        changed[#changed + 1] = members[i]
        new_values[#new_values + 1] = a - values[i]
      elseif win.aggregate == 'sum' or a == values[i] then
        recount[#recount + 1] = members[i]
        spent = spent + recount_cost + (#recount == 1 and 2 * kept or 0)
      end
    end
    taken = i
    if spent >= units then break end
  end
  local recounted = recount_members(win, recount, keep_first, keep_last)
  for i = 1, #recount do
    if recounted[i] then
      changed[#changed + 1] = recount[i]
      new_values[#new_values + 1] = recounted[i]
    else
      gone[#gone + 1] = recount[i]
    end
  end
  add_all(dst.key, nil, changed, new_values)
  if dst.union then add_all(win.union, 'XX', changed, new_values) end
  for i = 1, #gone, 1000 do
    local slice = {unpack(gone, i, math.min(i + 999, #gone))}
    redis.call('ZREM', dst.key, unpack(slice))
    if dst.union then redis.call('ZREM', win.union, unpack(slice)) end
  end
  for i = 1, #stale, 1000 do
    redis.call('ZREM', win.newest, unpack(stale, i, math.min(i + 999, #stale)))
  end
  return taken, spent
end

-- One chunk of an entering bucket (see leave_chunk).
local function enter_chunk(win, dst, bucket, offset, units)
  local key = win.prefix .. string.format('%d', bucket)
  local err = check_type(key, 'zset') or check_acl('ZRANGE', key, '0', '0')
  if err then return nil, err end
  local want = math.max(1, math.min(CHUNK_ROWS, math.floor(units / ROW_UNITS)))
  local rows = redis.call('ZRANGE', key, offset, offset + want - 1, 'WITHSCORES')
  if #rows == 0 then return 0, 1 end
  local members, values, newest = {}, {}, {}
  for i = 1, #rows, 2 do
    members[#members + 1] = rows[i]
    local v = tonumber(rows[i + 1])
    values[#values + 1] = v
    newest[#newest + 1] = bucket
    if not exact_number(v) then dst.frac = true end
  end
  local totals = scores_of(dst.key, members)
  for i = 1, #members do totals[i] = aggregate_of(win, totals[i] or nil, values[i]) end
  add_all(dst.key, nil, members, totals)
  add_all(win.newest, 'GT', members, newest)
  if dst.union then add_all(win.union, 'XX', members, totals) end
  return #members, ROW_UNITS * #members
end

-- One chunk of the refill: the union gets :all's best max_entries (ranks offset ..), then the
-- trim. Returns the rows taken (0: done) and the units spent.
local function refill_chunk(win, st, units)
  local size = redis.call('ZCARD', win.all)
  if st.offset == 0 and redis.call('ZCARD', win.union) == size then return 0, 2 end
  local stop = math.min(win.max_entries, size)
  if st.offset >= stop then return 0, 1 end
  local want = math.max(1, math.min(4 * CHUNK_ROWS, math.floor(units / 2), stop - st.offset))
  local rows
  if win.desc then
    rows = redis.call('ZRANGE', win.all, st.offset, st.offset + want - 1, 'REV', 'WITHSCORES')
  else
    rows = redis.call('ZRANGE', win.all, st.offset, st.offset + want - 1, 'WITHSCORES')
  end
  local members, values = {}, {}
  for i = 1, #rows, 2 do
    members[#members + 1] = rows[i]
    values[#values + 1] = tonumber(rows[i + 1])
  end
  add_all(win.union, nil, members, values)
  return math.max(1, #members), 2 * #members
end

-- One chunk of the trim: the worst of the union beyond max_entries, at most `units` of them.
local function trim_chunk(win, units)
  local over = redis.call('ZCARD', win.union) - win.max_entries
  if over <= 0 then return 0, 1 end
  local count = math.max(1, math.min(over, units, 4 * CHUNK_ROWS))
  if win.desc then
    redis.call('ZREMRANGEBYRANK', win.union, 0, count - 1)
  else
    redis.call('ZREMRANGEBYRANK', win.union, -count, -1)
  end
  return count, count
end

-- Sets the deadlines of the window's keys for the window ending with bucket `last`.
local function expire_window(win, last)
  local deadline = window_deadline(win, last)
  for _, key in ipairs({win.union, win.all, win.newest, win.ahead}) do
    redis.call('PEXPIREAT', key, deadline)
  end
  if not win.desc then
    redis.call('HSET', win.options, 'order', 'asc', 'ties', 'lexicographic')
    redis.call('PEXPIREAT', win.options, deadline)
  end
  return deadline
end

-- ---- The window ahead ("<key>:window:ahead", issue 30) ----
-- Beside the window at bucket t (buckets t - n + 1 .. t), a "fast" window (see window_names)
-- keeps the window ahead: the aggregates over buckets t - n + 2 .. t, the next window as it
-- will be when bucket t + 1 begins (no write lands in t + 1 before that, and bucket t - n + 1
-- no longer matters to it). Every write to bucket t updates it too. At the change to t + 1 the
-- window ahead becomes the window (an O(1) RENAME; a trimmed union refilled with its best
-- max_entries, at most REFILL_MAX entries), and the old window's storage becomes the new window
-- ahead by its job 'L': buckets t - n + 1 and t - n + 2 leave it (leave_chunk), a slice of a few
-- dozen entries done by each later read or write (ahead_slice), so no call waits for it. After
-- a transition in steps (the window ahead not ready: no calls for a whole bucket, a clock that
-- jumped several buckets, a board of the layout before it), the job 'E' builds it from empty:
-- buckets t - n + 2 .. t - 1 enter. Its state is the marker's third word: 'r' (ready), or the
-- job's kind, bucket number k and offset ("L1.0"); absent: no window ahead. A job in progress
-- accepts only writes to bucket t (whose contributions it adds as they come: the jobs read only
-- buckets no write touches); any other change of the buckets it reads (a writer whose clock
-- lags, delete_user) drops the window ahead (the next change then takes steps).
local AHEAD_UNITS = 160  -- a slice: at most about 32 entries, in chunks of 8, and about
local AHEAD_CHUNK_UNITS = 40  -- AHEAD_MICROS (at 100,000 users a chunk of 8 costs ~100 µs:
local AHEAD_MICROS = 50  -- cache misses; on a small window a slice does 4 chunks)
local AHEAD_GUARD_MS = 50

-- The bucket the job works on now (nil: the job is done).
local function job_bucket(win, st)
  local t = st.ready
  if st.ahead == 'L' then
    if st.job_k <= 2 then return t - win.n + st.job_k - 1 end
    return nil
  end
  local b = t - win.n + 1 + st.job_k
  if b <= t - 1 then return b end
  return nil
end

-- Where the job's chunks land (see leave_chunk).
local function ahead_dst(win, st)
  return {key = win.ahead, union = false, keep_first = st.ready - win.n + 2, keep_last = st.ready,
    frac = st.frac, newest_first = st.ready - win.n + 1}
end

-- Drops the window ahead (the next change takes steps).
local function drop_ahead(win, st)
  redis.call('UNLINK', win.ahead)
  st.ahead, st.job_k, st.job_offset = nil, nil, nil
end

-- A slice of the window ahead's job: at most `units` element operations and about AHEAD_MICROS.
local function ahead_slice(win, st, units)
  local dst = ahead_dst(win, st)
  local budget = units
  local clock = redis.call('TIME')
  local started = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  -- The first bucket that leaves (t - n) expires when bucket t ends by the server's clock: a
  -- job still on it then (a reader whose clock lags) might find it gone. Dropped instead.
  if st.ahead == 'L' and st.job_k == 1
    and started / 1000 + AHEAD_GUARD_MS >= (st.ready + 1) * win.bucket_ms then
    drop_ahead(win, st)
  end
  while st.ahead == 'L' or st.ahead == 'E' do
    local b = job_bucket(win, st)
    if not b then
      st.ahead, st.job_k, st.job_offset = 'r', nil, nil
      break
    end
    local taken, spent
    local chunk = math.max(1, math.min(budget, AHEAD_CHUNK_UNITS))
    dst.later = nil
    if st.ahead == 'L' and st.job_k == 1 then
      dst.later = win.prefix .. string.format('%d', b + 1)
    end
    if st.ahead == 'L' then
      taken, spent = leave_chunk(win, dst, b, st.job_offset, chunk)
    else
      taken, spent = enter_chunk(win, dst, b, st.job_offset, chunk)
    end
    if taken == nil then drop_ahead(win, st); break end  -- a bucket of another type
    if taken == 0 then
      st.job_k, st.job_offset = st.job_k + 1, 0
    else
      st.job_offset = st.job_offset + taken
    end
    budget = budget - spent
    if budget <= 0 then break end
    if taken > 0 then  -- (a bucket found done costs a ZRANGE: up to a budget's worth of them)
      clock = redis.call('TIME')
      if tonumber(clock[1]) * 1000000 + tonumber(clock[2]) - started >= AHEAD_MICROS then
        break
      end
    end
  end
  st.frac = dst.frac
  if st.ahead then redis.call('PEXPIREAT', win.ahead, window_deadline(win, st.ready)) end
end

-- Whether the window at st.ready can become the window at st.ready + 1 by the swap: the window
-- ahead ready, and nothing written to the bucket that enters.
local function can_swap(win, st, want)
  if not (win.fast and st.ready and not st.old and not st.target and st.ahead == 'r'
    and want == st.ready + 1) then
    return false
  end
  local key = win.prefix .. string.format('%d', want)
  if check_type(key, 'zset') or check_acl('ZCARD', key) then return false end
  for b = want - win.n, want - win.n + 1 do  -- the buckets its job reads: else steps (and errors)
    local leaving = win.prefix .. string.format('%d', b)
    if check_type(leaving, 'zset') or check_acl('ZRANGE', leaving, '0', '0')
      or check_acl('ZMSCORE', leaving, 'x') then
      return false
    end
  end
  return redis.call('ZCARD', key) == 0
end

-- The window ahead becomes the window (see above); the old window's storage the new window
-- ahead, its job 'L' to do.
local function swap_window(win, st)
  local has_all = redis.call('EXISTS', win.all) == 1
  if redis.call('EXISTS', win.ahead) == 1 then
    if has_all then redis.call('RENAME', win.all, win.swap) end
    redis.call('RENAME', win.ahead, win.all)
    if has_all then
      redis.call('RENAME', win.swap, win.ahead)
      st.ahead, st.job_k, st.job_offset = 'L', 1, 0
    else
      st.ahead = 'r'
    end
  else  -- nobody in buckets t - n + 2 .. t: the next window is empty
    redis.call('UNLINK', win.all, win.newest)
    st.ahead = 'r'
  end
  if not win.unlimited then  -- the union: the best max_entries of the window (replaced)
    if win.desc then  -- REV: a small set is a listpack, each insert found at its head (in
      -- ascending order each insert would scan it all: 2.5x slower at 100)
      redis.call('ZRANGESTORE', win.union, win.all, 0, win.max_entries - 1, 'REV')
    else
      redis.call('ZRANGESTORE', win.union, win.all, -win.max_entries, -1, 'REV')  -- the same
    end
  end
  st.ready = st.ready + 1
end

-- A slice of the window ahead's job, if one is under way (a write's, after it was applied).
local function slice_window(win, st)
  if st.ahead ~= 'L' and st.ahead ~= 'E' then return end
  local slice = AHEAD_UNITS
  local step = redis.call('GET', win.step_key)
  if step and tonumber(step) and tonumber(step) >= 1 then slice = math.min(slice, tonumber(step)) end
  ahead_slice(win, st, slice)
  redis.call('SET', win.marker, state_text(st), 'KEEPTTL')
end

-- Brings the window to bucket `want` (never back: a reader whose clock lags reads the newer
-- window): by the swap if the window ahead is ready for it, else finishing a transition under
-- way first, in steps of at most the step's units; a window already there does a slice of the
-- window ahead's job, if any (unless `no_slice`: a write does it once it is applied, see
-- slice_window).
-- Returns true (done: the marker says the window is complete for `want` or a later bucket),
-- false (more steps needed: the position is recorded), or nil and an error reply (before
-- anything was changed by this call's step).
local function refresh_window(win, want, no_slice)
  local err = check_acl('GET', win.marker) or check_type(win.marker, 'string')
  if err then return nil, err end
  local st = window_state(win)
  local ready = st.ready and not st.old and not st.target and st.ready >= want
  if ready and (no_slice or not st.ahead or st.ahead == 'r') then return true end
  if ready then  -- a slice of the window ahead's job
    err = check_slice(win)
    if err then return nil, err end
    slice_window(win, st)
    return true
  end
  if can_swap(win, st, want) and not check_swap(win) then
    swap_window(win, st)
    local deadline = expire_window(win, st.ready)
    redis.call('SET', win.marker, state_text(st), 'PXAT', deadline)
    return true
  end
  err = check_window(win)
  if err then return nil, err end
  -- A bucket expires one bucket after it left the window (window_deadline), and a transition
  -- subtracts the buckets that leave from the window's aggregates: the oldest of them, bucket
  -- ready - n + 1, is gone once the server's clock reaches bucket ready + 2. From then on a
  -- transition (starting, or under way since) counts the window afresh from its own buckets.
  if st.ready and not st.old and server_ms() >= (st.ready + 2) * win.bucket_ms then
    st = {frac = false}
  end
  local units = STEP_UNITS
  local step = redis.call('GET', win.step_key)
  if step and tonumber(step) and tonumber(step) >= 1 then units = tonumber(step) end
  local budget = units
  local clock = redis.call('TIME')
  local started = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
  while true do
    if not st.target then
      if st.ready and not st.old and st.ready >= want then
        if budget ~= units then  -- this call changed the window: its marker and deadlines
          local deadline = expire_window(win, st.ready)
          redis.call('SET', win.marker, state_text(st), 'PXAT', deadline)
        end
        return true
      end
      -- A transition starts: to `want`, or afresh. Every bucket it may read is checked first.
      if st.old then st = {frac = false} end
      local from = want - win.n + 1
      if st.ready and want - st.ready < win.n then from = st.ready - win.n + 1 end
      for b = from, want do
        local key = win.prefix .. string.format('%d', b)
        err = check_type(key, 'zset') or check_acl('ZRANGE', key, '0', '0')
          or check_acl('ZMSCORE', key, 'x')
        if err then break end
      end
      if err then  -- what this call did before is kept (a transition it finished)
        if budget ~= units then
          local deadline = expire_window(win, st.ready)
          redis.call('SET', win.marker, state_text(st), 'PXAT', deadline)
        end
        return nil, err
      end
      st.target, st.k, st.offset = want, 1, 0
      st.ahead, st.job_k, st.job_offset = nil, nil, nil  -- the window ahead is built afresh after
      redis.call('UNLINK', win.ahead, win.swap)
      if win.old_all ~= win.all then redis.call('UNLINK', win.old_all) end
      if not st.ready or want - st.ready >= win.n then
        redis.call('UNLINK', win.all, win.newest, win.union)
        st.ready, st.frac = nil, false
      end
      budget = budget - 1
    end
    local reset, leave_first, leaving, enter_first, entering = transition_plan(win, st)
    local dst = {key = win.all, union = true, keep_first = st.target - win.n + 1,
      keep_last = st.ready, frac = st.frac, newest_first = st.target - win.n + 1}
    local taken, spent
    if st.k <= leaving then
      taken, spent = leave_chunk(win, dst, leave_first + st.k - 1, st.offset, math.max(1, budget))
    elseif st.k <= leaving + entering then
      taken, spent = enter_chunk(win, dst, enter_first + st.k - leaving - 1, st.offset,
        math.max(1, budget))
    elseif st.k == leaving + entering + 1 then
      taken, spent = refill_chunk(win, st, math.max(1, budget))
    elseif st.k == leaving + entering + 2 then
      taken, spent = trim_chunk(win, math.max(1, budget))
    else
      st = {ready = st.target, frac = st.frac}
      if win.fast and win.n >= 2 then  -- the window ahead, built by later calls (job 'E')
        local key = win.prefix .. string.format('%d', st.ready)
        if not check_acl('ZCARD', key) and redis.call('ZCARD', key) == 0 then
          st.ahead, st.job_k, st.job_offset = 'E', 1, 0
        end
      end
      taken, spent = 0, 1
    end
    st.frac = dst.frac
    if taken == nil then  -- a bucket of another type: what this call did is kept, then the error
      if budget ~= units then
        local deadline = expire_window(win, st.target or st.ready)
        redis.call('SET', win.marker, state_text(st), 'PXAT', deadline)
      end
      return nil, spent
    end
    if st.target then
      if taken == 0 then
        st.k, st.offset = st.k + 1, 0
      elseif st.k <= leaving + entering + 1 then
        st.offset = st.offset + taken
      end
    end
    budget = budget - spent
    if budget > 0 and st.target then  -- out of time?
      clock = redis.call('TIME')
      if tonumber(clock[1]) * 1000000 + tonumber(clock[2]) - started >= STEP_MICROS then
        budget = 0
      end
    end
    if budget <= 0 and (st.target or st.ready < want) then
      local deadline = expire_window(win, st.target or st.ready)
      redis.call('SET', win.marker, state_text(st), 'PXAT', deadline)
      return false
    end
  end
end


-- ---- Leagues (league.lua and league_read.lua) ---------------------------------------------

-- The options a league records (its options hash's 'config', see league.lua), from its call's
-- arguments as sent: two clients of a league must send the same.
local function league_config_text(tiers, size, promote, demote, idle, order, ties, rule)
  return table.concat({'tiers=' .. tiers, 'size=' .. size, 'promote=' .. promote,
    'demote=' .. demote, 'idle=' .. idle, 'order=' .. order, 'ties=' .. ties, 'mode=' .. rule},
    ' ')
end

-- How many a cutoff spec ('<count>' or 'f<fraction>') takes from a cohort of `size` players.
local function league_cut(spec, size)
  if string.sub(spec, 1, 1) == 'f' then
    return math.floor(tonumber(string.sub(spec, 2)) * size + 1e-9)
  end
  return tonumber(spec)
end

-- The zone of a player of tier `tier` whose cutoff rank (1 + the players strictly ahead under
-- a rule where equal scores share a rank, else the position) is `rank` (nil: placed, never
-- scored) among `scored` players of a cohort of `size` placed: promotion wins an overlap, and
-- nobody leaves the ends. `cfg`: the league's tiers (a count), promote and demote (cutoff
-- specs) and idle (demote players who never scored).
local function league_zone(cfg, tier, rank, scored, size)
  if not rank then return (cfg.idle and tier > 0) and 'demote' or 'stay' end
  if tier < cfg.tiers - 1 and rank <= league_cut(cfg.promote, size) then return 'promote' end
  if tier > 0 and rank > scored - league_cut(cfg.demote, size) then return 'demote' end
  return 'stay'
end

-- Declares the option keys of the cohort board `board` (see board_spec) after the call's keys,
-- for a league whose ties rule is `ties`; returns the index of the first.
local function league_cohort_keys(board, ties)
  local k = #KEYS + 1
  KEYS[k] = board .. ':options'
  if ties == 'first' then
    KEYS[k + 1], KEYS[k + 2] = board .. ':first', board .. ':first:keys'
  elseif ties == 'dense' then
    KEYS[k + 1] = board .. ':dense'
  end
  return k
end
