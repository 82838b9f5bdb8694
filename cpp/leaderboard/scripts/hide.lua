#!lua
-- hide / unhide (fair play, see lib/hiding.lua): take a player off the board and keep their
-- score aside, or put it back (hidden.lua reads who is hidden). One script each call, atomic; a
-- hidden player keeps their score and metadata and goes on being written.
--: KEYS board: the board
--: KEYS hide_keys...: the board's option keys (always: a hide records 'hidden' there), then on a period's board its periodic board's "<key>:hidden" and "<key>:options", then with events the stream "<board>:events"
--: ARGV action: 'hide' | 'unhide'
--: ARGV user_id: the user
--: ARGV max_entries: the board's max_entries
--: ARGV order: the board's order
--: ARGV ties: the board's ties
--: ARGV scope: 'scope' on a period's board, else ''
--: ARGV removal: the guard words 'events:<maxlen>' (with events) and 'expire:<unix ms>' (a period's deadline), space-separated ('' for none)
-- Returns, for 'hide': 1 if the user was not hidden before, else 0 (a 'hide' event if they were
-- on the board); 'unhide': 1 if they were hidden, else 0 (a 'score' event if they come back on
-- the board; the trim that follows may remove the worst, with 'trim' in the event).
local b = board_spec(board, hide_keys_at, order, ties)
local w = removal_events(removal)  -- events: the stream is the last of KEYS
local expire_at = string.match(removal, 'expire:(%d+)')
scope = scope == 'scope'
local last = #KEYS - (w and 1 or 0)
local scope_hidden, scope_options = scope and KEYS[last - 1], scope and KEYS[last]
local hidden = board .. ':hidden'

local err = check_type(board, 'zset') or check_type(b.options, 'hash')
  or check_type(hidden, 'hash') or check_acl('HGETALL', hidden)
  or (not b.default and check_option_keys(b))
  or (scope and (check_type(scope_hidden, 'hash') or check_acl('HGETALL', scope_hidden)))
if err then return err end
local record
err, record = check_options(b)
if err then return err end
-- The hidden hash is not a declared key (see hidden_state): reached through the options hash.
if b.recorded_hidden then
  err = check_present(b.options, {hidden})
  if err then return err end
end

err = check_hidden_writes(b, user_id, expire_at) or check_removal_events(b, w)
  or check_acl('HGET', hidden, user_id) or check_acl('HDEL', hidden, user_id)
  or check_acl('HLEN', hidden) or check_acl('HDEL', b.options, 'hidden')
  or (scope and (check_acl('HEXISTS', scope_hidden, user_id)
    or check_acl('HSET', scope_hidden, user_id, '') or check_acl('HDEL', scope_hidden, user_id)
    or check_acl('HLEN', scope_hidden) or check_acl('HSET', scope_options, 'hidden', '1')
    or check_acl('HDEL', scope_options, 'hidden')))
if err then return err end
local kept = redis.call('HGET', hidden, user_id)
local in_scope = scope and redis.call('HEXISTS', scope_hidden, user_id) == 1

if action == 'hide' then
  local score = redis.call('ZSCORE', board, user_id)
  local previous_rank = w and score and rank_of(b, user_id, tonumber(score))
  if record then record_options(b) end
  -- (Hidden and still ranked, as no call of this library leaves a board: the ranked score is
  -- the newer, and goes aside too.)
  if not kept or score then keep_hidden(b, user_id, score or '', score, expire_at) end
  if scope then record_hidden(scope_hidden, scope_options, user_id) end
  if w and score then
    append_event(w, {'kind', 'hide', 'user_id', user_id, 'score', score, 'rank', '',
      'previous_score', score, 'previous_rank', tostring(previous_rank + 1)})
  end
  return (kept or in_scope) and 0 or 1
end

-- unhide: the kept score back on the board, as a write of it (its trim, its event).
if not kept and not in_scope then return 0 end
local plan
if kept and kept ~= '' then
  local user_key = string.sub(hidden, 1, #hidden - 6) .. 'user:' .. user_id
  local score, tb = kept_parts(kept)  -- tie-break columns: kept with the score
  plan, err = plan_write({board = board, user_key = user_key, k = 2, mode = 'set', tb = tb,
    order = order, ties = ties, number = score, user_id = user_id,
    max_entries = tonumber(max_entries), fields = {}, first_field = 1, expire_at = expire_at,
    restore = true, events_key = w and w.events_key, events_maxlen = w and w.events_maxlen})
  if not plan then return err end
end
if kept then forget_hidden(hidden, b.options, user_id) end
if in_scope then forget_hidden(scope_hidden, scope_options, user_id) end
if plan then
  plan.b.recorded_hidden = nil  -- the hash may be gone: not named again (see check_present)
  apply_write(plan)
end
return 1
