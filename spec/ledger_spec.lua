-- The offering ledger: capacity types, reservations, unavailable offerings,
-- spot prices and caps.
local h = require "helper"

local catalog = [[
{ "region": "test-1", "provider": "generic", "zones": ["z1", "z2"],
  "instanceTypes": [
    { "name": "small", "arch": "amd64", "cpu": 2, "memoryMiB": 4096, "maxPods": 20, "onDemandPrice": 0.10,
      "spotPrice": 0.04, "overhead": { "cpu": "0", "memory": "0" } },
    { "name": "large", "arch": "amd64", "cpu": 8, "memoryMiB": 16384, "maxPods": 80, "onDemandPrice": 0.40,
      "spotPrice": 0.12, "overhead": { "cpu": "0", "memory": "0" } }
  ],
  "reservations": [ { "id": "cr-small", "instanceType": "small", "zone": "z2", "count": 2 } ] }
]]

local function plan(manifests, extra)
  extra = extra or {}
  extra.catalog_text = extra.catalog_text or catalog
  return h.plan(manifests, extra)
end

local function pool(cts, extra)
  local o = extra or {}
  o.requirements = { { "karpenter.sh/capacity-type", "In", cts } }
  return h.nodepool("default", o)
end

local function pods(n, cpu)
  local out = {}
  for i = 1, n do out[#out + 1] = h.pod("p" .. i, { cpu = cpu or "1500m", memory = "1Gi" }) end
  return table.unpack(out)
end

describe("capacity types", function()
  it("follows the NodePool's capacity-type requirement", function()
    assert.are.equal("on-demand", plan(h.docs(pool { "on-demand" }, pods(1))).nodeClaims[1].capacityType)
    assert.are.equal("spot", plan(h.docs(pool { "spot", "on-demand" }, pods(1))).nodeClaims[1].capacityType)
  end)

  it("labels spot nodes as interruptible", function()
    local yaml = plan(h.docs(pool { "spot" }, pods(1)), { format = "yaml" })
    assert.matches('cluster.x-k8s.io/interruptible: "true"', yaml, 1, true)
    assert.matches("karpenter.sh/capacity-type: spot", yaml, 1, true)
  end)

  it("explains a NodePool that allows only a capacity type no offering has", function()
    local cat = catalog:gsub(',\n  "reservations".*%]', "")
    local p = plan(h.docs(pool { "reserved" }, pods(1)), { catalog_text = cat })
    assert.matches("no instance type in NodePool default satisfies the pod's requirements", p.unschedulable[1].reason, 1, true)
  end)
end)

describe("capacity reservations", function()
  it("are preferred while they last and never over-subscribed", function()
    local p = plan(h.docs(pool { "reserved", "on-demand" }, pods(2)))
    for _, c in ipairs(p.nodeClaims) do
      assert.are.equal("reserved", c.capacityType)
      assert.are.equal("cr-small", c.reservationID)
      assert.are.equal("z2", c.zone)
    end
    assert.are.equal(2, #p.nodeClaims)
  end)

  it("defer a pod whose NodePool could use a reservation other claims hold, as Karpenter's strict mode", function()
    local p = plan(h.docs(pool { "reserved", "on-demand" }, pods(3)))
    assert.are.equal(2, #p.nodeClaims)
    assert.are.equal(1, #p.unschedulable)
    assert.matches("^deferred: a capacity reservation", p.unschedulable[1].reason)
  end)

  it("do not let a deferred pod fall through to a lower-weight NodePool", function()
    local od = h.nodepool("fallback", { weight = 1, requirements = { { "karpenter.sh/capacity-type", "In", { "on-demand" } } } })
    local p = plan(h.docs(pool({ "reserved" }, { weight = 50 }), od, pods(3)))
    for _, c in ipairs(p.nodeClaims) do assert.are.equal("default", c.nodePool) end
    assert.matches("^deferred", p.unschedulable[1].reason)
  end)

  it("count in-flight claims fed back as input", function()
    local first = plan(h.docs(pool { "reserved", "on-demand" }, pods(2)), { format = "yaml" })
    assert.matches("karpenter.k8s.aws/capacity-reservation-id: cr-small", first, 1, true)
    local more = h.docs(pool { "reserved", "on-demand" }, pods(3))
    local p = plan({ more, first })
    assert.are.equal(1, #p.nodeClaims)
    assert.are.equal("on-demand", p.nodeClaims[1].capacityType)
  end)

  it("reject a negative count", function()
    local cat = catalog:gsub('"count": 2', '"count": -1')
    local _, err = h.dt.plan { catalog_text = cat, manifests = "" }
    assert.matches("reservations[0] (cr-small).count: expected an integer >= 0", err, 1, true)
  end)

  it("reject an unknown zone", function()
    local cat = catalog:gsub('"zone": "z2"', '"zone": "z9"')
    local _, err = h.dt.plan { catalog_text = cat, manifests = "" }
    assert.matches('reservations[0] (cr-small).zone: unknown zone "z9"', err, 1, true)
  end)
end)

describe("unavailable offerings", function()
  local mark = [[
apiVersion: dovetail.dev/v1alpha1
kind: UnavailableOffering
metadata: {name: ice-1}
spec:
  capacityType: spot
  instanceType: small
  zone: z1
  markedAt: "2026-11-22T10:00:00Z"
]]

  it("are skipped while their TTL (3 minutes by default) runs", function()
    local p = plan(h.docs(pool { "spot" }, mark, pods(1)), { now = "2026-11-22T10:02:00Z" })
    assert.are.equal("z2", p.nodeClaims[1].zone)
    assert.are.equal(1, #p.unavailableOfferings)
    assert.are.equal("2026-11-22T10:03:00Z", p.unavailableOfferings[1].expiresAt)
  end)

  it("vanish by the clock", function()
    local p = plan(h.docs(pool { "spot" }, mark, pods(1)), { now = "2026-11-22T10:03:00Z" })
    assert.are.equal("z1", p.nodeClaims[1].zone)
    assert.are.equal(0, #p.unavailableOfferings)
  end)

  it("take a ttl and come from --unavailable FILE", function()
    local f = h.write(mark:gsub('markedAt: "2026%-11%-22T10:00:00Z"', 'markedAt: "2026-11-22T10:00:00Z"\n  ttl: 1h'))
    local cat = h.write(catalog)
    local m = h.write(h.docs(pool { "spot" }, pods(1)))
    local out, err, code = h.cli(("plan -o json --catalog %s --now 2026-11-22T10:30:00Z --unavailable %s %s"):format(cat, f, m))
    assert.are.equal(0, code, err)
    assert.matches('"zone": "z2"', out, 1, true)
    os.remove(f)
    os.remove(cat)
    os.remove(m)
  end)

  it("reject a bad capacity type or duration", function()
    local _, err = h.dt.plan { catalog_text = catalog, manifests = mark:gsub("capacityType: spot", "capacityType: cheap") }
    assert.matches("UnavailableOffering ice-1: spec.capacityType: expected on-demand, spot or reserved", err, 1, true)
    _, err = h.dt.plan { catalog_text = catalog, manifests = mark .. "  ttl: soon\n" }
    assert.matches("spec.ttl: expected a duration", err, 1, true)
  end)
end)

describe("spot prices", function()
  it("default to on-demand x 0.6 for a spot offering without a price", function()
    local cat = [[{"zones":["z1"],"instanceTypes":[{"name":"a","cpu":2,"memoryMiB":4096,"onDemandPrice":0.1,
      "overhead":{"cpu":"0"},"offerings":[{"zone":"z1","capacityType":"spot"}]}]}]]
    local p = plan(h.docs(pool { "spot" }, pods(1)), { catalog_text = cat })
    assert.are.equal(0.06, p.nodeClaims[1].price)
  end)

  it("are capped by the NodePool's dovetail.dev/spot-max-price", function()
    local ann = "metadata:\n  name: default\n  annotations:\n    dovetail.dev/spot-max-price: \"0.03\""
    local np = pool({ "spot", "on-demand" }):gsub("metadata:\n  name: default", ann)
    local p = plan(h.docs(np, pods(1)))
    assert.are.equal("on-demand", p.nodeClaims[1].capacityType)
    np = np:gsub('"0.03"', '"0.05"')
    assert.are.equal("spot", plan(h.docs(np, pods(1))).nodeClaims[1].capacityType)
  end)

  it("reject a max price that is not a number", function()
    local ann = "metadata:\n  name: default\n  annotations:\n    dovetail.dev/spot-max-price: cheap"
    local np = pool({ "spot" }):gsub("metadata:\n  name: default", ann)
    local _, err = h.dt.plan { catalog_text = catalog, manifests = np }
    assert.matches("dovetail.dev/spot-max-price: expected a price", err, 1, true)
  end)
end)

describe("control planes", function()
  it("may not run on spot", function()
    local np = pool({ "spot", "on-demand" }, { labels = { ["node-role.kubernetes.io/control-plane"] = "" } })
    local _, err = h.dt.plan { catalog_text = catalog, manifests = np }
    assert.matches("must not allow spot capacity", err, 1, true)
    np = pool({ "on-demand" }, { labels = { ["node-role.kubernetes.io/control-plane"] = "" } })
    assert.is_table(h.dt.plan { catalog_text = catalog, manifests = h.docs(np, pods(1)) })
  end)
end)
