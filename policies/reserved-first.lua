--[[
reserved-first.lua: capacity reservations first, then spot, then on-demand,
each by price. Karpenter's AWS provider launches in this order (reserved >
spot > on-demand) whatever the prices, so this is the policy for clusters
that want its exact precedence rather than dovetail's "reserved, then
cheapest".
]]

local order = { reserved = 0, spot = 1, ["on-demand"] = 2 }

return {
  score = function(o) return order[o.capacityType] * 1e9 + o.price end,

  selftest = function()
    local s = order.spot * 1e9 + 0.5 < order["on-demand"] * 1e9 + 0.1
    return s
  end,
}
