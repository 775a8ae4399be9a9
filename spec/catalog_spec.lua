-- Catalog loading: offerings, overhead, labels, and bad catalogs.
local h = require "helper"

local function plan_with(catalog, manifests)
  return h.dt.plan { catalog_text = catalog, manifests = manifests }
end

describe("the bundled AWS catalog", function()
  it("applies Karpenter's overhead formulas (m5.large: 1930m cpu, 6903Mi memory allocatable)", function()
    local np = h.nodepool("default", { requirements = { { "node.kubernetes.io/instance-type", "In", { "m5.large" } } } })
    local yaml = h.plan(h.docs(np, h.pod("p", { cpu = "100m", memory = "100Mi" })), { format = "yaml" })
    assert.matches("cpu: 1930m", yaml, 1, true)
    assert.matches("memory: 6903Mi", yaml, 1, true)
    assert.matches('pods: "29"', yaml, 1, true)
  end)

  it("refuses a pod that exceeds m5.large's allocatable even though it is under its capacity", function()
    local np = h.nodepool("default", { requirements = { { "node.kubernetes.io/instance-type", "In", { "m5.large" } } } })
    local plan = h.plan(h.docs(np, h.pod("p", { cpu = "1950m", memory = "1Gi" })))
    assert.are.equal(1, #plan.unschedulable)
    assert.matches("1930m allocatable", plan.unschedulable[1].reason, 1, true)
  end)

  it("labels nodes with Karpenter's well-known and AWS keys", function()
    local np = h.nodepool("default", { requirements = {
      { "karpenter.k8s.aws/instance-category", "In", { "c" } },
      { "karpenter.k8s.aws/instance-generation", "Gt", { "6" } },
      { "karpenter.k8s.aws/instance-cpu", "Lt", { "5" } },
      { "kubernetes.io/arch", "In", { "arm64" } },
      { "karpenter.sh/capacity-type", "In", { "on-demand" } },
    } })
    local plan = h.plan(h.docs(np, h.pod("p", { cpu = "1", memory = "1Gi" })))
    local c = plan.nodeClaims[1]
    assert.matches("^c[789]g", c.instanceType)
    assert.are.equal("on-demand", c.capacityType)
    for _, t in ipairs(c.instanceTypeOptions) do assert.matches("^c%d+g", t) end
  end)

  it("picks the cheapest offering: spot when the pool allows it", function()
    local np = h.nodepool("default", { requirements = { { "node.kubernetes.io/instance-type", "In", { "m5.large" } } } })
    local plan = h.plan(h.docs(np, h.pod("p", { cpu = "1" })))
    assert.are.equal("spot", plan.nodeClaims[1].capacityType)
    assert.is_true(plan.nodeClaims[1].price < 0.096)
  end)
end)

describe("a catalog file", function()
  it("derives on-demand and spot offerings per zone, and uses explicit overhead", function()
    local plan = plan_with(h.small_catalog, h.docs(h.nodepool("default"), h.pod("p", { cpu = "1500m" })))
    local c = plan.nodeClaims[1]
    assert.are.equal("small", c.instanceType)
    assert.are.equal("spot", c.capacityType)
    assert.are.equal(0.04, c.price)
    assert.are.equal("test-1a", c.zone)
  end)

  it("honours explicit offerings and their availability", function()
    local cat = [[{"zones":["z1","z2"],"instanceTypes":[
      {"name":"a","cpu":2,"memoryMiB":4096,"onDemandPrice":0.1,
       "offerings":[{"zone":"z1","capacityType":"on-demand","price":0.1,"available":false},
                    {"zone":"z2","capacityType":"on-demand","price":0.12,"available":true}]}]}]]
    local plan = plan_with(cat, h.docs(h.nodepool("default", { requirements = {} }), h.pod("p", { cpu = "1" })))
    assert.are.equal("z2", plan.nodeClaims[1].zone)
    assert.are.equal(0.12, plan.nodeClaims[1].price)
  end)

  it("never launches more than an offering's availability count", function()
    local cat = [[{"zones":["z1"],"instanceTypes":[
      {"name":"a","cpu":2,"memoryMiB":4096,"onDemandPrice":0.1,"overhead":{"cpu":"0"},
       "offerings":[{"zone":"z1","capacityType":"on-demand","available":2}]}]}]]
    local pods = { h.nodepool("default", { requirements = {} }) }
    for i = 1, 3 do pods[#pods + 1] = h.pod("p" .. i, { cpu = "2", memory = "1Gi" }) end
    local plan = plan_with(cat, h.docs(table.unpack(pods)))
    assert.are.equal(2, #plan.nodeClaims)
    assert.are.equal(1, #plan.unschedulable)
    assert.matches("exhausted", plan.unschedulable[1].reason)
  end)

  it("rejects a type with no offerings, naming the file and the type", function()
    local cat = [[{"instanceTypes":[{"name":"lonely","cpu":2,"memoryMiB":4096,"onDemandPrice":0.1,"zones":[]}]}]]
    local _, err = plan_with(cat, "")
    assert.matches("catalog_text: instanceTypes[0] (lonely): no offerings", err, 1, true)
  end)

  it("says why a quantity does not read, and that a negative one is refused", function()
    local function eph(q)
      return select(2, plan_with('{"zones":["z"],"instanceTypes":[{"name":"a","cpu":2,"memoryMiB":4096,'
        .. '"onDemandPrice":0.1,"ephemeralStorage":"' .. q .. '"}]}', ""))
    end
    -- the parse's own message, never "must not be negative" for what does not read
    local err = eph("12Qi")
    assert.matches("instanceTypes[0] (a): ephemeralStorage: ", err, 1, true)
    assert.is_nil(err:find("negative", 1, true), err)
    assert.matches("instanceTypes[0] (a): ephemeralStorage: must not be negative", eph("-1Gi"), 1, true)
  end)

  it("rejects a price that is not a number", function()
    local cat = [[{"zones":["z"],"instanceTypes":[{"name":"a","cpu":2,"memoryMiB":4096,"onDemandPrice":"cheap"}]}]]
    local _, err = plan_with(cat, "")
    assert.matches("instanceTypes[0] (a): onDemandPrice: expected a number", err, 1, true)
  end)

  it("rejects a reservation naming an unknown instance type", function()
    local cat = [[{"zones":["z"],"instanceTypes":[{"name":"a","cpu":2,"memoryMiB":4096,"onDemandPrice":0.1}],
      "reservations":[{"id":"cr-1","instanceType":"b","zone":"z","count":1}]}]]
    local _, err = plan_with(cat, "")
    assert.matches('reservations[0] (cr-1).instanceType: unknown instance type "b"', err, 1, true)
  end)

  it("reports a file that does not exist", function()
    local _, err, code = h.cli("plan --catalog /nonexistent/catalog.json " .. h.fixtures .. "empty.yaml")
    assert.are_not.equal(0, code)
    assert.matches("/nonexistent/catalog.json: cannot open", err, 1, true)
  end)
end)
