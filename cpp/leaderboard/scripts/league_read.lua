#!lua flags=no-writes
-- A league's reads (see league.lua for its keys and its ARGV up to the period's deadline). A
-- read (no-writes): it runs when the server is out of memory and on read-only replicas.
-- ARGV after the deadline: 'check' (the read is of the current period: reply UNSETTLED if an
-- earlier period with players is not settled yet, so the client settles it first) or '', then
--   standings: user_id
--   tier_of:   user_id
--   tiers:     nothing
--   results:   user_id
-- Replies: the statuses 'OPTIONS <recorded>' and 'UNSETTLED <start ms> <period id>' (see
-- league.lua), else
--   standings: false if the user has no cohort in the period, else {tier, cohort, bracket,
--              placed players, 1 if settled else 0, {user_id, score or false, rank or false,
--              zone, {field, value, ...}, ...}} (ranks 1-based under the tie rule; players who
--              never scored last, by id)
--   tier_of:   the tier index, or false for a player never placed
--   tiers:     {tier index, players, ...} (hidden players in no count)
--   results:   false if the user has no settled result in the period, else {cohort, tier,
--              new tier, zone, rank or false, score or false}
local OPTIONS, TIER, TIERS, OPEN = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local STATE, WHERE, RESULT = KEYS[6], KEYS[7], KEYS[8]
local op = ARGV[1]
local cfg = {tiers = tonumber(ARGV[2]), promote = ARGV[4], demote = ARGV[5],
  idle = ARGV[6] == '1', order = ARGV[7], ties = ARGV[8]}
