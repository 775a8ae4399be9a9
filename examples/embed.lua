-- embed.lua: dovetail from stock lua5.4.
--   LUA_CPATH="build/rel/?.so;;" lua5.4 examples/embed.lua
local dt = require "dovetail"

local plan = assert(dt.plan { files = { "examples/quickstart.yaml" } })
local s = plan.summary
print(("%d pods, %d new node%s, $%.4f/hour"):format(s.pods, s.nodes, s.nodes == 1 and "" or "s", s.hourlyCost))
for _, claim in ipairs(plan.nodeClaims) do
  print(("%-16s %-14s %-11s %-9s %d pods"):format(claim.name, claim.instanceType, claim.zone,
    claim.capacityType, #claim.pods))
end
for _, u in ipairs(plan.unschedulable) do print("unschedulable", u.pod, u.reason) end

-- Quantities follow Kubernetes rules exactly.
assert(dt.milli("250m") == 250 and dt.quantity("1.5Gi") == 1610612736)
