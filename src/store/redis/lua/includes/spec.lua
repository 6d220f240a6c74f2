--[[
  Include "spec" (needs "job"): a JobSpec passed in ARGV by beginRun and markDead, which create
  the job when it is missing (occurrences are created by their first delivery).

  ARGV[from .. from+8]: id, JobSpec JSON without createdAt and runAt ('' when scheduleId is: only
  an occurrence is created from it), createdAt, runAt, handler, scheduleId ('' = none), overlap
  ('' = none), runs index score (fireAt, else runAt), tenant.

  jobFromArgv(root, from)        Returns id, key, job: the stored job, or the new one. A missing
                                 job without scheduleId is not created (a submitted job exists
                                 before it is published, so it expired), nor one deleted from the
                                 dead-letter list: job is then nil.
  firstUse(root, tokenId, expiresAt, now)
                                 False when the delivery token was seen before (a replay); else
                                 remembers it until it expires (plus a minute for clock skew).
                                 An empty tokenId (no token) is always a first use.
  tokenUse(root, tokenId)        What an earlier use of the token recorded (see rememberToken), or
                                 nil for a first use (or no token).
  rememberToken(root, tokenId, expiresAt, now, value)
                                 Records a use of the token until it expires (plus a minute):
                                 `value` is the attempt it began, or '-'.
]]
--@include "keys"
--@include "job"

local function jobFromArgv(root, from)
  local id = ARGV[from]
  local key = jobKey(root, id)
  local job = readWholeJob(key)
  if not job then
    if ARGV[from + 5] == '' or redis.call('EXISTS', goneKey(root, id)) == 1 then
      return id, key, nil
    end
    job = { data = ARGV[from + 1], createdAt = ARGV[from + 2], runAt = ARGV[from + 3],
      handler = ARGV[from + 4], tenant = ARGV[from + 8] }
    if ARGV[from + 5] ~= '' then
      job.scheduleId = ARGV[from + 5]
    end
    if ARGV[from + 6] ~= '' then
      job.overlap = ARGV[from + 6]
    end
    createJob(root, id, job, ARGV[from + 7])
  end
  return id, key, job
end

local function tokenTtl(expiresAt, now)
  return int(math.max(1000, tonumber(expiresAt) - now + 60000))
end

local function firstUse(root, tokenId, expiresAt, now)
  if tokenId == '' then
    return true
  end
  return redis.call('SET', deliveryKey(root, tokenId), '-', 'PX', tokenTtl(expiresAt, now), 'NX')
    ~= false
end

local function tokenUse(root, tokenId)
  if tokenId == '' then
    return nil
  end
  local used = redis.call('GET', deliveryKey(root, tokenId))
  return used or nil
end

local function rememberToken(root, tokenId, expiresAt, now, value)
  if tokenId ~= '' then
    redis.call('SET', deliveryKey(root, tokenId), value, 'PX', tokenTtl(expiresAt, now))
  end
end
