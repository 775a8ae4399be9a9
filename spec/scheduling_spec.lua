-- Karpenter's first-fit-decreasing, rule by rule, on a small catalog.
local h = require "helper"

local function plan(...)
  return h.plan(h.docs(...), { catalog_text = h.small_catalog })
end

local function pods_of(p)
  local out = {}
  for _, c in ipairs(p.nodeClaims) do
    out[#out + 1] = c.instanceType .. ":" .. table.concat(c.pods, ",")
  end
  return out
end

describe("first-fit-decreasing", function()
  it("sorts pods by cpu, then memory, descending", function()
    local np = h.nodepool("default", { requirements = { { "node.kubernetes.io/instance-type", "In", { "small" } } } })
    local p = plan(np, h.pod("a", { cpu = "500m" }), h.pod("b", { cpu = "1500m" }), h.pod("c", { cpu = "1", memory = "2Gi" }))
    -- 1.9 cpu per small node: b (1.5) first, then c (1) needs a new node, a joins the least loaded
    assert.are.same({ "small:default/b", "small:default/c,default/a" }, pods_of(p))
  end)

  it("tries the claims opened so far least loaded first, a new claim included", function()
    local np = h.nodepool("default", { requirements = { { "node.kubernetes.io/instance-type", "In", { "small", "medium" } } } })
    local p = h.plan(h.docs(np, h.pod("a", { cpu = "1500m" }), h.pod("b", { cpu = "1400m" }), h.pod("c", { cpu = "1300m" }),
      h.pod("d", { cpu = "500m" })), { catalog_text = h.small_catalog, packing = "ffd" })
    -- a and b share a medium node (3.9 cpu); c opens a second claim; d fits both and
    -- Karpenter sorts its new NodeClaims by pod count before each pod: c's, with one pod, comes first
    assert.are.same({ "medium:default/a,default/b", "small:default/c,default/d" }, pods_of(p))
  end)

  it("keeps adding pods to a claim while a larger option still fits (--packing ffd)", function()
    local pods = { h.nodepool("default") }
    for i = 1, 6 do pods[#pods + 1] = h.pod("p" .. i, { cpu = "1", memory = "1Gi" }) end
    local p = h.plan(h.docs(table.unpack(pods)), { catalog_text = h.small_catalog, packing = "ffd" })
    assert.are.equal(1, #p.nodeClaims)
    assert.are.equal("large", p.nodeClaims[1].instanceType)
    assert.are.same({ "large" }, p.nodeClaims[1].instanceTypeOptions)
  end)

  it("launches the cheapest instance type that fits the claim's pods", function()
    local p = plan(h.nodepool("default"), h.pod("a", { cpu = "3" }))
    assert.are.equal("medium", p.nodeClaims[1].instanceType)
    assert.are.same({ "medium", "large" }, p.nodeClaims[1].instanceTypeOptions)
  end)

  it("tries existing nodes first, in order", function()
    local node = [[
apiVersion: v1
kind: Node
metadata:
  name: node-1
  labels: {kubernetes.io/arch: amd64, karpenter.sh/nodepool: default}
status:
  allocatable: {cpu: "2", memory: 4Gi, pods: "10"}
]]
    local p = plan(h.nodepool("default"), node, h.pod("a", { cpu = "1500m" }), h.pod("b", { cpu = "1" }))
    assert.are.equal(1, #p.bindings)
    assert.are.same({ pod = "default/a", node = "node-1" }, p.bindings[1])
    assert.are.equal(1, #p.nodeClaims)
  end)

  it("counts pods already bound to a node against its allocatable", function()
    local node = [[
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/arch: amd64}}
status: {allocatable: {cpu: "2", memory: 4Gi, pods: "10"}}
]]
    local bound = h.pod("running", { cpu = "1500m", extra = "  nodeName: node-1" })
    local p = plan(h.nodepool("default"), node, bound, h.pod("new", { cpu = "1" }))
    assert.are.equal(0, #p.bindings)
    assert.are.equal(1, #p.nodeClaims)
    assert.are.equal(1, p.summary.alreadyBound)
  end)

  it("uses the max of init containers and the sum of containers, plus sidecars", function()
    local pod = [[
apiVersion: v1
kind: Pod
metadata: {name: init}
spec:
  initContainers:
    - name: sidecar
      restartPolicy: Always
      resources: {requests: {cpu: 500m}}
    - name: setup
      resources: {requests: {cpu: "3"}}
  containers:
    - name: main
      resources: {requests: {cpu: "1"}}
  overhead: {cpu: 250m}
]]
    local p = plan(h.nodepool("default"), pod)
    -- max(0.5 + 3, 1 + 0.5) + 0.25 overhead = 3.75 cpu: medium (3.9 allocatable)
    assert.are.equal("3750m", p.nodeClaims[1].requests.cpu)
    assert.are.equal("medium", p.nodeClaims[1].instanceType)
  end)

  it("restricts instance types and offerings by NodePool requirements", function()
    local np = h.nodepool("od", { requirements = {
      { "karpenter.sh/capacity-type", "In", { "on-demand" } },
      { "topology.kubernetes.io/zone", "In", { "test-1b" } },
    } })
    local p = plan(np, h.pod("a", { cpu = "1" }))
    assert.are.equal("on-demand", p.nodeClaims[1].capacityType)
    assert.are.equal("test-1b", p.nodeClaims[1].zone)
    assert.are.equal(0.10, p.nodeClaims[1].price)
  end)

  it("needs a toleration for a NodePool taint", function()
    local np = h.nodepool("gpu", { taints = { { "dedicated", "gpu", "NoSchedule" } } })
    local p = plan(np, h.pod("plain"))
    assert.matches("NodePool gpu has taint dedicated=gpu:NoSchedule that the pod does not tolerate",
      p.unschedulable[1].reason, 1, true)
    local tol = "  tolerations:\n    - key: dedicated\n      operator: Equal\n      value: gpu\n      effect: NoSchedule"
    p = plan(np, h.pod("tolerant", { extra = tol }))
    assert.are.equal(1, #p.nodeClaims)
    local any = "  tolerations:\n    - operator: Exists"
    p = plan(np, h.pod("any", { extra = any }))
    assert.are.equal(1, #p.nodeClaims)
  end)

  it("keeps pods listed one by one apart when only a toleration or a node selector tells them apart", function()
    -- pods of one shape (namespace, labels, node selector, tolerations) compile once; a
    -- toleration's value, a missing toleration or a node selector makes another shape
    local np = h.nodepool("gpu", { taints = { { "dedicated", "gpu", "NoSchedule" } } })
    local function tol(v)
      return "  tolerations:\n    - key: dedicated\n      operator: Equal\n      value: " .. v ..
        "\n      effect: NoSchedule"
    end
    local p = plan(np, h.docs(h.pod("t1", { extra = tol("gpu") }), h.pod("x1", { extra = tol("cpu") }),
      h.pod("t2", { extra = tol("gpu") }), h.pod("x2", { extra = tol("cpu") }), h.pod("plain"),
      h.pod("t3", { extra = tol("gpu") }),
      h.pod("n1", { extra = tol("gpu"), nodeSelector = { ["topology.kubernetes.io/zone"] = "nowhere" } }),
      h.pod("t4", { extra = tol("gpu") })))
    local placed, unsched = {}, {}
    for _, c in ipairs(p.nodeClaims) do
      for _, pod in ipairs(c.pods) do placed[#placed + 1] = pod end
    end
    for _, u in ipairs(p.unschedulable) do unsched[#unsched + 1] = u.pod end
    table.sort(placed)
    table.sort(unsched)
    assert.are.same({ "default/t1", "default/t2", "default/t3", "default/t4" }, placed)
    assert.are.same({ "default/n1", "default/plain", "default/x1", "default/x2" }, unsched)
  end)

  it("ignores PreferNoSchedule taints when placing", function()
    local np = h.nodepool("soft", { taints = { { "soft", nil, "PreferNoSchedule" } } })
    assert.are.equal(1, #plan(np, h.pod("a")).nodeClaims)
  end)

  it("honours nodeSelector and required node affinity", function()
    local sel = h.pod("arm", { nodeSelector = { ["kubernetes.io/arch"] = "arm64" } })
    local p = plan(h.nodepool("any", { requirements = {} }), sel)
    assert.are.equal("arm", p.nodeClaims[1].instanceType)
    local aff = [[
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - {key: node.kubernetes.io/instance-type, operator: NotIn, values: [small, medium]}]]
    p = plan(h.nodepool("any", { requirements = {} }), h.pod("big", { cpu = "1", extra = aff }))
    assert.are.equal("arm", p.nodeClaims[1].instanceType) -- cheapest type left: arm (0.15) < large (0.40)
  end)

  it("cannot schedule a pod requiring In on a label no NodePool defines", function()
    local p = plan(h.nodepool("default"), h.pod("x", { nodeSelector = { ["example.com/team"] = "a" } }))
    assert.matches("pod requires example.com/team In [a] but NodePool default does not define label example.com/team",
      p.unschedulable[1].reason, 1, true)
  end)

  it("accepts NotIn and DoesNotExist on labels nobody defines", function()
    local aff = [[
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
          - matchExpressions:
              - {key: example.com/team, operator: NotIn, values: [a]}
              - {key: example.com/other, operator: DoesNotExist}]]
    assert.are.equal(1, #plan(h.nodepool("default"), h.pod("x", { extra = aff })).nodeClaims)
  end)

  it("schedules on a NodePool that defines the label in its template", function()
    local p = plan(h.nodepool("team", { labels = { ["example.com/team"] = "a" } }),
      h.pod("x", { nodeSelector = { ["example.com/team"] = "a" } }))
    assert.are.equal("team", p.nodeClaims[1].nodePool)
  end)

  it("tries NodePools by weight, then name descending", function()
    local p = plan(h.nodepool("alpha", { weight = 10 }), h.nodepool("beta", { weight = 50 }), h.pod("a"))
    assert.are.equal("beta", p.nodeClaims[1].nodePool)
    p = plan(h.nodepool("np-1"), h.nodepool("np-2"), h.pod("a"))
    assert.are.equal("np-2", p.nodeClaims[1].nodePool)
  end)

  it("sends a pod that selects a NodePool by name there, whatever its weight", function()
    local p = plan(h.nodepool("heavy", { weight = 100 }), h.nodepool("light", { weight = 1 }),
      h.pod("a", { nodeSelector = { ["karpenter.sh/nodepool"] = "light" } }))
    assert.are.equal("light", p.nodeClaims[1].nodePool)
  end)

  it("explains a capacity type no offering has", function()
    local np = h.nodepool("res", { requirements = { { "karpenter.sh/capacity-type", "In", { "reserved" } } } })
    local p = plan(np, h.pod("a"))
    assert.matches("no instance type in NodePool res satisfies", p.unschedulable[1].reason, 1, true)
  end)

  it("charges NodePool limits by the largest option's capacity", function()
    local np = h.nodepool("capped", { limits = { cpu = "4" } })
    local p = plan(np, h.pod("a", { cpu = "3" }), h.pod("b", { cpu = "3" }))
    assert.are.equal(1, #p.nodeClaims)
    assert.are.equal(1, #p.unschedulable)
  end)
  it("keeps pods apart whose requirements differ only past the twelfth value", function()
    -- Each pod allows twelve made-up types and one real one; pods that shared
    -- a class would share its requirements and land on a type one of them
    -- does not allow.
    local function pod(name, last)
      local vals = {}
      for i = 1, 12 do vals[#vals + 1] = '"a' .. i .. '"' end
      vals[#vals + 1] = '"' .. last .. '"'
      return h.pod(name, {
        cpu = "1",
        extra = "  affinity:\n    nodeAffinity:\n      requiredDuringSchedulingIgnoredDuringExecution:\n"
          .. "        nodeSelectorTerms:\n          - matchExpressions:\n"
          .. "              - {key: node.kubernetes.io/instance-type, operator: In, values: ["
          .. table.concat(vals, ", ") .. "]}",
      })
    end
    local p = plan(h.nodepool("default"), pod("a", "medium"), pod("b", "large"))
    local got = pods_of(p)
    table.sort(got)
    assert.are.same({ "large:default/b", "medium:default/a" }, got)
  end)

  it("keeps the order of its claims right through thousands of claims with every pod count", function()
    -- 2,000 pods of 60 shapes on c/m/r types of at most 32 vCPUs open more
    -- than 64 claims, so the claims a pod may still join are found through
    -- their positions in the order; claims of one pod count are a block of
    -- it and many counts have none. Moving the first claim of an empty block
    -- once pointed a claim at the wrong position, and a claim that left the
    -- order could be removed again: a crash on these inputs.
    local cpus = { 125, 250, 500, 750, 1000, 1500, 2000, 3000, 4000, 6000 }
    local mems = { 256, 512, 1024, 1536, 2048, 4096, 8192, 12288, 16384 }
    local np = h.nodepool("default", {
      requirements = {
        { "kubernetes.io/arch", "In", { "amd64" } },
        { "karpenter.k8s.aws/instance-category", "In", { "c", "m", "r" } },
        { "karpenter.k8s.aws/instance-generation", "Gt", { "4" } },
        { "karpenter.k8s.aws/instance-cpu", "Lt", { "33" } },
        { "karpenter.sh/capacity-type", "In", { "on-demand" } },
      },
    })
    for _, seed in ipairs { 10, 17, 22 } do
      local x = seed
      local function rnd(k) -- an LCG's high bits
        x = (x * 1103515245 + 12345) % 2147483648
        return (x >> 16) % k + 1
      end
      local shapes = {}
      for i = 1, 60 do shapes[i] = { cpus[rnd(#cpus)], mems[rnd(#mems)] } end
      local docs = { np }
      for i = 1, 2000 do
        local sh = shapes[rnd(60)]
        docs[#docs + 1] = h.pod("p" .. i, { cpu = sh[1] .. "m", memory = sh[2] .. "Mi" })
      end
      local file = h.write(h.docs(table.unpack(docs)))
      local out, err, code = h.cli("plan --packing ffd -o json --now 2026-11-23T00:00:00Z -f " .. file)
      os.remove(file)
      assert.are.equal(0, code, "seed " .. seed .. ": " .. err)
      local p = assert(require("dkjson").decode(out))
      assert.are.equal(2000, p.summary.scheduled, "seed " .. seed)
      assert.are.equal(2000, h.claimed_once(p), "seed " .. seed)
      assert.is_true(#p.nodeClaims > 64, "seed " .. seed .. ": " .. #p.nodeClaims .. " claims")
    end
  end)
end)
