#!lua
-- upsert_many, one chunk, on a board with options (a default board's chunks are MULTI/EXEC):
-- each entry set as upsert_user sets it (ZADD, the option keys, HSET), not trimmed; all or
-- nothing. No flags: Redis 7 refuses it up front when out of memory.
-- KEYS: board, the option keys (see board_spec in _lib.lua), then the entries' metadata hashes.
-- ARGV: order (or "<order> <expire_at>": a periodic board's deadline in unix ms, see
-- expire_board), ties, then per entry: user_id, score, number of metadata fields, field, value,
-- ... Returns the number of entries written.
local board = KEYS[1]
local order, expire_at = string.match(ARGV[1], '^(%S+) ?(%d*)$')
if expire_at == '' then expire_at = nil end
local b = board_spec(board, 2, order, ARGV[2])
local first_user_key = b.first and 5 or (b.dense and 4 or 3)
local err = check_acl('ZSCORE', board, 'x') or check_acl('ZADD', board, '0', 'x')
  or check_type(board, 'zset') or (not b.default and check_option_keys(b))
if err then return err end
local entries, i, k = {}, 3, first_user_key
while i <= #ARGV do
  local fields = tonumber(ARGV[i + 2])
  local entry = {user_id = ARGV[i], number = ARGV[i + 1], key = KEYS[k], from = i + 3,
    to = i + 2 + 2 * fields}
  err = check_type(entry.key, 'hash')
    or (fields > 0 and check_acl('HSET', entry.key, ARGV[i + 3], ARGV[i + 4]))
    or (expire_at and check_board_expiry(b, entry.key, expire_at))
  if err then return err end
  entries[#entries + 1] = entry
  i, k = entry.to + 1, k + 1
end
local record, seq
err, record, seq = check_options(b)
if err then return err end

if record then redis.call('HSET', b.options, 'order', b.order, 'ties', b.ties) end
for _, entry in ipairs(entries) do
  local old = redis.call('ZSCORE', board, entry.user_id)
  old = old and tonumber(old)
  local score = tonumber(entry.number)
  if not old or score ~= old then
    seq = seq + 1
    store_score(b, entry.user_id, 'ZADD', entry.number, score, old, seq)
  end
  for j = entry.from, entry.to, 1000 do
    redis.call('HSET', entry.key, unpack(ARGV, j, math.min(j + 999, entry.to)))
  end
  if expire_at then expire_board(b, entry.key, expire_at) end
end
return #entries
