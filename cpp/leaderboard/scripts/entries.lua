#!lua flags=no-writes
-- get_entries: the entries of a list of users (friends), each with its score, rank under the
-- board's tie rule and metadata, in one consistent read. A read.
--: KEYS board: the board
--: KEYS option_keys...: the board's option keys (board_spec in lib/options.lua)
--: ARGV user_prefix: the metadata hashes' prefix, "<board>:user:" ('': no metadata, the client caches it)
--: ARGV board_order: on a board with options, its order; else ''
--: ARGV board_ties: on a board with options, its ties; else ''
--: ARGV user_ids...: the users, in the order of the reply
-- Returns one item per id, in the order given: false (nil) if it is not on the board, else
-- {score, zero-based rank, {field, value, ...}}. O(n log N).
local prefix = user_prefix
local b = board_spec(board, option_keys_at, board_order ~= '' and board_order or nil,
  board_ties ~= '' and board_ties or nil)
local err = check_acl('ZSCORE', board, 'x') or check_acl(b.position_command, b.ranked, 'x')
  or (b.shared and check_acl('ZCOUNT', b.dense or board, '0', '0'))
  or (b.first and check_acl('HGET', b.first_keys, 'x'))
if err then return err end
local lean = prefix == ''  -- the client caches metadata: {} for each entry's
if b.compact then
  err = not lean and check_acl('HGET', b.meta, 'x')
  if err then return err end
else
  for i = user_ids_at, #ARGV do
    err = not lean and check_acl('HGETALL', prefix .. ARGV[i])
    if err then return err end
  end
end
err = check_options(b)
if err then return err end
if b.migrating and not lean then  -- a compact board being migrated to: the guide's hashes
  for i = user_ids_at, #ARGV do
    err = check_acl('HGETALL', b.board .. ':user:' .. ARGV[i])
    if err then return err end
  end
end
local out, empty = {}, {}
for i = user_ids_at, #ARGV do
  local user_id = ARGV[i]
  local score = redis.call('ZSCORE', board, user_id)
  if score then
    local metadata
    if b.compact then
      metadata = lean and '' or metadata_of(b, nil, user_id)
    else
      metadata = lean and {} or redis.call('HGETALL', prefix .. user_id)
      if not lean and #metadata == 0 then empty[#empty + 1] = prefix .. user_id end
    end
    out[#out + 1] = {score, rank_of(b, user_id, tonumber(score)), metadata}
    if b.tiebreak then out[#out][4] = ranked_member(b, user_id) end  -- the columns: its key
  else
    out[#out + 1] = false
  end
end
-- A hash that has not moved yet with its slot reads as absent on the importing node: see
-- hydrate in lib/base.lua.
if #empty > 0 then
  err = check_present(board, empty)
  if err then return err end
end
return out
