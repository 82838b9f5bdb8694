--: REQUIRES base
-- ---- Expiry (periodic boards) ---------------------------------------------------------------
-- A periodic board (one per period: "<key>:<period id>") expires as a whole at its period's
-- deadline (unix ms, the same for every key of the period): every write PEXPIREATs the sorted
-- set, the option keys and the metadata hash it wrote, so every user's hash carries the
-- period's deadline too (the trim UNLINKs the hashes of those it removes).

-- The keys of board `b` that expire with it (absent ones are skipped by PEXPIREAT).
local function board_keys(b, user_key)
  local keys = {b.board, user_key}
  if b.options then keys[#keys + 1] = b.options end
  if b.first then keys[#keys + 1] = b.first; keys[#keys + 1] = b.first_keys end
  if b.dense then keys[#keys + 1] = b.dense end
  if b.recorded_hidden then keys[#keys + 1] = b.board .. ':hidden' end  -- fair play
  return keys
end

-- nil, or a NOPERM error reply if the caller may not PEXPIREAT the board's keys.
local function check_board_expiry(b, user_key, expire_at)
  for _, key in ipairs(board_keys(b, user_key)) do
    local err = check_acl('PEXPIREAT', key, expire_at)
    if err then return err end
  end
  return nil
end

-- PEXPIREAT every key of board `b` (and the user's metadata hash) at `expire_at` (unix ms).
local function expire_board(b, user_key, expire_at)
  for _, key in ipairs(board_keys(b, user_key)) do redis.call('PEXPIREAT', key, expire_at) end
end
