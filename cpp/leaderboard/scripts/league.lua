#!lua
-- A league's writes (see python/redis_leaderboard/boards/league.py for the design): a player's
-- write (placement in a cohort and the score, atomically), a placement alone, closing a
-- period, and settling one cohort. No flags: Redis 7 refuses it up front when out of memory.
-- Every check that can fail (key types, permissions, the league's recorded options, the
-- period's state) runs before the first write, so a refused call changes nothing.
-- One partition "<B>" of a league, all its keys in its hash tag. A cohort n is the board
-- "<B>:<P>:c:<n>" (the guide's layout: metadata at "<B>:<P>:c:<n>:user:<id>"; a compact
-- league's in the hash "<B>:<P>:c:<n>:meta", see league_metadata_key; option keys after it, see
-- board_spec), its placed players the set "<B>:<P>:c:<n>:placed"; those keys are named
-- here, in the partition's hash tag.
--: KEYS league_options: <B>:options, the league's recorded options ('config', 'hidden')
--: KEYS league_tier: <B>:tier, user -> tier index
--: KEYS league_tiers: <B>:tiers, tier index -> players
--: KEYS league_open: <B>:open, "<start ms> <period id>": the newest period with players
--: KEYS league_events: <B>:events, the league's event stream
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
--: ARGV write_rule: its write mode, then its score limits' words ('range:<a>:<b>', 'maxinc:<n>'),
--   then its rate limit's 'rate:<max>:<per ms>' if any (part of the recorded config)
--: ARGV events_maxlen: its event stream's MAXLEN
--: ARGV period: the period's id
--: ARGV period_start: the period's start (unix ms)
--: ARGV period_times: '<deadline> <end>' (unix ms: when its keys expire, when it ends)
--: CALL submit: a player's write (placed in a cohort by their first), and its score
--: KEYS submission_keys...: the guards' keys, in the order of their words: with a submission id
--   its record, with a rate limit the player's window <B>:rate:<id> (else none)
--: ARGV user_id: the player
--: ARGV score: the score written
--: ARGV bracket: the bracket a placement puts the player in
--: ARGV submission_words: '' or the words 'sid:<ttl ms>:<call token>', 'rate:<max>:<per ms>'
--   (the rule's, with its key) and 'tb:<key>' (tie-break columns' values, see plan_write),
--   space-separated
--: ARGV metadata...: field, value, ...
--: REPLY submit: submit(user_id), tier: int, cohort: int, bracket: text, cutoff_rank: int?,
--:   zone: text, size: int, period: text
--: CALL join: a placement alone
--: ARGV user_id: the player
--: ARGV bracket: the bracket a placement puts the player in
--: REPLY tier: int, cohort: int, bracket: text, size: int, placed: bool
--: CALL close: closes the period to writes
--: REPLY cohorts: int, settled: int
--: CALL settle: settles one cohort
--: ARGV cohort: the cohort's number
--: ARGV call_token: this call's token (its resend answers its settlement)
--: REPLY cohort: int, tier: int, bracket: text, already: bool, promoted: texts,
--:   demoted: texts, stayed: texts
--: CALL hide: hides a player (fair play)
--: ARGV user_id: the player
--: REPLY bool
--: CALL unhide: shows a hidden player again
--: ARGV user_id: the player
--: ARGV bracket: the bracket a placement puts the player in
--: REPLY bool
-- The write rule's score limits: see guard_fields in lib/guards.lua; the rule is part of the
-- recorded config like every option. The period's times: the server's clock decides (see
-- check_clock in lib/clock.lua): a submit or join belongs to the period only from its start to
-- its end, a close only from its end. Replies: an error 'CLOCK ...' (the server's clock is
-- outside the call's span: see above), a status 'OPTIONS <recorded>' (the league records other
-- options), 'UNSETTLED <start ms> <period id>' (an earlier period must be settled before anyone
-- is placed in this one: the client settles it and sends the call again); an error 'PERIODCLOSED
-- ...' (the period takes no more writes); else
--   submit: {submit()'s reply (see apply_write), tier, cohort, bracket, cutoff rank or false,
--            zone, placed players, period id}; with a submission id applied before, the answer
--            stored then (see "Submission records" below)
--   join:   {tier, cohort, bracket, placed players, 1 if placed now else 0}
--   close:  {cohorts, cohorts settled}
--   settle: {cohort, tier, bracket, 1 if another call settled it before else 0, {promoted ids},
--            {demoted ids}, {ids staying}} (a resend of the call that settled it: that call's
--            answer, stored with its call token in the state's 's:<n>')
--   hide:   1 if the player was not hidden before, else 0; unhide: 1 if they were, else 0
--   (league_read.lua reads who is hidden)
-- A hidden player's submit and join answer cohort 0 (no seat), see "Hidden players" below.
local cfg = {tiers = tonumber(tier_count), size = tonumber(cohort_size), promote = promote,
  demote = demote, idle = demote_idle == '1', order = order, ties = ties,
  maxlen = events_maxlen, compact = select(2, tie_rule(ties))}
local start = tonumber(period_start)
local expire, period_end = string.match(period_times, '^(%d+) (%d+)$')
local base = string.sub(league_options, 1, #league_options - 8)  -- "<B>"
local prefix = base .. ':' .. period  -- "<B>:<P>"
local config = league_config_text(tier_count, cohort_size, promote, demote, demote_idle, order,
  ties, write_rule)

local function cohort_key(n) return prefix .. ':c:' .. n end

-- The cohort's board and the index of its option keys (see board_spec and
-- league_cohort_keys).
local function cohort_board(n)
  local board = cohort_key(n)
  return board, league_cohort_keys(board, cfg.ties)
end

-- nil, or the reply to return: an error (a key of another type, a denied command), or the
-- OPTIONS status if the league records other options. `record`: the caller writes, and
-- records the options if none are.
local function check_league(writes)
  local err = check_type(league_options, 'hash') or check_type(league_tier, 'hash')
    or check_type(league_tiers, 'hash') or check_type(league_open, 'string')
    or check_type(period_state, 'hash') or check_type(period_where, 'hash')
    or check_type(period_result, 'hash') or check_type(league_events, 'stream')
    or check_acl('HGET', league_options, 'config') or check_acl('HGET', period_state, 'x')
    or check_acl('HGET', period_where, 'x') or check_acl('HGET', league_tier, 'x')
  if err then return err end
  if writes then
    err = check_acl('HSET', league_options, 'config', 'x')
      or check_acl('HSET', period_state, 'x', 'x') or check_acl('HINCRBY', period_state, 'x', '1')
      or check_acl('HSET', period_where, 'x', 'x') or check_acl('HSET', league_tier, 'x', 'x')
      or check_acl('HINCRBY', league_tiers, 'x', '1') or check_acl('SET', league_open, 'x')
      or check_acl('GET', league_open) or check_acl('PEXPIREAT', period_state, expire)
      or check_acl('PEXPIREAT', period_where, expire)
      or check_acl('PEXPIREAT', period_result, expire)
      or check_acl('HSET', period_result, 'x', 'x')
      or check_acl('XADD', league_events, 'MAXLEN', '~', '1', '*', 'x', 'x')
    if err then return err end
  end
  local recorded = redis.call('HGET', league_options, 'config')
  if recorded and recorded ~= config then return redis.status_reply('OPTIONS ' .. recorded) end
  return nil
end

-- nil, or the CLOCK error if the server's clock is not within the period (a submit or a join:
-- `ended` false) or the period has not ended there (a close: `ended` true).
local function check_period_clock(ended)
  local what = 'period ' .. period .. ' of league ' .. base
  if ended then return check_clock(period_end, 9007199254740991, what .. ' (its close)') end
  return check_clock(start, period_end, what)
end

local function closed(why)
  return redis.error_reply('PERIODCLOSED period ' .. period .. ' of league ' .. base .. ' '
    .. why .. '; nothing was changed')
end

-- nil, or the reply refusing a placement in this period: closed, a newer period has players,
-- or an earlier one is not settled yet (UNSETTLED: the client settles it, then sends again).
local function check_placement()
  if redis.call('HGET', period_state, 'closed') then return closed('is closed (settling)') end
  local open = redis.call('GET', league_open)
  if not open then return nil end
  local at = string.find(open, ' ', 1, true)
  local open_start, open_period = tonumber(string.sub(open, 1, at - 1)), string.sub(open, at + 1)
  if open_period == period then return nil end
  if open_start > start then return closed('has ended: period ' .. open_period .. ' has begun') end
  local open_state = base .. ':' .. open_period .. ':state'
  local err = check_type(open_state, 'hash')
  if err then return err end
  if redis.call('EXISTS', open_state) == 1 and not redis.call('HGET', open_state, 'done') then
    return redis.status_reply('UNSETTLED ' .. open)
  end
  return nil
end

-- Where a placement puts `user_id` (nothing written): {tier, cohort, new player, new cohort,
-- open field, placed set}; or nil and the reply to return.
local function plan_placement(user_id, bracket)
  local err = check_placement()
  if err then return nil, err end
  local known = redis.call('HGET', league_tier, user_id)
  local tier = tonumber(known or '0')
  local field = 'open:' .. tier .. ':' .. bracket
  local n = tonumber(redis.call('HGET', period_state, field) or '0')
  local fresh = n == 0
  if not fresh then
    local placed = cohort_key(n) .. ':placed'
    err = check_type(placed, 'set') or check_acl('SCARD', placed)
    if err then return nil, err end
    fresh = redis.call('SCARD', placed) >= cfg.size
  end
  if fresh then n = tonumber(redis.call('HGET', period_state, 'cohorts') or '0') + 1 end
  local placed = cohort_key(n) .. ':placed'
  err = check_type(placed, 'set') or check_acl('SADD', placed, user_id)
    or check_acl('PEXPIREAT', placed, expire)
  if err then return nil, err end
  return {tier = tier, n = n, new_player = not known, fresh = fresh, field = field,
    placed = placed, bracket = bracket}
end

local function apply_placement(p, user_id)
  if p.fresh then
    redis.call('HSET', period_state, 'cohorts', p.n, p.field, p.n, 't:' .. p.n, p.tier,
      'b:' .. p.n, p.bracket)
  end
  redis.call('SADD', p.placed, user_id)
  redis.call('HSET', period_where, user_id, p.n)
  if p.new_player then
    redis.call('HSET', league_tier, user_id, p.tier)
    redis.call('HINCRBY', league_tiers, p.tier, 1)
  end
  redis.call('SET', league_open, string.format('%d', start) .. ' ' .. period)
  redis.call('PEXPIREAT', period_state, expire)
  redis.call('PEXPIREAT', period_where, expire)
  redis.call('PEXPIREAT', p.placed, expire)
end

-- The recorded options, once: the first write of a league records them.
local function record_config()
  redis.call('HSET', league_options, 'config', config)
end

-- A placed player's cohort n and tier, or nil.
local function placement_of(user_id)
  local n = redis.call('HGET', period_where, user_id)
  if not n then return nil end
  return tonumber(n), tonumber(redis.call('HGET', period_state, 't:' .. n))
end

-- The cutoff rank of `score` on board spec `b` (see league_zone in lib/leagues.lua).
local function cutoff_rank(b, user_id, score)
  if b.shared then return count_better(b, b.board, score) + 1 end
  return rank_of(b, user_id, score) + 1
end

-- ---- Hidden players (fair play, see lib/hiding.lua) ----
-- The league records them in "<B>:hidden" (user_id -> '') and 'hidden' '1' in <B>:options. A
-- hidden player has no seat: they are placed in no cohort, so they are in no standings, no
-- cohort's size and no settlement (their tier stays); their writes are judged as any and kept
-- aside on cohort 0's board "<B>:<P>:c:0" (its hidden hash), which nobody is placed in.
local HIDDEN = base .. ':hidden'

-- Moves a player's metadata from cohort board `from` into board spec `to`'s (merged; expiring
-- with the period): their hash, or their field of the board's on a compact league.
local function move_metadata(from, to, user_id)
  local fields = league_metadata(from, user_id, cfg.compact)
  if #fields > 0 then
    local key = league_metadata_key(to.board, user_id, cfg.compact)
    write_metadata(to, key, user_id, fields, 1, #fields)
    redis.call('PEXPIREAT', key, expire)
  end
  delete_league_metadata(from, user_id, cfg.compact)
end

-- Whether the league hides `user_id`; or nil and an error reply. The hash is not a declared
-- key: reached through the options hash (see check_present).
local function league_hides(user_id)
  if not redis.call('HGET', league_options, 'hidden') then return false end
  local err = check_type(HIDDEN, 'hash') or check_acl('HEXISTS', HIDDEN, user_id)
    or check_present(league_options, {HIDDEN})
  if err then return nil, err end
  return redis.call('HEXISTS', HIDDEN, user_id) == 1
end

-- ---- Submission records: a resend answers the first answer --------------------------------
-- A submit with a submission id stores its whole answer once, in the id's record
-- (lib/submissions.lua's: store_submission with submit()'s reply on the cohort's board, then
-- keep_rest with the rest of the league's answer: {tier, cohort, bracket, cutoff rank or false,
-- zone, size, period id}). A later submit with that id answers the record, before anything about
-- the period is looked at (which period the clock says, whether it is closed, settled or ended):
-- nothing is recomputed; a duplicate unless it is the same call's own resend (its call token, see
-- check_submission).

