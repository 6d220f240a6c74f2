--[[
  Include "time": the clock of record, integer text, and numbers of argument texts.

  nowMs()       Redis server time in epoch milliseconds (one TIME call). Scripts read it once.
  int(n)        An integer as decimal text with no exponent (tostring would print 1e+15), for
                JSON fragments, hash fields and command arguments alike.
  num(x)        Any finite number as text that reads back as the same double (JS `Number(text)`
                and Lua `tonumber` alike): integers as int(), others with 17 significant digits.
  numberOf(s)   tonumber(s), remembered for texts seen before: for arguments that are the same
                on most calls (caps, lease lengths, delays of 0), not for times.

  Converting between text and numbers is a large share of what a script costs Redis: about
  2,000 instructions for each tonumber (glibc's strtod) and 2,500–3,000 for each
  string.format, against some 500 for a table lookup (docs/adr/0036-number-texts.md). So:
  - nowMs() remembers the seconds of the last TIME answer (the same for every call in that
    second) and int() the text of the current time, which a script writes several times;
  - numberOf() looks argument texts up before converting them.
  Each script is a library of its own, loaded once (docs/adr/0024-redis-functions.md): these
  locals live as long as it does, and only ever hold a number's own conversion.
]]
-- The seconds text of the last TIME answer and its number; the current time and its text
-- (nil until int() is asked for it).
local secondsText, seconds = '', 0
local clockMs, clockText

local function nowMs()
  local t = redis.call('TIME')
  if t[1] ~= secondsText then
    secondsText, seconds = t[1], tonumber(t[1])
  end
  local ms = seconds * 1000 + math.floor(tonumber(t[2]) / 1000)
  clockMs, clockText = ms, nil
  return ms
end

-- '%d' (an integer conversion) costs a fraction of '%.0f' (a floating-point one); integers of
-- up to 2^53 are exact either way, anything else keeps '%.0f' (which rounds).
local function int(n)
  if n == clockMs then
    local text = clockText
    if text == nil then
      text = string.format('%d', n)
      clockText = text
    end
    return text
  end
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

-- Bounded: a text seen once (a delay, a time) must not make the table grow without end.
local numbers, numbersHeld = {}, 0

local function numberOf(text)
  local n = numbers[text]
  if n == nil then
    n = tonumber(text)
    if n == nil then
      return nil
    end
    if numbersHeld >= 64 then
      numbers, numbersHeld = {}, 0
    end
    numbers[text] = n
    numbersHeld = numbersHeld + 1
  end
  return n
end
