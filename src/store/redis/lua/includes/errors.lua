--[[
  Include "errors": domain failures, returned as negative integers.
  Mirror of `ErrorCode` in src/store/redis/errors.ts (scripts.test.ts checks they agree).
]]
local LEASE_LOST = -1
local JOB_NOT_FOUND = -2
local JOB_NOT_DEAD = -3
