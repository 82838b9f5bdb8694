-- ---- Keys, types and permissions ---------------------------------------------------------------
-- The helpers every other module builds on (lib/ holds one module per concern; generate.py's
-- docstring says how a script gets the helpers it uses). Metadata hashes live at prefix ..
-- user_id, prefix being "<board>:user:".
--
-- A write that raises must change nothing, and Redis keeps the writes a script made before an
-- error: so every writing script first checks the caller's ACL permissions for every command it
-- will run and reads what it will touch to check key types, and only then writes. A check
-- returns an error reply (a table), which the script returns before its first write. Commands
-- are checked before they run even in reads: a command an ACL denies inside a script fails
-- with "ERR The user executing the script can't run this command", and NOPERM is the clearer.

--: CONST UNLIMITED 4294967296: max_entries of an unlimited board (None in Python), 2^32: no write ever trims it

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

-- A tie word's rule and whether the board is compact: "<rule>+compact" is the compact layout's
-- word (Identity::ties_word), every other word the rule of the guide's layout.
local function tie_rule(ties)
  if string.sub(ties, -8) == '+compact' then return string.sub(ties, 1, -9), true end
  return ties, false
end

-- The reply for an error a pcall caught in a read: a command's error reply as it is (Redis 7
-- raises the reply, Redis 6 its text), any other error as its text.
local function script_error(e)
  if type(e) == 'table' and e.err then return e end
  return redis.error_reply(tostring(e))
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

-- ---- The compact layout's values ------------------------------------------------------------
-- A compact board's value for a player: their fields as the RESP array HGETALL would answer
-- ("*<n>\r\n" then "$<length>\r\n<bytes>\r\n" per field and value), binary-safe, decoded by
-- the client (parse_compact_metadata in operations.cpp). Reads return it as it is stored ('' for
-- none): no Lua table per entry; writes merge into it as HSET merges into a hash.
local function encode_fields(fields)
  local parts = {'*' .. #fields .. '\r\n'}
  for i = 1, #fields do
    parts[i + 1] = '$' .. #fields[i] .. '\r\n' .. fields[i] .. '\r\n'
  end
  return table.concat(parts)
end

local function decode_fields(text)
  local out = {}
  local n, at = string.match(text, '^%*(%d+)\r\n()')
  for i = 1, tonumber(n) do
    local length, from = string.match(text, '^%$(%d+)\r\n()', at)
    at = from + tonumber(length)
    out[i] = string.sub(text, from, at - 1)
    at = at + 2
  end
  return out
end

-- {user_id, score, {field, value, ...}, ...} from a ZRANGE ... WITHSCORES reply of the board's
-- ranked set (see board_spec; b nil: the guide's board), or an error reply (NOPERM) as its
-- second value. An empty prefix: the client reads metadata itself (a client-side cache, see
-- connection/cache.hpp, or a read's second step, SplitRead), so every entry's is left empty
-- ({}, a compact board's '') and no hash is read.
local function hydrate(b, prefix, ranged)
  local out, n, first, lean = {}, 0, b and b.first, prefix == ''
  if b and b.compact then
    -- The compact layout: the page's metadata is one HMGET (in slices: unpack() is limited by
    -- Lua's C stack) of the board's hash, each value the stored text ('' for none).
    local ids = {}
    for i = 1, #ranged, 2 do
      local user_id = first and string.sub(ranged[i], b.width + 1) or ranged[i]
      ids[#ids + 1] = user_id
      out[n + 1] = first and b.tiebreak and ranged[i] or user_id
      out[n + 2] = ranged[i + 1]
      n = n + 3
    end
    if lean then
      for i = 1, #ids do out[3 * i] = '' end
      return out
    end
    for i = 1, #ids, 1000 do
      local values = redis.pcall('HMGET', b.meta, unpack(ids, i, math.min(i + 999, #ids)))
      if values.err then return nil, check_acl('HMGET', b.meta, 'x') or values end
      for j = 1, #values do
        local value = values[j]
        if not value and b.migrating then  -- not moved yet (see guide_key in lib/options.lua)
          local key = b.board .. ':user:' .. ids[i + j - 1]
          local fields = redis.pcall('HGETALL', key)
          if fields.err then return nil, check_acl('HGETALL', key) or fields end
          if #fields > 0 then value = encode_fields(fields) end
        end
        out[3 * (i + j - 2) + 3] = value or ''
      end
    end
    return out
  end
  local none, empty, redis_pcall = {}, {}, redis.pcall
  for i = 1, #ranged, 2 do
    local user_id = first and string.sub(ranged[i], b.width + 1) or ranged[i]
    -- Tie-break columns: the whole member, the client reads the columns' values from its key.
    out[n + 1] = first and b.tiebreak and ranged[i] or user_id
    out[n + 2] = ranged[i + 1]
    if lean then
      out[n + 3] = none
    else
      -- pcall, no check_acl of each key first (~8% of a get_top(100)): a read changes
      -- nothing, and a refused HGETALL's error is then made check_acl's NOPERM.
      local key = prefix .. user_id
      local metadata = redis_pcall('HGETALL', key)
      if metadata.err then return nil, check_acl('HGETALL', key) or metadata end
      if #metadata == 0 then empty[#empty + 1] = key end
      out[n + 3] = metadata
    end
    n = n + 3
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
