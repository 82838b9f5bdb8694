--: REQUIRES base
-- ---- Leagues (league.lua and league_read.lua) ---------------------------------------------

-- The options a league records (its options hash's 'config', see league.lua), from its call's
-- arguments as sent: two clients of a league must send the same.
local function league_config_text(tiers, size, promote, demote, idle, order, ties, rule)
  return table.concat({'tiers=' .. tiers, 'size=' .. size, 'promote=' .. promote,
    'demote=' .. demote, 'idle=' .. idle, 'order=' .. order, 'ties=' .. ties, 'mode=' .. rule},
    ' ')
end

-- How many a cutoff spec ('<count>' or 'f<fraction>') takes from a cohort of `size` players.
local function league_cut(spec, size)
  if string.sub(spec, 1, 1) == 'f' then
    return math.floor(tonumber(string.sub(spec, 2)) * size + 1e-9)
  end
  return tonumber(spec)
end

-- The zone of a player of tier `tier` whose cutoff rank (1 + the players strictly ahead under
-- a rule where equal scores share a rank, else the position) is `rank` (nil: placed, never
-- scored) among `scored` players of a cohort of `size` placed: promotion wins an overlap, and
-- nobody leaves the ends. `cfg`: the league's tiers (a count), promote and demote (cutoff
-- specs) and idle (demote players who never scored).
local function league_zone(cfg, tier, rank, scored, size)
  if not rank then return (cfg.idle and tier > 0) and 'demote' or 'stay' end
  if tier < cfg.tiers - 1 and rank <= league_cut(cfg.promote, size) then return 'promote' end
  if tier > 0 and rank > scored - league_cut(cfg.demote, size) then return 'demote' end
  return 'stay'
end

-- Declares the option keys of the cohort board `board` (see board_spec) after the call's keys,
-- for a league whose ties rule is `ties` ("tb:...": tie-break columns; "...+compact": the
-- compact layout, its metadata hash "<board>:meta" the last); returns the index of the first.
local function league_cohort_keys(board, ties)
  local k = #KEYS + 1
  KEYS[k] = board .. ':options'
  local compact
  ties, compact = tie_rule(ties)
  if string.sub(ties, 1, 3) == 'tb:' then
    KEYS[k + 1], KEYS[k + 2] = board .. ':tb', board .. ':tb:keys'
  elseif ties == 'first' then
    KEYS[k + 1], KEYS[k + 2] = board .. ':first', board .. ':first:keys'
  elseif ties == 'dense' then
    KEYS[k + 1] = board .. ':dense'
  end
  if compact then KEYS[#KEYS + 1] = board .. ':meta' end
  return k
end

-- Where a player's metadata lives on cohort board `board`: their hash "<board>:user:<id>", or
-- on a compact league the board's "<board>:meta" (their field).
local function league_metadata_key(board, user_id, compact)
  if compact then return board .. ':meta' end
  return board .. ':user:' .. user_id
end

-- nil, or the first error refusing the caller reading and deleting a player's metadata on
-- cohort board `board` (its type, the caller's permissions).
local function check_league_metadata(board, user_id, compact)
  local key = league_metadata_key(board, user_id, compact)
  if compact then
    return check_type(key, 'hash') or check_acl('HGET', key, user_id)
      or check_acl('HDEL', key, user_id)
  end
  return check_acl('UNLINK', key) or check_type(key, 'hash') or check_acl('HGETALL', key)
end

-- A player's metadata on cohort board `board`: {field, value, ...} ({} for none).
local function league_metadata(board, user_id, compact)
  if not compact then return redis.call('HGETALL', board .. ':user:' .. user_id) end
  local text = redis.call('HGET', board .. ':meta', user_id)
  if not text then return {} end
  return decode_fields(text)
end

-- Deletes a player's metadata on cohort board `board`.
local function delete_league_metadata(board, user_id, compact)
  if compact then
    redis.call('HDEL', board .. ':meta', user_id)
  else
    redis.call('UNLINK', board .. ':user:' .. user_id)
  end
end
