#!lua flags=no-writes
-- get_user_entry: the user's score, rank and metadata in one consistent read. A read
-- (no-writes), so it runs when the server is out of memory and on read-only replicas.
--: KEYS board: the board
--: KEYS user_key: the user's metadata hash
--: KEYS option_keys...: the board's option keys (board_spec in lib/options.lua; see Check)
--: ARGV user_id: the user
--: ARGV order?: on a board with options, its order
--: ARGV ties?: on a board with options, its ties
-- Returns nil if the user is not on the board, else {score, zero-based rank under the board's
-- tie rule, {field, value, ...}[, on a board with tie-break columns the ranked member]}.
if not order and no_options_recorded(KEYS[option_keys_at]) then  -- the guide's board
  -- Each command through pcall, no ACL check of each first (they cost ~20% of the call): a
  -- read changes nothing, and a refused command's error is then made check_acl's NOPERM.
  local score = redis.pcall('ZSCORE', board, user_id)
  if not score then return false end
  if score.err then return check_acl('ZSCORE', board, user_id) or score end
  local rank = redis.pcall('ZREVRANK', board, user_id)
  if type(rank) == 'table' then return check_acl('ZREVRANK', board, user_id) or rank end
  local metadata = redis.pcall('HGETALL', user_key)
  if metadata.err then return check_acl('HGETALL', user_key) or metadata end
  return {score, rank, metadata}
end
-- @options: boards with options (and a default board's options key that is not absent)
local b = board_spec(board, option_keys_at, order, ties)
-- The permissions a refused read lacked: the first NOPERM, or nil.
local function refused()
  return check_acl('HGETALL', b.options) or check_acl('ZSCORE', board, user_id)
    or check_acl(b.position_command, b.ranked, 'x')
    or (b.shared and check_acl('ZCOUNT', b.dense or board, '0', '0'))
    or (b.first and check_acl('HGET', b.first_keys, user_id)) or check_acl('HGETALL', user_key)
    or (b.compact and check_acl('HGET', b.meta, user_id))
    or (b.migrating and check_acl('HGETALL', b.board .. ':user:' .. user_id))
end
local err = check_options(b, true)
if err then return (err.err and refused()) or err end
-- The reads through one pcall, the permissions checked only when it failed (as the guide's
-- board's above: a read changes nothing); the error is then the first NOPERM, else the
-- command's own.
local read, entry = pcall(function()
  local score = redis.call('ZSCORE', board, user_id)
  if not score then return false end
  local found = {score, rank_of(b, user_id, tonumber(score)), metadata_of(b, user_key, user_id)}
  if b.tiebreak then found[4] = ranked_member(b, user_id) end  -- the columns' values: its key
  return found
end)
if read then return entry end
return refused() or script_error(entry)
