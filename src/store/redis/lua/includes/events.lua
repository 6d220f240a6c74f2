--[[
  Include "events" (needs "json", "time"): the capped event stream `{p}:events`. Each entry has
  one field `e`, the TickEvent JSON without its id (the stream id), `type` first.

  emitEvent(events, maxLen, json)   XADD, trimmed to maxLen (approximately from 1,000 up, see
                                    below); nothing when maxLen is 0.
  jobEvent(type, now, id, job, extra)
                                    A job event's JSON: type, at, jobId, handler, tenant and
                                    scheduleId (when the job has them), then `extra` members.
]]
--@include "time"
--@include "json"

-- The cap's text, made once: every call of a store passes the same cap.
local capOf, capText

-- Caps of 1,000 and more are kept approximately (`MAXLEN ~`: Redis drops whole stream nodes, so
-- up to one node — 100 entries by default — more may stay), which costs far less per write than
-- an exact trim; smaller caps are exact.
local function emitEvent(events, maxLen, json)
  -- Arguments as text: a number would be formatted by Redis's Lua bridge, at several times the
  -- cost of int().
  if maxLen ~= capOf then
    capOf, capText = maxLen, int(maxLen)
  end
  if maxLen >= 1000 then
    redis.call('XADD', events, 'MAXLEN', '~', capText, '*', 'e', json)
  elseif maxLen > 0 then
    redis.call('XADD', events, 'MAXLEN', capText, '*', 'e', json)
  end
end

-- One concatenation (Lua makes one string of it), no table: an event is built per job change,
-- and each intermediate string costs Lua an allocation and a hash.
local function jobEvent(type, now, id, job, extra)
  local handler, tenant, scheduleId = job.handler, job.tenant, job.scheduleId
  return '{"type":"' .. type .. '","at":' .. int(now) .. ',"jobId":' .. jsonString(id)
    .. (handler and ',"handler":' or '') .. (handler and jsonString(handler) or '')
    .. (tenant and ',"tenant":' or '') .. (tenant and jsonString(tenant) or '')
    .. (scheduleId and ',"scheduleId":' or '') .. (scheduleId and jsonString(scheduleId) or '')
    .. (extra and ',' or '') .. (extra or '') .. '}'
end
