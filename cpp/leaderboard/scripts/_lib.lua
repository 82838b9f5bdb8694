-- Helpers shared by every script (prepended to each one at build time).
-- Metadata hashes live at prefix .. user_id, prefix being "<board>:user:".

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

-- Removes the lowest entries beyond max_entries (at most `limit` of them, if given) and their
-- metadata, as the guide's _trim_to_max_entries does. Returns the removed ids, lowest first.
local function trim_to_max_entries(board, prefix, max_entries, limit)
  local overflow = redis.call('ZCARD', board) - max_entries
  if overflow <= 0 then return {} end
  if limit and overflow > limit then overflow = limit end
  local trimmed = redis.call('ZRANGE', board, 0, overflow - 1)
  redis.call('ZREMRANGEBYRANK', board, 0, overflow - 1)
  unlink_metadata(prefix, trimmed)
  return trimmed
end

-- {user_id, score, {field, value, ...}, ...} from a ZRANGE ... WITHSCORES reply.
local function hydrate(prefix, ranged)
  local out = {}
  for i = 1, #ranged, 2 do
    out[#out + 1] = ranged[i]
    out[#out + 1] = ranged[i + 1]
    out[#out + 1] = redis.call('HGETALL', prefix .. ranged[i])
  end
  return out
end
