-- The requirements algebra, after Karpenter's pkg/scheduling/requirement_test.go.
local h = require "helper"
local dt = h.dt

local function R(op, values) return { operator = op, values = values } end

local exists = R("Exists")
local dne = R("DoesNotExist")
local inA, inB, inAB = R("In", { "A" }), R("In", { "B" }), R("In", { "A", "B" })
local notInA = R("NotIn", { "A" })
local in1, in9, in19 = R("In", { "1" }), R("In", { "9" }), R("In", { "1", "9" })
local notIn12 = R("NotIn", { "1", "2" })
local gt1, gt9, lt1, lt9 = R("Gt", { "1" }), R("Gt", { "9" }), R("Lt", { "1" }), R("Lt", { "9" })

local function check(a, b, op, values, compatible)
  local r, ok = dt.intersect(a, b)
  assert.are.equal(op, r.operator)
  assert.are.same(values or {}, r.values)
  if compatible ~= nil then assert.are.equal(compatible, ok) end
  return r
end

describe("requirements algebra", function()
  it("intersects Exists with everything as the identity", function()
    check(exists, exists, "Exists", {}, true)
    check(exists, inA, "In", { "A" }, true)
    check(exists, notInA, "NotIn", { "A" }, true)
    check(exists, dne, "DoesNotExist", {}, false)
  end)

  it("treats DoesNotExist as compatible only with NotIn and DoesNotExist", function()
    check(dne, dne, "DoesNotExist", {}, true)
    check(dne, notInA, "DoesNotExist", {}, true)
    check(dne, inA, "DoesNotExist", {}, false)
    check(dne, gt1, "DoesNotExist", {}, false)
  end)

  it("intersects value sets", function()
    check(inA, inB, "DoesNotExist", {}, false)
    check(inA, inAB, "In", { "A" }, true)
    check(inAB, notInA, "In", { "B" }, true)
    check(notInA, R("NotIn", { "B" }), "NotIn", { "A", "B" }, true)
    check(inA, notInA, "DoesNotExist", {}, false)
  end)

  it("applies Gt and Lt bounds to integer values", function()
    check(in19, gt1, "In", { "9" }, true)
    check(in19, lt9, "In", { "1" }, true)
    check(in1, gt1, "DoesNotExist", {}, false)
    check(in9, lt9, "DoesNotExist", {}, false)
    check(notIn12, gt1, "NotIn", { "2" }, true) -- 1 falls outside the bound and is dropped
  end)

  it("turns crossing bounds into DoesNotExist", function()
    check(gt9, lt1, "DoesNotExist", {}, false)
    check(gt1, lt1, "DoesNotExist", {}, false)
    local r = check(gt1, lt9, "Exists", {}, true)
    assert.are.equal(2, r.gte)
    assert.are.equal(8, r.lte)
  end)

  it("drops non-integer values under a bound", function()
    check(inAB, gt1, "DoesNotExist", {}, false)
  end)
end)
