--[[
spot-first.lua: launch spot whenever a spot offering fits, even when an
on-demand offering is cheaper (it rarely is); reservations still come first
because they are already paid for. Without spot, fall back to on-demand.
]]

local weight = { reserved = 0, spot = 1, ["on-demand"] = 2 }

return {
  rank = function(_, offerings)
    local out = {}
    for i, o in ipairs(offerings) do out[i] = weight[o.capacityType] * 1e9 + o.price end
    return out
  end,
}
