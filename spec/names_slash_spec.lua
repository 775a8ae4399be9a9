-- Names and namespaces that hold a "/" are refused, as Kubernetes refuses
-- them: "Kind/namespace/name" keys (the daemon's store, duplicate checks,
-- "ns/name" in plans) are unique only without one. A "," likewise: claims
-- list their nominated pods comma-separated.
local h = require "helper"

describe("a name or namespace with a /", function()
  it("is refused with the field, not taken for a duplicate of another object", function()
    local f = h.write(h.docs(h.pod("a/b", { namespace = "x" }), h.pod("b", { namespace = "x/a" })))
    local _, err, code = h.cli("plan " .. f)
    assert.equal(1, code)
    assert.matches("Pod a/b: metadata.name: holds a \"/\"", err, 1, true)
    f = h.write(h.docs(h.pod("b", { namespace = "x/a" })))
    _, err, code = h.cli("plan " .. f)
    assert.equal(1, code)
    assert.matches("metadata.namespace: holds a \"/\"", err, 1, true)
  end)

  it("and one with a comma is refused too: a claim's dovetail.dev/pods lists its pods comma-separated", function()
    -- a pod named p,1 went into claims' lists as two entries, and every round after logged an error
    local f = h.write(h.docs(h.pod("p,1")))
    local _, err, code = h.cli("plan " .. f)
    assert.equal(1, code)
    assert.matches("Pod p,1: metadata.name: holds a \",\"", err, 1, true)
    f = h.write(h.docs(h.pod("p", { namespace = "a,b" })))
    _, err, code = h.cli("plan " .. f)
    assert.equal(1, code)
    assert.matches("metadata.namespace: holds a \",\"", err, 1, true)
  end)
end)
