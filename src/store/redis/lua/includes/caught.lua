--[[
  Include "caught": errorText(e), the text of an error caught by `pcall`: a command's error
  reply (a table with `err`) or a Lua error (a string).
]]
local function errorText(e)
  if type(e) == 'table' then
    return tostring(e.err or e)
  end
  return tostring(e)
end
