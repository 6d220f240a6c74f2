--[[
  Include "members": variadic commands over many members, in slices that stay far below
  Lua's unpack() limit (LUAI_MAXCSTACK, 8000).

  removeMembers(cmd, key, members)  ZREM / HDEL / ... `members` from `key`; returns the count.
  argvFrom(i)                       ARGV[i..] as a new list.
]]
local function removeMembers(cmd, key, members)
  local removed = 0
  for i = 1, #members, 1000 do
    removed = removed + redis.call(cmd, key, unpack(members, i, math.min(i + 999, #members)))
  end
  return removed
end

local function argvFrom(i)
  local list = {}
  for j = i, #ARGV do
    list[#list + 1] = ARGV[j]
  end
  return list
end
