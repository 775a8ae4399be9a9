local h = require "helper"
local dt = h.dt

describe("Kubernetes quantities", function()
  it("parses milli, decimal, binary and exponent forms exactly", function()
    assert.are.equal(100, dt.milli("100m"))
    assert.are.equal(500, dt.milli("0.5"))
    assert.are.equal(1000, dt.milli("1"))
    assert.are.equal(1610612736000, dt.milli("1.5Gi"))
    assert.are.equal(1000000000000, dt.milli("1G"))
    assert.are.equal(1000000, dt.milli("1e3"))
    assert.are.equal(129000000000, dt.milli("129e6"))
    assert.are.equal(1024000, dt.milli("1Ki"))
    assert.are.equal(100, dt.milli("0.1"))
    assert.are.equal(1, dt.milli("1n")) -- rounds up to the next milli-unit, as MilliValue does
    assert.are.equal(2000, dt.milli("+2"))
  end)

  it("returns plain values with dt.quantity", function()
    assert.are.equal(536870912, dt.quantity("512Mi"))
    assert.are.equal(0.25, dt.quantity("250m"))
    assert.are.equal(1000, dt.quantity("1k"))
  end)

  it("formats canonical quantities", function()
    assert.are.equal("1500m", dt.format_quantity(1500, "cpu"))
    assert.are.equal("2", dt.format_quantity(2000, "cpu"))
    assert.are.equal("512Mi", dt.format_quantity(536870912000, "memory"))
  end)

  it("rejects an unknown suffix with a message that names it", function()
    local v, err = dt.milli("12Qi")
    assert.is_nil(v)
    assert.matches('unknown suffix "Qi"', err, 1, true)
  end)

  it("rejects garbage and empty strings", function()
    assert.is_nil(dt.milli("abc"))
    assert.is_nil(dt.milli(""))
    assert.is_nil(dt.milli("1.2.3"))
    assert.is_nil(dt.milli("1e"))
  end)

  it("rejects a quantity too large to represent", function()
    local v, err = dt.milli("99999999999999999999")
    assert.is_nil(v)
    assert.matches("too large", err)
  end)
end)
