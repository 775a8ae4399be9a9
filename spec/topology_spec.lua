-- Topology spread, pod affinity and anti-affinity, relaxation, DaemonSets,
-- host ports, minValues and limits, as Karpenter's scheduler.
local h = require "helper"

-- Three zones, one type per size; spot only in a and b.
local catalog = [[
{ "region": "test-1", "provider": "generic", "zones": ["test-1a", "test-1b", "test-1c"],
  "instanceTypes": [
    { "name": "s2", "arch": "amd64", "cpu": 2, "memoryMiB": 8192, "maxPods": 20, "onDemandPrice": 0.10,
      "overhead": { "cpu": "0", "memory": "0" } },
    { "name": "s4", "arch": "amd64", "cpu": 4, "memoryMiB": 16384, "maxPods": 40, "onDemandPrice": 0.20,
      "overhead": { "cpu": "0", "memory": "0" } },
    { "name": "s8", "arch": "amd64", "cpu": 8, "memoryMiB": 32768, "maxPods": 80, "onDemandPrice": 0.40,
      "overhead": { "cpu": "0", "memory": "0" } },
    { "name": "gp", "arch": "amd64", "cpu": 8, "memoryMiB": 32768, "maxPods": 80, "onDemandPrice": 0.50,
      "overhead": { "cpu": "0", "memory": "0" }, "labels": { "example.com/family": "gp" } },
    { "name": "mo", "arch": "amd64", "cpu": 8, "memoryMiB": 65536, "maxPods": 80, "onDemandPrice": 0.55,
      "overhead": { "cpu": "0", "memory": "0" }, "labels": { "example.com/family": "mo" } }
  ] }
]]

local function plan(...)
  return h.plan(h.docs(...), { catalog_text = catalog })
end

local function deployment(name, replicas, spec_extra, opts)
  opts = opts or {}
  return ([[
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: default}
spec:
  replicas: %d
  template:
    metadata:
      labels: {app: %s}
    spec:
%s
      containers:
        - name: c
          resources: {requests: {cpu: "%s", memory: 1Gi}}
]]):format(name, replicas, opts.label or name, spec_extra or "", opts.cpu or "100m")
end

local function count_by(p, field)
  local out = {}
  for _, c in ipairs(p.nodeClaims) do out[c[field]] = (out[c[field]] or 0) + #c.pods end
  return out
end

local function sorted_counts(t)
  local v = {}
  for _, n in pairs(t) do v[#v + 1] = n end
  table.sort(v)
  return v
end

local zonal_spread = [[
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: web}}]]

-- A full node in test-1a (labels: extra ones first, as "key: value, ") running one web pod.
local function full_node_running_web(name, labels)
  return ([[
apiVersion: v1
kind: Node
metadata: {name: %s, labels: {%stopology.kubernetes.io/zone: test-1a, kubernetes.io/arch: amd64}}
status: {allocatable: {cpu: "0", memory: 0, pods: "10"}}
]]):format(name, labels), ([[
apiVersion: v1
kind: Pod
metadata: {name: old, namespace: default, labels: {app: web}}
spec:
  nodeName: %s
  containers: [{name: c, resources: {requests: {cpu: "0"}}}]
]]):format(name)
end

