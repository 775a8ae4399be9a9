-- The Lua module as a tool built on it would use it (docs/lua.md): plan and
-- pick claims, a disruption pass, a VM pool round, policies, quantities, and
-- option tables checked key by key.
local h = require "helper"
local dt = h.dt

local NOW = "2026-11-23T12:00:00Z"
local NOW_S = 1795435200 -- NOW in Unix seconds
local QUICKSTART = "examples/quickstart.yaml"


-- The documents of a YAML stream, each as text without its "---" line.
local function documents(text)
  local docs, cur = {}, nil
  for line in (text .. "\n"):gmatch("(.-)\n") do
    if line == "---" then
      cur = {}
      docs[#docs + 1] = cur
    elseif cur then
      cur[#cur + 1] = line
    end
  end
  for i, d in ipairs(docs) do docs[i] = table.concat(d, "\n") .. "\n" end
  return docs
end

local function count_by(list, field)
  local n = {}
  for _, x in ipairs(list) do n[x[field]] = (n[x[field]] or 0) + 1 end
  return n
end

describe("planning from a script", function()
  it("plans the quickstart: one spot m6i.4xlarge for all 16 pods", function()
    local plan = assert(dt.plan { files = { QUICKSTART }, now = NOW })
    assert.equal("Plan", plan.kind)
    assert.equal(NOW, plan.now)
    assert.equal(1, #plan.nodeClaims)
    local claim = plan.nodeClaims[1]
    assert.same({ "default", "m6i.4xlarge", "us-east-1a", "spot", 0.2197 },
      { claim.nodePool, claim.instanceType, claim.zone, claim.capacityType, claim.price })
    assert.same({ cpu = "13", memory = "32Gi", pods = "16" }, claim.requests)
    assert.equal(16, #claim.pods)
    assert.equal("m6i.4xlarge", claim.instanceTypeOptions[1])
    assert.same({ pods = 16, scheduled = 16, unschedulable = 0, nodes = 1, hourlyCost = 0.2197 },
      { pods = plan.summary.pods, scheduled = plan.summary.scheduled, unschedulable = plan.summary.unschedulable,
        nodes = plan.summary.nodes, hourlyCost = plan.summary.hourlyCost })
    assert.same({ ["on-demand"] = 0, spot = 1, reserved = 0 }, plan.summary.nodesByCapacityType)
    assert.same({}, plan.unschedulable)
    assert.is_nil(plan.inputNotes)
    assert.equal("integer", math.type(plan.summary.pods))
    assert.equal("float", math.type(claim.price))
  end)

  it("keeps the cheapest claims, renders them as YAML and feeds them back as in-flight capacity", function()
    local opts = { files = { QUICKSTART }, catalog = "azure-eastus", now = NOW }
    local plan = assert(dt.plan(opts))
    assert.equal(6, #plan.nodeClaims)

    local cheapest = math.huge
    for _, c in ipairs(plan.nodeClaims) do cheapest = math.min(cheapest, c.price) end
    local keep, under_a_dime, pods = {}, 0, 0
    for _, c in ipairs(plan.nodeClaims) do
      if c.price < 0.10 then under_a_dime = under_a_dime + 1 end
      if c.price == cheapest then
        keep[c.name] = c
        pods = pods + #c.pods
      end
    end
    assert.equal(0.0376, cheapest)
    assert.equal(5, under_a_dime)
    assert.same({ Standard_B2als_v2 = 4 }, count_by((function()
      local l = {}
      for _, c in pairs(keep) do l[#l + 1] = c end
      return l
    end)(), "instanceType"))
    assert.equal(12, pods)

    -- The same options with a format give the text of the same plan: same names.
    opts.format = "yaml"
    local yaml = assert(dt.plan(opts))
    assert.is_string(yaml)
    local docs, picked = documents(yaml), {}
    assert.equal(6, #docs)
    for _, d in ipairs(docs) do
      local name = d:match("^apiVersion: karpenter%.sh/v1\nkind: NodeClaim\nmetadata:\n  name: (%S+)\n")
      assert.is_string(name)
      if keep[name] then picked[#picked + 1] = "---\n" .. d end
    end
    assert.equal(4, #picked)
    for _, d in ipairs(picked) do
      assert.matches("node.kubernetes.io/instance-type: Standard_B2als_v2\n", d, 1, true)
      assert.matches('dovetail.dev/price: "0.0376"\n', d, 1, true)
    end

    -- Planned again with those four claims, their 12 pods are placed already.
    local again = assert(dt.plan { files = { QUICKSTART }, manifests = picked, catalog = "azure-eastus", now = NOW })
    assert.equal(4, again.summary.existingNodes)
    assert.equal(12, again.summary.alreadyBound)
    assert.equal(4, again.summary.scheduled)
    assert.same({ "Standard_B8as_v2", "Standard_B2as_v2" },
      { again.nodeClaims[1].instanceType, again.nodeClaims[2].instanceType })
  end)

  it("is deterministic: the same text every time, with now as RFC 3339 or Unix seconds", function()
    local a = assert(dt.plan { files = { QUICKSTART }, now = NOW, format = "json" })
    local b = assert(dt.plan { files = { QUICKSTART }, now = NOW_S, format = "json" })
    assert.equal(a, b)
    assert.equal(a, assert(dt.plan { files = { QUICKSTART }, now = NOW, format = "json" }))
    -- now as a float with a whole value is the same second
    assert.equal(a, assert(dt.plan { files = { QUICKSTART }, now = NOW_S + 0.0, format = "json" }))
    -- the seed names the claims; the decisions stay
    local s0 = assert(dt.plan { files = { QUICKSTART }, now = NOW })
    local s1 = assert(dt.plan { files = { QUICKSTART }, now = NOW, seed = 1 })
    assert.equal("default-80z6g", s0.nodeClaims[1].name)
    assert.equal("default-77z5l", s1.nodeClaims[1].name)
    assert.equal(s0.nodeClaims[1].instanceType, s1.nodeClaims[1].instanceType)
    -- without now, the clock is 2000-01-01, never the wall clock
    assert.equal("2000-01-01T00:00:00Z", assert(dt.plan { files = { QUICKSTART } }).now)
  end)

  it("renders the table and, with explain, the pod's explanation first", function()
    local tbl = assert(dt.plan { files = { QUICKSTART }, format = "table" })
    assert.matches("1 new node, $0.2197/hour; 16 of 16 pending pods scheduled", tbl, 1, true)
    local ex, plan = dt.plan { files = { QUICKSTART }, explain = "jobs/batch-1" }
    assert.equal("PlanExplanation", ex.kind)
    assert.equal("jobs/batch-1", ex.pod)
    assert.equal("newNodeClaim", ex.outcome)
    assert.equal("m6i.4xlarge", ex.nodeClaim.instanceType)
    assert.equal("Plan", plan.kind)
    local none, err = dt.plan { files = { QUICKSTART }, explain = "nope" }
    assert.is_nil(none)
    assert.matches("^explain: no pod nope in the input", err)
  end)

  it("lists skipped input in inputNotes and reports parse time with timings", function()
    local cm = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: shop}\ndata: {a: b}\n"
    local plan = assert(dt.plan { files = { QUICKSTART }, manifests = { cm }, timings = true })
    assert.same({ "manifests[1]: ConfigMap settings (v1): not used by plan, skipped" }, plan.inputNotes)
    assert.is_true(plan.summary.timings.parseMs > 0)
    assert.is_true(plan.summary.timings.scheduleMs > 0)
    -- a NodePool's policy that fails to load is a note too; the plan goes on with the built-ins
    local dir = h.tmpdir()
    local f = assert(io.open(dir .. "/broken.lua", "w"))
    f:write("return { rank = function( }\n")
    f:close()
    local text = h.slurp(QUICKSTART):gsub("metadata:\n  name: default\n",
      "metadata:\n  name: default\n  annotations: {dovetail.dev/policy: broken}\n", 1)
    plan = assert(dt.plan { manifests = text, policy_dir = dir })
    assert.equal(1, #plan.inputNotes)
    assert.matches("^NodePool policy broken: " .. dir:gsub("%p", "%%%0") .. "/broken%.lua:1:", plan.inputNotes[1])
    assert.equal(16, plan.summary.scheduled)
    os.execute("rm -rf " .. dir)
  end)
end)

describe("a disruption pass from a script", function()
  it("groups the commands of examples/disrupt.yaml by reason", function()
    local pass = assert(dt.disrupt { files = { "examples/disrupt.yaml" }, now = NOW })
    assert.equal("Disruption", pass.kind)
    local by_reason = {}
    for _, c in ipairs(pass.commands) do
      local names = by_reason[c.reason] or {}
      for _, n in ipairs(c.nodes) do names[#names + 1] = n.name end
      by_reason[c.reason] = names
      assert.equal("delete", c.action)
      assert.same({}, c.replacements)
    end
    assert.same({ Empty = { "e" }, Underutilized = { "a", "b", "c" } }, by_reason)
    assert.equal("multi-node consolidation", pass.commands[2].detail)
    assert.equal(1.152, pass.commands[2].savings)
    assert.same({ held = "do-not-disrupt", guarded = "PDB" }, (function()
      local why = {}
      for _, b in ipairs(pass.blocked) do why[b.node] = b.reason:match("^([^:]+):") end
      return why
    end)())
    assert.same({ Empty = 1, Drifted = 1, Underutilized = 1 }, count_by(pass.budgets, "reason"))
    assert.equal(6, pass.budgets[1].allowed)
    assert.same({ nodes = 6, commands = 2, disrupted = 4, blocked = 2, savings = 1.344 },
      { nodes = pass.summary.nodes, commands = pass.summary.commands, disrupted = pass.summary.disrupted,
        blocked = pass.summary.blocked, savings = pass.summary.savings })
    assert.is_nil(pass.policyErrors) -- only with a policy
  end)

  it("lists policy errors in one shape in a plan, a disruption pass and a pool round", function()
    local path = h.write([[
-- each fails on the cluster's input, not on the golden one a policy is loaded with
return {
  score = function(o) if o.zone:match("^zone%-") then return nil end error("boom") end,
  approve = function(c) if c.now == 0 then return true end error("boom") end,
  scale_in = function(pool) if pool.replicas == 2 then return nil end error("boom") end,
}
]])
    local plan = assert(dt.plan { files = { QUICKSTART }, now = NOW, policy = path })
    local pass = assert(dt.disrupt { files = { "examples/disrupt.yaml" }, now = NOW_S, policy = path })
    local f = assert(io.open("examples/vm-pool.yaml"))
    local text = f:read("a"):gsub("replicas: 4", "replicas: 1")
    f:close()
    local round = assert(dt.pool { manifests = text, now = NOW, policy = path })
    for what, r in pairs { plan = plan, disrupt = pass, pool = round } do
      local e = r.policyErrors[1]
      assert.is_table(e, what)
      local keys = {}
      for k in pairs(e) do keys[#keys + 1] = k end
      table.sort(keys)
      assert.same({ "count", "disabled", "hook", "message", "policy" }, keys, what)
      assert.matches(": boom", e.message, 1, true)
      assert.is_string(e.policy, what)
      assert.is_true(e.count >= 1, what)
    end
    os.remove(path)
  end)

  it("explains one node, and depends on now", function()
    local pass = assert(dt.disrupt { files = { "examples/disrupt.yaml" }, now = NOW_S, explain = "a" })
    assert.equal("a", pass.explain.node)
    assert.same({ "multi-node consolidation: removed with 2 others", "Underutilized: deleted" }, pass.explain.steps)
    -- without now it is 2000: nodes created in 2026 have not waited out consolidateAfter
    local early = assert(dt.disrupt { files = { "examples/disrupt.yaml" } })
    assert.equal(0, #early.commands)
    assert.matches("^consolidateAfter 0s not elapsed", early.blocked[1].reason)
    local tbl = assert(dt.disrupt { files = { "examples/disrupt.yaml" }, now = NOW, format = "table" })
    assert.matches("2 commands, 4 of 6 nodes disrupted, saves $1.3440/hour", tbl, 1, true)
  end)
end)

describe("a VM pool round from a script", function()
  local function kinds(round)
    local n = {}
    for _, p in ipairs(round.pools) do
      for _, kind in ipairs { "create", "delete", "update", "heal", "detached", "waiting" } do
        n[kind] = (n[kind] or 0) + #p[kind]
      end
    end
    return n
  end

  it("counts the actions of examples/vm-pool.yaml by kind", function()
    local round = assert(dt.pool { files = { "examples/vm-pool.yaml" }, now = NOW })
    assert.equal("PoolActions", round.kind)
    assert.same({ create = 2, delete = 0, update = 0, heal = 0, detached = 0, waiting = 0 }, kinds(round))
    local web = round.pools[1]
    assert.same({ "default", "web" }, { web.namespace, web.name })
    assert.same({ "web-1", "web-3" }, { web.create[1].name, web.create[2].name })
    assert.same({ "rootdisk-1" }, web.create[1].reusesVolumes)
    assert.is_nil(web.create[2].reusesVolumes)
    assert.equal("VirtualMachine", web.create[1].object.kind)
    assert.same({ replicas = 4, current = 2, ready = 2, unavailable = 0, maxUnavailable = 1, outdated = 0 }, web.status)
    assert.same({ pools = 1, create = 2, delete = 0, update = 0, heal = 0, detached = 0, waiting = 0 }, round.summary)
    -- the table says the same: the gap's VM takes rootdisk-1 back
    local tbl = assert(dt.pool { files = { "examples/vm-pool.yaml" }, now = NOW, format = "table" })
    assert.matches("web%-1 +scale out 2 → 4: lowest free index; reuses rootdisk%-1\n", tbl)
    assert.matches("web%-3 +scale out 2 → 4: lowest free index\n", tbl)
    assert.matches("\n1 pool: 2 create, 0 delete", tbl, 1, true)
  end)

  it("scales in by the selection policy when replicas drop", function()
    local text = h.slurp("examples/vm-pool.yaml"):gsub("replicas: 4", "replicas: 1", 1)
    local round = assert(dt.pool { manifests = text, now = NOW })
    assert.same({ create = 0, delete = 1, update = 0, heal = 0, detached = 0, waiting = 0 }, kinds(round))
    local del = round.pools[1].delete[1]
    assert.equal("web-0", del.name)
    assert.is_true(del.preserveState)
    assert.matches("oldest", del.reason, 1, true)
    local tbl = assert(dt.pool { manifests = text, now = NOW, format = "table" })
    assert.matches("1 pool: 0 create, 1 delete", tbl, 1, true)
  end)
end)

describe("policies from a script", function()
  it("checks a good policy and a bad one", function()
    assert.equal("score", dt.check("policies/spot-first.lua"))
    assert.equal("price score selftest", dt.check("policies/default.lua"))
    local path = h.write("return {\n  rank = function(\n}\n")
    local ok, err = dt.check(path)
    assert.is_nil(ok)
    assert.matches(path .. ":3:", err, 1, true)
    os.remove(path)
    ok, err = dt.check("policies/no-such-policy.lua")
    assert.is_nil(ok)
    assert.matches("policies/no-such-policy.lua: cannot open", err, 1, true)
  end)

  it("loads a policy, lists its hooks, reloads it once rewritten and plans with it", function()
    local path = h.write("return { rank = function(_, o) local s = {} for i, x in ipairs(o) do s[i] = x.price end " ..
      "return s end }\n")
    local pol = assert(dt.policy(path))
    assert.equal("rank", pol:hooks())
    assert.is_false(pol:reload()) -- unchanged
    -- rewritten: no spot at any price
    local f = assert(io.open(path, "w"))
    f:write([[
return {
  price = function(offerings)
    local out = {}
    for i, o in ipairs(offerings) do
      if o.capacityType ~= "spot" then out[i] = o.price end
    end
    return out
  end,
  selftest = function() return true end,
}
]])
    f:close()
    assert.is_true(pol:reload())
    assert.equal("price selftest", pol:hooks())
    local plan = assert(dt.plan { files = { QUICKSTART }, policy = pol, now = NOW })
    assert.equal("on-demand", plan.nodeClaims[1].capacityType)
    assert.same({}, plan.policyErrors)
    -- a broken rewrite keeps the loaded policy
    f = assert(io.open(path, "w"))
    f:write("return { price = ")
    f:close()
    local ok, err = pol:reload()
    assert.is_nil(ok)
    assert.matches(path, err, 1, true)
    assert.equal("price selftest", pol:hooks())
    os.remove(path)
    pol:close()
    assert.has_error(function() pol:hooks() end, "policy is closed")
    local none, cerr = dt.plan { files = { QUICKSTART }, policy = pol }
    assert.is_nil(none)
    assert.equal("policy: the dovetail.policy is closed", cerr)
  end)
end)

describe("quantities", function()
  it("parse exactly, rounding up to a milli-unit as Kubernetes does", function()
    assert.equal(250, dt.milli("250m"))
    assert.equal(1, dt.milli("1n"))
    assert.equal(1, dt.milli("0.0001"))
    assert.equal(0, dt.milli("-1n"))
    assert.equal(-500, dt.milli("-500m"))
    assert.equal(1610612736000, dt.milli(".5Gi") * 3)
    assert.equal(math.maxinteger, dt.milli("9223372036854775807m"))
    assert.equal(1610612736, dt.quantity("1.5Gi"))
    assert.equal("integer", math.type(dt.quantity("1.5Gi")))
    assert.equal(0.25, dt.quantity("250m"))
    assert.equal("float", math.type(dt.quantity("250m")))
    assert.equal(1000, dt.quantity("1e3"))
  end)

  it("return nil and a message for what is not a quantity or too large", function()
    for s, msg in pairs {
      [""] = "empty quantity",
      [" 1"] = 'invalid quantity " 1"',
      ["1 "] = 'unknown suffix " "',
      ["1Qi"] = 'unknown suffix "Qi"',
      ["1Ei"] = 'quantity "1Ei" is too large',
      ["9223372036854775808m"] = "is too large",
    } do
      local v, err = dt.milli(s)
      assert.is_nil(v, s)
      assert.matches(msg, err, 1, true)
      assert.is_nil((dt.quantity(s)))
    end
  end)

  it("format milli-units per resource", function()
    assert.equal("1500m", dt.format_quantity(1500))
    assert.equal("2", dt.format_quantity(2000, "cpu"))
    assert.equal("512Mi", dt.format_quantity(536870912000, "memory"))
    assert.equal("1500", dt.format_quantity(1500000, "memory"))
    assert.equal("500m", dt.format_quantity(500, "memory"))
    assert.equal("2Mi", dt.format_quantity(2097152000, "hugepages-2Mi"))
    assert.equal("2", dt.format_quantity(2000, "nvidia.com/gpu"))
    assert.equal("-500m", dt.format_quantity(-500))
    for _, q in ipairs { "13", "32Gi", "250m", "1Ki" } do
      assert.equal(q, dt.format_quantity(dt.milli(q), q:match("i$") and "memory" or "cpu"))
    end
  end)

  it("intersect requirements, keeping the key", function()
    local r, ok = dt.intersect({ key = "zone", operator = "In", values = { "a", "b" } },
      { operator = "NotIn", values = { "a" } })
    assert.same({ key = "zone", operator = "In", values = { "b" } }, r)
    assert.is_true(ok)
    r, ok = dt.intersect({ operator = "Gt", values = { "4" } }, { operator = "Lt", values = { "9" } })
    assert.same({ operator = "Exists", values = {}, gte = 5, lte = 8 }, r)
    assert.is_true(ok)
    local many = {}
    for i = 1, 200 do many[i] = ("v%03d"):format(i) end
    r = dt.intersect({ operator = "In", values = many }, { operator = "Exists" })
    assert.equal(200, #r.values)
    assert.equal("v200", r.values[200])
    local none, err = dt.intersect({ key = "zone", operator = "Exists" }, { key = "arch", operator = "Exists" })
    assert.is_nil(none)
    assert.equal("key: the requirements are on different keys (zone, arch)", err)
    none, err = dt.intersect({ operator = "Gt", values = { "x" } }, { operator = "Exists" })
    assert.is_nil(none)
    assert.equal('requirement 1: values[1]: Gt needs an integer, got "x"', err)
  end)
end)

describe("option tables", function()
  local base = {
    plan = { files = { QUICKSTART } },
    pool = { files = { "examples/vm-pool.yaml" } },
    disrupt = { files = { "examples/disrupt.yaml" } },
  }
  -- A key each function does not take, and a value of the wrong type for every key it takes.
  local cases = {
    plan = {
      unknown = { "file", "spot_to_spot", "catalogue" },
      wrong = { manifests = 5, files = true, now = {}, seed = "7", format = "xml", packing = "best", policy = 3,
                catalog = {}, catalog_text = false, timings = "yes", policy_dir = 1, explain = true },
    },
    pool = {
      unknown = { "catalog", "packing", "policy_dir", "timings", "explain", "spot_to_spot" },
      wrong = { manifests = { 1 }, files = { x = "y" }, now = 1.5, seed = 0.5, format = 1, policy = io.stdout },
    },
    disrupt = {
      unknown = { "packing", "timings" },
      wrong = { manifests = false, files = { {} }, now = "yesterday", seed = {}, format = "text", policy = true,
                catalog = 1, catalog_text = {}, policy_dir = false, spot_to_spot = "yes", explain = 7 },
    },
  }

  local function with(fn, k, v)
    local t = {}
    for key, val in pairs(base[fn]) do t[key] = val end
    t[k] = v
    return t
  end

  for _, fn in ipairs { "plan", "pool", "disrupt" } do
    it("dt." .. fn .. " names an unknown key or a wrongly typed one in nil, message", function()
      for _, k in ipairs(cases[fn].unknown) do
        local r, err = dt[fn](with(fn, k, "x"))
        assert.is_nil(r, k)
        assert.matches("unknown option " .. k .. " (dovetail." .. fn .. " takes ", err, 1, true)
      end
      for k, v in pairs(cases[fn].wrong) do
        local r, err = dt[fn](with(fn, k, v))
        assert.is_nil(r, k)
        assert.is_string(err, k)
        assert.equal(k, err:match("^([%a_]+)[%[:]"), err)
      end
    end)
  end

  it("dt.intersect names the key of a requirement in nil, message", function()
    for _, case in ipairs {
      { { operator = "In", value = { "a" } }, "requirement 1: unknown key value" },
      { { operator = 5 }, "requirement 1: operator: expected" },
      { { operator = "In", values = "a" }, "requirement 1: values: expected a list of strings, got string" },
      { { operator = "In", values = { "a", {} } }, "requirement 1: values[2]: expected a string, got table" },
      { { key = 1, operator = "Exists" }, "requirement 1: key: expected a string, got number" },
      { { operator = "Exists", values = { "a" } }, "requirement 1: values: Exists takes no values" },
    } do
      local r, err = dt.intersect(case[1], { operator = "Exists" })
      assert.is_nil(r)
      assert.matches(case[2], err, 1, true)
      r, err = dt.intersect({ operator = "Exists" }, case[1])
      assert.is_nil(r)
      assert.matches(case[2]:gsub("requirement 1", "requirement 2"), err, 1, true)
    end
  end)

  it("raise for an argument of the wrong type, as the standard library does", function()
    assert.has_error(function() dt.plan("examples/quickstart.yaml") end)
    assert.has_error(function() dt.pool() end)
    assert.has_error(function() dt.milli({}) end)
    assert.has_error(function() dt.format_quantity(1.5) end)
    assert.has_error(function() dt.intersect("In", {}) end)
    assert.has_error(function() dt.check() end)
    assert.has_error(function() dt.policy(nil) end)
  end)

  it("refuse catalog and catalog_text together", function()
    local r, err = dt.plan { files = { QUICKSTART }, catalog = "azure-eastus", catalog_text = h.small_catalog }
    assert.is_nil(r)
    assert.equal("catalog_text: give catalog or catalog_text, not both", err)
  end)
end)

describe("results as tables", function()
  -- A table result is built from the document the JSON is written from:
  -- the two agree field for field, for every kind of result.
  local json = require "dkjson"
  local function plain(v) -- dkjson marks arrays with a metatable; compare the data
    if type(v) ~= "table" then return v end
    local t = {}
    for k, x in pairs(v) do t[k] = plain(x) end
    return t
  end
  local function agree(fn, opts)
    local tbl = assert(fn(opts))
    tbl.inputNotes = nil -- what the CLI prints on standard error, beside the result
    opts.format = "json"
    local text = assert(fn(opts))
    assert.same(plain(json.decode(text)), tbl)
    return tbl
  end

  it("agree with the JSON for plan, explain, disrupt and pool", function()
    local t = agree(dt.plan, { files = { "spec/fixtures/cluster-dump.yaml" }, now = NOW })
    assert.is_true(#t.bindings > 0 and #t.nodeClaims > 0)
    t = assert(dt.plan { files = { QUICKSTART }, now = NOW, timings = true }) -- times differ run to run
    assert.equal("number", type(t.summary.timings.scheduleMs))
    agree(dt.disrupt, { files = { "examples/disrupt.yaml" }, now = NOW })
    agree(dt.pool, { files = { "examples/vm-pool.yaml" }, now = NOW })
    local ex = assert(dt.plan { files = { QUICKSTART }, now = NOW, explain = "shop/web-0" })
    local ex_text = assert(dt.plan { files = { QUICKSTART }, now = NOW, explain = "shop/web-0", format = "json" })
    assert.same(plain(json.decode(ex_text)), ex)
  end)
end)
