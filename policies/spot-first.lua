--[[
spot-first.lua: launch spot whenever a spot offering fits, even when an
on-demand offering is cheaper (it rarely is); reservations still come first
because they are already paid for. Without spot, fall back to on-demand.
]]

local weight = { reserved = 0, spot = 1, ["on-demand"] = 2 }

return {
  score = function(o) return weight[o.capacityType] * 1e9 + o.price end,
}