describe("topology spread", function()
  it("spreads 4 pods over 3 zones as {1, 1, 2}", function()
    local p = plan(h.nodepool("default"), deployment("web", 4, zonal_spread))
    assert.are.same({ 1, 1, 2 }, sorted_counts(count_by(p, "zone")))
    assert.are.equal(0, #p.unschedulable)
  end)

  it("counts pods already running on existing nodes", function()
    local node, running = full_node_running_web("n1", "")
    local p = plan(h.nodepool("default"), node, running, deployment("web", 2, zonal_spread))
    local z = count_by(p, "zone")
    assert.is_nil(z["test-1a"])
    assert.are.equal(1, z["test-1b"])
    assert.are.equal(1, z["test-1c"])
  end)

  it("with minDomains 3 and 2 allowed zones places 2 of 3 pods", function()
    local spread = zonal_spread .. "\n          minDomains: 3"
    local np = h.nodepool("two", { requirements = { { "topology.kubernetes.io/zone", "In", { "test-1a", "test-1b" } } } })
    local p = plan(np, deployment("web", 3, spread))
    assert.are.equal(2, p.summary.scheduled)
    assert.are.equal(1, #p.unschedulable)
    assert.matches("topology spread on topology.kubernetes.io/zone: maxSkew 1 would be exceeded in every allowed zone",
      p.unschedulable[1].reason, 1, true)
  end)

  local function key_spread(key)
    return ([[
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: %s
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: web}}]]):format(key)
  end

  it("spreads on a label of the instance types: each claim takes one value, and only types that carry it", function()
    local np = h.nodepool("default", { requirements = { { "example.com/family", "In", { "gp", "mo" } } } })
    local p = plan(np, deployment("web", 4, key_spread("example.com/family")))
    assert.are.same({ gp = 2, mo = 2 }, count_by(p, "instanceType"))
    for _, c in ipairs(p.nodeClaims) do
      for _, t in ipairs(c.instanceTypeOptions) do assert.are.equal(c.instanceType, t) end
    end
  end)

  it("spreads on a custom label over the NodePools' values and an existing node's, as Karpenter's domains", function()
    -- rack r1 and r2 from two NodePools' labels; r3 only on a full node that runs one web pod
    local node, running = full_node_running_web("n3", "rack: r3, ")
    local p = plan(h.nodepool("one", { labels = { rack = "r1" } }), h.nodepool("two", { labels = { rack = "r2" } }),
      node, running, deployment("web", 5, key_spread("rack")))
    -- r1 2 and r2 2 beside r3's 1: a fifth in r1 or r2 would make 3 against 1
    assert.are.same({ one = 2, two = 2 }, count_by(p, "nodePool"))
    assert.are.equal(1, #p.unschedulable)
    assert.matches("topology spread on rack: maxSkew 1 would be exceeded in every allowed value",
      p.unschedulable[1].reason, 1, true)
  end)

  it("launches for a spread on a custom label only from the NodePools that define it", function()
    -- Karpenter's claim requirement rack In [r1] is incompatible with a NodePool with no rack:
    -- its node would carry no rack, and kube-scheduler would keep the pods off it
    local p = plan(h.nodepool("one", { labels = { rack = "r1" }, weight = 1 }), h.nodepool("two", { weight = 50 }),
      deployment("web", 3, key_spread("rack")))
    assert.are.same({ one = 3 }, count_by(p, "nodePool"))
    -- with no NodePool defining it, no claim can take a value: the pods wait, as Karpenter's
    p = plan(h.nodepool("two"), deployment("web", 3, key_spread("rack")))
    assert.are.equal(0, #p.nodeClaims)
    assert.are.equal(3, #p.unschedulable)
    assert.matches("topology spread on rack: no NodePool's requirements or labels, nor instance type's labels, give "
      .. "rack a value", p.unschedulable[1].reason, 1, true)
  end)

  it("passes a required anti-affinity on a label no node takes, and keeps a required affinity on it pending", function()
    local function term(kind)
      return ([[
      affinity:
        %s:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: rack
              labelSelector: {matchLabels: {app: web}}]]):format(kind)
    end
    -- kube-scheduler's InterPodAffinity: a node without the label is in no domain, where
    -- anti-affinity finds no pod and affinity never holds
    local p = plan(h.nodepool("two"), deployment("web", 3, term("podAntiAffinity")))
    assert.are.equal(3, p.summary.scheduled)
    assert.are.equal(1, #p.nodeClaims)
    p = plan(h.nodepool("two"), deployment("web", 3, term("podAffinity")))
    assert.are.equal(0, p.summary.scheduled)
    assert.matches("pod affinity on rack: no NodePool's", p.unschedulable[1].reason, 1, true)
  end)

  it("counts as domains, for a spread with nodeTaintsPolicy Honor, only the NodePools whose taints its pod tolerates",
    function()
      local function spread(key, policy)
        return ([[
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: %s
          whenUnsatisfiable: DoNotSchedule
          nodeTaintsPolicy: %s
          labelSelector: {matchLabels: {app: web}}]]):format(key, policy)
      end
      local zone = "topology.kubernetes.io/zone"
      local pools = {
        h.nodepool("general", { requirements = { { zone, "In", { "test-1a", "test-1b" } } }, labels = { rack = "r1" } }),
        h.nodepool("gpu", { requirements = { { zone, "In", { "test-1c" } } }, labels = { rack = "r2" },
          taints = { { "gpu", "true", "NoSchedule" } } }),
      }
      local function run(key, policy)
        return plan(pools[1], pools[2], deployment("web", 4, spread(key, policy)))
      end
      -- Ignore (the default): test-1c is a domain the pods can never take, so its 0 holds the others at 1
      local p = run(zone, "Ignore")
      assert.are.equal(2, p.summary.scheduled)
      -- Honor: the tainted NodePool's zone is no domain of theirs
      p = run(zone, "Honor")
      assert.are.equal(4, p.summary.scheduled)
      assert.are.same({ ["test-1a"] = 2, ["test-1b"] = 2 }, count_by(p, "zone"))
      -- the same on a custom label: r2 only from the tainted NodePool
      assert.are.equal(1, run("rack", "Ignore").summary.scheduled)
      p = run("rack", "Honor")
      assert.are.equal(4, p.summary.scheduled)
      assert.are.same({ general = 4 }, count_by(p, "nodePool"))
    end)

  it("spreads on hostname: maxSkew 1 puts one matching pod per node", function()
    local spread = [[
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: web}}]]
    local p = plan(h.nodepool("default"), deployment("web", 3, spread))
    assert.are.equal(3, #p.nodeClaims)
  end)

  it("keeps workloads apart whose pods differ only inside a spread constraint", function()
    local function spread(skew)
      return ([[
      topologySpreadConstraints:
        - maxSkew: %d
          topologyKey: kubernetes.io/hostname
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: web}}]]):format(skew)
    end
    -- the same labels and requests: w keeps one pod per node, v may stack
    -- five deep on w's nodes, so six pods need three nodes, not six
    local p = plan(h.nodepool("default"), deployment("w", 3, spread(1), { label = "web" }),
      deployment("v", 3, spread(5), { label = "web" }))
    assert.are.equal(3, #p.nodeClaims)
    assert.are.equal(6, p.summary.scheduled)
  end)

  it("spreads on capacity type", function()
    local spread = [[
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: karpenter.sh/capacity-type
          whenUnsatisfiable: DoNotSchedule
          labelSelector: {matchLabels: {app: web}}]]
    local cat = catalog:gsub('"onDemandPrice": 0.10,', '"onDemandPrice": 0.10, "spotPrice": 0.03,')
    local np = h.nodepool("default", { requirements = { { "karpenter.sh/capacity-type", "In", { "spot", "on-demand" } } } })
    local p = h.plan(h.docs(np, deployment("web", 2, spread)), { catalog_text = cat })
    assert.are.same({ 1, 1 }, sorted_counts(count_by(p, "capacityType")))
  end)

  it("relaxes a ScheduleAnyway spread it cannot honour", function()
    local spread = [[
      topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: ScheduleAnyway
          minDomains: 5
          labelSelector: {matchLabels: {app: web}}]]
    local p = plan(h.nodepool("default"), deployment("web", 5, spread))
    assert.are.equal(5, p.summary.scheduled)
  end)
end)

describe("pod affinity and anti-affinity", function()
  local anti_host = [[
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: web}}]]

  it("hostname anti-affinity forces one pod per node", function()
    local p = plan(h.nodepool("default"), deployment("web", 4, anti_host))
    assert.are.equal(4, #p.nodeClaims)
    for _, c in ipairs(p.nodeClaims) do assert.are.equal(1, #c.pods) end
  end)

  it("respects anti-affinity declared by pods already running", function()
    local node = [[
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {kubernetes.io/arch: amd64}}
status: {allocatable: {cpu: "8", memory: 32Gi, pods: "10"}}
]]
    local loner = [[
apiVersion: v1
kind: Pod
metadata: {name: loner, namespace: default, labels: {app: loner}}
spec:
  nodeName: n1
  affinity:
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        - topologyKey: kubernetes.io/hostname
          labelSelector: {matchLabels: {app: web}}
  containers: [{name: c, resources: {requests: {cpu: 100m}}}]
]]
    local p = plan(h.nodepool("default"), node, loner, deployment("web", 1, ""), deployment("other", 1, ""))
    -- web may not join loner's node; other may
    assert.are.equal(1, #p.bindings)
    assert.matches("^default/other", p.bindings[1].pod)
    assert.are.equal(1, #p.nodeClaims)
  end)

  it("names the pod an anti-affinity conflicts with", function()
    local zonal = [[
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: topology.kubernetes.io/zone
              labelSelector: {matchLabels: {app: web}}]]
    -- As Karpenter, a pod on a claim whose zone is still open counts in every
    -- zone it may take, so one pod per batch goes out; the rest say why.
    local p = plan(h.nodepool("default"), deployment("web", 4, zonal))
    assert.are.equal(1, p.summary.scheduled)
    assert.matches("anti%-affinity with pod default/web%-0 on topology.kubernetes.io/zone", p.unschedulable[1].reason)
  end)

  it("zonal self-affinity keeps a deployment in one zone", function()
    local aff = [[
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: topology.kubernetes.io/zone
              labelSelector: {matchLabels: {app: web}}]]
    local p = plan(h.nodepool("default"), deployment("web", 30, aff, { cpu = "1" }))
    assert.are.equal(30, p.summary.scheduled)
    local zones = count_by(p, "zone")
    local n = 0
    for _ in pairs(zones) do n = n + 1 end
    assert.are.equal(1, n)
  end)

  it("cannot follow an affinity to pods that do not exist", function()
    local aff = [[
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: db}}]]
    local p = plan(h.nodepool("default"), deployment("web", 1, aff))
    assert.matches("pod affinity on kubernetes.io/hostname: no allowed node has a pod matching app In [db]",
      p.unschedulable[1].reason, 1, true)
  end)

  it("places pods next to the pods they are affine to", function()
    local aff = [[
      affinity:
        podAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              labelSelector: {matchLabels: {app: db}}]]
    local p = plan(h.nodepool("default"), deployment("web", 2, aff), deployment("db", 1, "", { cpu = "50m" }))
    assert.are.equal(1, #p.nodeClaims)
    assert.are.equal(3, #p.nodeClaims[1].pods)
  end)

  it("matches every value of a long In list, and every namespace listed", function()
    -- 4 web pods keep away from app In [a0 .. a99] and from namespaces n0 .. n99 and default; the
    -- db pod's label is the list's last value. Only the first 64 values and namespaces were read.
    local vals, nss = {}, {}
    for i = 0, 99 do
      vals[#vals + 1] = "a" .. i
      nss[#nss + 1] = "n" .. i
    end
    nss[#nss + 1] = "default"
    local anti = ([[
      affinity:
        podAntiAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            - topologyKey: kubernetes.io/hostname
              namespaces: [%s]
              labelSelector: {matchExpressions: [{key: app, operator: In, values: [%s]}]}]]):format(
      table.concat(nss, ", "), table.concat(vals, ", "))
    local p = plan(h.nodepool("default"), deployment("web", 4, anti), deployment("db", 1, "", { label = "a99" }))
    assert.are.equal(5, p.summary.scheduled)
    for _, c in ipairs(p.nodeClaims) do
      local has_db, has_web = false, false
      for _, pod in ipairs(c.pods) do
        if pod:match("db") then has_db = true else has_web = true end
      end
      assert.is_false(has_db and has_web, "a web pod shares a node with the db pod")
    end
  end)

  it("drops an unsatisfiable preferred anti-affinity instead of failing", function()
    local pref = [[
      affinity:
        podAntiAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 10
              podAffinityTerm:
                topologyKey: topology.kubernetes.io/zone
                labelSelector: {matchLabels: {app: web}}]]
    local p = plan(h.nodepool("default"), deployment("web", 5, pref))
    assert.are.equal(5, p.summary.scheduled)
  end)
end)

describe("node affinity preferences and relaxation", function()
  it("honours the heaviest preferred node affinity when it can", function()
    local pref = [[
      affinity:
        nodeAffinity:
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 1
              preference: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [test-1b]}]}
            - weight: 50
              preference: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [test-1c]}]}]]
    local p = plan(h.nodepool("default"), deployment("web", 1, pref))
    assert.are.equal("test-1c", p.nodeClaims[1].zone)
  end)

  it("never widens a requirement with a conflicting preference", function()
    local both = [[
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [test-1a]}]
          preferredDuringSchedulingIgnoredDuringExecution:
            - weight: 50
              preference: {matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [test-1c]}]}]]
    local p = plan(h.nodepool("default"), deployment("web", 1, both))
    assert.are.equal("test-1a", p.nodeClaims[1].zone)
  end)

  it("falls through required OR-terms one at a time", function()
    local terms = [==[
      affinity:
        nodeAffinity:
          requiredDuringSchedulingIgnoredDuringExecution:
            nodeSelectorTerms:
              - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [nowhere]}]
              - matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [test-1b]}]]==]
    local p = plan(h.nodepool("default"), deployment("web", 1, terms))
    assert.are.equal("test-1b", p.nodeClaims[1].zone)
  end)

  it("avoids PreferNoSchedule taints until nothing else works", function()
    local soft = h.nodepool("soft", { weight = 100, taints = { { "soft", "x", "PreferNoSchedule" } } })
    local p = plan(soft, h.nodepool("plain"), deployment("web", 1, ""))
    assert.are.equal("plain", p.nodeClaims[1].nodePool)
    p = plan(soft, deployment("web", 1, ""))
    assert.are.equal("soft", p.nodeClaims[1].nodePool)
  end)
