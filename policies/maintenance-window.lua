--[[
maintenance-window.lua: no voluntary disruption outside a weekly window.
Inside the window the NodePools' own budgets apply; outside it every reason
(Empty, Drifted, Underutilized) gets a budget of 0. Expiry is forceful and not
budgeted, as in Karpenter.

The window is given in UTC: DAY (0 = Sunday ... 6 = Saturday), START hour and
HOURS long (it may run past midnight).
]]

local DAY, START, HOURS = 6, 2, 4 -- Saturday 02:00-06:00 UTC

local function in_window(now)
  local days = now // 86400
  local dow = (days + 4) % 7 -- 1970-01-01 was a Thursday
  local hour = (now % 86400) / 3600
  local since = ((dow - DAY) % 7) * 24 + hour - START -- hours since the window last opened
  return since >= 0 and since < HOURS
end

return {
  budget = function(_, _, ctx)
    if in_window(ctx.now) then return nil end -- keep the NodePool's budget
    return 0
  end,

  selftest = function()
    assert(in_window(1795834800))       -- 2026-11-28 (Saturday) 03:00 UTC
    assert(not in_window(1795435200))   -- 2026-11-23 (Monday) 12:00 UTC
    assert(not in_window(1795845600))   -- Saturday 06:00, just closed
    return true
  end,
}
