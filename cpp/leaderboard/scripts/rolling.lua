#!lua flags=allow-oom
-- A rolling window's upkeep (issues 16 and 30; see refresh_window in lib/window_ahead.lua):
-- 'refresh' before a read (one step of the window's transition to the reader's bucket, if it is
-- not there yet; else a GET), 'check' after it, and delete_user and clear. allow-oom: reads stay
-- available when the server is out of memory (a transition's step may then take a little more: at
-- most a step's worth of entries); delete_user and clear only delete.
--: KEYS window_board: the window's board "<key>", the union of its buckets
--: KEYS marker: its marker "<key>:window"
--: KEYS window_options: its options hash "<key>:options"
--: ARGV bucket_ms: a bucket's length (ms)
--: ARGV window_ms: the window's length (ms)
--: ARGV window_order: 'desc' | 'asc'
--: ARGV aggregate: how a user's scores in the window combine
--: ARGV max_entries: the window's limit
--: CALL refresh: before a read
--: CALL check: after it
--: CALL delete: delete_user
--: ARGV user_id: the user
--: ARGV removal?: with events, 'events:<maxlen>' (see removal_events in lib/removal_events.lua; the stream is "<key>:events")
--: CALL clear: clear
--: ARGV removal?: as delete's
-- The bucket is the server's clock's (see check_clock in lib/clock.lua): the caller sends none.
-- Returns: 'refresh': the marker's text if the window is complete for the reader's bucket (or a
-- later one), else 0 (a step was done: call again); 'check': the marker's text (a read between
-- a 'refresh' and a 'check' that return the same text read the window that 'refresh' vouched
-- for: no transition started in between); 'delete': 1 if the user was in the window (the union or
-- a bucket), 0 if not, -1 if a transition step was done first (call again); 'clear': how many
-- users' traces it removed. delete and clear of a window whose writes record events (the options
-- hash's 'events', see plan_window in group.lua) append them as a plain board's removals do
-- ('delete': the user, its window score and rank, if it was on the window's board; 'clear': how
-- many users' traces it removed, size 0), and are refused (the status OPTIONS ...: ValueError)
-- without the word 'events:<maxlen>': its caller would leave watchers without them.
-- The bucket of the server's clock: a reader (or a writer) whose clock is ahead never moves the
-- window for the others, one behind never reads an old one.
local command = call
local bucket_text = string.format('%d', math.floor(server_ms() / tonumber(bucket_ms)))
-- The marker's text as readers compare it: without the window ahead's state (its third word),
-- which the window's board does not depend on; a transition's in full.
local function window_text(text)
  if not text then return false end
  return string.match(text, '^(%-?%d+ [01])$') or string.match(text, '^(%-?%d+ [01]) r$')
    or string.match(text, '^(%-?%d+ [01]) [LE]%d+%.%d+$') or text
end
if command == 'refresh' or command == 'check' then  -- a window complete for the bucket: a GET
  local err = check_acl('GET', marker) or check_type(marker, 'string')
  if err then return err end
  local text = redis.call('GET', marker)
  if command == 'check' then return window_text(text) end
  local ready, flag = string.match(text or '', '^(%d+) ([01])$')
  if not ready then ready, flag = string.match(text or '', '^(%d+) ([01]) r$') end
  if ready and tonumber(ready) >= tonumber(bucket_text) then return ready .. ' ' .. flag end
end
-- @options: a window to bring to the caller's bucket, delete_user, clear
local union = window_board
local win = window_names({union = union, marker = marker, options = window_options,
  prefix = union .. ':bucket:', bucket = tonumber(bucket_text), bucket_ms = tonumber(bucket_ms),
  window_ms = tonumber(window_ms), desc = window_order == 'desc', aggregate = aggregate,
  max_entries = tonumber(max_entries)})

if command == 'refresh' then
  local done, err = refresh_window(win, win.bucket)
  if err then return err end
  if not done then return 0 end
  return window_text(redis.call('GET', win.marker))
end

if command == 'delete' then  -- the window first brought to the caller's bucket: no transition
  local done, err = refresh_window(win, win.bucket, true)
  if err then return err end
  if not done then return -1 end
end

-- The buckets that may still exist: the window's and the one that left it last (each lives one
-- bucket past the window), up to the newest of the caller's and the window's; for 'clear', also
-- those of a transition under way (at most a window more).
local st = window_state(win)
local last = math.max(win.bucket, st.ready or win.bucket, st.target or win.bucket)
local first = last - win.n
if command == 'clear' and st.ready then
  first = math.max(math.min(first, st.ready - win.n), last - 2 * win.n)
