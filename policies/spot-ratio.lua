--[[
spot-ratio.lua: cap the share of spot nodes a pool launches at MAX_SPOT
(a fraction). While under the cap the cheapest offering wins; once a new spot
node would take the pool over the cap, spot offerings are excluded and the
claim launches on-demand (or reserved).
]]

local MAX_SPOT = 0.5

return {
  rank = function(claim, offerings)
    local total = claim.nodesInPool + 1
    local spot_ok = (claim.spotNodesInPool + 1) / total <= MAX_SPOT
    local out = {}
    for i, o in ipairs(offerings) do
      if o.capacityType == "spot" and not spot_ok then
        out[i] = nil
      else
        out[i] = (o.capacityType == "reserved" and 0 or 1e9) + o.price
      end
    end
    return out
  end,
}