local period, start = ARGV[11], tonumber(ARGV[12])
local base = string.sub(OPTIONS, 1, #OPTIONS - 8)
local prefix = base .. ':' .. period
local config = table.concat({'tiers=' .. ARGV[2], 'size=' .. ARGV[3], 'promote=' .. ARGV[4],
  'demote=' .. ARGV[5], 'idle=' .. ARGV[6], 'order=' .. ARGV[7], 'ties=' .. ARGV[8],
  'mode=' .. ARGV[9]}, ' ')

local err = check_type(OPTIONS, 'hash') or check_type(TIER, 'hash') or check_type(TIERS, 'hash')
  or check_type(OPEN, 'string') or check_type(STATE, 'hash') or check_type(WHERE, 'hash')
  or check_type(RESULT, 'hash') or check_acl('HGET', OPTIONS, 'config')
  or check_acl('GET', OPEN) or check_acl('HGETALL', STATE) or check_acl('HGET', WHERE, 'x')
  or check_acl('HGET', TIER, 'x') or check_acl('HGETALL', TIERS) or check_acl('HGET', RESULT, 'x')
if err then return err end
local recorded = redis.call('HGET', OPTIONS, 'config')
if recorded and recorded ~= config then return redis.status_reply('OPTIONS ' .. recorded) end

if ARGV[14] == 'check' then
  local open = redis.call('GET', OPEN)
  if open then
    local at = string.find(open, ' ', 1, true)
    local open_start, open_period = tonumber(string.sub(open, 1, at - 1)), string.sub(open, at + 1)
    if open_start < start then
      local open_state = base .. ':' .. open_period .. ':state'
      err = check_type(open_state, 'hash')
      if err then return err end
      if redis.call('EXISTS', open_state) == 1 and not redis.call('HGET', open_state, 'done') then
        return redis.status_reply('UNSETTLED ' .. open)
      end
    end
  end
end

local function cut(spec, size)
  if string.sub(spec, 1, 1) == 'f' then
    return math.floor(tonumber(string.sub(spec, 2)) * size + 1e-9)
  end
  return tonumber(spec)
end

-- As league.lua's zone_of.
local function zone_of(tier, rank, scored, size)
  if not rank then return (cfg.idle and tier > 0) and 'demote' or 'stay' end
  if tier < cfg.tiers - 1 and rank <= cut(cfg.promote, size) then return 'promote' end
  if tier > 0 and rank > scored - cut(cfg.demote, size) then return 'demote' end
  return 'stay'
end

if op == 'standings' then
  local user_id = ARGV[15]
  local n = redis.call('HGET', WHERE, user_id)
  if not n then return false end
  local tier = tonumber(redis.call('HGET', STATE, 't:' .. n))
  local bracket = redis.call('HGET', STATE, 'b:' .. n) or ''
  local settled = redis.call('HGET', STATE, 's:' .. n) and 1 or 0
  local board = prefix .. ':c:' .. n
  local k = #KEYS + 1
  KEYS[k] = board .. ':options'
  if cfg.ties == 'first' then
    KEYS[k + 1], KEYS[k + 2] = board .. ':first', board .. ':first:keys'
  elseif cfg.ties == 'dense' then
    KEYS[k + 1] = board .. ':dense'
  end
  local b = board_spec(board, k, cfg.order, cfg.ties)
  local placed = board .. ':placed'
  err = check_type(board, 'zset') or check_type(placed, 'set')
    or (b.first and check_type(b.first, 'zset')) or check_acl('ZRANGE', b.ranked, '0', '0')
    or check_acl('SMEMBERS', placed)
  if err then return err end
  local ranked = range_best(b, 0, -1)
  local ids, scores = split_range(b, ranked)
  local members = redis.call('SMEMBERS', placed)
  local scored, size = #ids, #members
  local entries, seen, idle = {}, {}, {}
  local group_start, dense, previous = 1, 0, nil
  local function add(id, score, shown, zone)
    local key = board .. ':user:' .. id
    err = check_acl('HGETALL', key) or check_type(key, 'hash')
    if err then return err end
    if settled == 1 then  -- the zone settlement recorded
      local result = redis.call('HGET', RESULT, id)
      if result then zone = string.match(result, '^%S+ (%S+)') end
    end
    entries[#entries + 1] = id
    entries[#entries + 1] = score or false
    entries[#entries + 1] = shown or false
    entries[#entries + 1] = zone
    entries[#entries + 1] = redis.call('HGETALL', key)
    return nil
  end
  for i, id in ipairs(ids) do
    seen[id] = true
    local score = tonumber(scores[i])
    if score ~= previous then group_start, dense = i, dense + 1 end
    previous = score
    local cutoff = b.shared and group_start or i
    local shown = (cfg.ties == 'dense' and dense) or (cfg.ties == 'competition' and group_start) or i
    err = add(id, scores[i], shown, zone_of(tier, cutoff, scored, size))
    if err then return err end
  end
  for _, id in ipairs(members) do if not seen[id] then idle[#idle + 1] = id end end
  table.sort(idle)
  for _, id in ipairs(idle) do
    err = add(id, nil, nil, zone_of(tier, nil, scored, size))
    if err then return err end
  end
  return {tier, tonumber(n), bracket, size, settled, entries}
end

if op == 'tier_of' then
  local tier = redis.call('HGET', TIER, ARGV[15])
  return tier and tonumber(tier) or false
end

if op == 'tiers' then
  local flat = redis.call('HGETALL', TIERS)
  -- A hidden player is in no count (fair play): each hidden player with a tier is taken off
  -- that tier's count (they keep the tier: tier_of answers it, and unhide counts them again).
  -- The hidden hash "<B>:hidden" (see league.lua) is reached through the options hash.
  if not redis.call('HGET', OPTIONS, 'hidden') then return flat end
  local hidden = base .. ':hidden'
  err = check_type(hidden, 'hash') or check_acl('HKEYS', hidden)
    or check_present(OPTIONS, {hidden})
  if err then return err end
  local off = {}
  for _, id in ipairs(redis.call('HKEYS', hidden)) do
    local tier = redis.call('HGET', TIER, id)
    if tier then off[tier] = (off[tier] or 0) + 1 end
  end
  for i = 1, #flat, 2 do
    if off[flat[i]] then flat[i + 1] = string.format('%d', flat[i + 1] - off[flat[i]]) end
  end
  return flat
end

if op == 'results' then
  local user_id = ARGV[15]
  local result = redis.call('HGET', RESULT, user_id)
  if not result then return false end
  local n = redis.call('HGET', WHERE, user_id)
  local new, zone, rank, score = string.match(result, '^(%S+) (%S+) (%S+) (%S+)$')
  return {tonumber(n), tonumber(redis.call('HGET', STATE, 't:' .. n)), tonumber(new), zone,
    rank ~= '-' and tonumber(rank) or false, score ~= '-' and score or false}
end

return redis.error_reply('ERR unknown league read ' .. tostring(op))
