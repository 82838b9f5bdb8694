#!lua flags=no-writes
-- get_user_entry: the user's score, rank and metadata in one consistent read. A read
-- (no-writes), so it runs when the server is out of memory and on read-only replicas.
-- KEYS: board, the user's metadata hash, then the option keys (see board_spec in _lib.lua; a
-- default board's options hash until a reply has shown the client it records no options).
-- ARGV: user_id, then on a board with options: order, ties.
-- Returns nil if the user is not on the board, else {score, zero-based rank under the board's
-- tie rule, {field, value, ...}[, on a board with tie-break columns the ranked member]}.
if not ARGV[2] and no_options_recorded(KEYS[3]) then  -- the guide's board
  local err = check_acl('ZSCORE', KEYS[1], ARGV[1]) or check_acl('ZREVRANK', KEYS[1], ARGV[1])
    or check_acl('HGETALL', KEYS[2])
  if err then return err end
  local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
  if not score then return false end
  return {score, redis.call('ZREVRANK', KEYS[1], ARGV[1]), redis.call('HGETALL', KEYS[2])}
end
-- @options: boards with options (and a default board's options key that is not absent)
local b = board_spec(KEYS[1], 3, ARGV[2], ARGV[3])
local err = check_acl('ZSCORE', KEYS[1], ARGV[1]) or check_acl(b.position_command, b.ranked, 'x')
  or (b.shared and check_acl('ZCOUNT', b.dense or KEYS[1], '0', '0'))
  or (b.first and check_acl('HGET', b.first_keys, ARGV[1])) or check_acl('HGETALL', KEYS[2])
if err then return err end
err = check_options(b, true)
if err then return err end
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return false end
local entry = {score, rank_of(b, ARGV[1], tonumber(score)), redis.call('HGETALL', KEYS[2])}
if b.tiebreak then entry[4] = ranked_member(b, ARGV[1]) end  -- the columns' values: its key
return entry
