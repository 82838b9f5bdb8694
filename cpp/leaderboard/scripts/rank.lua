#!lua flags=no-writes
-- get_rank, when it cannot be one plain command (ZREVRANK): on boards with options, and on a
-- default board's first call, which checks that the board has no options recorded. Without a
-- user id, only that check (upsert_many's first chunk goes as MULTI/EXEC, which cannot check).
--: KEYS board: the board
--: KEYS option_keys...: the board's option keys (board_spec in lib/options.lua)
--: ARGV user_id: the user ('' for the check alone)
--: ARGV order?: on a board with options, its order
--: ARGV ties?: on a board with options, its ties
-- Returns the user's zero-based rank under the board's tie rule, or nil if it is not on the
-- board (without a user id: 1 if the board has hidden players, else 0).
if not order and no_options_recorded(KEYS[option_keys_at]) then  -- the guide's board
  if user_id == '' then return 0 end
  local err = check_acl('ZREVRANK', board, user_id)
  if err then return err end
  return redis.call('ZREVRANK', board, user_id)
end
-- @options: boards with options (and a default board's options key that is not absent)
local b = board_spec(board, option_keys_at, order, ties)
local err = check_options(b)
-- The check alone (upsert_many's MULTI/EXEC chunks carry no guards): a board recording guards
-- refuses it.
if not err and user_id == '' then err = check_guards(b, {}) end
-- The check alone answers 1 if the board has hidden players (fair play): its chunks must be
-- scripts too, which keep their entries aside.
if not err and user_id == '' and b.recorded_hidden then return 1 end
if err or user_id == '' then return err or 0 end
err = check_acl('ZSCORE', board, user_id) or check_acl(b.position_command, b.ranked, 'x')
  or (b.shared and check_acl('ZCOUNT', b.dense or board, '0', '0'))
  or (b.first and check_acl('HGET', b.first_keys, user_id))
if err then return err end
local score = redis.call('ZSCORE', board, user_id)
if not score then return false end
return rank_of(b, user_id, tonumber(score))
