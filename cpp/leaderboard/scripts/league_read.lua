#!lua flags=no-writes
-- A league's reads (the keys and the league's arguments of league.lua, then a read's own). A
-- read (no-writes): it runs when the server is out of memory and on read-only replicas.
--: KEYS league_options: <B>:options, the league's recorded options ('config', 'hidden')
--: KEYS league_tier: <B>:tier, user -> tier index
--: KEYS league_tiers: <B>:tiers, tier index -> players
--: KEYS league_open: <B>:open, "<start ms> <period id>": the newest period with players
--: KEYS period_state: <B>:<P>:state, the period's state
--: KEYS period_where: <B>:<P>:where, user -> cohort
--: KEYS period_result: <B>:<P>:result, user -> "<new tier> <zone> <rank|-> <score|->"
--: ARGV tier_count: the league's tiers (a count)
--: ARGV cohort_size: its players per cohort
--: ARGV promote: its promotion cutoff ('<count>' or 'f<fraction>')
--: ARGV demote: its demotion cutoff ('<count>' or 'f<fraction>')
--: ARGV demote_idle: '1' (players who never scored are demoted) or '0'
--: ARGV order: its cohorts' order
--: ARGV ties: its cohorts' tie rule ("tb:<name>.<dir>,...": tie-break columns, see board_spec)
--: ARGV write_rule: its write mode, then its score limits' words ('range:<a>:<b>', 'maxinc:<n>')
--: ARGV period: the period's id
--: ARGV period_start: the period's start (unix ms)
--: ARGV read_check: 'check' (a read of the current period, see below) or ''
--: CALL standings: the standings of a player's cohort
--: ARGV user_id: the player
--: REPLY tier: int, cohort: int, bracket: text, size: int, settled: bool,
--:   entries: [user_id: text, score: score?, rank: int?, zone: text, metadata: metadata,
--:   tiebreak: tiebreak]
--: CALL tier_of: a player's tier
--: ARGV user_id: the player
--: REPLY int
--: CALL tiers: the players of each tier
--: REPLY [tier: count, players: count]
--: CALL results: a player's settled result
--: ARGV user_id: the player
--: REPLY cohort: int, tier: int, new_tier: int, zone: text, rank: int?, score: score?,
--:   tiebreak: tiebreak
--: CALL hidden: the hidden players
--: REPLY texts
--: CALL is_hidden: whether a player is hidden
--: ARGV user_id: the player
--: REPLY bool
-- A read of the current period ('check') replies UNSETTLED if an earlier period with players is
-- not settled yet, so the client settles it first.
-- Replies: the statuses 'OPTIONS <recorded>' and 'UNSETTLED <start ms> <period id>' (see
-- league.lua), else
--   standings: false if the user has no cohort in the period, else {tier, cohort, bracket,
--              placed players, 1 if settled else 0, {user_id, score or false, rank or false,
--              zone, {field, value, ...}[, columns' key or false], ...}} (ranks 1-based under
--              the tie rule; players who never scored last, by id; with tie-break columns each
--              entry ends with its ranked member's key, see board_spec: false if never scored)
--   tier_of:   the tier index, or false for a player never placed
--   tiers:     {tier index, players, ...} (hidden players in no count)
--   results:   false if the user has no settled result in the period, else {cohort, tier,
--              new tier, zone, rank or false, score or false[, columns' key or false]} (with
--              tie-break columns: the player's ranked member's key, as standings')
--   hidden:    the hidden ids, in byte order; is_hidden: 1 if the player is hidden, else 0
local start = tonumber(period_start)
local base = string.sub(league_options, 1, #league_options - 8)
local config = league_config_text(tier_count, cohort_size, promote, demote, demote_idle, order,
  ties, write_rule)

local err = check_type(league_options, 'hash') or check_type(league_tier, 'hash')
  or check_type(league_tiers, 'hash') or check_type(league_open, 'string')
  or check_type(period_state, 'hash') or check_type(period_where, 'hash')
  or check_type(period_result, 'hash') or check_acl('HGET', league_options, 'config')
  or check_acl('GET', league_open) or check_acl('HGETALL', period_state)
  or check_acl('HGET', period_where, 'x') or check_acl('HGET', league_tier, 'x')
  or check_acl('HGETALL', league_tiers) or check_acl('HGET', period_result, 'x')
if err then return err end
local recorded = redis.call('HGET', league_options, 'config')
if recorded and recorded ~= config then return redis.status_reply('OPTIONS ' .. recorded) end

if read_check == 'check' then
  local open = redis.call('GET', league_open)
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

if call == 'standings' then
  local n = redis.call('HGET', period_where, user_id)
  if not n then return false end
  local tier = tonumber(redis.call('HGET', period_state, 't:' .. n))
  local bracket = redis.call('HGET', period_state, 'b:' .. n) or ''
  local settled = redis.call('HGET', period_state, 's:' .. n) and 1 or 0
  local cfg = {tiers = tonumber(tier_count), promote = promote, demote = demote,
    idle = demote_idle == '1'}  -- for league_zone
  local board = base .. ':' .. period .. ':c:' .. n
  local b = board_spec(board, league_cohort_keys(board, ties), order, ties)
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
  local function add(id, score, shown, zone, tb_key)
    local compact = b.compact
    local key = league_metadata_key(board, id, compact)
    if compact then err = check_acl('HGET', key, id) else err = check_acl('HGETALL', key) end
    err = err or check_type(key, 'hash')
    if err then return err end
    if settled == 1 then  -- the zone settlement recorded
      local result = redis.call('HGET', period_result, id)
      if result then zone = string.match(result, '^%S+ (%S+)') end
    end
    entries[#entries + 1] = id
    entries[#entries + 1] = score or false
    entries[#entries + 1] = shown or false
    entries[#entries + 1] = zone
    entries[#entries + 1] = league_metadata(board, id, compact)
    if b.tiebreak then entries[#entries + 1] = tb_key or false end
    return nil
  end
  for i, id in ipairs(ids) do
    seen[id] = true
    local score = tonumber(scores[i])
    if score ~= previous then group_start, dense = i, dense + 1 end
    previous = score
    local cutoff = b.shared and group_start or i
    local shown = (b.ties == 'dense' and dense) or (b.ties == 'competition' and group_start) or i
    err = add(id, scores[i], shown, league_zone(cfg, tier, cutoff, scored, size),
      b.tiebreak and string.sub(ranked[2 * i - 1], 1, b.width))
    if err then return err end
  end
  for _, id in ipairs(members) do if not seen[id] then idle[#idle + 1] = id end end
  table.sort(idle)
  for _, id in ipairs(idle) do
    err = add(id, nil, nil, league_zone(cfg, tier, nil, scored, size))
    if err then return err end
  end
  return {tier, tonumber(n), bracket, size, settled, entries}
end

if call == 'tier_of' then
  local tier = redis.call('HGET', league_tier, user_id)
  return tier and tonumber(tier) or false
end

if call == 'tiers' then
  local flat = redis.call('HGETALL', league_tiers)
  -- A hidden player is in no count (fair play): each hidden player with a tier is taken off
  -- that tier's count (they keep the tier: tier_of answers it, and unhide counts them again).
  -- The hidden hash "<B>:hidden" (see league.lua) is reached through the options hash.
  if not redis.call('HGET', league_options, 'hidden') then return flat end
  local hidden = base .. ':hidden'
  err = check_type(hidden, 'hash') or check_acl('HKEYS', hidden)
    or check_present(league_options, {hidden})
  if err then return err end
  local off = {}
  for _, id in ipairs(redis.call('HKEYS', hidden)) do
    local tier = redis.call('HGET', league_tier, id)
    if tier then off[tier] = (off[tier] or 0) + 1 end
  end
  for i = 1, #flat, 2 do
    if off[flat[i]] then flat[i + 1] = string.format('%d', flat[i + 1] - off[flat[i]]) end
  end
  return flat
end

if call == 'results' then
  local result = redis.call('HGET', period_result, user_id)
  if not result then return false end
  local n = redis.call('HGET', period_where, user_id)
  local new, zone, rank, score = string.match(result, '^(%S+) (%S+) (%S+) (%S+)$')
  local reply = {tonumber(n), tonumber(redis.call('HGET', period_state, 't:' .. n)), tonumber(new),
    zone, rank ~= '-' and tonumber(rank) or false, score ~= '-' and score or false}
  if string.sub(ties, 1, 3) == 'tb:' then
    -- The columns the player's score was ranked by: their ranked member's key on the cohort's
    -- board, kept with the period (closed: no write changes it any more), as standings' entries.
    local board = base .. ':' .. period .. ':c:' .. n
    local b = board_spec(board, league_cohort_keys(board, ties), order, ties)
    err = check_type(b.first_keys, 'hash') or check_acl('HGET', b.first_keys, user_id)
    if err then return err end
    reply[7] = score ~= '-' and redis.call('HGET', b.first_keys, user_id) or false
  end
  return reply
end

if call == 'hidden' or call == 'is_hidden' then  -- "<B>:hidden" (see league.lua)
  return read_hidden(league_options, base .. ':hidden', call == 'is_hidden' and user_id or nil)
end

return redis.error_reply('ERR unknown league read ' .. tostring(call))
