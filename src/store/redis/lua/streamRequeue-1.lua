--[[
  streamRequeue: deliver a pulled delivery again later (a retry after its backoff, or a busy job
  after the time it was told to wait), atomically with acknowledging the entry read: the delivery
  is never in neither place nor (for long) in both.
  Input:
    KEYS[1] root
    ARGV[1] stream entry id read
    ARGV[2] member (the job id)
    ARGV[3] retries the new delivery has had
    ARGV[4] delay (ms, from the server's now)
    ARGV[5] JobSpec JSON
  Output: 1 when the entry was still pending, else 0 (another consumer acknowledged it, e.g. one
          frozen past its lease that woke up): the delivery is put back either way, since this
          attempt's outcome is what asked for it (a second copy is harmless: begin-run decides).
]]
--@include "time"
--@include "streams"

local root = KEYS[1]
local stream = streamKey(root)
local acked = redis.call('XACK', stream, STREAM_GROUP, ARGV[1])
redis.call('XDEL', stream, ARGV[1])
local now = nowMs()
streamDispatch(root, ARGV[2], ARGV[5], tonumber(ARGV[3]), now + tonumber(ARGV[4]), now)
return acked
