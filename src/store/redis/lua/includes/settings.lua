--[[
  Include "settings" (needs "time"): a submit's settings, each sent as one text that is the same
  on every submit of a store, and parsed once per distinct text (docs/adr/0038-submit-settings.md).

  storeSettings(text)      `eventsMaxLen dispatch jobMs maxJobs maxRuns` (dispatch `outbox` or
                           `streams`) -> { maxLen = n, streams = bool, retention = the text
                           `jobMs maxJobs maxRuns` (include "job") }
  admissionSettings(text)  '' -> nil (no degradation policy); else `degradedDelayMs
                           criticalAction criticalDelayMs retryAfterMs evaluateEveryMs;policy`
                           (criticalAction `reject` or `delay`; the policy as include "degrade"
                           parses it, left as text until an evaluation needs it) ->
                           { degradedDelayMs, reject = bool, criticalDelayMs, retryAfterMs,
                           everyMs, policy }
  A text that does not parse raises an error (nothing is written).
]]
--@include "time"

-- Parsed texts; bounded like numberOf's table (a store sends one of each).
local settingsParsed, settingsHeld = {}, 0

local function rememberSettings(text, value)
  if settingsHeld >= 16 then
    settingsParsed, settingsHeld = {}, 0
  end
  settingsParsed[text] = value
  settingsHeld = settingsHeld + 1
  return value
end

local function storeSettings(text)
  local s = settingsParsed[text]
  if s then
    return s
  end
  local maxLen, dispatch, retention = string.match(text, '^(%d+) (%a+) (%d+ %d+ %d+)$')
  if not maxLen then
    error('ERR store settings: ' .. text)
  end
  return rememberSettings(text, { maxLen = tonumber(maxLen), streams = dispatch == 'streams',
    retention = retention })
end

local function admissionSettings(text)
  if text == '' then
    return nil
  end
  local a = settingsParsed[text]
  if a then
    return a
  end
  local degraded, action, critical, retryAfter, every, policy =
    string.match(text, '^(%S+) (%a+) (%S+) (%S+) (%S+);(.*)$')
  if not degraded then
    error('ERR admission settings: ' .. text)
  end
  return rememberSettings(text, { degradedDelayMs = tonumber(degraded), reject = action == 'reject',
    criticalDelayMs = tonumber(critical), retryAfterMs = tonumber(retryAfter),
    everyMs = tonumber(every) or 0, policy = policy })
end
