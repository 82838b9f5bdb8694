#!lua flags=allow-oom
-- clear, one page: remove up to `page` entries (worst first) and their metadata; once the board
-- is empty, its option keys too. Only deletes (with events, also appends one event), so it
-- runs when the server is out of memory (allow-oom) and frees it.
--: KEYS board: the board
--: KEYS removal_keys...: the board's option keys (board_spec in lib/options.lua), then with events its stream "<board>:events"
--: ARGV user_prefix: the metadata hashes' prefix, "<board>:user:"
--: ARGV page: at most how many entries this call removes
--: ARGV order?: on a board with options or events, its order
--: ARGV ties?: on a board with options or events, its ties
--: ARGV removal?: with events, 'events:<maxlen>[ expire:<unix ms>]' (see removal_events in lib/removal_events.lua)
-- Returns how many entries remain (hidden players go with the last page). With events, a page that removed entries appends one
-- 'clear' event (how many it removed, how many are left), never one per entry.
local prefix = user_prefix
if not order and no_options_recorded(KEYS[removal_keys_at]) then  -- the guide's board
  local err = check_acl('ZCARD', board) or check_acl('ZRANGE', board, '0', '0')
  if err then return err end
  local user_ids
  user_ids, err = call_board(board, 'ZRANGE', 0, tonumber(page) - 1)  -- and the board's type
  if err then return err end
  err = check_remove_lowest(board, prefix, user_ids)
  if err then return err end
  -- Counted before the writes: the last page deletes the board, which is then not read again
  -- (see check_present in lib/base.lua).
  local left = redis.call('ZCARD', board) - #user_ids
  remove_lowest(board, prefix, user_ids)
  return left
end
-- @options: boards with options or events (and a default board's options key that is not absent)
local b = board_spec(board, removal_keys_at, order, ties)
local w = removal_events(removal)  -- change events: the stream is the last of KEYS
local err = check_acl('ZCARD', board) or check_acl('ZRANGE', b.ranked, '0', '0')
  or check_type(board, 'zset') or (not b.default and check_option_keys(b))
  or (not b.default and check_acl('UNLINK', b.options))
if err then return err end
err = check_options(b) or check_removal_events(b, w)
if err then return err end
local user_ids, scores = split_range(b, range_worst(b, tonumber(page)))
err = check_remove_worst(b, prefix, user_ids)
if err then return err end
-- Counted before the writes: a page that empties the board deletes its sorted sets, which are
-- then not read or named again (see check_present in lib/base.lua).
local left = redis.call('ZCARD', board) - #user_ids
-- Fair play: the last page removes the hidden players too (their kept scores, their metadata;
-- their being hidden: clear() forgets the board).
local hidden_ids
if left == 0 and b.recorded_hidden then
  local hidden = board .. ':hidden'
  err = check_type(hidden, 'hash') or check_acl('HKEYS', hidden) or check_acl('UNLINK', hidden)
    or check_acl('HDEL', b.options, 'hidden') or check_present(b.options, {hidden})
  if err then return err end
  hidden_ids = redis.call('HKEYS', hidden)
  if not b.compact then
    err = check_metadata(prefix, hidden_ids)
      or check_present(b.options, metadata_keys(prefix, hidden_ids))
  else
    err = check_guide_hashes(b, hidden_ids)  -- a compact board being migrated to
  end
  if err then return err end
end

remove_worst(b, prefix, user_ids, scores)
-- One event per page, not per entry: how many went, how many are left (0: the board is empty).
if w and #user_ids > 0 then
  append_event(w, {'kind', 'clear', 'removed', #user_ids, 'size', left})
end
-- The option keys go with the last page. The sorted sets the page emptied are gone already
-- (Redis deletes an empty set); the achievement index is emptied by forget() too, unless it
-- holds ids the board does not (written by hand), which this UNLINK would not see: the options
-- hash is the only key surely left (naming a key the page deleted would fail in a migrating
-- slot after the writes).
if left == 0 and not b.default then
  redis.call('UNLINK', b.options)
elseif left == 0 and b.recorded_hidden then
  redis.call('HDEL', b.options, 'hidden')
end
if left == 0 and hidden_ids then  -- fair play: hidden players and their metadata go last
  delete_metadata(b, prefix, hidden_ids)
  redis.call('UNLINK', board .. ':hidden')
end
return left
