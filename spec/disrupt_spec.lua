-- Disruption: emptiness, drift, expiry, consolidation and budgets (dovetail.disrupt).
local h = require "helper"
local dt = h.dt

local NOW = "2026-11-23T12:00:00Z" -- a Monday
local NOW_S = 1795435200
local function at(s) return os.date("!%Y-%m-%dT%H:%M:%SZ", NOW_S + s) end

-- A NodePool; o.disruption is spec.disruption, o.requirements replaces the default.
local function pool(o)
  o = o or {}
  return {
    apiVersion = "karpenter.sh/v1",
    kind = "NodePool",
    metadata = { name = o.name or "default" },
    spec = {
      disruption = o.disruption or { budgets = { { nodes = "100%" } } },
      template = {
        metadata = o.labels and { labels = o.labels } or nil,
        spec = {
          expireAfter = o.expireAfter,
          requirements = o.requirements or {
            { key = "kubernetes.io/arch", operator = "In", values = { "amd64" } },
            { key = "karpenter.sh/capacity-type", operator = "In", values = { "on-demand" } },
          },
        },
      },
    },
  }
end

-- A Node of the small catalog; o: type, zone, ct, pool, age (s), annotations, ready.
local function node(name, o)
  o = o or {}
  return {
    apiVersion = "v1",
    kind = "Node",
    metadata = {
      name = name,
      creationTimestamp = at(-(o.age or 86400)),
      annotations = o.annotations,
      labels = {
        ["node.kubernetes.io/instance-type"] = o.type or "medium",
        ["topology.kubernetes.io/zone"] = o.zone or "test-1a",
        ["karpenter.sh/capacity-type"] = o.ct or "on-demand",
        ["karpenter.sh/nodepool"] = o.pool or "default",
        ["kubernetes.io/arch"] = "amd64",
      },
    },
    status = o.ready == false and { conditions = { { type = "Ready", status = "False" } } } or nil,
  }
end

-- A pod bound to a node; o: cpu, memory, labels, annotations.
local function pod(name, on, o)
  o = o or {}
  return {
    apiVersion = "v1",
    kind = "Pod",
    metadata = { name = name, namespace = "default", labels = o.labels, annotations = o.annotations },
    spec = {
      nodeName = on,
      containers = { { name = "c", resources = { requests = { cpu = o.cpu or "500m", memory = o.memory or "512Mi" } } } },
    },
  }
end

local function run(items, extra)
  local args = { manifests = h.list(items), catalog_text = extra and extra.catalog or h.small_catalog, now = NOW }
  for k, v in pairs(extra or {}) do
    if k ~= "catalog" then args[k] = v end
  end
  local r, err = dt.disrupt(args)
  assert(r, err)
  return r
end

