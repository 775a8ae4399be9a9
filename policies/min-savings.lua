--[[
min-savings.lua: approve a consolidation only when it saves at least
MIN_DOLLARS per hour and at least MIN_FRACTION of what the nodes it removes
cost. Deleting empty nodes is not a consolidation and is not affected.
]]

local MIN_DOLLARS = 0.05   -- $/hour
local MIN_FRACTION = 0.20  -- of the removed nodes' price

local function enough(cmd)
  return cmd.savings >= MIN_DOLLARS and cmd.savings >= MIN_FRACTION * cmd.price
end

return {
  approve = function(cmd)
    return enough(cmd)
  end,

  selftest = function()
    assert(enough({ savings = 0.10, price = 0.30 }))
    assert(not enough({ savings = 0.01, price = 0.02 }))    -- too few dollars
    assert(not enough({ savings = 0.06, price = 1.00 }))    -- too small a share
    return true
  end,
}