end)

describe("NodePool limits and weights", function()
  it("lets one 1.75-cpu pod through a 2-cpu limit and no more", function()
    local np = h.nodepool("capped", { limits = { cpu = "2" } })
    local p = plan(np, deployment("web", 2, "", { cpu = "1750m" }))
    assert.are.equal(1, p.summary.scheduled)
    assert.are.equal("s2", p.nodeClaims[1].instanceType)
    assert.matches("limits", p.unschedulable[1].reason)
  end)

  it("counts existing nodes of the pool against its limits", function()
    local np = h.nodepool("capped", { limits = { cpu = "4" } })
    local node = [[
apiVersion: v1
kind: Node
metadata: {name: n1, labels: {karpenter.sh/nodepool: capped, node.kubernetes.io/instance-type: s4}}
status: {allocatable: {cpu: "0", memory: 0, pods: "0"}}
]]
    local p = plan(np, node, deployment("web", 1, ""))
    assert.are.equal(0, p.summary.scheduled)
  end)

  it("falls to a lower-weight pool when the heavier one is full", function()
    local p = plan(h.nodepool("first", { weight = 90, limits = { cpu = "2" } }), h.nodepool("second", { weight = 10 }),
      deployment("web", 2, "", { cpu = "1500m" }))
    local pools = count_by(p, "nodePool")
    assert.are.equal(1, pools.first)
    assert.are.equal(1, pools.second)
  end)
end)

