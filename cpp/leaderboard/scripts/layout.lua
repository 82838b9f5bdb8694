#!lua
-- convert_layout, one page: moves the metadata of the players of a board in the guide's layout
-- (a hash per player, "<board>:user:<id>") into the compact layout's hash "<board>:meta" (see
-- board_spec in lib/options.lua), deleting each guide hash it moved. The first page records the
-- board's layout as 'migrating' (a client of the guide's layout is refused from then on, with
-- check_options' OPTIONS status; a compact client reads and writes on, taking a player's fields
-- from the guide's hash until they have moved: see guide_key in lib/options.lua); the page that
-- ends the scan of the board records 'compact'. The pages walk the board with ZSCAN, which
-- returns every member present from the first page to the last at least once (one written
-- meanwhile was written in the compact layout already), then the hidden players (fair play:
-- kept aside, with metadata). Resumable: a conversion stopped anywhere goes on from cursor '0'
-- (what has moved is not found again). No flags: Redis 7 refuses it up front when out of memory.
--: KEYS board: the board
--: KEYS option_keys...: the board's option keys in the compact layout (board_spec in lib/options.lua)
--: ARGV cursor: '0' for the first page, else the cursor the previous page returned
--: ARGV page: about how many players this call moves (ZSCAN's COUNT)
--: ARGV order: the board's order
--: ARGV ties: the board's ties, ending '+compact'
-- Returns {the next page's cursor ('0': the board is compact now), players moved, the board's
-- size (the client bounds its pages by it)}.
local b = board_spec(board, option_keys_at, order, ties)
local err = check_acl('ZSCAN', board, '0') or check_acl('ZCARD', board) or check_type(board, 'zset')
  or check_option_keys(b)
if err then return err end
local record
err, record = check_options(b)
if record then  -- an empty board, no options recorded: compact from now on
  record_options(b)
  return {'0', 0, 0}
elseif err then
  -- Not compact yet: the guide's layout with the caller's order and ties (else its OPTIONS
  -- status), which this page starts to convert.
  local guide = board_spec(board, option_keys_at, order, (tie_rule(ties)))
  err = check_options(guide)
  if err then return err end
  b.migrating, b.starting = true, true
elseif not b.migrating then
  return {'0', 0, redis.call('ZCARD', board)}  -- compact already
end
local scanned = redis.call('ZSCAN', board, cursor, 'COUNT', tonumber(page))
local next_cursor, user_ids = scanned[1], {}
for i = 1, #scanned[2], 2 do user_ids[#user_ids + 1] = scanned[2][i] end
local hidden = board .. ':hidden'
if next_cursor == '0' and b.recorded_hidden then  -- the last page: the hidden players too
  err = check_type(hidden, 'hash') or check_acl('HKEYS', hidden)
  if err then return err end
  for _, user_id in ipairs(redis.call('HKEYS', hidden)) do user_ids[#user_ids + 1] = user_id end
end
err = check_guide_hashes(b, user_ids)
if err then return err end

if b.starting then
  redis.call('HSET', b.options, 'order', b.order, 'ties', b.ties, 'layout', 'migrating')
end
local moved = 0
for _, user_id in ipairs(user_ids) do
  local key = guide_key(b, user_id)
  local fields = redis.call('HGETALL', key)
  if #fields > 0 then
    -- A write since the first page moved its player's fields (and deleted the hash): a hash
    -- found here has not moved.
    redis.call('HSET', b.meta, user_id, encode_fields(fields))
    redis.call('UNLINK', key)
    moved = moved + 1
  end
end
if next_cursor == '0' then redis.call('HSET', b.options, 'layout', 'compact') end
return {next_cursor, moved, redis.call('ZCARD', board)}
