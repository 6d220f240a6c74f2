--[[
  streamMaintain: what a worker does besides reading, in one round trip: move due delayed
  deliveries onto the stream (the earliest first, at most ARGV[1]), and take over up to ARGV[4]
  deliveries pending longer than ARGV[3] ms with consumers that stopped (XPENDING IDLE, then
  XCLAIM; their run lease decides at begin-run whether they run again).
  Input:
    KEYS[1] root
    ARGV[1] most delayed deliveries to move
    ARGV[2] this consumer's name
    ARGV[3] min idle ms of a pending delivery to take over (0 = take none over)
    ARGV[4] most to take over
  A takeover that emptied a stopped consumer's pending list deletes it from the group
  (forgetConsumers, include "streams": idle ARGV[3] ms or more, nothing pending), so the group
  does not keep the name of every process that was killed. The deliveries taken over are counted
  for the whole deployment in the metrics hash (`<root>:metrics`, field s:claimed).
  With takeovers (ARGV[3] > 0), entries the group skipped go back on the stream, up to ARGV[1]
  (requeueSkipped, include "streams"): a group created or moved at `$` by someone else, or made
  again after XGROUP DESTROY, never delivers the entries before it, and nobody holds them.
  Output: { moved, next not-before ms of the delayed set (-1 = empty), claimed entries
            ({ id, { field, value, ... } } each, as XCLAIM answers), the server's now (ms),
            deliveries pending in the group (this consumer's included), members of the delayed
            set dropped for a malformed body, entries put back on the stream (requeueSkipped) }
]]
--@include "time"
--@include "streams"

local root = KEYS[1]
local stream = streamKey(root)

-- An entry holding a delivery (a `j` field), not a wake-up or someone else's.
local function isDelivery(entry)
  local fields = entry[2] or {}
  for i = 1, #fields - 1, 2 do
    if fields[i] == 'j' then
      return true
    end
  end
  return false
end
local delayed, bodies = stream .. ':delayed', stream .. ':bodies'
local now = nowMs()

-- Each member leaves the delayed set as it moves, so an error part-way cannot move the earlier
-- ones twice; a body not of the form `<retries> <spec>` (written by no script of ours) is dropped.
local due = redis.call('ZRANGEBYSCORE', delayed, '-inf', now, 'LIMIT', 0, tonumber(ARGV[1]))
local dropped = {}
for _, member in ipairs(due) do
  local body = redis.call('HGET', bodies, member)
  local space = body and string.find(body, ' ', 1, true)
  if space then
    redis.call('XADD', stream, '*', 'j', string.sub(body, space + 1), 'r',
      string.sub(body, 1, space - 1))
  else
    dropped[#dropped + 1] = member
  end
  redis.call('ZREM', delayed, member)
  redis.call('HDEL', bodies, member)
end

local nextAt = -1
local first = redis.call('ZRANGE', delayed, 0, 0, 'WITHSCORES')
if first[2] then
  nextAt = tonumber(first[2])
end

local claimed, pending, requeued = {}, 0, 0
-- XLEN, not EXISTS: as cheap, and it tells whether any entry is not pending. (No stream, or no
-- group: XPENDING fails, and nothing is pending.)
local length = redis.call('XLEN', stream)
local ok, summary = pcall(redis.call, 'XPENDING', stream, STREAM_GROUP)
if ok then
  pending = summary[1]
  if length > pending and tonumber(ARGV[3]) > 0 then
    requeued = requeueSkipped(stream, pending > 0 and summary[2] or nil, tonumber(ARGV[1]))
  end
  if pending > 0 and tonumber(ARGV[3]) > 0 then
    -- The stale ones anywhere in the pending list (XPENDING IDLE reads all of it), not only
    -- among its first entries: XAUTOCLAIM from 0-0 looks at COUNT × 10 entries, so the live
    -- deliveries of long handlers (kept, and so never idle) at the list's head would hide a
    -- stopped consumer's deliveries behind them for as long as they run.
    local stale = redis.call('XPENDING', stream, STREAM_GROUP, 'IDLE', ARGV[3], '-', '+', ARGV[4])
    if #stale > 0 then
      local args = { stream, STREAM_GROUP, ARGV[2], ARGV[3] }
      for _, entry in ipairs(stale) do
        args[#args + 1] = entry[1]
      end
      -- Claimed only if still idle that long (checked again, atomically); an entry deleted
      -- while pending is dropped from the list (Redis 7) or answered nil (6.2): skipped.
      local deliveries = 0
      for _, entry in ipairs(redis.call('XCLAIM', unpack(args))) do
        if entry then
          claimed[#claimed + 1] = entry
          if isDelivery(entry) then
            deliveries = deliveries + 1
          end
        end
      end
      -- Counted for the whole deployment (include "metrics": s:claimed), not by this process
      -- alone: the processes that serve /metrics may be others than those that take over.
      if deliveries > 0 then
        redis.call('HINCRBY', root .. ':metrics', 's:claimed', deliveries)
      end
      forgetConsumers(stream, ARGV[2], tonumber(ARGV[3]))
    end
  end
end
return { #due, nextAt, claimed, now, pending, dropped, requeued }