describe("DaemonSets", function()
  local ds = [[
apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: kube-system}
spec:
  template:
    spec:
      containers: [{name: a, resources: {requests: {cpu: "1", memory: 1Gi}}}]
]]

  it("adds their requests to every claim, pushing it to a larger type", function()
    local p = plan(h.nodepool("default"), deployment("web", 1, "", { cpu = "1500m" }))
    assert.are.equal("s2", p.nodeClaims[1].instanceType)
    p = plan(h.nodepool("default"), ds, deployment("web", 1, "", { cpu = "1500m" }))
    assert.are.equal("s4", p.nodeClaims[1].instanceType)
    assert.are.equal("2500m", p.nodeClaims[1].requests.cpu)
  end)

  it("skips pools whose taints the DaemonSet does not tolerate", function()
    local np = h.nodepool("tainted", { taints = { { "dedicated", "x", "NoSchedule" } } })
    local tol = "      tolerations: [{key: dedicated, operator: Exists}]"
    local p = plan(np, ds, deployment("web", 1, tol, { cpu = "1500m" }))
    assert.are.equal("s2", p.nodeClaims[1].instanceType)
  end)

  it("count those that wait for a node registered or initialized, as a new node becomes both", function()
    -- Karpenter's NodeClaimTemplate meets karpenter.sh/registered and /initialized "true" for its
    -- DaemonSet simulation; an agent waiting for either lands on the new node
    local function affinity(expr)
      return ds:gsub("    spec:\n", "    spec:\n      affinity: {nodeAffinity: {requiredDuringSchedulingIgnored" ..
        "DuringExecution: {nodeSelectorTerms: [{matchExpressions: [" .. expr .. "]}]}}}\n", 1)
    end
    for _, wait in ipairs({ "karpenter.sh/initialized", "karpenter.sh/registered" }) do
      local waiting = affinity("{key: " .. wait .. ", operator: In, values: ['true']}")
      local p = plan(h.nodepool("default"), waiting, deployment("web", 1, "", { cpu = "1500m" }))
      assert.are.same({ "s4", "2500m" }, { p.nodeClaims[1].instanceType, p.nodeClaims[1].requests.cpu })
    end
    -- one that runs only on nodes not yet initialized never lands on a new node for long: not counted
    local early = affinity("{key: karpenter.sh/initialized, operator: DoesNotExist}")
    local p = plan(h.nodepool("default"), early, deployment("web", 1, "", { cpu = "1500m" }))
    assert.are.equal("s2", p.nodeClaims[1].instanceType)
  end)

  it("copies of one (a YAML anchor's), each with many required terms, count once each on the types they admit",
    function()
      -- 100 terms of which only the last is met: matched against the types once, not per pool and type
      local terms = {}
      for i = 1, 99 do terms[i] = "{matchExpressions: [{key: topology.kubernetes.io/zone, operator: In, values: [z" ..
        i .. "]}]}" end
      terms[100] = "{matchExpressions: [{key: kubernetes.io/arch, operator: In, values: [amd64]}]}"
      local agent = ds:gsub("    spec:\n", "    spec:\n      affinity: {nodeAffinity: {requiredDuringSchedulingIgnored" ..
        "DuringExecution: {nodeSelectorTerms: [" .. table.concat(terms, ", ") .. "]}}}\n", 1)
      local second = agent:gsub("name: agent", "name: agent-2")
      local p = plan(h.nodepool("default"), agent, second, deployment("web", 1, "", { cpu = "1500m" }))
      assert.are.same({ "s4", "3500m" }, { p.nodeClaims[1].instanceType, p.nodeClaims[1].requests.cpu })
      -- with a term no type meets instead, neither counts
      local none = agent:gsub("values: %[amd64%]", "values: [s390x]")
      p = plan(h.nodepool("default"), none, none:gsub("name: agent", "name: agent-2"),
        deployment("web", 1, "", { cpu = "1500m" }))
      assert.are.same({ "s2", "1500m" }, { p.nodeClaims[1].instanceType, p.nodeClaims[1].requests.cpu })
    end)

  it("makes a pod with a conflicting host port unschedulable on that pool", function()
    local dsport = ds:gsub("containers: %[{name: a, ", "containers: [{name: a, ports: [{containerPort: 9100, hostPort: 9100}], ")
    local pod = [[
apiVersion: v1
kind: Pod
metadata: {name: exporter}
spec:
  containers:
    - name: c
      ports: [{containerPort: 9100, hostPort: 9100}]
      resources: {requests: {cpu: 100m}}
]]
    local p = plan(h.nodepool("default"), dsport, pod)
    assert.matches("host port", p.unschedulable[1].reason)
  end)
