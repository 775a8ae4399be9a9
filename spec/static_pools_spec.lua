-- Static NodePools (spec.replicas), as Karpenter's static capacity: `dovetail plan` keeps replicas
-- NodeClaims whatever the pods, within limits.nodes; `dovetail disrupt` never consolidates them,
-- replaces drifted and expired nodes, and scales a pool above its replicas down.
local h = require "helper"

local NOW = "2026-11-23T12:00:00Z"

-- A static pool on the small catalog; o.replicas, o.limits (raw YAML), o.types, o.budget.
local function static_pool(o)
  o = o or {}
  return string.format([[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %s}
spec:
  replicas: %d
%s  disruption:
    budgets: [{nodes: "%s"}]
  template:
    spec:
      nodeClassRef: {group: example.com, kind: TestNodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [%s]}
]], o.name or "fixed", o.replicas or 3, o.limits and ("  limits: " .. o.limits .. "\n") or "", o.budget or "10%",
    o.types or "medium, large")
end

local function node(name, o)
  o = o or {}
  local labels = { ["karpenter.sh/nodepool"] = o.pool or "fixed", ["node.kubernetes.io/instance-type"] = o.type or "medium",
    ["topology.kubernetes.io/zone"] = "test-1a", ["karpenter.sh/capacity-type"] = "on-demand",
    ["kubernetes.io/arch"] = "amd64" }
  local md = { name = name, labels = labels, creationTimestamp = o.created or "2026-11-20T00:00:00Z" }
  if o.deleting then md.deletionTimestamp = "2026-11-23T11:00:00Z" end
  if o.claim then
    local status = { conditions = h.array { { type = "Initialized", status = "True" } } }
    if o.launched then status.providerID = "test:///" .. name end
    if o.node_name then status.nodeName = o.node_name end
    return h.json { apiVersion = "karpenter.sh/v1", kind = "NodeClaim", metadata = md, status = status,
      spec = { nodeClassRef = { group = "example.com", kind = "TestNodeClass", name = "default" },
        requirements = h.array {} } } .. "\n"
  end
  local spec = { providerID = "test:///" .. name }
  if o.tainted then spec.taints = h.array { { key = "karpenter.sh/disrupted", effect = "NoSchedule" } } end
  return h.json { apiVersion = "v1", kind = "Node", metadata = md, spec = spec } .. "\n"
end

local function bound(name, on, extra)
  local p = { apiVersion = "v1", kind = "Pod", metadata = { name = name, namespace = "default" },
    spec = { nodeName = on, containers = h.array { { name = "c", resources = { requests = { cpu = "500m", memory = "256Mi" } } } } } }
  for k, v in pairs(extra or {}) do p.metadata[k] = v end
  return h.json(p) .. "\n"
end

local function plan(text)
  return h.plan(text, { catalog_text = h.small_catalog, now = NOW })
end

local function disrupt(text, extra)
  local args = { manifests = text, catalog_text = h.small_catalog, now = NOW }
  for k, v in pairs(extra or {}) do args[k] = v end
  return assert(h.dt.disrupt(args))
end

