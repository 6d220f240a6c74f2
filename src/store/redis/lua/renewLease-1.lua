--[[
  renewLease: extend a lease if `token` still holds it.
  Input:
    KEYS[1] lease key
    ARGV[1] token
    ARGV[2] ttlMs
  Output: 1 renewed, 0 not the holder
]]
--@include "lease"

if not holdsLease(KEYS[1], ARGV[1]) then
  return 0
end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1
