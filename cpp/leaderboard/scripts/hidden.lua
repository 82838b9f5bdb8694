#!lua flags=no-writes
-- hidden / is_hidden (fair play, see lib/hiding.lua): who is hidden from a board, or whether
-- one player is. A read (no-writes): it runs when the server is out of memory and on read-only
-- replicas, and needs no write permission (hide.lua hides and shows).
--: KEYS board: the board
--: KEYS hidden_keys...: the board's option keys (board_spec in lib/options.lua), then on a
--   period's board its periodic board's "<key>:hidden"
--: ARGV user_id: the user ('' for the list)
--: ARGV order: the board's order
--: ARGV ties: the board's ties
--: ARGV scope: 'scope' on a period's board, else ''
-- Returns, without a user id, the hidden user ids in byte order (on a period's board: hidden
-- there or from its periodic board on); with one, 1 if the user is hidden (as the list has
-- them), else 0.
local b = board_spec(board, hidden_keys_at, order, ties)
local err = check_type(board, 'zset') or check_type(b.options, 'hash')
  or check_type(board .. ':hidden', 'hash')
  or (scope == 'scope' and check_type(KEYS[#KEYS], 'hash'))
if err then return err end
err = check_options(b)
if err then return err end
-- The board's own hidden hash, then on a period's board the periodic board's (a declared key).
local own = read_hidden(b.options, board .. ':hidden', user_id ~= '' and user_id or nil)
if (type(own) == 'table' and own.err) or scope ~= 'scope' then return own end
local scope_hidden = KEYS[#KEYS]
if user_id ~= '' then
  if own == 1 then return 1 end
  err = check_acl('HEXISTS', scope_hidden, user_id)
  if err then return err end
  return redis.call('HEXISTS', scope_hidden, user_id)
end
err = check_acl('HKEYS', scope_hidden)
if err then return err end
local seen = {}
for _, id in ipairs(own) do seen[id] = true end
for _, id in ipairs(redis.call('HKEYS', scope_hidden)) do
  if not seen[id] then own[#own + 1] = id end
end
table.sort(own)
return own
