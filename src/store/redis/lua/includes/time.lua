--[[
  Include "time": the clock of record and integer text.

  nowMs()  Redis server time in epoch milliseconds (one TIME call). Scripts read it once.
  int(n)   An integer as decimal text with no exponent (tostring would print 1e+15), for
           JSON fragments, hash fields and command arguments alike.
]]
local function nowMs()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local function int(n)
  return string.format('%.0f', n)
end