end)

describe("host ports and overhead", function()
  it("puts pods using the same host port on different nodes", function()
    local ports = "      hostNetwork: false"
    local dep = deployment("web", 2, ports):gsub("resources:", "ports: [{containerPort: 80, hostPort: 8080}]\n          resources:")
    local p = plan(h.nodepool("default"), dep)
    assert.are.equal(2, #p.nodeClaims)
  end)

  it("counts RuntimeClass overhead for pods that name it", function()
    local rc = [[
apiVersion: node.k8s.io/v1
kind: RuntimeClass
metadata: {name: kata}
handler: kata
overhead: {podFixed: {cpu: 500m, memory: 1Gi}}
]]
    local p = plan(h.nodepool("default"), rc, deployment("web", 1, "      runtimeClassName: kata", { cpu = "1800m" }))
    assert.are.equal("2300m", p.nodeClaims[1].requests.cpu)
    assert.are.equal("s4", p.nodeClaims[1].instanceType)
  end)
end)

describe("minValues", function()
  it("keeps at least N distinct values of the key among a claim's options", function()
    local np = h.nodepool("flex", { requirements = {
      { "example.com/family", "In", { "gp", "mo" }, minValues = 2 },
    } })
    local p = plan(np, deployment("web", 1, "", { cpu = "7" }))
    assert.are.same({ "gp", "mo" }, p.nodeClaims[1].instanceTypeOptions)
    -- a pod that only fits mo would leave one family: strict minValues refuses
    local big = deployment("big", 1, "", { cpu = "1" }):gsub("memory: 1Gi", "memory: 40Gi")
    p = plan(np, big)
    assert.are.equal(1, #p.unschedulable)
    assert.matches("minValues", p.unschedulable[1].reason)
  end)
end)

-- Karpenter's --scheduler-config (podTopologySpread.defaultConstraints, as kube-scheduler's
-- PodTopologySpread plugin): a pod that declares no spread of its own gets the defaults, with the
-- selector kube-scheduler deduces (its Services', its ReplicaSet's or StatefulSet's).
describe("default topology spread constraints (--scheduler-config)", function()
  local tmpfile = h.write
  local zonal = tmpfile("podTopologySpread:\n  defaultConstraints:\n  - maxSkew: 1\n" ..
    "    topologyKey: topology.kubernetes.io/zone\n    whenUnsatisfiable: DoNotSchedule\n")
  local pool = h.nodepool("default", { requirements = { { "kubernetes.io/arch", "In", { "amd64" } },
    { "karpenter.sh/capacity-type", "In", { "on-demand" } },
    { "topology.kubernetes.io/zone", "In", { "us-east-1a", "us-east-1b", "us-east-1c" } } } })
  local function workload(kind, name, extra)
    return "apiVersion: apps/v1\nkind: " .. kind .. "\nmetadata: {name: " .. name .. ", namespace: shop}\n" ..
      "spec:\n  replicas: 3\n  selector: {matchLabels: {app: " .. name .. "}}\n  template:\n" ..
      "    metadata: {labels: {app: " .. name .. "}}\n    spec:\n      containers:\n      - name: c\n" ..
      "        image: nginx\n        resources: {requests: {cpu: 100m, memory: 128Mi}}\n" .. (extra or "")
  end
  -- three pending pods <app>-1..3 labelled app: <app>, their controller `owner` ({apiVersion, kind, name})
  local function owned_pods(app, owner, spec_extra)
    local pods = {}
    for i = 1, 3 do
      pods[i] = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: " .. app .. "-" .. i .. "\n  namespace: shop\n" ..
        "  labels: {app: " .. app .. "}\n  ownerReferences:\n  - {apiVersion: " .. owner[1] .. ", kind: " .. owner[2] ..
        ", name: " .. owner[3] .. ", uid: u-" .. owner[3] .. ", controller: true}\nspec:\n" .. (spec_extra or "") ..
        "  containers:\n  - name: c\n    image: nginx\n    resources: {requests: {cpu: 100m, memory: 128Mi}}\n"
    end
    return pods
  end
  local service = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\n" ..
    "spec: {selector: {app: web}, ports: [{port: 80}]}\n"
  local function zones(p)
    local z = {}
    for _, c in ipairs(p.nodeClaims) do z[c.zone] = (z[c.zone] or 0) + #c.pods end
    return z
  end
  local NOW = "2026-11-23T12:00:00Z"
  local THREE = { ["us-east-1a"] = 1, ["us-east-1b"] = 1, ["us-east-1c"] = 1 }
  -- the plan of docs with the zonal defaults
  local function zonal_plan(...)
    return assert(h.dt.plan { manifests = h.docs(...), now = NOW, scheduler_config = zonal })
  end
  -- pods without their controller
  local function bare(pods)
    local out = {}
    for i, pod in ipairs(pods) do out[i] = (pod:gsub("  ownerReferences:\n[^\n]*\n", "")) end
    return out
  end

  it("spread a Deployment's replicas over the zones; without the configuration they share a node", function()
    local docs = h.docs(pool, service, workload("Deployment", "web"))
    local p = assert(h.dt.plan { manifests = docs, now = NOW })
    assert.are.equal(1, #p.nodeClaims)
    p = assert(h.dt.plan { manifests = docs, now = NOW, scheduler_config = zonal })
    assert.are.same({ ["us-east-1a"] = 1, ["us-east-1b"] = 1, ["us-east-1c"] = 1 }, zones(p))
    local out, err, code = h.cli("plan -o json --now " .. NOW .. " --scheduler-config " .. zonal .. " -", docs)
    assert.are.equal(0, code, err)
    assert.are.equal(3, select(2, out:gsub('"zone": "us%-east%-1', "")))
  end)

  it("deduce a pending pod's selector from its ReplicaSet, and leave alone pods with spreads or nothing to deduce",
    function()
      local rs = workload("ReplicaSet", "api") -- its 3 pods pending, made already
      local pods = owned_pods("api", { "apps/v1", "ReplicaSet", "api" })
      assert.are.same(THREE, zones(zonal_plan(pool, rs, table.unpack(pods))))
      -- no Service and no controller: nothing deduced, no default
      assert.are.equal(1, #zonal_plan(pool, table.unpack(bare(pods))).nodeClaims)
      local p
      -- its own spread (on hostname, maxSkew 3): the defaults are not added
      local own = workload("Deployment", "web", "      topologySpreadConstraints:\n      - {maxSkew: 3, " ..
        "topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: " ..
        "{matchLabels: {app: web}}}\n")
      p = assert(h.dt.plan { manifests = h.docs(pool, service, own), now = NOW, scheduler_config = zonal })
      assert.are.equal(1, #p.nodeClaims)
    end)

  it("deduce from a ReplicaSet of no replicas whose pods are still there, and from Services of the pod's namespace only",
    function()
      -- an old ReplicaSet of a Deployment, scaled to 0 while its three pods still wait
      local rs = workload("ReplicaSet", "api"):gsub("replicas: 3", "replicas: 0")
      local pods = owned_pods("api", { "apps/v1", "ReplicaSet", "api" })
      assert.are.same(THREE, zones(zonal_plan(pool, rs, table.unpack(pods))))
      -- a Service selecting them from another namespace is not theirs; one in theirs, sorted after it, is
      local unowned = bare(pods)
      local elsewhere = "apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: zzz}\n" ..
        "spec: {selector: {app: api}}\n"
      local before = "apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: aaa}\n" ..
        "spec: {selector: {app: api}}\n"
      assert.are.equal(1, #zonal_plan(pool, elsewhere, before, table.unpack(unowned)).nodeClaims)
      local theirs = "apiVersion: v1\nkind: Service\nmetadata: {name: api, namespace: shop}\n" ..
        "spec: {selector: {app: api}}\n"
      assert.are.same(THREE, zones(zonal_plan(pool, elsewhere, theirs, before, table.unpack(unowned))))
    end)

  it("take a ReplicationController's selector over a Service's, and give an empty list of one's own the defaults",
    function()
      local rc = "apiVersion: v1\nkind: ReplicationController\nmetadata: {name: legacy, namespace: shop}\n" ..
        "spec: {replicas: 3, selector: {app: legacy}}\n"
      local pods = owned_pods("legacy", { "v1", "ReplicationController", "legacy" }, "  topologySpreadConstraints: []\n")
      assert.are.same(THREE, zones(zonal_plan(pool, rc, table.unpack(pods))))
      -- two of one name are refused, as any kind's (a merge of both was no object's selector)
      local _, dup = h.dt.plan { manifests = h.docs(pool, rc, rc:gsub("app: legacy", "tier: x"), table.unpack(pods)),
        now = NOW, scheduler_config = zonal }
      assert.matches("ReplicationController shop/legacy: metadata.name: duplicate object", dup, 1, true)
      -- a Service whose selector is not a map of strings is left out, noted, never the input's error
      local bad = "apiVersion: v1\nkind: Service\nmetadata: {name: odd, namespace: shop}\nspec: {selector: {app: null}}\n"
      local _, err, code = h.cli("plan -o json --now " .. NOW .. " -", h.docs(pool, bad, rc, table.unpack(pods)))
      assert.are.equal(0, code, err)
      assert.matches("Service shop/odd: spec.selector is not a map of strings; left out", err, 1, true)
    end)

  it("say that a pod is held by a default constraint, which it does not declare", function()
    local three = tmpfile("podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: " ..
      "topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule, minDomains: 4}\n")
    local four = workload("Deployment", "web"):gsub("replicas: 3", "replicas: 4")
    local p = assert(h.dt.plan { manifests = h.docs(pool, service, four), now = NOW, scheduler_config = three })
    -- four zones wanted, three allowed: the global minimum counts as 0, one pod a zone
    assert.are.same({ 3, 1 }, { p.summary.scheduled, #p.unschedulable })
    assert.matches("topology spread on topology.kubernetes.io/zone: maxSkew 1 would be exceeded in every allowed " ..
      "zone (selector app In [web]) (a default constraint of --scheduler-config)", p.unschedulable[1].reason, 1, true)
    os.remove(three)
  end)

  it("relax up to 255 ScheduleAnyway constraints, and refuse more, as a pod's own", function()
    local function many(n)
      local t = { "podTopologySpread:\n  defaultConstraints:\n" }
      for i = 1, n do
        t[#t + 1] = "  - {maxSkew: 1, topologyKey: example.com/k" .. i .. ", whenUnsatisfiable: ScheduleAnyway}\n"
      end
      return tmpfile(table.concat(t))
    end
    -- keys no node carries: each is relaxed in turn, the last one too, and every pod placed
    local path = many(255)
    local p = assert(h.dt.plan { manifests = h.docs(pool, service, workload("Deployment", "web")), now = NOW,
      scheduler_config = path })
    assert.are.same({ 3, 0 }, { p.summary.scheduled, #p.unschedulable })
    os.remove(path)
    for _, n in ipairs({ 256, 300 }) do
      path = many(n)
      local none, err = h.dt.plan { manifests = h.docs(pool, service, workload("Deployment", "web")), now = NOW,
        scheduler_config = path }
      assert.is_nil(none)
      assert.matches(path .. ": scheduler config: podTopologySpread.defaultConstraints: more than 255 constraints", err, 1,
        true)
      os.remove(path)
    end
    -- a pod's own: 256 spreads are refused naming the field
    local own = { "      topologySpreadConstraints:\n" }
    for i = 1, 256 do
      own[#own + 1] = "      - {maxSkew: 1, topologyKey: example.com/k" .. i .. ", whenUnsatisfiable: ScheduleAnyway}\n"
    end
    local _, err = h.dt.plan { manifests = h.docs(pool, workload("Deployment", "web", table.concat(own))), now = NOW }
    assert.matches("Deployment shop/web: spec.template.spec.topologySpreadConstraints: 256 terms; dovetail takes " ..
      "at most 255", err, 1, true)
  end)

  it("refuse what kube-scheduler refuses, naming the file and the field", function()
    local docs = h.docs(pool, service, workload("Deployment", "web"))
    for text, want in pairs {
      ["podTopologySpread:\n  defaultConstraint: []\n"] = "podTopologySpread.defaultConstraint: unknown field " ..
        "(did you mean defaultConstraints?)",
      ["podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: " ..
        "DoNotSchedule, labelSelector: {matchLabels: {a: b}}}\n"] = "defaultConstraints[0].labelSelector: must not be set",
      ["podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: zone, whenUnsatisfiable: " ..
        "DoNotSchedule}\n  - {maxSkew: 2, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n"] =
        "defaultConstraints[1]: repeats [0]",
      ["podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: zone}\n"] =
        "defaultConstraints[0].whenUnsatisfiable: missing",
      ["podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: 'a b', whenUnsatisfiable: " ..
        "DoNotSchedule}\n"] = "defaultConstraints[0].topologyKey: not a valid label name",
      ["podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: -foo.com/zone, whenUnsatisfiable: " ..
        "DoNotSchedule}\n"] = "defaultConstraints[0].topologyKey: not a valid label name",
      ["podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 2147483648, topologyKey: zone, whenUnsatisfiable: " ..
        "DoNotSchedule}\n"] = "defaultConstraints[0].maxSkew: expected an integer from 1 to 2147483647",
    } do
      local path = tmpfile(text)
      local p, err = h.dt.plan { manifests = docs, now = NOW, scheduler_config = path }
      assert.is_nil(p)
      assert.matches(path .. ": scheduler config: ", err, 1, true)
      assert.matches(want, err, 1, true)
      os.remove(path)
    end
    -- a directory, or a file past 1 MiB (a link to /dev/zero), is refused before it is read whole;
    -- empty documents alone are no configuration
    local dir = h.tmpdir()
    local _, err = h.dt.plan { manifests = docs, now = NOW, scheduler_config = dir }
    assert.matches(dir .. ": read error: Is a directory", err, 1, true)
    _, err = h.dt.plan { manifests = docs, now = NOW, scheduler_config = "/dev/zero" }
    assert.matches("/dev/zero: larger than 1048576 bytes (the limit on a scheduler configuration)", err, 1, true)
    local empty = tmpfile("---\n# nothing\n---\n")
    assert.are.equal(1, #assert(h.dt.plan { manifests = docs, now = NOW, scheduler_config = empty }).nodeClaims)
    os.remove(empty)
  end)
end)
