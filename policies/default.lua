--[[
default.lua: dovetail's built-in decisions, restated as a policy.

Loading it must not change any decision (a spec proves it on the benchmark
workloads). Copy it as the starting point of your own policy: every hook is
optional, and a hook you delete falls back to the same built-in default.

  price(offerings)        -> prices (nil makes an offering unavailable)
  score(offering)         -> a score, lower wins; nil excludes the offering
  rank(claim, offerings)  -> scores for one claim (only when the choice needs
                             the claim: score is computed once per offering,
                             rank once per node launched)
]]

local policy = {}

-- The catalog's price (an explicit spot offering without a price was already
-- priced at on-demand x 0.6, the IBM Cloud provider's default discount).
function policy.price(offerings)
  local out = {}
  for i, o in ipairs(offerings) do out[i] = o.price end
  return out
end

-- Reserved capacity first while it lasts (it is already paid for), then the
-- cheapest; dovetail breaks ties by instance type name, then zone.
function policy.score(o)
  return (o.capacityType == "reserved" and 0 or 1e9) + o.price
end

function policy.selftest()
  return policy.score({ capacityType = "reserved", price = 0.2 }) < policy.score({ capacityType = "on-demand", price = 0.1 })
end

return policy
