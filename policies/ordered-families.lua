--[[
ordered-families.lua: a user's ordering of instance families before price.
Offerings of the first family listed win over any later family; families not
listed come last; within a family the cheapest wins. Edit FAMILIES.
]]

local FAMILIES = { "m7i", "m6i", "c7i", "r7i" }

local rank_of = {}
for i, f in ipairs(FAMILIES) do rank_of[f] = i end

return {
  score = function(o)
    return (rank_of[o.family or ""] or (#FAMILIES + 1)) * 1e6 + o.price
  end,

  selftest = function()
    return rank_of.m7i == 1 and rank_of.r7i == 4
  end,
}
