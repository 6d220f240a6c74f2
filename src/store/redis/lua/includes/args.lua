--[[
  Include "args": arguments of one item among several in a call (beginRuns, finishRuns).

  argAt(a, n, i)   The i-th of the n arguments ARGV[a + 1 .. a + n], '' when absent (i > n): a
                   call leaves out trailing empty ones, and a batch pads its items only to the
                   longest, so reading past n would read the next item's.
]]

local function argAt(a, n, i)
  if i > n then
    return ''
  end
  return ARGV[a + i]
end
