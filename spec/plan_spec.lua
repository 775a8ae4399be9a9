-- `dovetail plan` end to end: outputs, determinism, in-flight capacity.
local h = require "helper"

local quickstart = "examples/quickstart.yaml"

describe("dovetail plan", function()
  it("plans the quickstart example on the bundled catalog with no flags", function()
    local out, err, code = h.cli("plan -o json " .. quickstart)
    assert.are.equal(0, code, err)
    assert.matches('"kind": "Plan"', out, 1, true)
    local plan = h.plan(nil, { files = { quickstart } })
    assert.are.equal(16, plan.summary.pods)
    assert.are.equal(16, plan.summary.scheduled)
    assert.are.equal(0, #plan.unschedulable)
    local claim = plan.nodeClaims[1]
    for _, field in ipairs { "name", "nodePool", "instanceType", "zone", "capacityType", "price", "pods", "instanceTypeOptions" } do
      assert.is_not_nil(claim[field], field)
    end
    assert.matches("^default%-[a-z0-9]+$", claim.name)
  end)

  it("is byte-for-byte deterministic with --now", function()
    local a = h.cli("plan -o json --now 2026-11-23T12:00:00Z " .. quickstart)
    local b = h.cli("plan -o json --now 2026-11-23T12:00:00Z " .. quickstart)
    assert.are.equal(a, b)
    local y1 = h.cli("plan -o yaml --now 2026-11-23T12:00:00Z " .. quickstart)
    local y2 = h.cli("plan -o yaml --now 2026-11-23T12:00:00Z " .. quickstart)
    assert.are.equal(y1, y2)
  end)

  it("accounts every pending pod: scheduled plus unschedulable equals pending", function()
    local plan = h.plan(h.docs(h.nodepool("default"), h.pod("ok", { cpu = "1" }), h.pod("huge", { cpu = "2000" })))
    assert.are.equal(2, plan.summary.pods)
    assert.are.equal(1, plan.summary.scheduled)
    assert.are.equal(1, #plan.unschedulable)
    assert.are.equal("default/huge", plan.unschedulable[1].pod)
  end)

  it("gives an unschedulable pod the first 8 NodePools' reasons and counts the rest", function()
    local docs = {}
    for i = 1, 12 do docs[#docs + 1] = h.nodepool(("np%02d"):format(i), { weight = 100 - i }) end
    docs[#docs + 1] = h.pod("huge", { cpu = "2000" })
    local plan = h.plan(h.docs(table.unpack(docs)))
    assert.are.equal(1, #plan.unschedulable)
    local reason = plan.unschedulable[1].reason
    assert.matches("NodePool np01 has 2000 cpu", reason, 1, true)
    assert.matches("NodePool np08 has 2000 cpu", reason, 1, true)
    assert.is_nil(reason:find("np09", 1, true))
    local tail = "; and 4 more NodePools (dovetail plan --explain POD gives each)"
    assert.are.equal(tail, reason:sub(-#tail))
  end)

  it("prints applyable NodeClaims that a second run counts as in-flight capacity", function()
    local yaml, err, code = h.cli("plan -o yaml " .. quickstart)
    assert.are.equal(0, code, err)
    assert.matches("kind: NodeClaim", yaml, 1, true)
    assert.matches("apiVersion: karpenter.sh/v1", yaml, 1, true)
    local claims = h.write(yaml)
    local plan = h.plan(nil, { files = { quickstart, claims } })
    assert.are.equal(0, plan.summary.pods)
    assert.are.equal(0, plan.summary.nodes)
    assert.are.equal(16, plan.summary.alreadyBound)
    os.remove(claims)
  end)

  it("binds new pods to the room left on an in-flight claim before opening another", function()
    local np = h.nodepool("default", { requirements = { { "node.kubernetes.io/instance-type", "In", { "large" } } } })
    local first = h.plan(h.docs(np, h.pod("a", { cpu = "4" })), { catalog_text = h.small_catalog, format = "yaml" })
    local plan = h.plan({ h.docs(np, h.pod("a", { cpu = "4" }), h.pod("b", { cpu = "2" })), first },
      { catalog_text = h.small_catalog })
    assert.are.equal(1, plan.summary.pods)
    assert.are.equal(0, plan.summary.nodes)
    assert.are.equal(1, #plan.bindings)
    assert.are.equal("default/b", plan.bindings[1].pod)
  end)

  it("renders a table for people", function()
    local out, _, code = h.cli("plan -o table " .. quickstart)
    assert.are.equal(0, code)
    assert.matches("NODEPOOL", out, 1, true)
    assert.matches("INSTANCE TYPE", out, 1, true)
    assert.matches("16 of 16 pending pods scheduled", out, 1, true)
  end)

  it("reads manifests from standard input with -", function()
    local text = h.docs(h.nodepool("default"), h.pod("p1"))
    local out, err, code = h.cli("plan -o json -", text)
    assert.are.equal(0, code, err)
    assert.matches('"default/p1"', out, 1, true)
  end)

  it("reads JSON kind: List as kubectl prints it", function()
    local list = [[{"apiVersion":"v1","kind":"List","items":[
      {"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"default"},"spec":{"template":{"spec":{"requirements":[]}}}},
      {"apiVersion":"v1","kind":"Pod","metadata":{"name":"j1","namespace":"x"},
       "spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"500m","memory":"1Gi"}}}]}}]}]]
    local plan = h.plan(list)
    assert.are.equal(1, plan.summary.scheduled)
    assert.are.equal("x/j1", plan.nodeClaims[1].pods[1])
  end)

  it("gives a valid empty plan for empty input", function()
    local plan = h.plan("")
    assert.are.equal(0, plan.summary.pods)
    assert.are.equal(0, #plan.nodeClaims)
    local out, err, code = h.cli("plan -o json -", "")
    assert.are.equal(0, code)
    assert.matches('"nodes": 0', out, 1, true)
    -- said, since an empty pipe is usually kubectl failing upstream
    assert.matches("<stdin>: empty, read as no objects", err, 1, true)
    local _, err2 = h.cli("disrupt -o json -", " \n\n")
    assert.matches("<stdin>: empty, read as no objects", err2, 1, true)
    local _, err3 = h.cli("plan -o json -", "apiVersion: v1\nkind: List\nitems: []\n")
    assert.are.equal("", err3, "an empty List is a cluster with nothing in it")
  end)

  it("expands Deployment replicas into named pods", function()
    local dep = [[
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  template:
    spec:
      containers:
        - name: c
          resources: {requests: {cpu: 100m, memory: 128Mi}}
]]
    local plan = h.plan(h.docs(h.nodepool("default"), dep))
    assert.are.equal(3, plan.summary.pods)
    assert.are.same({ "shop/web-0", "shop/web-1", "shop/web-2" }, plan.nodeClaims[1].pods)
  end)

  it("records the clock given with --now", function()
    local out = h.cli("plan -o json --now 2026-11-22T10:00:00+01:00 " .. quickstart)
    assert.matches('"now": "2026-11-22T09:00:00Z"', out, 1, true)
    local _, err, code = h.cli("plan --now yesterday " .. quickstart)
    assert.are_not.equal(0, code)
    assert.matches("RFC 3339", err, 1, true)
  end)

  it("notes unknown kinds and skips them", function()
    local cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\n"
    local _, err, code = h.cli("plan -o json -", h.docs(h.nodepool("default"), cm))
    assert.are.equal(0, code)
    assert.matches("ConfigMap cfg", err, 1, true)
  end)
end)

describe("replicas of workloads sharing a name", function()
  local function workload(kind, name, app, n)
    return ([[
apiVersion: apps/v1
kind: %s
metadata: {name: %s, namespace: shop}
spec:
  replicas: %d
  serviceName: x
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: "1"}}}]
]]):format(kind, name, n, app, app)
  end

  it("are named apart from each other and from every other workload's, and explain reaches each", function()
    local text = h.docs(h.nodepool("default"), workload("Deployment", "web", "a", 2), workload("StatefulSet", "web", "b", 2),
      workload("Deployment", "web-deployment", "c", 2))
    local p = h.plan(text, { catalog_text = h.small_catalog })
    local seen, n = {}, 0
    for _, c in ipairs(p.nodeClaims) do
      for _, pod in ipairs(c.pods) do
        assert.is_nil(seen[pod], pod .. " twice")
        seen[pod], n = true, n + 1
      end
    end
    assert.are.equal(6, n)
    -- the StatefulSet's keep their real names; the Deployment web's are named after its kind, past
    -- the Deployment web-deployment's own
    for _, want in ipairs({ "shop/web-0", "shop/web-1", "shop/web-deployment-0", "shop/web-deployment-2-0" }) do
      assert.is_true(seen[want], want)
      local out, err, code = h.cli("plan --catalog " .. h.write(h.small_catalog) .. " --explain " .. want .. " -", text)
      assert.are.equal(0, code, err)
      assert.matches("pod " .. want, out, 1, true)
    end
  end)
end)

describe("a NodeClaim of thousands of pods", function()
  it("leaves dovetail.dev/pods out of -o yaml past the API server's 256 KiB of annotations, and says so", function()
    local cat = [[
{ "region": "test-1", "provider": "generic", "zones": ["test-1a"],
  "instanceTypes": [ { "name": "huge", "family": "h", "arch": "amd64", "cpu": 512, "memoryMiB": 2097152,
    "maxPods": 4000, "onDemandPrice": 10.0, "overhead": { "cpu": "100m", "memory": "100Mi" } } ] }
]]
    local ns, name = ("n"):rep(63), ("w"):rep(60)
    local text = h.docs(h.nodepool("default"), ([[
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: %s}
spec:
  replicas: 2100
  selector: {matchLabels: {app: w}}
  template:
    metadata: {labels: {app: w}}
    spec:
      containers: [{name: c, resources: {requests: {cpu: 10m, memory: 16Mi}}}]
]]):format(name, ns))
    local catf = h.write(cat)
    local out, err, code = h.cli("plan --catalog " .. catf .. " -o yaml -", text)
    assert.are.equal(0, code, err)
    assert.matches('dovetail.dev/pods%-omitted: "2100"', out)
    assert.is_nil(out:find("dovetail.dev/pods:", 1, true))
    local js = h.cli("plan --catalog " .. catf .. " -o json -", text)
    assert.matches("the names of its 2100 pods pass", js, 1, true)
    -- fed back, its pods go onto its room: no new node
    local back = h.cli("plan --catalog " .. catf .. " -o json -", text .. "---\n" .. out)
    assert.matches('"nodes":%s*0', back)
    assert.matches('"unschedulable":%s*0', back)
  end)
end)
