--[[
balanced.lua: Karpenter's Balanced consolidation policy as an approve hook,
for NodePools whose consolidationPolicy is WhenEmptyOrUnderutilized.

A move is approved when the share of the pool's cost it saves, divided by the
share of the pool's disruption it causes, is at least 1/K (K = 2):

  score = (savings / poolCost) / (disruption / poolDisruption) >= 1 / K

Disruption is Karpenter's reschedule cost: 1 per node plus each pod's
eviction cost (1, adjusted by pod-deletion-cost and priority). Raise K to
approve more moves, lower it to approve fewer.
]]

local K = 2

local function score(cmd)
  if cmd.savings <= 0 then return 0 end
  if cmd.disruption <= 0 or cmd.poolDisruption <= 0 then return math.huge end
  return (cmd.savings / cmd.poolCost) / (cmd.disruption / cmd.poolDisruption)
end

return {
  approve = function(cmd)
    return score(cmd) >= 1 / K
  end,

  selftest = function()
    -- saves a third of the pool for half its disruption: 0.67, approved
    assert(score({ savings = 1, poolCost = 3, disruption = 5, poolDisruption = 10 }) >= 1 / K)
    -- saves a tenth for half its disruption: 0.2, refused
    assert(score({ savings = 1, poolCost = 10, disruption = 5, poolDisruption = 10 }) < 1 / K)
    return true
  end,
}