-- The whole answer: {submit()'s reply, rest...}.
local function answer_of(reply, rest)
  local answer = {reply}
  for i = 1, #rest do answer[i + 1] = rest[i] end
  return answer
end

-- Keeps the rest of the answer in the record store_submission has just written; returns the
-- whole answer.
local function store_answer(w, reply, rest)
  if w.submission_key then keep_rest(w, rest) end
  return answer_of(reply, rest)
end

-- nil if w's submission id was never applied; else the answer to return: an error reply
-- (SUBMISSIONREUSED, see check_submission), or the stored answer (duplicate or not, see above).
local function stored_answer(w)
  local reply, rest = check_submission(w, nil)
  if not reply or reply.err or reply.ok then return reply end
  if not rest then
    -- A record an older client wrote holds submit()'s reply alone: the rest is what that
    -- client answered (the cohort's tier and bracket, zone 'stay', size 0), its period the
    -- one of the board it landed on.
    local applied = reply[#reply]
    local at = string.find(applied, ':c:', #base + 2, true)
    local state = string.sub(applied, 1, at - 1) .. ':state'
    local cohort = string.sub(applied, at + 3)
    local tier_then = cohort == '0'  -- hidden: no seat
      and redis.call('HGET', league_tier, w.user_id)
      or redis.call('HGET', state, 't:' .. cohort)
    rest = {tonumber(tier_then or '0'), tonumber(cohort),
      redis.call('HGET', state, 'b:' .. cohort) or '', false, 'stay', 0,
      string.sub(applied, #base + 2, at - 1)}
  end
  return answer_of(reply, rest)
end

if call == 'submit' then
  local err = check_league(true)
  if err then return err end
  -- The write (the cohort's board is named once the placement is known).
  local rule = {}  -- the write rule's words: the mode, then the score limits'
  for word in string.gmatch(write_rule, '%S+') do rule[#rule + 1] = word end
  local w = {user_id = user_id, mode = rule[1], order = cfg.order, ties = cfg.ties,
    submit = true, number = score, max_entries = UNLIMITED, fields = ARGV,
    first_field = metadata_at, expire_at = expire}
  -- The rule's words first: its score limits, and its rate limit without its key, which the
  -- submission words (after it) give.
  guard_fields(w, rule, 2, 0)
  if submission_words ~= '' then
    local spec = {}
    for word in string.gmatch(submission_words, '%S+') do spec[#spec + 1] = word end
    guard_fields(w, spec, 1, #KEYS)  -- the submission id's record, the rate window, the columns
    if w.submission_key then
      local answer = stored_answer(w)
      if answer then return answer end
    end
  end
  -- The period, on the server's clock: after a stored answer (a resend answers, whatever the
  -- clock says now), before anything is written.
  err = check_period_clock(false)
  if err then return err end
  local hidden
  hidden, err = league_hides(user_id)
  if hidden == nil then return err end
  local n, tier = placement_of(user_id)
  local placement
  if hidden then  -- no seat: cohort 0 keeps the score aside
    if redis.call('HGET', period_state, 'closed') then return closed('is closed (settling)') end
    n, tier = 0, tonumber(redis.call('HGET', league_tier, user_id) or '0')
  elseif n then
    if redis.call('HGET', period_state, 'closed') then return closed('is closed (settling)') end
  else
    placement, err = plan_placement(user_id, bracket)
    if not placement then return err end
    n, tier = placement.n, placement.tier
  end
  local board, k = cohort_board(n)
  w.board, w.user_key, w.k = board, league_metadata_key(board, user_id, cfg.compact), k
  if hidden then w.scope_hidden, w.scope_options = HIDDEN, league_options end
  local plan, reply = plan_write(w)
  if not plan then return reply end  -- (an id applied before was answered above)
  if not redis.call('HGET', league_options, 'config') then record_config() end
  if placement then apply_placement(placement, user_id) end
  reply = apply_write(plan)
  if hidden then return store_answer(w, reply, {tier, 0, '', false, 'stay', 0, period}) end
  local b = plan.b
  local size = redis.call('SCARD', cohort_key(n) .. ':placed')
  local scored = redis.call('ZCARD', board)
  local stored = redis.call('ZSCORE', board, user_id)
  local rank = stored and cutoff_rank(b, user_id, tonumber(stored))
  return store_answer(w, reply, {tier, n, redis.call('HGET', period_state, 'b:' .. n) or bracket,
    rank or false, league_zone(cfg, tier, rank, scored, size), size, period})
end

if call == 'join' then
  local err = check_league(true)
  if err then return err end
  err = check_period_clock(false)
  if err then return err end
  local hidden
  hidden, err = league_hides(user_id)
  if hidden == nil then return err end
  if hidden then  -- no seat while hidden
    return {tonumber(redis.call('HGET', league_tier, user_id) or '0'), 0, '', 0, 0}
  end
  local n, tier = placement_of(user_id)
  local now = 0
  if not n then
    local placement
    placement, err = plan_placement(user_id, bracket)
    if not placement then return err end
    if not redis.call('HGET', league_options, 'config') then record_config() end
    apply_placement(placement, user_id)
    n, tier, now = placement.n, placement.tier, 1
  elseif redis.call('HGET', period_state, 'closed') then
    return closed('is closed (settling)')
  end
  return {tier, n, redis.call('HGET', period_state, 'b:' .. n) or bracket,
    redis.call('SCARD', cohort_key(n) .. ':placed'), now}
end

if call == 'close' then
  local err = check_league(true) or check_period_clock(true)
  if err then return err end
  if redis.call('EXISTS', period_state) == 0 then return {0, 0} end
  redis.call('HSET', period_state, 'closed', '1')
  return {tonumber(redis.call('HGET', period_state, 'cohorts') or '0'),
    tonumber(redis.call('HGET', period_state, 'settled') or '0')}
end

if call == 'settle' then
  local err = check_league(true)
  if err then return err end
  local n, token = cohort, call_token
  local tier = tonumber(redis.call('HGET', period_state, 't:' .. n) or '-1')
  if tier < 0 then return redis.error_reply('ERR league ' .. base .. ' has no cohort ' .. n
    .. ' in period ' .. period) end
  local bracket = redis.call('HGET', period_state, 'b:' .. n) or ''
  local settled_by = redis.call('HGET', period_state, 's:' .. n)
  if settled_by then
    -- {call token, answer} of the call that settled it ('1': an older client's, no answer).
    local ok, stored = pcall(cmsgpack.unpack, settled_by)
    if ok and type(stored) == 'table' and token ~= '' and stored[1] == token then
      return stored[2]  -- this call's own resend after a lost reply: its answer
    end
    return {tonumber(n), tier, bracket, 1, {}, {}, {}}
  end
  if not redis.call('HGET', period_state, 'closed') then
    return redis.error_reply('ERR period ' .. period .. ' of league ' .. base .. ' is not closed')
  end
  local board, k = cohort_board(n)
  local b = board_spec(board, k, cfg.order, cfg.ties)
  local placed = board .. ':placed'
  err = check_type(board, 'zset') or check_type(placed, 'set') or check_type(b.options, 'hash')
    or (b.first and (check_type(b.first, 'zset') or check_type(b.first_keys, 'hash')))
    or (b.dense and check_type(b.dense, 'zset')) or check_acl('ZRANGE', b.ranked, '0', '0')
    or check_acl('SMEMBERS', placed)
  if err then return err end
  local ranked = range_best(b, 0, -1)
  local ids, scores = split_range(b, ranked)
  local members = redis.call('SMEMBERS', placed)
  local scored, size = #ids, #members
  local seen, idle = {}, {}
  for _, id in ipairs(ids) do seen[id] = true end
  for _, id in ipairs(members) do if not seen[id] then idle[#idle + 1] = id end end
  table.sort(idle)
  local moves = {promote = {}, demote = {}, stay = {}}
  local fields, counts = {}, {}
  local group_start, dense, previous = 1, 0, nil
  local function settle_one(id, rank, shown, score)
    local zone = league_zone(cfg, tier, rank, scored, size)
    local new = tier + (zone == 'promote' and 1 or zone == 'demote' and -1 or 0)
    local list = moves[zone]
    list[#list + 1] = id
    fields[#fields + 1] = id
    fields[#fields + 1] = new .. ' ' .. zone .. ' ' .. (shown or '-') .. ' ' .. (score or '-')
    if new ~= tier then counts[new] = (counts[new] or 0) + 1 end
  end
  for i, id in ipairs(ids) do
    local score = tonumber(scores[i])
    if score ~= previous then group_start, dense = i, dense + 1 end
    previous = score
    local cutoff = b.shared and group_start or i
    local shown = (b.ties == 'dense' and dense) or (b.ties == 'competition' and group_start) or i
    settle_one(id, cutoff, shown, scores[i])
  end
  for _, id in ipairs(idle) do settle_one(id, nil, nil, nil) end
  -- The writes: nothing below fails but on a server fault.
  for i = 1, #fields, 2 do
    local new = string.sub(fields[i + 1], 1, string.find(fields[i + 1], ' ', 1, true) - 1)
    if tonumber(new) ~= tier then redis.call('HSET', league_tier, fields[i], new) end
  end
  for new, count in pairs(counts) do
    redis.call('HINCRBY', league_tiers, new, count)
    redis.call('HINCRBY', league_tiers, tier, -count)
  end
  call_sliced('HSET', period_result, fields)
  redis.call('PEXPIREAT', period_result, expire)
  local answer = {tonumber(n), tier, bracket, 0, moves.promote, moves.demote, moves.stay}
  redis.call('HSET', period_state, 's:' .. n, cmsgpack.pack({token, answer}))
  local settled = redis.call('HINCRBY', period_state, 'settled', 1)
  if settled >= tonumber(redis.call('HGET', period_state, 'cohorts') or '0') then
    redis.call('HSET', period_state, 'done', '1')
  end
  local event = {'kind', 'settled', 'period', period, 'cohort', n, 'tier', tier,
    'bracket', bracket}
  for _, zone in ipairs({'promote', 'demote'}) do
    for _, id in ipairs(moves[zone]) do
      event[#event + 1] = zone == 'promote' and 'promoted' or 'demoted'
      event[#event + 1] = id
    end
  end
  redis.call('XADD', league_events, 'MAXLEN', '~', cfg.maxlen, '*', unpack(event))
  return answer
end

if call == 'hide' or call == 'unhide' then
  local err = check_league(true) or check_type(HIDDEN, 'hash') or check_acl('HSET', HIDDEN, 'x', '')
    or check_acl('HDEL', HIDDEN, 'x') or check_acl('HSET', league_options, 'hidden', '1')
    or check_acl('HDEL', league_options, 'hidden') or check_acl('HDEL', period_where, 'x')
    or check_acl('HEXISTS', HIDDEN, user_id) or check_acl('HLEN', HIDDEN)  -- forget_hidden's
  if err then return err end
  local was = redis.call('HEXISTS', HIDDEN, user_id) == 1
  local settling = redis.call('HGET', period_state, 'closed')
  -- Cohort 0's board, where a hidden player's scores are kept.
  local zero, kz = cohort_board(0)
  local z = board_spec(zero, kz, cfg.order, cfg.ties)
  err = check_type(zero, 'zset') or check_type(z.options, 'hash')
    or check_hidden_writes(z, user_id, expire) or check_acl('HDEL', zero .. ':hidden', user_id)
    or check_acl('HGET', zero .. ':hidden', user_id) or check_acl('HLEN', zero .. ':hidden')
    or check_acl('HDEL', z.options, 'hidden')
  if err then return err end
  if call == 'hide' then
    if was then return 0 end
    -- Off their seat in this period (a period being settled keeps them where they are).
    local n = not settling and placement_of(user_id)
    local seat, score
    if n then
      local board, k = cohort_board(n)
      seat = board_spec(board, k, cfg.order, cfg.ties)
      err = check_type(board, 'zset') or check_type(board .. ':placed', 'set')
        or check_acl('SREM', board .. ':placed', user_id) or check_option_keys(seat)
        or check_league_metadata(board, user_id, cfg.compact)
        or check_type(league_metadata_key(zero, user_id, cfg.compact), 'hash')
        or check_acl('HSET', league_metadata_key(zero, user_id, cfg.compact), 'x', 'x')
        or (cfg.compact and check_acl('HGET', zero .. ':meta', user_id))
        or check_acl('PEXPIREAT', league_metadata_key(zero, user_id, cfg.compact), expire)
      if err then return err end
      score = redis.call('ZSCORE', board, user_id)
    end
    if seat then
      -- Tie-break columns: their key goes aside with the score (see keep_hidden).
      local tb_key = seat.tiebreak and score and redis.call('HGET', seat.first_keys, user_id)
      if score then unrank(seat, user_id, score) end
      redis.call('SREM', seat.board .. ':placed', user_id)
      redis.call('HDEL', period_where, user_id)
      keep_hidden(z, user_id, score or '', nil, expire, tb_key or nil)
      move_metadata(seat.board, z, user_id)
    end
    record_hidden(HIDDEN, league_options, user_id)
    return 1
  end
  -- unhide: a kept score of this period comes back as the player's write of it (placed in a
  -- cohort then, as a first write would place them).
  if not was then return 0 end
  local kept = redis.call('HGET', zero .. ':hidden', user_id)
  local plan, placement
  if kept and kept ~= '' and not settling then
    placement, err = plan_placement(user_id, bracket)
    if not placement then return err end
    local board, k = cohort_board(placement.n)
    -- Their metadata written while hidden comes with them.
    err = check_league_metadata(zero, user_id, cfg.compact)
    if err then return err end
    local kept_score, tb = kept_parts(kept)  -- tie-break columns: kept with the score
    plan, err = plan_write({board = board, k = k,
      user_key = league_metadata_key(board, user_id, cfg.compact),
      mode = 'set', order = cfg.order, ties = cfg.ties, number = kept_score, tb = tb,
      user_id = user_id, max_entries = UNLIMITED,
      fields = league_metadata(zero, user_id, cfg.compact), first_field = 1,
      expire_at = expire, restore = true})
    if not plan then return err end
  end
  forget_hidden(HIDDEN, league_options, user_id)
  if kept and not settling then forget_hidden(zero .. ':hidden', z.options, user_id) end
  if plan then
    apply_placement(placement, user_id)
    apply_write(plan)
    delete_league_metadata(zero, user_id, cfg.compact)
  end
  return 1
end

return redis.error_reply('ERR unknown league operation ' .. tostring(call))
