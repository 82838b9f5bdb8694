#!lua flags=allow-oom
-- A rolling window's upkeep (issue 16; see refresh_window in _lib.lua): 'refresh' before a read
-- (the union rebuilt if it was built for an earlier bucket: once per bucket, then a GET), and
-- delete_user and clear. allow-oom: reads stay available when the server is out of memory (a
-- rebuild, once per bucket, may then take more: the union of the window, trimmed to
-- max_entries); delete_user and clear only delete.
-- KEYS: the union "<key>", its marker "<key>:window", its options hash "<key>:options".
-- ARGV: command, bucket i (the reader's), bucket length (ms), window length (ms), order,
-- aggregate, max_entries, then for 'delete': user_id.
-- Returns: 'refresh': 1 if it rebuilt the union, else 0; 'delete': 1 if the user was in the
-- window (the union or a bucket), else 0; 'clear': how many users' traces it removed.
local command, bucket_text = ARGV[1], ARGV[2]
local union = KEYS[1]
local win = {union = union, marker = KEYS[2], options = KEYS[3], prefix = union .. ':bucket:',
  bucket = tonumber(bucket_text), bucket_ms = tonumber(ARGV[3]), window_ms = tonumber(ARGV[4]),
  desc = ARGV[5] == 'desc', aggregate = ARGV[6], max_entries = tonumber(ARGV[7])}

if command == 'refresh' then
  local built = built_bucket(win)
  if built and built >= win.bucket then return 0 end
  local err = check_window(win, win.bucket)
  if err then return err end
  return refresh_window(win, win.bucket) and 1 or 0
end

-- The buckets that may still exist: the window's and the one that left it last (each lives one
-- bucket past the window), up to the newest of the reader's and the union's.
local last = math.max(win.bucket, built_bucket(win) or win.bucket)
local buckets = window_buckets(win, last)
table.insert(buckets, 1, win.prefix .. string.format('%d', last - #buckets))
local err = check_acl('ZREM', union, 'x') or check_acl('UNLINK', union)
  or check_type(union, 'zset')
if err then return err end
for _, key in ipairs(buckets) do
  err = check_type(key, 'zset') or check_acl('ZREM', key, 'x') or check_acl('ZRANGE', key, '0', '0')
    or check_acl('UNLINK', key)
  if err then return err end
end

if command == 'delete' then
  local user_id = ARGV[8]
  local user_key = union .. ':user:' .. user_id
  err = check_acl('UNLINK', user_key) or check_type(user_key, 'hash')
    or check_present(union, buckets) or check_present(union, {user_key})
  if err then return err end
  local found = redis.call('ZREM', union, user_id)
  for _, key in ipairs(buckets) do found = found + redis.call('ZREM', key, user_id) end
  redis.call('UNLINK', user_key)
  return found > 0 and 1 or 0
end

-- 'clear': every bucket, the union, its marker and options, and the metadata of everyone in any
-- of them.
err = check_acl('UNLINK', win.marker) or check_acl('UNLINK', win.options)
if err then return err end
local users, seen = {}, {}
for _, key in ipairs(buckets) do
  for _, user_id in ipairs(redis.call('ZRANGE', key, 0, -1)) do
    if not seen[user_id] then seen[user_id] = true; users[#users + 1] = user_id end
  end
end
for _, user_id in ipairs(redis.call('ZRANGE', union, 0, -1)) do
  if not seen[user_id] then seen[user_id] = true; users[#users + 1] = user_id end
end
err = check_metadata(union .. ':user:', users) or check_present(union, buckets)
  or check_present(union, metadata_keys(union .. ':user:', users))
if err then return err end
unlink_metadata(union .. ':user:', users)
buckets[#buckets + 1] = union
buckets[#buckets + 1] = win.marker
buckets[#buckets + 1] = win.options
for i = 1, #buckets, 1000 do
  redis.call('UNLINK', unpack(buckets, i, math.min(i + 999, #buckets)))
end
return #users
