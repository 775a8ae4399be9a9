--[[
prefer-amd64.lua: keep workloads on amd64 unless arm64 (Graviton) saves at
least SAVINGS (a fraction) over the cheapest amd64 offering. Reservations
still come first. Change SAVINGS (try 0.10) and rerun:

  ./build/rel/dovetail plan -o table --policy examples/policies/prefer-amd64.lua examples/mixed-arch.yaml
]]

local SAVINGS = 0.25

return {
  rank = function(_, offerings)
    local cheapest_amd = math.huge
    for _, o in ipairs(offerings) do
      if o.arch == "amd64" and o.price < cheapest_amd then cheapest_amd = o.price end
    end
    local out = {}
    for i, o in ipairs(offerings) do
      local arm_worth_it = o.arch == "arm64" and o.price <= cheapest_amd * (1 - SAVINGS)
      local penalty = (o.arch == "amd64" or arm_worth_it) and 0 or 1e6
      out[i] = (o.capacityType == "reserved" and 0 or 1e9) + penalty + o.price
    end
    return out
  end,

  selftest = function()
    return SAVINGS >= 0 and SAVINGS < 1
  end,
}