end
local buckets = {}
for i = first, last do buckets[#buckets + 1] = win.prefix .. string.format('%d', i) end
local err = check_acl('ZREM', union, 'x') or check_acl('UNLINK', union)
  or check_type(union, 'zset') or check_type(win.all, 'zset') or check_type(win.newest, 'zset')
  or check_acl('ZREM', win.all, 'x') or check_acl('ZREM', win.newest, 'x')
  or check_acl('ZRANGE', win.all, '0', '0') or check_acl('UNLINK', win.all)
  or check_acl('UNLINK', win.newest) or check_type(win.ahead, 'zset')
  or check_acl('ZREM', win.ahead, 'x') or check_acl('UNLINK', win.ahead)
  or check_acl('UNLINK', win.swap) or check_acl('UNLINK', win.old_all)
  or check_acl('SET', win.marker, '0')
if err then return err end
for _, key in ipairs(buckets) do
  err = check_type(key, 'zset') or check_acl('ZREM', key, 'x') or check_acl('ZRANGE', key, '0', '0')
    or check_acl('UNLINK', key)
  if err then return err end
end
-- Events: the recorded guards (a window whose writes record events refuses a caller without
-- them), the caller's stream "<key>:events".
local w = removal_events(removal)
if w then w.events_key = union .. ':events' end
err = check_acl('HGETALL', win.options)
if err then return err end
do
  local recorded, b = redis.call('HGETALL', win.options), {}
  for i = 1, #recorded, 2 do
    if recorded[i] == 'rate_limit' then b.recorded_rate = recorded[i + 1]
    elseif recorded[i] == 'events' then b.recorded_events = recorded[i + 1]
    elseif recorded[i] == 'score_range' then b.recorded_range = recorded[i + 1]
    elseif recorded[i] == 'max_increment' then b.recorded_maxinc = recorded[i + 1] end
  end
  if b.recorded_events and not w then
    return options_status(window_order, 'lexicographic', b.recorded_rate, b.recorded_events,
      b.recorded_range, b.recorded_maxinc)
  end
  err = w and (check_acl('XADD', w.events_key, 'MAXLEN', '~', '1', '*', 'x', 'x')
    or check_type(w.events_key, 'stream')
    or check_acl(window_order == 'desc' and 'ZREVRANK' or 'ZRANK', union, 'x'))
  if err then return err end
end

if command == 'delete' then
  local user_key = union .. ':user:' .. user_id
  err = check_acl('UNLINK', user_key) or check_type(user_key, 'hash')
    or check_present(union, buckets) or check_present(union, {user_key, win.all, win.newest, win.ahead})
  if err then return err end
  local score = w and redis.call('ZSCORE', union, user_id)
  if score then  -- on the window's board: its event, as a plain board's delete
    local rank = redis.call(win.desc and 'ZREVRANK' or 'ZRANK', union, user_id)
    append_event(w, {'kind', 'delete', 'user_id', user_id, 'score', score, 'rank', '',
      'previous_score', score, 'previous_rank', tostring(rank + 1)})
  end
  local found = redis.call('ZREM', union, user_id) + redis.call('ZREM', win.all, user_id)
  redis.call('ZREM', win.newest, user_id)
  if st.ahead == 'L' or st.ahead == 'E' then  -- its job reads buckets this changes: dropped
    drop_ahead(win, st)
    redis.call('SET', win.marker, state_text(st), 'KEEPTTL')
  else
    redis.call('ZREM', win.ahead, user_id)
  end
  for _, key in ipairs(buckets) do found = found + redis.call('ZREM', key, user_id) end
  redis.call('UNLINK', user_key)
  return found > 0 and 1 or 0
end

-- 'clear': every bucket, the union, its marker and options, the window's keys, and the
-- metadata of everyone in any of them.
err = check_acl('UNLINK', win.marker) or check_acl('UNLINK', win.options)
  or check_acl('UNLINK', win.step_key)
if err then return err end
local users, seen = {}, {}
local function collect(key)
  for _, user_id in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    if not seen[user_id] then seen[user_id] = true; users[#users + 1] = user_id end
  end
end
for _, key in ipairs(buckets) do collect(key) end
collect(union)
collect(win.all)
collect(win.ahead)
err = check_metadata(union .. ':user:', users) or check_present(union, buckets)
  or check_present(union, metadata_keys(union .. ':user:', users))
if err then return err end
unlink_metadata(union .. ':user:', users)
for _, key in ipairs({union, win.marker, win.options, win.all, win.newest, win.step_key, win.ahead,
  win.swap, win.old_all}) do
  buckets[#buckets + 1] = key
end
for i = 1, #buckets, 1000 do
  redis.call('UNLINK', unpack(buckets, i, math.min(i + 999, #buckets)))
end
if w and #users > 0 then append_event(w, {'kind', 'clear', 'removed', #users, 'size', 0}) end
return #users
