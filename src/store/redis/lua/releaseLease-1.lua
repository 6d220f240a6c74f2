--[[
  releaseLease: compare-and-delete.
  Input:
    KEYS[1] lease key
    ARGV[1] token
  Output: 1 released, 0 not the holder
]]
--@include "lease"

if not holdsLease(KEYS[1], ARGV[1]) then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
