--[[
  deferOutbox: the queue could not take these messages yet (due beyond its longest delay): each
  one that still carries the dedupId it was published with (compare-and-set, as ackOutbox; an
  entry without a body is its job's first message, whose dedupId is the job's id: include
  "outbox") gets recoverAt = the given time, so the tick's recover step does not re-publish it
  before then.
  Unfenced: harmless to repeat.
  Input:
    KEYS[1] outbox
    KEYS[2] outbox messages
    ARGV[1...] triples: message id, dedupId, recoverAt (integer ms)
  Output: number of messages moved
]]
--@include "outbox"

local outbox, messages = KEYS[1], KEYS[2]
local moved = 0
for i = 1, #ARGV - 2, 3 do
  local id = ARGV[i]
  if carries(outbox, id, ARGV[i + 1], redis.call('HGET', messages, id)) then
    redis.call('ZADD', outbox, 'XX', ARGV[i + 2], id)
    moved = moved + 1
  end
end
return moved
