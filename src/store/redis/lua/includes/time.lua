--[[
  Include "time": the clock of record and integer text.

  nowMs()  Redis server time in epoch milliseconds (one TIME call). Scripts read it once.
  int(n)   An integer as decimal text with no exponent (tostring would print 1e+15), for
           JSON fragments, hash fields and command arguments alike.
  num(x)   Any finite number as text that reads back as the same double (JS `Number(text)` and
           Lua `tonumber` alike): integers as int(), others with 17 significant digits.
]]
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- '%d' (an integer conversion) costs a fraction of '%.0f' (a floating-point one); integers of
-- up to 2^53 are exact either way, anything else keeps '%.0f' (which rounds).
local function int(n)
  if n == math.floor(n) and n < 9007199254740992 and n > -9007199254740992 then
    return string.format('%d', n)
  end
  return string.format('%.0f', n)
end

local function num(x)
  if x == 0 then
    return '0' -- also -0
  end
  if x == math.floor(x) and math.abs(x) < 1e15 then
    return string.format('%d', x)
  end
  return string.format('%.17g', x)
end
