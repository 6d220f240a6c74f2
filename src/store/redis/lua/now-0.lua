--[[
  now: the store's clock.
  Input: none
  Output: Redis server time in epoch ms (integer)
]]
--@include "time"

return nowMs()
