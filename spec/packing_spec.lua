-- Cost-aware packing: a re-pack after first-fit-decreasing, kept only when
-- strictly cheaper, never touching pods with topology or host ports.
local h = require "helper"

local function pods(n, cpu, memory, extra)
  local out = { h.nodepool("default") }
  for i = 1, n do out[#out + 1] = h.pod("p" .. i, { cpu = cpu, memory = memory, extra = extra }) end
  return h.docs(table.unpack(out))
end

local function cost(manifests, packing, catalog)
  return h.plan(manifests, { packing = packing, catalog_text = catalog }).summary.hourlyCost
end

describe("cost-aware packing", function()
  it("splits a first-fit claim when two smaller nodes cost less", function()
    local m = pods(6, "1", "1Gi")
    local ffd = h.plan(m, { packing = "ffd", catalog_text = h.small_catalog })
    local p = h.plan(m, { catalog_text = h.small_catalog })
    assert.are.equal(0.15, ffd.summary.hourlyCost)
    assert.are.equal(0.14, p.summary.hourlyCost)
    assert.are.equal(2, #p.nodeClaims)
    assert.are.equal("medium", p.nodeClaims[1].instanceType)
    assert.are.equal(6, p.summary.scheduled)
  end)

  it("is never more expensive than first-fit on the bundled catalog", function()
    for _, shape in ipairs { { 40, "1", "1792Mi" }, { 25, "2", "3584Mi" }, { 9, "8", "56Gi" }, { 70, "250m", "512Mi" } } do
      local m = pods(shape[1], shape[2], shape[3])
      assert.is_true(cost(m, "cost") <= cost(m, "ffd") + 1e-9, shape[2] .. "/" .. shape[3])
    end
  end)

  it("cuts the cost of a broad catalog several times over", function()
    local out = { h.nodepool("default", { requirements = { { "karpenter.sh/capacity-type", "In", { "on-demand" } } } }) }
    for i = 1, 200 do out[#out + 1] = h.pod("p" .. i, { cpu = "1", memory = "1792Mi" }) end
    local m = h.docs(table.unpack(out))
    local ffd, improved = cost(m, "ffd"), cost(m, "cost")
    assert.is_true(improved < ffd / 2, ("ffd %.3f, cost %.3f"):format(ffd, improved))
  end)

  -- Three types; every pod asks for 3 GiB and no type has more than 16 GiB,
  -- so a node holds at most 5 pods and n pods need n/5 nodes at $0.36 (the
  -- cheapest type) at least. That bound is reached only by mixing 2 large
  -- and 3 small pods on every 8-cpu node; first-fit, and greedy fills that
  -- value each node alone, leave it on the table.
  local mix_catalog = [[
{ "region": "test-1", "provider": "generic", "zones": ["test-1a"],
  "instanceTypes": [
    { "name": "wide", "family": "t", "arch": "amd64", "cpu": 4, "memoryMiB": 16384, "maxPods": 50,
      "onDemandPrice": 0.37, "overhead": { "cpu": "0", "memory": "0" } },
    { "name": "fast", "family": "t", "arch": "amd64", "cpu": 8, "memoryMiB": 16384, "maxPods": 50,
      "onDemandPrice": 0.36, "overhead": { "cpu": "0", "memory": "0" } },
    { "name": "tiny", "family": "t", "arch": "amd64", "cpu": 4, "memoryMiB": 8192, "maxPods": 50,
      "onDemandPrice": 0.43, "overhead": { "cpu": "0", "memory": "0" } }
  ] }
]]
  local function mix(large, small, pool)
    local out = { pool or h.nodepool("default") }
    for i = 1, large do out[#out + 1] = h.pod("l" .. i, { cpu = "2", memory = "3Gi" }) end
    for i = 1, small do out[#out + 1] = h.pod("s" .. i, { cpu = "500m", memory = "3Gi" }) end
    return h.docs(table.unpack(out))
  end

  it("reaches the optimum when pods of two shapes must share nodes", function()
    local m = mix(4, 6)
    assert.are.equal(1.08, cost(m, "ffd", mix_catalog))
    local p = h.plan(m, { catalog_text = mix_catalog })
    assert.are.equal(0.72, p.summary.hourlyCost)
    assert.are.equal(2, #p.nodeClaims)
    for _, c in ipairs(p.nodeClaims) do
      assert.are.equal("fast", c.instanceType)
      assert.are.equal(5, #c.pods)
    end
  end)

  it("reaches it at scale too, where the pattern LP's whole nodes carry the plan", function()
    local m = mix(400, 600)
    assert.are.equal(79.2, cost(m, "ffd", mix_catalog))
    local p = h.plan(m, { catalog_text = mix_catalog })
    assert.are.equal(200, #p.nodeClaims)
    assert.is_true(math.abs(p.summary.hourlyCost - 72) < 1e-6, tostring(p.summary.hourlyCost))
    assert.are.equal(1000, p.summary.scheduled)
  end)

  it("re-packs a pool with minValues only when every node's options still meet them", function()
    local function types_at_least(n)
      return h.nodepool("default", {
        requirements = { { "node.kubernetes.io/instance-type", "Exists", minValues = n } },
      })
    end
    -- one type may serve: the mixed nodes are fine
    assert.are.equal(0.72, cost(mix(4, 6, types_at_least(1)), "cost", mix_catalog))
    -- two must: a node of 2 large and 3 small pods fits one type only, so
    -- first-fit's plan (whose claims keep two options each) stays
    local m = mix(4, 6, types_at_least(2))
    assert.are.equal(cost(m, "ffd", mix_catalog), cost(m, "cost", mix_catalog))
  end)

  local function six_in(limits)
    local out = { h.nodepool("default", { limits = limits }) }
    for i = 1, 6 do out[#out + 1] = h.pod("p" .. i, { cpu = "1", memory = "1Gi" }) end
    return h.plan(h.docs(table.unpack(out)), { catalog_text = h.small_catalog })
  end

  it("re-packs in a pool with limits, charged as first-fit charges claims", function()
    local p = six_in { cpu = "1000" }
    assert.are.equal(0.14, p.summary.hourlyCost)
    assert.are.equal(2, #p.nodeClaims)
  end)

  it("keeps first-fit's plan when the re-pack would break the pool's limits", function()
    -- two medium nodes are cheaper, but the pool may have one node only
    local p = six_in { nodes = "1" }
    assert.are.equal(0.15, p.summary.hourlyCost)
    assert.are.equal(1, #p.nodeClaims)
    assert.are.equal(6, p.summary.scheduled)
  end)

  it("keeps every pod: each pending pod is on exactly one claim", function()
    local p = h.plan(pods(37, "1", "1792Mi"))
    assert.are.equal(37, h.claimed_once(p))
  end)

  it("leaves pods with topology constraints where first-fit put them", function()
    local anti = [[
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {app: solo}}]]
    local m = pods(3, "1", "1Gi", anti):gsub("namespace: default", "namespace: default\n  labels: {app: solo}")
    local p = h.plan(m, { catalog_text = h.small_catalog })
    assert.are.equal(3, #p.nodeClaims)
    for _, c in ipairs(p.nodeClaims) do assert.are.equal(1, #c.pods) end
  end)

  it("is deterministic", function()
    local m = pods(50, "1", "1792Mi")
    assert.are.equal(h.plan(m, { format = "json" }), h.plan(m, { format = "json" }))
  end)

  -- Inferentia has no GPU count (in Karpenter's labels too), so "instance-gpu-count
  -- DoesNotExist" admits it; a pod that asks for no device pays for one only when the type
  -- with it is the cheapest for the pod's cpu and memory anyway.
  local function accel_catalog(inf_price)
    return ([[
{ "region": "test-1", "provider": "generic", "zones": ["test-1a"],
  "instanceTypes": [
    { "name": "inf", "family": "inf", "arch": "amd64", "cpu": 4, "memoryMiB": 8192, "maxPods": 20,
      "onDemandPrice": %s, "overhead": { "cpu": "0", "memory": "0" },
      "extendedResources": { "aws.amazon.com/neuron": 1 },
      "labels": { "karpenter.k8s.aws/instance-accelerator-count": "1" } },
    { "name": "plain", "family": "m", "arch": "amd64", "cpu": 4, "memoryMiB": 8192, "maxPods": 20,
      "onDemandPrice": 0.20, "overhead": { "cpu": "0", "memory": "0" } }
  ] }
]]):format(inf_price)
  end
  local function no_gpu_pods()
    local out = { h.nodepool("default", { requirements = { { "karpenter.k8s.aws/instance-gpu-count", "DoesNotExist" } } }) }
    for i = 1, 6 do out[#out + 1] = h.pod("p" .. i, { cpu = "1", memory = "1Gi" }) end
    return h.docs(table.unpack(out))
  end

  it("puts pods that ask for no device on a type without one when an accelerator type costs the same", function()
    for _, packing in ipairs { "ffd", "cost" } do
      local p = h.plan(no_gpu_pods(), { packing = packing, catalog_text = accel_catalog("0.20") })
      assert.are.equal(2, #p.nodeClaims)
      for _, c in ipairs(p.nodeClaims) do assert.are.equal("plain", c.instanceType, packing) end
    end
  end)

  it("puts them on an accelerator type only when it is the cheapest for their cpu and memory", function()
    local p = h.plan(no_gpu_pods(), { catalog_text = accel_catalog("0.19") })
    for _, c in ipairs(p.nodeClaims) do assert.are.equal("inf", c.instanceType) end
    assert.are.equal(0.38, p.summary.hourlyCost)
  end)

  it("rejects an unknown packing mode", function()
    local _, err, code = h.cli("plan --packing best examples/quickstart.yaml")
    assert.are.equal(2, code)
    assert.matches("expected ffd or cost", err, 1, true)
  end)
end)
