--[[
  Include "page" (needs "json"): newest-first pages of a sorted set.

  Order: score descending, ties by member descending (ZREVRANGE order). A cursor names the last
  item of the previous page (its score and id), so items removed between pages neither repeat
  nor skip any: when the cursor's item is gone, the page starts at its would-be position.

  page(key, limit, cursorScore, cursorId, render, budget)
    cursorId == '' means the first page. `render(id)` returns the item's JSON text, false to
    leave it out (filtered), or nil when its record is gone (the index entry is then removed).
    At most `budget` index entries are examined; a page cut short by the budget still carries a
    cursor. Returns `{"items":[...]}` or `{"items":[...],"cursor":[score,"id"]}`; the cursor is
    present iff another matching item may follow.
]]
--@include "json"

local function bytesBefore(a, b) -- memcmp order, as Redis orders members (Lua's < follows the locale)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x < y
    end
  end
  return #a < #b
end

local function pageStart(key, cursorScore, cursorId, budget)
  local score = redis.call('ZSCORE', key, cursorId)
  if score and tonumber(score) == tonumber(cursorScore) then
    return redis.call('ZREVRANK', key, cursorId) + 1
  end
  local start = redis.call('ZCOUNT', key, '(' .. cursorScore, '+inf')
  local ties = redis.call('ZREVRANGEBYSCORE', key, cursorScore, cursorScore, 'LIMIT', 0, budget)
  for _, member in ipairs(ties) do
    if bytesBefore(member, cursorId) then
      break
    end
    start = start + 1
  end
  return start
end

local function page(key, limit, cursorScore, cursorId, render, budget)
  if limit <= 0 then
    return '{"items":[]}'
  end
  local pos = 0
  if cursorId ~= '' then
    pos = pageStart(key, cursorScore, cursorId, budget)
  end
  local items, gone = {}, {}
  local examined, done = 0, false
  local lastScore, lastId, itemScore, itemId, cursorAt, cursorFor
  while not done do
    local chunk = redis.call('ZREVRANGE', key, pos, pos + 99, 'WITHSCORES')
    if #chunk == 0 then
      break
    end
    pos = pos + #chunk / 2
    for i = 1, #chunk, 2 do
      local id, score = chunk[i], chunk[i + 1]
      if examined >= budget then
        cursorAt, cursorFor, done = lastScore, lastId, true
        break
      end
      examined = examined + 1
      local item = render(id)
      if item == nil then
        gone[#gone + 1] = id
      elseif item then
        if #items == limit then
          cursorAt, cursorFor, done = itemScore, itemId, true
          break
        end
        items[#items + 1] = item
        itemScore, itemId = score, id
      end
      lastScore, lastId = score, id
    end
  end
  if #gone > 0 then
    redis.call('ZREM', key, unpack(gone))
  end
  local out = '{"items":[' .. table.concat(items, ',') .. ']'
  if cursorFor then
    out = out .. ',"cursor":[' .. cursorAt .. ',' .. jsonString(cursorFor) .. ']'
  end
  return out .. '}'
end
