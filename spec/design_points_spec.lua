-- Points the source designs make, one by one (Cluster API's spot design, Karpenter's
-- capacity-reservation and disruption-controls designs, KubeVirt's pool design).
local h = require "helper"

local catalog = [[
{ "region": "test-1", "provider": "generic", "zones": ["test-1a"],
  "instanceTypes": [
    { "name": "dear-spot", "cpu": 4, "memoryMiB": 8192, "onDemandPrice": 0.20, "spotPrice": 0.30,
      "overhead": { "cpu": "100m", "memory": "100Mi" } } ] }
]]

describe("spot's maximum price (Cluster API)", function()
  local function plan(cts, annotations)
    local pool = h.nodepool("default", { requirements = { { "karpenter.sh/capacity-type", "In", cts } } })
    if annotations then
      pool = pool:gsub("metadata:\n  name: default", "metadata:\n  name: default\n  annotations:\n" .. annotations)
    end
    return h.plan(h.docs(pool, h.pod("a")), { catalog_text = catalog })
  end

  it("defaults to the on-demand price: a spot offering dearer than on-demand is not launched", function()
    local p = plan({ "spot", "on-demand" })
    assert.are.equal("on-demand", p.nodeClaims[1].capacityType)
    assert.are.equal(0.2, p.nodeClaims[1].price)
    p = plan({ "spot" })
    assert.are.equal(0, #p.nodeClaims)
    assert.are.equal(1, #p.unschedulable)
  end)

  it("takes the NodePool's own maximum when it sets one", function()
    local p = plan({ "spot" }, '    dovetail.dev/spot-max-price: "0.5"')
    assert.are.equal("spot", p.nodeClaims[1].capacityType)
    assert.are.equal(0.3, p.nodeClaims[1].price)
  end)
end)

describe("the interruptible label (Cluster API)", function()
  local function plan(extra)
    local pool = h.nodepool("default", { requirements = { { "karpenter.sh/capacity-type", "In", { "spot", "on-demand" } } } })
    return h.plan(h.docs(pool, h.pod("a", { extra = extra })), { catalog_text = h.small_catalog })
  end

  it("is a node label of every spot offering: selecting it means spot", function()
    local p = plan("  nodeSelector:\n    cluster.x-k8s.io/interruptible: \"true\"")
    assert.are.equal("spot", p.nodeClaims[1].capacityType)
  end)

  it("counts a DaemonSet selecting it as running on spot nodes", function()
    local pool = h.nodepool("default", { requirements = { { "karpenter.sh/capacity-type", "In", { "spot" } } } })
    local ds = [[
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: spot-agent, namespace: kube-system}
spec:
  selector: {matchLabels: {app: spot-agent}}
  template:
    metadata: {labels: {app: spot-agent}}
    spec:
      nodeSelector: {cluster.x-k8s.io/interruptible: "true"}
      containers: [{name: a, resources: {requests: {cpu: "1"}}}]
]]
    -- small has 1900m after overhead: with the agent's 1 cpu, a 1.5-cpu pod needs a medium
    local p = h.plan(h.docs(pool, ds, h.pod("a", { cpu = "1500m" })), { catalog_text = h.small_catalog, packing = "ffd" })
    assert.are.equal("medium", p.nodeClaims[1].instanceType)
  end)

  it("requiring its absence means anything but spot", function()
    local p = plan([=[
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: cluster.x-k8s.io/interruptible, operator: DoesNotExist}]=])
    assert.are.equal("on-demand", p.nodeClaims[1].capacityType)
  end)
end)

describe("disruption budget schedules (Karpenter's disruption controls: UTC)", function()
  local function allowed(schedule, now, duration)
    local pool = { apiVersion = "karpenter.sh/v1", kind = "NodePool", metadata = { name = "default" },
      spec = { disruption = { budgets = { { nodes = "0", schedule = schedule, duration = duration or "1h" } } },
        template = { spec = { requirements = { { key = "kubernetes.io/arch", operator = "In", values = { "amd64" } } } } } } }
    local r, err = h.dt.disrupt { manifests = h.list { pool }, catalog_text = h.small_catalog, now = now }
    if not r then return nil, err end
    for _, b in ipairs(r.budgets) do
      if b.reason == "Empty" then return b.allowed end
    end
  end

  it("fails closed on a CRON_TZ= or TZ= prefix, as Karpenter, which cannot parse it: no disruption at any time", function()
    -- Karpenter parses "TZ=UTC " .. schedule; a second zone leaves six fields, the parse fails,
    -- and GetAllowedDisruptions returns 0 for the budget's reasons
    for _, sch in ipairs { "CRON_TZ=America/New_York 0 9 * * *", "TZ=Europe/Berlin 0 9 * * *",
      "CRON_TZ=Mars/Olympus 0 9 * * *", "TZ=UTC TZ=UTC 0 9 * * *" } do
      for _, now in ipairs { "2026-01-15T13:30:00Z", "2026-01-15T14:30:00Z", "2026-07-15T03:00:00Z" } do
        assert.are.equal(0, allowed(sch, now), sch .. " at " .. now)
      end
    end
    -- in UTC the window is the cron's: 09:00 to 10:00
    assert.are.equal("unlimited", allowed("0 9 * * *", "2026-01-15T08:30:00Z"))
    assert.are.equal(0, allowed("0 9 * * *", "2026-01-15T09:30:00Z"))
  end)

  it("refuses durations in seconds", function()
    for _, d in ipairs { "30s", "1h30s" } do
      local _, err = allowed("0 9 * * *", "2026-01-15T13:30:00Z", d)
      assert.matches("expected a positive duration in hours and minutes", err, 1, true)
    end
  end)
end)

describe("capacity reservations in consolidation (Karpenter's capacity-reservation design)", function()
  local function with_reservations(resv)
    return h.small_catalog:gsub("%] }%s*$", '], "reservations": [' .. resv .. '] }')
  end
  local function node(name, type, ct, labels)
    local l = { ["node.kubernetes.io/instance-type"] = type, ["topology.kubernetes.io/zone"] = "test-1a",
      ["karpenter.sh/capacity-type"] = ct, ["karpenter.sh/nodepool"] = "default", ["kubernetes.io/arch"] = "amd64" }
    for k, v in pairs(labels or {}) do l[k] = v end
    return { apiVersion = "v1", kind = "Node", metadata = { name = name, creationTimestamp = "2026-11-20T00:00:00Z",
      labels = l } }
  end
  local function pod(name, on, cpu)
    return { apiVersion = "v1", kind = "Pod", metadata = { name = name, namespace = "default" },
      spec = { nodeName = on, containers = { { name = "c", resources = { requests = { cpu = cpu, memory = "256Mi" } } } } } }
  end
  local function pool(cts)
    return { apiVersion = "karpenter.sh/v1", kind = "NodePool", metadata = { name = "default" },
      spec = { disruption = { budgets = { { nodes = "100%" } } }, template = { spec = { requirements = {
        { key = "karpenter.sh/capacity-type", operator = "In", values = cts } } } } } }
  end
  local function disrupt(items, resv)
    return assert(h.dt.disrupt { manifests = h.list(items), catalog_text = with_reservations(resv),
      now = "2026-11-23T12:00:00Z" })
  end

  it("moves an on-demand node into a free reserved unit of the same size: reserved is already paid for", function()
    local r = disrupt({ pool({ "reserved", "on-demand" }), node("od", "medium", "on-demand"), pod("a", "od", "3") },
      '{"id": "cr-m", "instanceType": "medium", "zone": "test-1a", "count": 1}')
    assert.are.equal(1, #r.commands, r.blocked[1] and r.blocked[1].reason)
    assert.are.equal("replace", r.commands[1].action)
    assert.are.equal("reserved", r.commands[1].replacements[1].capacityType)
  end)

  it("describes a reserved-only pool's replacement as reserved, as plan would launch it", function()
    local r = disrupt({ pool({ "reserved" }),
      node("big", "large", "reserved", { ["karpenter.k8s.aws/capacity-reservation-id"] = "cr-l" }), pod("a", "big", "1") },
      '{"id": "cr-l", "instanceType": "large", "zone": "test-1a", "count": 1},' ..
      '{"id": "cr-s", "instanceType": "small", "zone": "test-1a", "count": 1}')
    assert.are.equal(1, #r.commands, r.blocked[1] and r.blocked[1].reason)
    assert.are.equal("reserved", r.commands[1].replacements[1].capacityType)
    assert.are.equal("small", r.commands[1].replacements[1].instanceType)
  end)
end)

describe("control planes and spot (Cluster API)", function()
  it("refuses spot for a control-plane NodePool written as a requirement, as for the template label", function()
    local np = h.nodepool("cp", { requirements = { { "node-role.kubernetes.io/control-plane", "Exists" } } })
    local p, err = h.dt.plan { manifests = np, catalog_text = h.small_catalog }
    assert.is_nil(p)
    assert.matches("a control-plane NodePool (node-role.kubernetes.io/control-plane) must not allow spot", err, 1, true)
    np = h.nodepool("cp", { requirements = { { "node-role.kubernetes.io/control-plane", "Exists" },
      { "karpenter.sh/capacity-type", "In", { "on-demand" } } } })
    assert(h.dt.plan { manifests = np, catalog_text = h.small_catalog })
  end)
end)


