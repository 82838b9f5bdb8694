#!lua flags=no-writes
-- The board's statistics, each O(log N) (the histogram O(bins log N)), none scanning the board.
-- A read.
--: KEYS board: the board
--: KEYS option_keys...: the board's option keys (board_spec in lib/options.lua)
--: CALL rank_for: rank_for_score - 1: the entries (dense: distinct scores) strictly better than score
--: ARGV score: the score, an exact text
--: ARGV order?: on a board with options, its order
--: ARGV ties?: on a board with options, its ties
--: CALL percentile: nil if the user is absent, else {entries strictly worse, board size}
--: ARGV user_id: the user
--: ARGV order?: on a board with options, its order
--: ARGV ties?: on a board with options, its ties
--: CALL at: nil on an empty board, else the score at position max(1, ceil(p / 100 * size)) from the worst (nearest rank)
--: ARGV percent: p
--: ARGV order?: on a board with options, its order
--: ARGV ties?: on a board with options, its ties
--: CALL histogram: {} on an empty board, else {{edge texts, bins + 1}, {counts}}
--: ARGV bins: how many bins
--: ARGV low: the lowest edge ('': the board's lowest score)
--: ARGV high: the highest edge ('': the board's highest score)
--: ARGV order?: on a board with options, its order
--: ARGV ties?: on a board with options, its ties
local query = call
local b = board_spec(board, option_keys_at, order, ties)
local err = check_acl('ZCOUNT', board, '0', '0') or check_acl('ZCARD', board)
  or check_acl('ZSCORE', board, 'x') or check_acl('ZRANGE', board, '0', '0')
  or (b.tiebreak and (check_acl('HGET', b.first_keys, 'x')
    or check_acl(b.position_command, b.ranked, 'x')))
if err then return err end
err = check_options(b)
if err then return err end

-- A number's exact text for a score range (Redis parses it back to the same double).
local function exact(x) return string.format('%.17g', x) end

if query == 'rank_for' then
  -- The rank the score would be reported with: entries strictly better, or on a dense board
  -- the distinct scores strictly better.
  local counted = b.dense or board
  if b.desc then return redis.call('ZCOUNT', counted, '(' .. score, '+inf') end
  return redis.call('ZCOUNT', counted, '-inf', '(' .. score)
end

if query == 'percentile' then
  local score = redis.call('ZSCORE', board, user_id)
  if not score then return false end
  if b.tiebreak then  -- the (score, columns) order: those after the user's place are worse
    local size = redis.call('ZCARD', board)
    return {size - 1 - redis.call(b.position_command, b.ranked, ranked_member(b, user_id)), size}
  end
  local worse
  if b.desc then
    worse = redis.call('ZCOUNT', board, '-inf', '(' .. score)
  else
    worse = redis.call('ZCOUNT', board, '(' .. score, '+inf')
  end
  return {worse, redis.call('ZCARD', board)}
end

local size = redis.call('ZCARD', board)

if query == 'at' then
  if size == 0 then return false end
  local k = math.min(size, math.max(1, math.ceil(tonumber(percent) / 100 * size)))
  local ranged
  if b.desc then  -- worst first: ascending scores
    ranged = redis.call('ZRANGE', board, k - 1, k - 1, 'WITHSCORES')
  else
    ranged = redis.call('ZRANGE', board, k - 1, k - 1, 'REV', 'WITHSCORES')
  end
  return ranged[2]
end

if query == 'histogram' then
  if size == 0 then return {} end
  bins, low, high = tonumber(bins), tonumber(low), tonumber(high)
  if not low then
    low = tonumber(redis.call('ZRANGE', board, 0, 0, 'WITHSCORES')[2])
    if high and low > high then low = high end
  end
  if not high then
    high = tonumber(redis.call('ZRANGE', board, -1, -1, 'WITHSCORES')[2])
    if high < low then high = low end
  end
  -- Edges min + (max - min) * i / bins, left to right in doubles, the last exactly max (and
  -- none above it, should rounding ever try).
  local edges = {}
  for i = 0, bins - 1 do edges[#edges + 1] = exact(math.min(low + (high - low) * i / bins, high)) end
  edges[#edges + 1] = exact(high)
  -- Cumulative counts, one ZCOUNT from -inf per edge: a bin is the difference of two. A ZCOUNT
  -- from -inf walks the skiplist once where one between two bounds walks it twice (measured on
  -- a million entries: 100 bins 364 -> 268 us).
  local below = {}  -- entries strictly below each edge
  for i = 1, bins do below[i] = redis.call('ZCOUNT', board, '-inf', '(' .. edges[i]) end
  local counts = {}
  for i = 1, bins - 1 do counts[i] = below[i + 1] - below[i] end
  counts[bins] = redis.call('ZCOUNT', board, '-inf', edges[bins + 1]) - below[bins]
  return {edges, counts}
end
return redis.error_reply('ERR unknown query ' .. tostring(query))
