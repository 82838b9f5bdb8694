-- ---- The server's clock -----------------------------------------------------------------------
-- The server's clock (TIME) decides which period, bucket or window a write belongs to, and when
-- anything closes or expires: a client's clock never does. A client names the period it writes
-- (its keys are in the call) from its own clock corrected by what the server told it before, and
-- says when, on the server's clock, that write belongs there: the span [from, until) (the word
-- 'open:<from ms>:<until ms>', see guard_fields). A write outside it is refused before anything
-- is written, with the server's time (check_clock): the client corrects its clock and sends it
-- again, or raises (see ServerClock in boards/seasons.py).

-- The server's clock: unix milliseconds.
local function server_ms()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end

-- Unix ms as an ISO 8601 UTC time, "2026-12-06T10:51:03.123Z" (days to a civil date: H.
-- Hinnant's algorithm; Redis's Lua has no os.date).
local function utc_text(ms)
  local seconds = math.floor(ms / 1000)
  local rest = seconds % 86400
  local z = (seconds - rest) / 86400 + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524)
    - math.floor(doe / 146096)) / 365)
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local day = doy - math.floor((153 * mp + 2) / 5) + 1
  local month = mp < 10 and mp + 3 or mp - 9
  local year = yoe + era * 400 + (month <= 2 and 1 or 0)
  return string.format('%04d-%02d-%02dT%02d:%02d:%02d.%03dZ', year, month, day,
    math.floor(rest / 3600), math.floor(rest % 3600 / 60), rest % 60, ms % 1000)
end

-- nil, or the CLOCK error if the server's time is outside [from, until) (unix ms, numbers or
-- texts): 'CLOCK <server ms> <from> <until> <what>' (the client raises ClockSkew with the
-- server's time). `what` names what the span is (a period, a bucket).
local function check_clock(from, till, what)
  local now = server_ms()
  if now >= tonumber(from) and now < tonumber(till) then return nil end
  return redis.error_reply(string.format('CLOCK %d %d %d ', now, tonumber(from), tonumber(till))
    .. what .. ' takes writes from ' .. utc_text(tonumber(from)) .. ' to '
    .. utc_text(tonumber(till)) .. ' on the server\'s clock, which says ' .. utc_text(now)
    .. '; nothing was changed')
end
