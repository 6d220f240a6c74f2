--[[
  Include "json": JSON text by splicing, so stored documents (written by JSON.stringify in TS)
  are never decoded and re-encoded here: cjson would turn empty arrays into objects and round
  numbers to 14 digits.

  jsonExtend(obj, members)  Appends `"k":v,...` members to a compact JSON object text.
  jsonBool(b)               `true` / `false`.
  jsonString(s)             A Lua string as a JSON string.
]]
local function jsonExtend(obj, members)
  if obj == '{}' then
    return '{' .. members .. '}'
  end
  return string.sub(obj, 1, -2) .. ',' .. members .. '}'
end

local function jsonBool(b)
  if b then
    return 'true'
  end
  return 'false'
end

local function jsonString(s)
  return cjson.encode(s)
end
