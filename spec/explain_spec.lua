-- `dovetail plan --explain POD`: why one pod went where it went.
local h = require "helper"
local dkjson = require "dkjson"

local NOW = "2026-11-23T12:00:00Z"

-- a Node with room, as `kubectl get node -o yaml` shows one (trimmed)
local function node(name, cpu, extra)
  return ([[
apiVersion: v1
kind: Node
metadata:
  name: %s
  labels:
    node.kubernetes.io/instance-type: small
    topology.kubernetes.io/zone: test-1a
    kubernetes.io/arch: amd64
    karpenter.sh/capacity-type: on-demand
spec:
%s
status:
  allocatable: {cpu: "%s", memory: 2Gi, pods: "10"}
  conditions: [{type: Ready, status: "True"}]
]]):format(name, extra or "  {}", cpu)
end

-- explanation and plan through the Lua module (the plan's JSON as a second value)
local function explain(manifests, pod, extra)
  local args = { manifests = manifests, catalog_text = h.small_catalog, now = NOW, explain = pod }
  for k, v in pairs(extra or {}) do args[k] = v end
  local ex, plan = h.dt.plan(args)
  assert(ex, plan)
  return ex, plan
end

local function group(ex, reason)
  for _, g in ipairs(ex.cheaperOfferings.byReason) do
    if g.reason == reason then return g end
  end
end

describe("dovetail plan --explain", function()
  local ondemand = h.nodepool("default", { requirements = { { "karpenter.sh/capacity-type", "In", { "on-demand" } } } })
  local gpu = h.nodepool("gpu", { weight = 10, taints = { { "nvidia.com/gpu", "true", "NoSchedule" } } })

  it("puts no new pod on a Node being deleted, and says so", function()
    local deleting = node("n1", "4"):gsub("  name: n1\n", "  name: n1\n  deletionTimestamp: \"2026-11-23T11:00:00Z\"\n")
    local ex, plan = explain(h.docs(ondemand, deleting, h.pod("p", { cpu = "1" })), "p")
    assert.equal("newNodeClaim", ex.outcome)
    assert.equal("being deleted (metadata.deletionTimestamp): takes no new pods", ex.lastTry.nodes[1].reason)
    assert.equal(0, #plan.bindings)
  end)

  it("names the NodePools in weight order with why each was skipped, and the offering launched", function()
    local ex, plan = explain(h.docs(ondemand, gpu, node("n1", "1"), h.pod("big", { cpu = "3" })), "big")
    assert.equal("PlanExplanation", ex.kind)
    assert.equal("default/big", ex.pod)
    assert.equal("newNodeClaim", ex.outcome)
    assert.same({ cpu = "3", memory = "1Gi", pods = "1" }, ex.requests)
    -- the existing node first, then the pools by weight
    assert.equal("n1", ex.lastTry.nodes[1].name)
    assert.matches("not enough cpu: needs 3, 1 free", ex.lastTry.nodes[1].reason, 1, true)
    assert.equal("gpu", ex.lastTry.nodePools[1].name)
    assert.equal(10, ex.lastTry.nodePools[1].weight)
    assert.matches("taint nvidia.com/gpu=true:NoSchedule is not tolerated", ex.lastTry.nodePools[1].reason, 1, true)
    assert.equal("default", ex.lastTry.nodePools[2].name)
    assert.is_not_nil(ex.lastTry.nodePools[2].opens)
    -- the same claim as the plan's
    local claim = plan.nodeClaims[1]
    assert.same({ claim.name, claim.instanceType, claim.zone, claim.capacityType, claim.price },
      { ex.nodeClaim.name, ex.nodeClaim.instanceType, ex.nodeClaim.zone, ex.nodeClaim.capacityType, ex.nodeClaim.price })
    assert.equal("arm", ex.nodeClaim.instanceType)
    -- every cheaper offering, each with a reason: small is too small, medium's spot is not allowed
    assert.equal(6, ex.cheaperOfferings.count)
    local small = group(ex, "tooSmall")
    assert.equal(4, small.count)
    assert.matches("cpu: the claim's pods %(1%) need 3, it has 1900m allocatable", small.cheapest[1].why)
    local ct = group(ex, "capacityType")
    assert.equal("medium", ct.cheapest[1].instanceType)
    assert.same({ "test-1a", "test-1b" }, ct.cheapest[1].zones)
    assert.matches("karpenter.sh/capacity-type In [on-demand]", ct.cheapest[1].why, 1, true)
  end)

  it("says which existing node took the pod and why no new NodeClaim was opened", function()
    local full = node("a-full", "1")
    local room = node("b-room", "4")
    local pods = h.docs(h.pod("first", { cpu = "900m", memory = "256Mi" }), h.pod("second", { cpu = "500m", memory = "256Mi" }))
    local ex, plan = explain(h.docs(ondemand, full, room, pods), "default/second")
    assert.equal("existingNode", ex.outcome)
    assert.equal("b-room", ex.node)
    assert.same({ { pod = "default/first", node = "a-full" }, { pod = "default/second", node = "b-room" } }, plan.bindings)
    assert.equal("a-full", ex.lastTry.nodes[1].name)
    assert.matches("not enough cpu: needs 500m, 100m free", ex.lastTry.nodes[1].reason, 1, true)
    assert.equal("b-room", ex.lastTry.nodes[2].name)
    assert.is_not_nil(ex.lastTry.nodes[2].takes)
    assert.matches("a new NodeClaim would have come from NodePool default", ex.whyNotNewNodeClaim, 1, true)
    assert.is_nil(ex.cheaperOfferings)
  end)

  it("gives a cordoned or tainted node's reason", function()
    local cordoned = node("a-cordoned", "4", "  unschedulable: true")
    local tainted = node("b-tainted", "4", "  taints: [{key: dedicated, value: db, effect: NoSchedule}]")
    local ex = explain(h.docs(ondemand, cordoned, tainted, h.pod("p", { cpu = "1" })), "p")
    assert.equal("cordoned (spec.unschedulable): taint node.kubernetes.io/unschedulable:NoSchedule is not tolerated",
      ex.lastTry.nodes[1].reason)
    assert.equal("taint dedicated=db:NoSchedule is not tolerated", ex.lastTry.nodes[2].reason)
    assert.equal("newNodeClaim", ex.outcome)
  end)

  it("explains a pod that fits nowhere with the plan's reason and every NodePool's", function()
    local ex, plan = explain(h.docs(ondemand, gpu, h.pod("huge", { cpu = "100" })), "huge")
    assert.equal("unschedulable", ex.outcome)
    assert.equal(plan.unschedulable[1].reason, ex.summary)
    assert.matches("no instance type in NodePool default has 100 cpu", ex.lastTry.nodePools[2].reason, 1, true)
    assert.is_nil(ex.nodeClaim)
  end)

  it("names the requirement, topology, unavailable offering and spot price behind cheaper offerings", function()
    -- the pod requires test-1b; spot is capped below medium's spot price; small is marked unavailable
    local np = h.nodepool("default"):gsub("kind: NodePool\nmetadata:\n", "kind: NodePool\nmetadata:\n"
      .. '  annotations: {dovetail.dev/spot-max-price: "0.05"}\n')
    local mark = [[
apiVersion: dovetail.dev/v1alpha1
kind: UnavailableOffering
metadata: {name: ice-small}
spec: {capacityType: spot, instanceType: small, zone: test-1b, expiresAt: "2026-11-23T12:03:00Z"}
]]
    local pod = h.pod("z", { cpu = "500m", memory = "512Mi", nodeSelector = { ["topology.kubernetes.io/zone"] = "test-1b" } })
    local ex = explain(h.docs(np, mark, pod), "z")
    assert.equal("small", ex.nodeClaim.instanceType)
    assert.equal("on-demand", ex.nodeClaim.capacityType)
    assert.equal("test-1b", ex.nodeClaim.zone)
    local zone = group(ex, "zone")
    assert.same({ "test-1a" }, zone.cheapest[1].zones)
    assert.matches("topology.kubernetes.io/zone In [test-1b]", zone.cheapest[1].why, 1, true)
    local gone = group(ex, "unavailable")
    assert.same({ "test-1b" }, gone.cheapest[1].zones)
    assert.equal("UnavailableOffering ice-small until 2026-11-23T12:03:00Z", gone.cheapest[1].why)
    local spot = group(ex, "spotMaxPrice")
    assert.equal("medium", spot.cheapest[1].instanceType)
    assert.matches("above the NodePool's dovetail.dev/spot-max-price $0.05", spot.cheapest[1].why, 1, true)
  end)

  it("lists the constraints it relaxed, in Karpenter's order", function()
    local pod = h.pod("pref", { cpu = "500m", extra = [=[
  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 50
          preference:
            matchExpressions: [{key: example.com/none, operator: In, values: ["x"]}]]=] })
    local ex = explain(h.docs(ondemand, pod), "pref")
    assert.equal("newNodeClaim", ex.outcome)
    assert.same({ "1 preferred node-affinity terms dropped (heaviest first)" }, ex.lastTry.relaxed)
  end)

  it("explains pods that are not planned: bound by spec.nodeName", function()
    local bound = h.pod("bound", { extra = "  nodeName: n1" })
    local ex = explain(h.docs(ondemand, node("n1", "4"), bound, h.pod("other")), "bound")
    assert.equal("bound", ex.outcome)
    assert.equal("n1", ex.node)
  end)

  it("prints text by default and the same as a document with -o json and -o yaml", function()
    local path = h.write(h.docs(ondemand, gpu, node("n1", "1"), h.pod("big", { cpu = "3" })))
    local cat = h.write(h.small_catalog)
    local args = "plan --catalog " .. cat .. " --now " .. NOW .. " --explain default/big "
    local text, err, code = h.cli(args .. path)
    assert.equal(0, code, err)
    assert.matches("^pod default/big\n", text)
    assert.matches("  result: it opened NodeClaim default%-[a-z0-9]+ of NodePool default: arm in test%-1a, on%-demand", text)
    assert.matches("gpu (weight 10): taint nvidia.com/gpu=true:NoSchedule is not tolerated", text, 1, true)
    assert.matches("too small for the claim's pods: 4", text, 1, true)
    local json = h.cli(args .. "-o json " .. path)
    local doc = dkjson.decode(json)
    local lua = explain(h.docs(ondemand, gpu, node("n1", "1"), h.pod("big", { cpu = "3" })), "default/big")
    assert.same(lua, doc)
    local yaml, _, ycode = h.cli(args .. "-o yaml " .. path)
    assert.equal(0, ycode)
    assert.matches("kind: PlanExplanation", yaml, 1, true)
    os.remove(path)
    os.remove(cat)
  end)

  it("exits 1 with a clear message for a pod that is not in the input, or a name that is not unique", function()
    local path = h.write(h.docs(ondemand, h.pod("web", { namespace = "a" }), h.pod("web", { namespace = "b" })))
    local out, err, code = h.cli("plan --explain nosuch " .. path)
    assert.equal(1, code)
    assert.equal("", out)
    assert.matches("explain: no pod nosuch in the input", err, 1, true)
    local _, err1, code1 = h.cli("plan --explain web " .. path)
    assert.equal(1, code1)
    assert.matches("explain: web names 2 pods (a/web, b/web); give namespace/name", err1, 1, true)
    local _, err2, code2 = h.cli("plan --explain b/web " .. path)
    assert.equal(0, code2, err2)
    os.remove(path)
  end)

  it("leaves the plan byte-identical: every example and fixture, each explained pod", function()
    local files = { "examples/quickstart.yaml", "examples/mixed-arch.yaml", "examples/vm-pool.yaml",
      "examples/disrupt.yaml", h.fixtures .. "cluster-dump.yaml" }
    for _, f in ipairs(files) do
      for _, packing in ipairs { "cost", "ffd" } do
        local base = { files = { f }, now = NOW, format = "json", packing = packing }
        local plain = assert(h.dt.plan(base))
        local decoded = dkjson.decode(plain)
        local pods = {}
        for _, c in ipairs(decoded.nodeClaims) do pods[#pods + 1] = c.pods[1] end
        for _, b in ipairs(decoded.bindings) do pods[#pods + 1] = b.pod end
        for _, u in ipairs(decoded.unschedulable) do pods[#pods + 1] = u.pod end
        for _, pod in ipairs(pods) do
          local args = { explain = pod }
          for k, v in pairs(base) do args[k] = v end
          local ex, with = h.dt.plan(args)
          assert(ex, with)
          assert.equal(plain, with, f .. " --explain " .. pod)
          local doc = dkjson.decode(ex)
          assert.equal(pod, doc.pod)
          if doc.nodeClaim then
            -- the claim the plan has the pod on
            local found
            for _, c in ipairs(decoded.nodeClaims) do
              for _, p in ipairs(c.pods) do if p == pod then found = c end end
            end
            assert.equal(found.name, doc.nodeClaim.name)
            assert.equal(found.price, doc.nodeClaim.price)
          end
        end
      end
    end
  end)
end)