local function pool_claims(p, pool)
  local out = {}
  for _, c in ipairs(p.nodeClaims) do
    if c.nodePool == pool then out[#out + 1] = c end
  end
  return out
end

local function names(list)
  local out = {}
  for i, n in ipairs(list) do out[i] = n.name end
  return out
end

describe("dovetail plan with a static NodePool", function()
  it("keeps spec.replicas NodeClaims with no pod at all, each on the offering launch would choose", function()
    local p = plan(static_pool())
    local claims = pool_claims(p, "fixed")
    assert.are.equal(3, #claims)
    for _, c in ipairs(claims) do
      assert.are.equal("medium", c.instanceType, "the cheapest type its requirements allow")
      assert.are.equal("on-demand", c.capacityType)
      assert.are.equal("test-1a", c.zone, "ties go to the zone name")
      assert.same({}, c.pods)
    end
    assert.are.equal(3, p.summary.nodes)
    assert.matches("NodePool fixed is static (spec.replicas 3): 0 NodeClaims exist, 3 planned", p.notes[1], 1, true)
  end)

  it("is never sized by pending pods, which use its claims as in-flight capacity", function()
    local pods = {}
    for i = 1, 10 do pods[i] = h.pod("p" .. i, { cpu = "1", memory = "1Gi" }) end
    local p = plan(h.docs(static_pool(), table.unpack(pods)))
    local claims = pool_claims(p, "fixed")
    assert.are.equal(3, #claims, "ten pending pods open no fourth claim")
    local placed = 0
    for _, c in ipairs(claims) do placed = placed + #c.pods end
    assert.are.equal(9, placed, "three 1-cpu pods on each medium node (3900m allocatable)")
    assert.are.equal(1, #p.unschedulable)
    assert.matches("NodePool fixed is static (spec.replicas 3): pods open no NodeClaims on it", p.unschedulable[1].reason,
      1, true)
    -- a dynamic pool next to it takes what the static pool's nodes cannot
    p = plan(h.docs(static_pool(), h.nodepool("dyn"), table.unpack(pods)))
    assert.are.equal(3, #pool_claims(p, "fixed"))
    assert.are.equal(1, #pool_claims(p, "dyn"))
    assert.are.equal(0, #p.unschedulable)
  end)

  it("counts its Nodes and in-flight NodeClaims, not those being deleted, which limits.nodes still counts", function()
    local p = plan(h.docs(static_pool { replicas = 4 }, node("n1"),
      node("c1", { claim = true, launched = true, node_name = "n1" }), -- n1's claim: one machine
      node("c2", { claim = true }), node("gone", { deleting = true })))
    assert.are.equal(2, #pool_claims(p, "fixed"), "4 replicas, 2 machines up, the one being deleted replaced")
    p = plan(h.docs(static_pool { replicas = 4, limits = "{nodes: 4}" }, node("n1"),
      node("c1", { claim = true, launched = true, node_name = "n1" }), node("c2", { claim = true }),
      node("gone", { deleting = true })))
    assert.are.equal(1, #pool_claims(p, "fixed"), "limits.nodes 4 leaves room for one while three claims exist")
    assert.matches("limits.nodes 4 leaves room for 1 more", table.concat(p.notes, "\n"), 1, true)
  end)

  it("plans nothing more once its claims are fed back, and leaves a pool above its replicas to disrupt", function()
    local text = static_pool()
    local claims = h.plan(text, { catalog_text = h.small_catalog, now = NOW, format = "yaml" })
    local again = plan({ text, claims })
    assert.are.equal(0, again.summary.nodes)
    local over = plan(h.docs(static_pool { replicas = 1 }, node("a"), node("b")))
    assert.are.equal(0, over.summary.nodes)
    assert.matches("NodePool fixed is static (spec.replicas 1) and has 2 NodeClaims: dovetail disrupt scales it down",
      over.notes[1], 1, true)
  end)

  it("prints byte-identical plans for the same inputs", function()
    local f = h.write(h.docs(static_pool(), h.pod("a", { cpu = "500m" })))
    local cat = h.write(h.small_catalog)
    local a = h.cli("plan -o yaml --now " .. NOW .. " --catalog " .. cat .. " " .. f)
    local b = h.cli("plan -o yaml --now " .. NOW .. " --catalog " .. cat .. " " .. f)
    assert.are.equal(a, b)
    assert.are.equal(3, select(2, a:gsub("kind: NodeClaim", "")))
    os.remove(f)
    os.remove(cat)
  end)

  it("refuses what Karpenter's CRD refuses of a static pool", function()
    local function err_of(text)
      local p, err = h.dt.plan { manifests = text, catalog_text = h.small_catalog }
      assert.is_nil(p)
      return err
    end
    assert.matches("NodePool fixed: spec.weight: a static NodePool (spec.replicas set) takes no weight",
      err_of(static_pool():gsub("  replicas: 3\n", "  replicas: 3\n  weight: 10\n")), 1, true)
    assert.matches("NodePool fixed: spec.limits.cpu: a static NodePool (spec.replicas set) takes only limits.nodes",
      err_of(static_pool { limits = "{cpu: 100, nodes: 5}" }), 1, true)
    for _, bad in ipairs { "-1", "1.5", "three" } do
      assert.matches("NodePool fixed: spec.replicas: expected a whole number of nodes",
        err_of(static_pool():gsub("replicas: 3", "replicas: " .. bad)), 1, true)
    end
  end)
end)

describe("dovetail disrupt with a static NodePool", function()
  it("never consolidates it, empty or underused, and says why", function()
    local text = h.docs(static_pool { replicas = 2 }, node("empty-1", { type = "large" }),
      node("light-1", { type = "large" }), bound("tiny", "light-1"))
    local r = disrupt(text, { explain = "empty-1" })
    assert.same({}, r.commands)
    for _, b in ipairs(r.blocked) do
      assert.matches("static NodePool fixed (spec.replicas 2): Karpenter never consolidates a static pool", b.reason, 1, true)
    end
    assert.matches("never consolidates a static pool", r.explain.steps[1], 1, true)
    -- the same nodes in a dynamic pool go
    local dyn = disrupt((text:gsub("  replicas: 2\n", "")))
    assert.is_true(#dyn.commands > 0)
  end)

  it("scales a pool above its replicas down: unlaunched claims, empty nodes, then the cheapest to reschedule", function()
    local text = h.docs(static_pool { replicas = 1, budget = "0" },
      node("a-busy", { created = "2026-11-01T00:00:00Z" }), bound("p1", "a-busy"), bound("p2", "a-busy"),
      bound("p3", "a-busy"),
      node("b-light", { created = "2026-11-01T00:00:00Z" }), bound("q1", "b-light"),
      node("c-empty"), node("d-new", { claim = true }))
    local r = disrupt(text)
    assert.are.equal(1, #r.commands)
    local c = r.commands[1]
    assert.are.equal("Overprovisioned", c.reason)
    assert.same({ "d-new", "c-empty", "b-light" }, names(c.nodes), "a budget of 0 does not hold it back")
    assert.matches("static NodePool fixed runs 4 NodeClaims for spec.replicas 1", c.detail, 1, true)
    -- do-not-disrupt pods put their node last
    text = text:gsub('"name":"q1","namespace":"default"',
      '"annotations":{"karpenter.sh/do-not-disrupt":"true"},"name":"q1","namespace":"default"')
    r = disrupt(text)
    assert.same({ "d-new", "c-empty", "a-busy" }, names(r.commands[1].nodes))
  end)

  it("replaces a drifted node from the template, one for one, within limits.nodes and budgets", function()
    -- xlarge is no longer allowed: n2 has drifted
    local function cluster(o)
      return h.docs(static_pool(o), node("n1"), node("n2", { type = "large" }), node("n3"))
    end
    local r = disrupt(cluster { replicas = 3, types = "small, medium", budget = "100%" })
    assert.are.equal(1, #r.commands)
    local c = r.commands[1]
    assert.are.equal("Drifted", c.reason)
    assert.are.equal("replace", c.action)
    assert.same({ "n2" }, names(c.nodes))
    assert.are.equal("small", c.replacements[1].instanceType, "the template's cheapest offering")
    assert.matches("static NodePool fixed: replaced from its template", c.detail, 1, true)
    -- at limits.nodes the replacement would pass it: the node waits
    r = disrupt(cluster { replicas = 3, types = "small, medium", budget = "100%", limits = "{nodes: 3}" })
    assert.same({}, r.commands)
    local why = {}
    for _, b in ipairs(r.blocked) do why[b.node] = b.reason end
    assert.matches("drifted, but static NodePool fixed is at limits.nodes 3", why.n2, 1, true)
    -- a budget of nothing holds drift back
    r = disrupt(cluster { replicas = 3, types = "small, medium", budget = "0" })
    assert.same({}, r.commands)
    -- while a node is being disrupted (its replacement in flight), running and disrupting nodes
    -- are above the replicas: drift waits
    r = disrupt(h.docs(cluster { replicas = 3, types = "small, medium", budget = "100%" },
      node("n4", { tainted = true })))
    assert.same({}, r.commands)
    why = {}
    for _, b in ipairs(r.blocked) do why[b.node] = b.reason end
    assert.matches("drifted, but static NodePool fixed is above spec.replicas 3", why.n2, 1, true)
  end)

  it("replaces an expired node so the pool keeps its replicas", function()
    local r = disrupt(h.docs(static_pool { replicas = 2 }, node("old", { created = "2026-09-01T00:00:00Z" }), node("young")))
    assert.are.equal(1, #r.commands)
    assert.are.equal("Expired", r.commands[1].reason)
    assert.are.equal("replace", r.commands[1].action)
    assert.are.equal("fixed", r.commands[1].replacements[1].nodePool)
    -- above its replicas, the expired node goes without a replacement
    r = disrupt(h.docs(static_pool { replicas = 1 }, node("old", { created = "2026-09-01T00:00:00Z" }), node("young"),
      bound("keep", "young")))
    local reasons = {}
    for _, cmd in ipairs(r.commands) do reasons[#reasons + 1] = cmd.reason .. "/" .. cmd.action end
    assert.same({ "Overprovisioned/delete" }, reasons, "the old empty node is the one scaled down")
  end)

  it("gives byte-identical passes for the same inputs", function()
    local f = h.write(h.docs(static_pool { replicas = 1 }, node("a"), node("b"), bound("x", "a")))
    local cat = h.write(h.small_catalog)
    local a = h.cli("disrupt -o json --now " .. NOW .. " --catalog " .. cat .. " " .. f)
    assert.are.equal(a, h.cli("disrupt -o json --now " .. NOW .. " --catalog " .. cat .. " " .. f))
    assert.matches('"reason": "Overprovisioned"', a, 1, true)
    os.remove(f)
    os.remove(cat)
  end)
end)