local function disrupted(r)
  local out = {}
  for _, c in ipairs(r.commands) do
    for _, n in ipairs(c.nodes) do out[#out + 1] = n.name end
  end
  table.sort(out)
  return out
end

local blocked = h.blocked

local function budget(r, pool_name, reason)
  for _, b in ipairs(r.budgets) do
    if b.nodePool == pool_name and b.reason == reason then return b.allowed end
  end
end

describe("disruption budgets", function()
  local function empties(n, budgets)
    local items = { pool({ disruption = { budgets = budgets } }) }
    for i = 1, n do items[#items + 1] = node("n" .. i) end
    return items
  end

  it("30% of 10 empty nodes disrupts 3", function()
    local r = run(empties(10, { { nodes = "30%" } }))
    assert.equal(1, #r.commands)
    assert.equal("Empty", r.commands[1].reason)
    assert.equal(3, #r.commands[1].nodes)
    assert.equal(7, #r.blocked)
    assert.matches("budget", blocked(r, r.blocked[1].node))
  end)

  it("50% of 3 nodes allows 2 (percentages round up)", function()
    local r = run(empties(3, { { nodes = "50%" } }))
    assert.equal(2, budget(r, "default", "Empty"))
    assert.equal(2, #disrupted(r))
  end)

  it("the default budget is 10%", function()
    local items = empties(20, nil)
    items[1].spec.disruption = {}
    local r = run(items)
    assert.equal(2, budget(r, "default", "Empty"))
    assert.equal(2, #disrupted(r))
  end)

  it("the most restrictive active budget wins", function()
    local r = run(empties(10, { { nodes = "50%" }, { nodes = "2" } }))
    assert.equal(2, #disrupted(r))
  end)

  it("a budget applies only to its reasons", function()
    local r = run(empties(10, { { nodes = "0", reasons = { "Drifted" } }, { nodes = "4" } }))
    assert.equal(4, budget(r, "default", "Empty"))
    assert.equal(0, budget(r, "default", "Drifted"))
    r = run(empties(10, { { nodes = "0", reasons = { "Empty" } } }))
    assert.equal(0, #disrupted(r))
    assert.equal("unlimited", budget(r, "default", "Underutilized"))
  end)

  it("a cron window applies while it is open and not outside it", function()
    -- NOW is Monday 12:00 UTC
    local open = { nodes = "0", schedule = "0 9 * * mon-fri", duration = "8h" }
    assert.equal(0, #disrupted(run(empties(4, { open }))), "09:00 + 8h covers 12:00")
    local closed = { nodes = "0", schedule = "0 9 * * mon-fri", duration = "2h" }
    assert.equal(4, #disrupted(run(empties(4, { closed }))), "09:00 + 2h has ended")
    local daily = { nodes = "0", schedule = "@daily", duration = "13h" }
    assert.equal(0, #disrupted(run(empties(4, { daily }))), "@daily is midnight")
    local weekend = { nodes = "0", schedule = "0 0 * * sat", duration = "48h" }
    assert.equal(4, #disrupted(run(empties(4, { weekend }))))
    local long = { nodes = "0", schedule = "0 0 * * sat", duration = "72h" }
    assert.equal(0, #disrupted(run(empties(4, { long }))), "a window longer than the gap reaches Monday")
    -- a window reaching back past 1970 (Karpenter takes durations up to about 2,562,047h) is open
    for _, d in ipairs { "499000h", "999999h", "2562047h" } do
      local ever = { nodes = "0", schedule = "@daily", duration = d }
      assert.equal(0, #disrupted(run(empties(4, { ever }))), d)
    end
  end)

  it("NotReady and deleting nodes count against the budget", function()
    local items = empties(10, { { nodes = "3" } })
    items[2] = node("n1", { ready = false })
    local r = run(items)
    assert.equal(2, budget(r, "default", "Empty"))
  end)

  it("a Node whose NodeClaim a command took (tainted karpenter.sh/disrupted) counts as disrupting", function()
    -- the daemon taints its own NodeClaim while a replacement launches; the
    -- Node registered under the claim is the cluster's and carries no taint
    local items = empties(10, { { nodes = "3" } })
    items[#items + 1] = {
      apiVersion = "karpenter.sh/v1",
      kind = "NodeClaim",
      metadata = { name = "default-abcde", labels = { ["karpenter.sh/nodepool"] = "default",
        ["node.kubernetes.io/instance-type"] = "medium" } },
      spec = { taints = { { key = "karpenter.sh/disrupted", effect = "NoSchedule" } } },
      -- initialized, as the daemon marks its claims once launched (one that is not
      -- counts in no budget, as Karpenter's)
      status = { nodeName = "n1", conditions = { { type = "Initialized", status = "True" } } },
    }
    local r = run(items)
    assert.equal(2, budget(r, "default", "Empty"))
    assert.matches("already disrupting", blocked(r, "n1"), 1, true)
    assert.same({ "n2", "n3" }, disrupted(r))
    -- and a plan puts no new pod on it: it goes once its replacement is up
    local pending = pod("new", nil)
    local plan = h.plan(h.list({ pool(), items[2], items[#items], pending }),
      { catalog_text = h.small_catalog, now = NOW })
    assert.equal(0, #plan.bindings)
    assert.equal(1, #plan.nodeClaims)
  end)

  local invalid = {
    { { nodes = "150%" }, "budgets[0].nodes" },
    { { nodes = "-1" }, "budgets[0].nodes" },
    { { nodes = "ten" }, "budgets[0].nodes" },
    { { nodes = "1", schedule = "0 9 * *", duration = "1h" }, "budgets[0].schedule" },
    { { nodes = "1", schedule = "61 * * * *", duration = "1h" }, "budgets[0].schedule" },
    { { nodes = "1", schedule = "@sometimes", duration = "1h" }, "budgets[0].schedule" },
    { { nodes = "1", schedule = "0 9 * * *" }, "budgets[0].duration" },
    { { nodes = "1", duration = "1h" }, "budgets[0].schedule" },
    { { nodes = "1", reasons = { "Bored" } }, "budgets[0].reasons" },
  }
  for _, c in ipairs(invalid) do
    it("rejects an invalid budget at load: " .. c[2], function()
      local r, err = dt.disrupt({ manifests = h.list(empties(1, { c[1] })), catalog_text = h.small_catalog })
      assert.is_nil(r)
      assert.matches("NodePool default: spec.disruption." .. c[2], err, 1, true)
    end)
  end
end)

describe("drift of a registered claim", function()
  it("takes dovetail's template hash from the claim when its Node carries none", function()
    local text = h.slurp(h.fixtures .. "drift/registered.yaml")
    local claim_only = text:sub(1, assert(text:find("\n---\napiVersion: v1\nkind: Node\n", 1, true)))
    for _, t in ipairs({ claim_only, text }) do
      local r = assert(dt.disrupt({ manifests = t, now = NOW }))
      assert.equal(1, #r.commands)
      assert.equal("Drifted", r.commands[1].reason)
    end
  end)
end)

describe("consolidation", function()
  it("multi-node consolidation replaces 3 nodes by 1 cheaper node", function()
    local items = { pool(), node("a", { type = "large" }), node("b", { type = "large" }), node("c", { type = "large" }),
      pod("p1", "a"), pod("p2", "b"), pod("p3", "c") }
    local r = run(items)
    assert.equal(1, #r.commands)
    local c = r.commands[1]
    assert.equal("Underutilized", c.reason)
    assert.equal("replace", c.action)
    assert.equal(3, #c.nodes)
    assert.equal(1, #c.replacements)
    assert.equal("small", c.replacements[1].instanceType)
    assert.near(1.2 - 0.1, c.savings, 1e-9)
  end)

  it("deletes rather than replaces when the pods fit on the other nodes", function()
    -- b is full (its pods need a medium); a's one pod fits in b's room
    local items = { pool(), node("a"), node("b"), pod("p1", "a"), pod("b1", "b", { cpu = "1" }),
      pod("b2", "b", { cpu = "1" }), pod("b3", "b", { cpu = "1" }) }
    local r = run(items)
    assert.equal(1, #r.commands)
    assert.same({ "a" }, disrupted(r))
    assert.equal("delete", r.commands[1].action)
    assert.equal(0, #r.commands[1].replacements)
    assert.matches("not cheaper", blocked(r, "b"))
  end)

  it("refuses without a simulation a full node that nothing cheaper holds (summary.screened)", function()
    -- each medium node holds 3 cores of pods: they fit on no other node, and no type cheaper than a
    -- medium holds them (two in a large cost the same, three need two nodes)
    local items = { pool() }
    for i = 1, 4 do
      local n = "full-" .. i
      items[#items + 1] = node(n)
      for k = 1, 3 do items[#items + 1] = pod(n .. "-" .. k, n, { cpu = "1" }) end
    end
    local r = run(items)
    assert.equal(0, #r.commands)
    assert.equal(4, r.summary.screened)
    for i = 1, 4 do
      assert.matches("consolidation: not cheaper: 3 of its pods (default/full-" .. i .. "-1 and 2 more) fit on no "
        .. "other node, and no instance type with an offering cheaper than the node's $0.2000/h holds them together",
        blocked(r, "full-" .. i), 1, true)
    end
    -- one node with room: its pods are simulated, and go there
    items[#items + 1] = node("light")
    items[#items + 1] = pod("light-1", "light", { cpu = "250m", memory = "256Mi" })
    items[#items + 1] = pod("light-2", "light", { cpu = "250m", memory = "256Mi" })
    r = run(items)
    assert.is_true(r.summary.screened < 4, tostring(r.summary.screened))
  end)

  it("the node with fewer pods goes first, unless a PDB blocks it", function()
    local items = { pool({ disruption = { budgets = { { nodes = "1" } } } }), node("busy"), node("quiet"),
      pod("b1", "busy"), pod("b2", "busy"), pod("q1", "quiet", { labels = { app = "db" } }) }
    local r = run(items)
    assert.same({ "quiet" }, disrupted(r))
    items[#items + 1] = { apiVersion = "policy/v1", kind = "PodDisruptionBudget",
      metadata = { name = "db", namespace = "default" },
      spec = { selector = { matchLabels = { app = "db" } }, minAvailable = 1 } }
    r = run(items)
    assert.same({ "busy" }, disrupted(r))
    assert.matches("PDB: PodDisruptionBudget default/db allows no eviction", blocked(r, "quiet"), 1, true)
  end)

  it("a replacement cheaper only on its best offering is rejected (worst-case price rule)", function()
    local cat = [[
{ "region": "test-1", "provider": "generic", "zones": ["test-1a", "test-1b"],
  "instanceTypes": [
    { "name": "small", "family": "t", "arch": "amd64", "cpu": 2, "memoryMiB": 4096, "maxPods": 10, "onDemandPrice": 0.05,
      "offerings": [ { "zone": "test-1a", "capacityType": "on-demand", "price": 0.05 },
                     { "zone": "test-1b", "capacityType": "on-demand", "price": 0.30 } ] },
    { "name": "medium", "family": "t", "arch": "amd64", "cpu": 4, "memoryMiB": 8192, "maxPods": 20, "onDemandPrice": 0.20,
      "offerings": [ { "zone": "test-1a", "capacityType": "on-demand", "price": 0.20 },
                     { "zone": "test-1b", "capacityType": "on-demand", "price": 0.20 } ] } ] }
]]
    local items = { pool(), node("m"), pod("p", "m") }
    local r = run(items, { catalog = cat })
    assert.equal(0, #r.commands)
    -- small costs $0.05 in test-1a but $0.30 in test-1b: its worst case is not below $0.20
    assert.matches("not cheaper: the replacement's worst%-case on%-demand price is %$0.2000/h, the node cost %$0.2000/h",
      blocked(r, "m"))
    -- pinned to the cheap zone, the worst case is the best case: replaced
    items[1].spec.template.spec.requirements[3] = { key = "topology.kubernetes.io/zone", operator = "In",
      values = { "test-1a" } }
    r = run(items, { catalog = cat })
    assert.equal(1, #r.commands)
    assert.equal("small", r.commands[1].replacements[1].instanceType)
  end)

  it("does not move pods when they would not fit", function()
    local items = { pool(), node("a", { type = "small" }), node("b", { type = "small" }),
      pod("p1", "a", { cpu = "1500m" }), pod("p2", "b", { cpu = "1500m" }) }
    local r = run(items)
    assert.equal(0, #r.commands)
    assert.matches("not cheaper", blocked(r, "a"))
  end)

  it("spot-to-spot consolidation is off by default", function()
    local items = { pool({ requirements = { { key = "karpenter.sh/capacity-type", operator = "In", values = { "spot" } } } }),
      node("s", { type = "large", ct = "spot" }), pod("p", "s") }
    local r = run(items)
    assert.equal(0, #r.commands)
    assert.matches("spot%-to%-spot consolidation is disabled", blocked(r, "s"))
    r = run(items, { spot_to_spot = true })
    assert.matches("only %d+ spot options are cheaper", blocked(r, "s"))
  end)

  it("spot-to-spot, when on, launches with the 15 cheapest cheaper spot options", function()
    local big = node("big", { type = "m5.8xlarge", zone = "us-east-1a", ct = "spot" })
    local items = { pool({ requirements = { { key = "karpenter.sh/capacity-type", operator = "In", values = { "spot" } },
      { key = "kubernetes.io/arch", operator = "In", values = { "amd64" } } } }), big, pod("p", "big", { cpu = "1" }) }
    local r = assert(dt.disrupt({ manifests = h.list(items), now = NOW, spot_to_spot = true })) -- bundled AWS catalog
    local c = r.commands[1]
    assert.equal("replace", c.action)
    assert.equal("spot", c.replacements[1].capacityType)
    assert.equal(15, #c.replacements[1].instanceTypeOptions)
    assert.equal(c.replacements[1].instanceType, c.replacements[1].instanceTypeOptions[1])
  end)

  it("WhenEmpty pools are not consolidated; consolidateAfter holds nodes with recent pod events", function()
    local items = { pool({ disruption = { consolidationPolicy = "WhenEmpty" } }), node("a"), node("b"),
      pod("p1", "a"), pod("p2", "b") }
    local r = run(items)
    assert.equal(0, #r.commands)
    assert.matches("WhenEmpty", blocked(r, "a"))
    items = { pool({ disruption = { consolidateAfter = "2h" } }), node("a", { age = 600 }), node("b"),
      pod("p1", "a"), pod("p2", "b") }
    r = run(items)
    assert.matches("consolidateAfter 7200s not elapsed", blocked(r, "a"))
    items[1] = pool({ disruption = { consolidateAfter = "Never" } })
    assert.matches("Never", blocked(run(items), "b"))
  end)

  it("do-not-disrupt on a pod or the node blocks", function()
    local items = { pool(), node("a"), node("b", { annotations = { ["karpenter.sh/do-not-disrupt"] = "true" } }),
      pod("p1", "a", { annotations = { ["karpenter.sh/do-not-disrupt"] = "true" } }), pod("p2", "b") }
    local r = run(items)
    assert.equal(0, #r.commands)
    assert.matches("do%-not%-disrupt: pod default/p1", blocked(r, "a"))
    assert.matches("do%-not%-disrupt: the node", blocked(r, "b"))
  end)

  it("Balanced approves only moves that save enough for their disruption", function()
    local items = { pool({ disruption = { consolidationPolicy = "Balanced" } }), node("a", { type = "large" }),
      node("b", { type = "large" }), pod("p1", "a"), pod("p2", "b") }
    local r = run(items)
    assert.equal(1, #r.commands, "two large nodes for one small saves most of the pool cost")
    -- x: a medium whose six small pods fit a small node (saves $0.10/h of the
    -- pool's $0.80/h) but carry 7 of the pool's 13 units of disruption:
    -- score 0.23 < 0.5. Without Balanced any saving counts.
    items = { pool({ disruption = { consolidationPolicy = "Balanced" } }), node("x") }
    for i = 1, 6 do items[#items + 1] = pod("x" .. i, "x", { cpu = "250m" }) end
    for i = 1, 3 do
      items[#items + 1] = node("z" .. i)
      items[#items + 1] = pod("z" .. i, "z" .. i, { cpu = "3500m" })
    end
    r = run(items)
    assert.equal(0, #r.commands)
    assert.matches("Balanced: score 0.2", blocked(r, "x"), 1, true)
    items[1] = pool()
    r = run(items)
    assert.same({ "x" }, disrupted(r))
    assert.equal("small", r.commands[1].replacements[1].instanceType)
  end)
end)

describe("drift and expiry", function()
  it("replaces a node whose labels no longer satisfy the NodePool", function()
    local items = { pool({ requirements = { { key = "node.kubernetes.io/instance-type", operator = "In", values = { "small" } } } }),
      node("old", { type = "medium" }), node("ok", { type = "small" }), pod("p", "old", { cpu = "1", memory = "1Gi" }) }
    local r = run(items)
    local c
    for _, x in ipairs(r.commands) do
      if x.reason == "Drifted" then c = x end
    end
    assert.equal("Drifted", c.reason)
    assert.same({ "old" }, { c.nodes[1].name })
    assert.matches("label node.kubernetes.io/instance-type=medium no longer satisfies the NodePool's requirement "
      .. "node.kubernetes.io/instance-type In [small]", c.detail, 1, true)
  end)

  it("replaces a node whose template hash changed", function()
    local items = { pool(), node("n", { annotations = { ["dovetail.dev/nodepool-hash"] = "0123456789abcdef" } }),
      pod("p", "n") }
    local r = run(items)
    assert.equal("Drifted", r.commands[1].reason)
    assert.matches("template changed", r.commands[1].detail)
  end)

  it("expires nodes older than expireAfter, budgets aside", function()
    local items = { pool({ expireAfter = "24h", disruption = { budgets = { { nodes = "0" } } } }),
      node("young", { age = 3600 }), node("old", { age = 2 * 86400 }), pod("p", "old") }
    local r = run(items)
    assert.equal(1, #r.commands)
    assert.equal("Expired", r.commands[1].reason)
    assert.equal("old", r.commands[1].nodes[1].name)
  end)
end)

describe("disruption hooks", function()
  local function three_empty()
    local items = { pool({ disruption = { budgets = { { nodes = "1" } } } }) }
    for i = 1, 3 do items[#items + 1] = node("n" .. i) end
    return items
  end

  it("budget: maintenance-window.lua allows nothing outside Saturday 02:00-06:00 UTC", function()
    local r = run(three_empty(), { policy = "policies/maintenance-window.lua" })
    assert.equal(0, #r.commands)
    assert.equal(0, budget(r, "default", "Empty"))
    r = run(three_empty(), { policy = "policies/maintenance-window.lua", now = "2026-11-28T03:00:00Z" })
    assert.equal(1, #r.commands, "inside the window the NodePool's budget of 1 applies")
  end)

  it("approve: min-savings.lua refuses small savings", function()
    -- x (medium, $0.20) -> small ($0.10) saves $0.10: approved; with a
    -- threshold above it, refused
    local items = { pool(), node("x") }
    for i = 1, 3 do items[#items + 1] = pod("x" .. i, "x", { cpu = "250m" }) end
    assert.equal(1, #run(items, { policy = "policies/min-savings.lua" }).commands)
    local strict = h.write("return { approve = function(cmd) return cmd.savings >= 0.5 end }")
    local r = run(items, { policy = strict })
    assert.equal(0, #r.commands)
    assert.matches("approve hook rejected", blocked(r, "x"))
    os.remove(strict)
  end)

  -- x (6 small pods) and z1..z3 (one big pod each): a pass that simulates more than once
  local function small_and_big()
    local items = { pool(), node("x") }
    for i = 1, 6 do items[#items + 1] = pod("x" .. i, "x", { cpu = "250m" }) end
    for i = 1, 3 do
      items[#items + 1] = node("z" .. i)
      items[#items + 1] = pod("z" .. i, "z" .. i, { cpu = "3500m" })
    end
    return items
  end

  it("approve: balanced.lua decides as the built-in Balanced", function()
    local items = small_and_big()
    assert.equal(1, #run(items).commands)
    assert.equal(0, #run(items, { policy = "policies/balanced.lua" }).commands)
  end)

  -- `dovetail disrupt -o json` on a cluster file with the small catalog and a policy's text
  local function disrupt_with(cluster, catalog, policy_text)
    local policy = h.write(policy_text)
    local out, err, code = h.cli("disrupt -f " .. cluster .. " --catalog " .. catalog .. " --policy " .. policy ..
      " -o json --now " .. NOW)
    os.remove(policy)
    return out, err, code
  end

  it("price: called once per pass, every simulation of the pass priced alike", function()
    local items = small_and_big()
    local cluster = h.write(h.list(items))
    local catalog = h.write(h.small_catalog)
    local out, err, code = disrupt_with(cluster, catalog, [[
local calls = 0
return {
  price = function(offerings)
    calls = calls + 1
    dovetail.log("info", "price call " .. calls)
    local out = {}
    for i, o in ipairs(offerings) do out[i] = o.price end
    return out
  end,
}
]])
    assert.equal(0, code, err)
    assert.is_true(tonumber(out:match('"simulations": (%d+)')) > 1, out)
    local _, n = err:gsub("price call", "")
    assert.equal(1, n, err)
    -- a failing hook's error stands for every simulation, reported once
    out, err, code = disrupt_with(cluster, catalog, [[
return { price = function(o) if #o > 4 then error("no prices today") end return {} end }
]])
    assert.equal(0, code, err)
    assert.matches('"hook": "price",%s*"message": "[^"]*no prices today[^"]*",[^}]*"count": 1,%s*"disabled": false', out)
    for _, p in ipairs({ cluster, catalog }) do os.remove(p) end
  end)

  it("score: each offering scored once per pass, however many simulations launch on it", function()
    -- two of the three pods fit on no node left: every simulation launches
    local items = { pool(), node("a", { type = "large" }), node("b", { type = "large" }), node("c", { type = "large" }),
      pod("p1", "a", { cpu = "3000m" }), pod("p2", "b", { cpu = "3000m" }), pod("p3", "c", { cpu = "3000m" }) }
    local cluster = h.write(h.list(items))
    local catalog = h.write(h.small_catalog)
    local out, err, code = disrupt_with(cluster, catalog, [[
local scored, most = {}, 0
return {
  score = function(o)
    local k = o.instanceType .. " " .. o.zone .. " " .. o.capacityType
    scored[k] = (scored[k] or 0) + 1
    if scored[k] > most then most = scored[k] end
    return o.price
  end,
  consolidation_order = function()
    dovetail.log("info", "most scores of one offering: " .. most)
  end,
}
]])
    assert.equal(0, code, err)
    assert.is_true(tonumber(out:match('"simulations": (%d+)')) > 1, out)
    local _, orders = err:gsub("most scores of one offering", "")
    assert.is_true(orders > 1, err)
    for most in err:gmatch("most scores of one offering: (%d+)") do assert.equal("1", most, err) end
    for _, p in ipairs({ cluster, catalog }) do os.remove(p) end
  end)

  it("consolidation_order may put another candidate first", function()
    local items = { pool({ disruption = { budgets = { { nodes = "1" } } } }), node("busy"), node("quiet"),
      pod("b1", "busy"), pod("b2", "busy"), pod("q1", "quiet") }
    assert.same({ "quiet" }, disrupted(run(items)))
    local path = h.write([[
return {
  consolidation_order = function(nodes)
    table.sort(nodes, function(a, b) return a.pods > b.pods end)
    return nodes
  end,
}
]])
    assert.same({ "busy" }, disrupted(run(items, { policy = path })))
    os.remove(path)
  end)
end)

describe("dovetail disrupt (CLI)", function()
  local path
  setup(function()
    path = h.write(h.list({ pool(), node("a", { type = "large" }), node("b", { type = "large" }),
      node("c", { type = "large" }), node("e"), pod("p1", "a"), pod("p2", "b"), pod("p3", "c") }))
  end)
  teardown(function() os.remove(path) end)

  local function cli(args) return h.cli("disrupt --catalog " .. h.write(h.small_catalog) .. " --now " .. NOW .. " " .. args) end

  it("prints commands and is byte-identical across runs", function()
    local a, err, code = cli(path)
    assert.equal(0, code, err)
    assert.equal(a, (cli(path)))
    assert.matches('"reason": "Empty"', a)
    assert.matches('"reason": "Underutilized"', a)
  end)

  it("explains a node step by step", function()
    local out = cli("-o table --explain a " .. path)
    assert.matches("explain: multi%-node consolidation", out)
  end)

  it("refuses to explain a node that is not in the input, as plan does for a pod", function()
    local _, err, code = cli("-o table --explain nosuch " .. path)
    assert.equal(1, code)
    assert.matches("explain: no node nosuch in the input", err, 1, true)
  end)

  it("rejects bad input naming the file and the field", function()
    local bad = h.write(h.list({ pool({ disruption = { budgets = { { nodes = "x" } } } }) }))
    local _, err, code = cli(bad)
    assert.equal(1, code)
    assert.matches("spec.disruption.budgets[0].nodes", err, 1, true)
  end)
end)

describe("disrupt's notes", function()
  local EX = "examples/disrupt.yaml"
  local function notes_of(text)
    local out, err, code = h.cli("disrupt -o json --now 2026-11-23T12:00:00Z -", text)
    assert.are.equal(0, code, err)
    return require("dkjson").decode(out), out
  end

  it("tell, once each, what its simulations noted of the input", function()
    local text = h.slurp(EX)
    local r = notes_of(text)
    assert.is_nil(r.notes, "a clean input notes nothing")
    local commands = #r.commands
    -- a pod on a candidate names a RuntimeClass the input lacks; a NodePool no catalog type satisfies
    local edited, n = text:gsub("spec: {nodeName: a, containers:", "spec: {runtimeClassName: kata, nodeName: a, containers:")
    assert.are.equal(1, n)
    edited = edited .. "\n---\napiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: none}\nspec:\n  template:\n" ..
      "    spec:\n      requirements:\n        - {key: karpenter.k8s.aws/instance-category, operator: In, values: [zz]}\n"
    r = notes_of(edited)
    assert.are.equal(commands, #r.commands, "the notes change no decision")
    assert.is_true(r.summary.simulations > 1)
    local want = {
      ["<stdin>: pod default/p1: RuntimeClass kata is not in the input; its overhead is not counted"] = true,
      ["NodePool none: no instance type in the catalog satisfies its requirements"] = true,
    }
    assert.are.equal(2, #r.notes, table.concat(r.notes, "\n"))
    for _, note in ipairs(r.notes) do assert.is_true(want[note], note) end
    local out = h.cli("disrupt -o table --now 2026-11-23T12:00:00Z -", edited)
    assert.matches("\nnote: NodePool none: no instance type in the catalog satisfies its requirements\n", out, 1, true)
  end)

  it("leave out what one simulation's plan noted of its own outcome", function()
    -- a static NodePool: each simulation's plan notes how many claims it plans, which is no note of the input
    local text = h.slurp(EX):gsub("  disruption:\n", "  replicas: 3\n  disruption:\n", 1)
    local p = h.cli("plan -o json --now 2026-11-23T12:00:00Z -", text)
    assert.matches("is static", p, 1, true)
    local r = notes_of(text)
    for _, note in ipairs(r.notes or {}) do assert.is_nil(note:find("is static", 1, true), note) end
  end)
end)
