#!lua flags=allow-oom
-- delete_user: remove the user from the board and its metadata hash (whether or not it was on
-- the board, as the guide's delete_user). Only deletes (with events, also appends one event,
-- far smaller than what it frees), so it runs when the server is out of memory (allow-oom).
--: KEYS board: the board
--: KEYS user_key: the user's metadata hash
--: KEYS removal_keys...: the board's option keys (board_spec in lib/options.lua), then with events its stream "<board>:events"
--: ARGV user_id: the user
--: ARGV order?: on a board with options or events, its order
--: ARGV ties?: on a board with options or events, its ties
--: ARGV removal?: with events, 'events:<maxlen>[ expire:<unix ms>]' (see removal_events in lib/removal_events.lua)
-- Returns 1 if the user was on the board (or hidden with a score: it goes, they stay hidden),
-- else 0. With events, removing a user appends a
-- 'delete' event (deleting one who was not on the board changes no entry: no event).
if not order and no_options_recorded(KEYS[removal_keys_at]) then  -- the guide's board
  local err = check_acl('ZREM', board, user_id) or check_acl('UNLINK', user_key)
    or check_type(user_key, 'hash')
  if err then return err end
  -- ZREM checks the board's type: on a key of another type it fails, having changed nothing.
  local removed
  removed, err = call_board(board, 'ZREM', user_id)
  if err then return err end
  redis.call('UNLINK', user_key)
  return removed
end
-- @options: boards with options or events (and a default board's options key that is not absent)
local b = board_spec(board, removal_keys_at, order, ties)
local w = removal_events(removal)  -- change events: the stream is the last of KEYS
local err = check_acl('HDEL', user_key, user_id)  -- a compact board's hash: the user's field
if not b.compact then err = check_acl('UNLINK', user_key) end
err = err or check_acl('ZREM', board, user_id) or check_type(board, 'zset')
  or check_type(user_key, 'hash') or (not b.default and check_option_keys(b))
  or check_acl('ZSCORE', board, user_id) or check_acl('ZCARD', board)
if err then return err end
err = check_options(b) or check_removal_events(b, w) or check_guide_hashes(b, {user_id})
if err then return err end
-- Fair play: a hidden player's kept score goes too; they stay hidden (see hidden_state).
local kept = false
if b.recorded_hidden then
  kept, err = hidden_state(b, user_id)
  if kept == nil then return err end
  kept = kept ~= '' and kept
  err = kept and check_acl('HSET', board .. ':hidden', user_id, '')
  if err then return err end
end

local score = redis.call('ZSCORE', board, user_id)
if score then
  local previous_rank = w and rank_of(b, user_id, tonumber(score))
  -- The last entry: its removal deletes the board, not read again (see forget in lib/options.lua).
  local emptied = b.dense and redis.call('ZCARD', board) == 1
  if b.first then
    redis.call('ZREM', b.first, ranked_member(b, user_id))  -- forget() removes the rest
  else
    redis.call('ZREM', board, user_id)
  end
  forget(b, {user_id}, {score}, emptied)
  if w then
    append_event(w, {'kind', 'delete', 'user_id', user_id, 'score', score, 'rank', '',
      'previous_score', score, 'previous_rank', tostring(previous_rank + 1)})
  end
end
if kept then redis.call('HSET', board .. ':hidden', user_id, '') end
if b.compact then delete_metadata(b, nil, {user_id}) else redis.call('UNLINK', user_key) end
return (score or kept) and 1 or 0
