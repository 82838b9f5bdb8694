#!lua flags=no-writes
-- get_rank, when it cannot be one plain command (ZREVRANK): on boards with options, and on a
-- default board's first call, which checks that the board has no options recorded. Without a
-- user id, only that check (upsert_many's first chunk goes as MULTI/EXEC, which cannot check).
-- KEYS: board, then the option keys (see board_spec in _lib.lua). ARGV: user_id ('' for the
-- check alone), then on a board with options: order, ties.
-- Returns the user's zero-based rank under the board's tie rule, or nil if it is not on the
-- board (without a user id: 1 if the board has hidden players, else 0).
if not ARGV[2] and no_options_recorded(KEYS[2]) then  -- the guide's board
  if ARGV[1] == '' then return 0 end
  local err = check_acl('ZREVRANK', KEYS[1], ARGV[1])
  if err then return err end
  return redis.call('ZREVRANK', KEYS[1], ARGV[1])
end
-- @options: boards with options (and a default board's options key that is not absent)
local b = board_spec(KEYS[1], 2, ARGV[2], ARGV[3])
local user_id = ARGV[1]
local err = check_options(b)
-- The check alone (upsert_many's MULTI/EXEC chunks carry no guards): a board recording guards
-- (issue 17) refuses it.
if not err and user_id == '' then err = check_guards(b, {}) end
-- The check alone answers 1 if the board has hidden players (fair play): its chunks must be
-- scripts too, which keep their entries aside.
if not err and user_id == '' and b.recorded_hidden then return 1 end
if err or user_id == '' then return err or 0 end
err = check_acl('ZSCORE', KEYS[1], user_id) or check_acl(b.position_command, b.ranked, 'x')
  or (b.shared and check_acl('ZCOUNT', b.dense or KEYS[1], '0', '0'))
  or (b.first and check_acl('HGET', b.first_keys, user_id))
if err then return err end
local score = redis.call('ZSCORE', KEYS[1], user_id)
if not score then return false end
return rank_of(b, user_id, tonumber(score))
