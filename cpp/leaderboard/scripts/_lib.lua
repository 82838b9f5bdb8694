-- Helpers shared by every script (placed after each script's #!lua line at build time).
-- Metadata hashes live at prefix .. user_id, prefix being "<board>:user:".
--
-- A write that raises must change nothing, and Redis keeps the writes a script made before an
-- error: so every writing script first checks the caller's ACL permissions for every command it
-- will run and reads what it will touch to check key types, and only then writes. A check
-- returns an error reply (a table), which the script returns before its first write. Commands
-- are checked before they run even in reads: a command an ACL denies inside a script fails
-- with "ERR The user executing the script can't run this command", and NOPERM is the clearer.

-- nil, or a NOPERM error reply if the caller may not run the command (ACL commands and keys).
-- redis.acl_check_cmd exists from Redis 7.0; before, a denied command fails where it runs.
local function check_acl(...)
  if not redis.acl_check_cmd or redis.acl_check_cmd(...) then return nil end
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

-- The checks before removing `user_ids`, the lowest entries of the board, and their metadata.
local function check_remove_lowest(board, prefix, user_ids)
  if #user_ids == 0 then return nil end
  return check_acl('ZREMRANGEBYRANK', board, '0', tostring(#user_ids - 1))
    or check_metadata(prefix, user_ids)
end

-- Removes `user_ids`, the lowest entries of the board, and their metadata hashes.
local function remove_lowest(board, prefix, user_ids)
  if #user_ids == 0 then return end
  redis.call('ZREMRANGEBYRANK', board, 0, #user_ids - 1)
  unlink_metadata(prefix, user_ids)
end

-- The lowest entries beyond max_entries (at most `limit` of them, if given), lowest first:
-- what the guide's _trim_to_max_entries removes.
-- The caller checks ZCARD and ZRANGE on the board.
local function lowest_beyond(board, max_entries, limit)
  local overflow = redis.call('ZCARD', board) - max_entries
  if overflow <= 0 then return {} end
  if limit and overflow > limit then overflow = limit end
  return redis.call('ZRANGE', board, 0, overflow - 1)
end

-- {user_id, score, {field, value, ...}, ...} from a ZRANGE ... WITHSCORES reply, or an error
-- reply (NOPERM) as its second value.
local function hydrate(prefix, ranged)
  local out = {}
  for i = 1, #ranged, 2 do
    local key = prefix .. ranged[i]
    local err = check_acl('HGETALL', key)
    if err then return nil, err end
    out[#out + 1] = ranged[i]
    out[#out + 1] = ranged[i + 1]
    out[#out + 1] = redis.call('HGETALL', key)
  end
  return out
end
