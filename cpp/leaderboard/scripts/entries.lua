#!lua flags=no-writes
-- get_entries: the entries of a list of users (friends), each with its score, rank under the
-- board's tie rule and metadata, in one consistent read. A read.
-- KEYS: board, then the option keys (see board_spec in _lib.lua). ARGV: metadata prefix ('':
-- no metadata, the client caches it), n,
-- n user ids, then on a board with options: order, ties.
-- Returns one item per id, in the order given: false (nil) if it is not on the board, else
-- {score, zero-based rank, {field, value, ...}}. O(n log N).
local board, prefix, n = KEYS[1], ARGV[1], tonumber(ARGV[2])
local b = board_spec(board, 2, ARGV[3 + n], ARGV[4 + n])
local err = check_acl('ZSCORE', board, 'x') or check_acl(b.position_command, b.ranked, 'x')
  or (b.shared and check_acl('ZCOUNT', b.dense or board, '0', '0'))
  or (b.first and check_acl('HGET', b.first_keys, 'x'))
if err then return err end
local lean = prefix == ''  -- the client caches metadata: {} for each entry's
for i = 3, 2 + n do
  err = not lean and check_acl('HGETALL', prefix .. ARGV[i])
  if err then return err end
end
err = check_options(b)
if err then return err end
local out, empty = {}, {}
for i = 3, 2 + n do
  local user_id = ARGV[i]
  local score = redis.call('ZSCORE', board, user_id)
  if score then
    local metadata = lean and {} or redis.call('HGETALL', prefix .. user_id)
    if not lean and #metadata == 0 then empty[#empty + 1] = prefix .. user_id end
    out[#out + 1] = {score, rank_of(b, user_id, tonumber(score)), metadata}
    if b.tiebreak then out[#out][4] = ranked_member(b, user_id) end  -- the columns: its key
  else
    out[#out + 1] = false
  end
end
-- A hash that has not moved yet with its slot reads as absent on the importing node: see
-- hydrate in _lib.lua.
if #empty > 0 then
  err = check_present(board, empty)
  if err then return err end
end
return out
