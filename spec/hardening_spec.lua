-- Hostile input: memory safety, limits that keep cost linear in the input,
-- and a policy sandbox that nothing escapes. Run under ASan + UBSan too
-- (make test SANITIZE=1), where a use-after-free fails the suite.
local h = require "helper"
local dt = h.dt

local function plan_err(manifests)
  local plan, err = dt.plan { manifests = manifests, catalog_text = h.small_catalog }
  assert.is_nil(plan)
  return err
end

describe("reading hostile manifests", function()
  it("keeps an anchor on a mapping key valid after the key is consumed", function()
    local err = plan_err("&a kind: Pod\nx: *a\n")
    assert.matches("manifests: Pod: apiVersion: missing", err, 1, true)
    -- the alias reads back as the key's text
    local ok = h.plan(h.docs(h.nodepool("default"), "apiVersion: v1\nkind: Pod\nmetadata:\n  &n name: p\n" ..
      "  labels: {*n : x}\nspec:\n  containers: [{name: c}]\n"), { catalog_text = h.small_catalog })
    assert.equal(1, #ok.nodeClaims)
  end)

  it("expands YAML merge keys (<<) as kubectl does: the mapping's own keys win, then the first merged", function()
    local pod = [[
apiVersion: v1
kind: Pod
metadata: {name: m, namespace: d}
spec:
  containers:
  - &base {name: app, resources: {requests: {cpu: "2", memory: 4Gi}}}
  - <<: *base
    name: sidecar
  - <<: [{name: x, resources: {requests: {cpu: "1"}}}, *base]
  - "<<": {resources: {requests: {cpu: "8"}}}
    name: quoted
]]
    local p = h.plan(h.docs(h.nodepool("default"), pod), { catalog_text = h.small_catalog })
    assert.equal(1, #p.nodeClaims)
    -- 2 + 2 (merged) + 1 (the first list entry's resources) cores; a quoted "<<" is an ordinary key
    assert.equal("5", p.nodeClaims[1].requests.cpu)
    assert.equal("8Gi", p.nodeClaims[1].requests.memory)
    assert.matches("manifests:3:3: a merge key (<<) takes a mapping or a list of mappings",
      plan_err("a: {k: 1}\nb:\n  <<: 5\n"), 1, true)
    assert.matches('duplicate key "<<"', plan_err("a: &x {k: 1}\nb:\n  <<: *x\n  <<: *x\n"), 1, true)
    -- merges copy what they take: a merge bomb is an alias bomb
    local lines = { "a0: &a0 [" .. ("x, "):rep(9) .. "x]" }
    for i = 1, 9 do
      local keys = {}
      for j = 1, 10 do keys[#keys + 1] = ("k%d: *a%d"):format(j, i - 1) end
      lines[#lines + 1] = ("a%d: &a%d {<<: {%s}}"):format(i, i, table.concat(keys, ", "))
    end
    assert.matches("the limit on alias expansion", plan_err(table.concat(lines, "\n") .. "\n"), 1, true)
  end)

  it("never overflows a sum of requests: a pod's is refused, a node's bound pods fill it", function()
    local big = { apiVersion = "v1", kind = "Pod", metadata = { name = "p", namespace = "d" },
      spec = { containers = {} } }
    for i = 1, 9 do -- 9 PiB in milli-bytes is past 2^63
      big.spec.containers[i] = { name = "c" .. i, resources = { requests = { memory = "1Pi" } } }
    end
    assert.matches("Pod d/p: spec (total requests).memory: larger than 1Pi is absurd",
      plan_err(h.json(big)), 1, true)
    for i = 1, 9 do big.spec.containers[i].resources.requests = { ["example.com/dev"] = "1000000000000000" } end
    assert.matches("Pod d/p: spec (total requests).example.com/dev: 9000000000000000 is absurd",
      plan_err(h.json(big)), 1, true)
    -- 16 pods of 1Pi bound to an 8Gi node: it is full, not 2^64 bytes wrapped round to room
    local docs = { h.nodepool("default"), [[
apiVersion: v1
kind: Node
metadata:
  name: n1
  creationTimestamp: "2026-11-01T00:00:00Z"
  labels: {karpenter.sh/nodepool: default, node.kubernetes.io/instance-type: s2,
    topology.kubernetes.io/zone: us-east-1a, karpenter.sh/capacity-type: on-demand, kubernetes.io/hostname: n1}
status:
  allocatable: {cpu: "2", memory: 8Gi, pods: "110"}
  conditions: [{type: Ready, status: "True"}]
]] }
    for i = 1, 16 do
      docs[#docs + 1] = h.pod("b" .. i, { cpu = "0", memory = "1Pi", extra = "  nodeName: n1" })
    end
    docs[#docs + 1] = h.pod("pending", { cpu = "100m", memory = "1Gi" })
    local p = h.plan(h.docs(table.unpack(docs)), { catalog_text = h.small_catalog })
    assert.equal(0, #p.bindings, "nothing fits on the full node")
    assert.equal(1, #p.nodeClaims)
  end)

  it("refuses a NUL inside a string, in JSON and in YAML, where C strings would cut the name", function()
    assert.equal('manifests:1:54: a string holds \\u0000 (NUL), which no field takes',
      plan_err('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p\\u0000x"}}'))
    assert.equal("manifests:3:18: a string holds a NUL (\\0), which no field takes",
      plan_err('apiVersion: v1\nkind: Pod\nmetadata: {name: "p\\0x"}\n'))
    -- an escaped backslash before u0000 is text
    assert.matches("Pod default/p\\u0000x: spec", plan_err('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p\\\\u0000x"}}'), 1, true)
  end)

  it("refuses JSON that is not UTF-8, with file, line and column", function()
    local err = plan_err('{"apiVersion":"v1","kind":"Pod",\n"metadata":{"name":"p\255"}}')
    assert.equal("manifests:2:22: invalid UTF-8", err)
  end)

  it("quotes at most what the buffer holds when JSON is cut short", function()
    local err = plan_err('{"kind": [1, 2')
    assert.equal('manifests:1:14: malformed JSON near "2"', err)
  end)

  it("refuses an alias bomb quickly, naming the limit", function()
    local lines = { 'a: &a ["x","x","x","x","x","x","x","x","x","x"]' }
    for i = 1, 9 do
      local prev, cur = string.char(96 + i), string.char(97 + i)
      lines[#lines + 1] = ("%s: &%s [%s]"):format(cur, cur, ("*" .. prev .. ","):rep(9) .. "*" .. prev)
    end
    local err = plan_err(table.concat(lines, "\n") .. "\n")
    assert.matches("the limit on alias expansion", err, 1, true)
  end)

  it("refuses nesting deeper than 256 levels in YAML and in JSON", function()
    assert.matches("manifests:1:257: nested deeper than 256 levels", plan_err(("["):rep(40000) .. ("]"):rep(40000)),
      1, true)
    assert.matches("manifests:1:261: nested deeper than 256 levels",
      plan_err("{\"a\":" .. ("["):rep(40000) .. ("]"):rep(40000) .. "}"), 1, true)
  end)

  it("finds a duplicate key among tens of thousands without a quadratic scan", function()
    local keys = {}
    for i = 1, 40000 do keys[i] = ("k%d: 1"):format(i) end
    keys[#keys + 1] = "k17: 2"
    local err = plan_err(table.concat(keys, "\n") .. "\n")
    assert.equal('manifests:40001:1: duplicate key "k17"', err)
  end)

  it("refuses more replicas than the limit, and more pods in all than the limit", function()
    local function deploy(name, n)
      return ("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: %s\nspec:\n  replicas: %d\n" ..
        "  template:\n    spec:\n      containers: [{name: c}]\n"):format(name, n)
    end
    assert.matches("Deployment default/big: spec.replicas: expected an integer from 0 to 1000000",
      plan_err(deploy("big", 10000000)), 1, true)
    local five = {}
    for i = 1, 5 do five[i] = deploy("d" .. i, 500000) end
    assert.matches("Deployment default/d5: spec.replicas: 2500000 pods in all inputs together would exceed 2000000",
      plan_err(h.docs(table.unpack(five))), 1, true)
  end)

  it("refuses names longer than Kubernetes allows, so keys never collide", function()
    local long = ("p"):rep(254)
    assert.matches("Pod " .. ("p"):rep(60) .. "...: metadata.name: longer than 253 characters",
      plan_err(h.pod(long)), 1, true)
  end)

  it("refuses a Gt value beyond int64 instead of ignoring it", function()
    local err = plan_err(h.docs(h.nodepool("default", { requirements = {
      { "karpenter.k8s.aws/instance-cpu", "Gt", { "99999999999999999999" } } } })))
    assert.matches("Gt needs an integer from -9223372036854775808 to 9223372036854775807", err, 1, true)
  end)
end)

describe("hostile catalogs", function()
  local function catalog_err(text)
    local plan, err = dt.plan { manifests = h.nodepool("default"), catalog_text = text }
    assert.is_nil(plan)
    return err
  end

  it("refuses prices that would not print as numbers", function()
    local function cat(field)
      return '{"zones":["z"],"instanceTypes":[{"name":"t","cpu":2,"memoryMiB":4096,' .. field .. '}]}'
    end
    assert.matches("onDemandPrice: expected at most 1e+06 $/hour", catalog_err(cat('"onDemandPrice":1e300')), 1, true)
    assert.matches("offerings[0].price: expected a number from 0 to 1e+06",
      catalog_err(cat('"offerings":[{"zone":"z","price":1e308}]')), 1, true)
    assert.matches("gpu: expected a count from 0 to 1000000",
      catalog_err(cat('"onDemandPrice":1,"gpu":1e300')), 1, true)
  end)

  it("finds a duplicate among 9,000 types without a quadratic scan, and refuses 40,000", function()
    local function types(n)
      local t = {}
      for i = 1, n do t[i] = ('{"name":"t%d","cpu":2,"memoryMiB":4096,"onDemandPrice":0.1}'):format(i) end
      return t
    end
    local t = types(9000)
    t[#t + 1] = '{"name":"t7","cpu":2,"memoryMiB":4096,"onDemandPrice":0.1}'
    local err = catalog_err('{"zones":["z"],"instanceTypes":[' .. table.concat(t, ",") .. "]}")
    assert.matches('instanceTypes[9000]: duplicate instance type "t7" (also instanceTypes[6])', err, 1, true)
    err = catalog_err('{"zones":["z"],"instanceTypes":[' .. table.concat(types(40000), ",") .. "]}")
    assert.matches("instanceTypes: 40000 types, more than 10000 (the limit on types per catalog)", err, 1, true)
  end)
end)

describe("outputs stay well-formed", function()
  it("renders a policy's non-UTF-8 error text as YAML and JSON with U+FFFD", function()
    local path = h.write("return { budget = function(pool, reason, ctx)\n" ..
      "  if ctx.now ~= 0 then error('bad \\255 byte', 0) end end }\n")
    for _, fmt in ipairs { "yaml", "json" } do
      local out, err, code = h.cli(("disrupt -o %s --policy %s examples/disrupt.yaml"):format(fmt, path))
      assert.equal(0, code, err)
      assert.matches("bad \u{FFFD} byte", out, 1, true)
    end
    os.remove(path)
  end)
end)

describe("disruption over hostile timelines", function()
  local function node(name, age)
    return { apiVersion = "v1", kind = "Node",
      metadata = { name = name, creationTimestamp = os.date("!%Y-%m-%dT%H:%M:%SZ", 1795435200 - age),
        labels = { ["node.kubernetes.io/instance-type"] = "medium", ["topology.kubernetes.io/zone"] = "test-1b",
          ["karpenter.sh/capacity-type"] = "on-demand", ["karpenter.sh/nodepool"] = "default",
          ["kubernetes.io/arch"] = "amd64" } } }
  end
  local function pod(name, on)
    return { apiVersion = "v1", kind = "Pod", metadata = { name = name, namespace = "default" },
      spec = { nodeName = on, containers = { { name = "c", resources = { requests = { cpu = "3", memory = "1Gi" } } } } } }
  end

  it("keeps each replacement's zone after its simulation is freed", function()
    local pool = { apiVersion = "karpenter.sh/v1", kind = "NodePool", metadata = { name = "default" },
      spec = { template = { spec = { expireAfter = "24h", requirements = {
        { key = "karpenter.sh/capacity-type", operator = "In", values = { "on-demand" } } } } } } }
    local r, err = dt.disrupt { manifests = h.list { pool, node("old1", 2 * 86400), node("old2", 2 * 86400),
      pod("p1", "old1"), pod("p2", "old2") }, catalog_text = h.small_catalog, now = "2026-11-23T12:00:00Z" }
    assert(r, err)
    assert.equal(2, #r.commands)
    for _, c in ipairs(r.commands) do
      assert.equal("Expired", c.reason)
      assert.equal("replace", c.action)
      assert.matches("^test%-1[ab]$", c.replacements[1].zone)
    end
  end)
end)

describe("the policy sandbox", function()
  -- Plans with a rank hook that behaves on the golden input and runs body on real claims.
  local function plan_with(body, pre)
    local path = h.write((pre or "") .. "return { rank = function(claim, offerings)\n" ..
      "  if claim.nodePool ~= 'golden' then " .. body .. " end\n" ..
      "  local out = {} for i, o in ipairs(offerings) do out[i] = o.price end return out end }\n")
    local plan, err = dt.plan { catalog_text = h.small_catalog, policy = path,
      manifests = h.docs(h.nodepool("default"), h.pod("a")) }
    os.remove(path)
    assert(plan, err)
    assert.equal(1, #plan.nodeClaims, "the plan falls back to the built-in ranking")
    return plan.policyErrors[1] and plan.policyErrors[1].message
  end

  it("seeds math.random with the library's own function, whatever the policy replaced", function()
    assert.is_nil(plan_with("math.randomseed = function() while true do end end"))
    assert.is_nil(plan_with("math = nil"))
  end)

  it("refuses finalizers, at load and at run time", function()
    local path = h.write("setmetatable({}, {__gc = function() while true do end end})\nreturn {}\n")
    local p, err = dt.policy(path)
    assert.is_nil(p)
    assert.matches(":1: __gc metamethods (finalizers) are not allowed in policies", err, 1, true)
    os.remove(path)
    assert.matches("__gc metamethods (finalizers) are not allowed",
      plan_with("setmetatable({}, {__gc = function() end})"), 1, true)
  end)

  it("reads results without running their metamethods", function()
    local path = h.write([[
return { consolidation_order = function(cs)
  local out = {}
  for i = 1, #cs do out[i] = setmetatable({}, {__index = function() while true do end end}) end
  return out
end }
]])
    local p, err = dt.policy(path)
    assert.is_nil(p)
    assert.matches("entry 1 is nil; expected an entry or its name", err, 1, true)
    os.remove(path)
  end)

  it("charges C loops the count hook cannot see to the call's budget", function()
    assert.matches("table.move would exceed the policy budget", plan_with("table.move({}, 1, 1e15, 1, {})"), 1, true)
    assert.matches("table.insert would exceed the policy budget",
      plan_with("table.insert(setmetatable({}, {__len = function() return 1e15 end}), 1, 'x')"), 1, true)
    assert.matches("table.concat would exceed the policy budget",
      plan_with("table.concat(setmetatable({}, {__index = type}), '', 1, 1e15)"), 1, true)
    assert.matches("pattern too expensive: string.find on a 4194304-byte subject",
      plan_with("local s = string.rep('a', 4 << 20); s:find(string.rep('a', 2 << 20) .. 'b', 1, true)"), 1, true)
    assert.matches("pattern too expensive: string.find on a 1048576-byte subject (1 repetitions)",
      plan_with("string.rep('(', 1 << 20):find('%b()')"), 1, true)
    assert.matches("pattern too expensive: string.find on a 200000-byte subject",
      plan_with("string.rep('a', 200000):find(string.rep('.', 200000) .. 'b')"), 1, true)
    assert.is_nil(plan_with("assert(string.rep('', 1e15) == '')"))
  end)

  it("charges metamethod calls made from C loops", function()
    assert.matches("budget exceeded",
      plan_with("local t = setmetatable({}, {__index = function() return 'x' end}) table.concat(t, '', 1, 1e7)"),
      1, true)
  end)

  it("disables a hook after five consecutive bad results, successes in between or not", function()
    local path = h.write([[
return { rank = function(claim, offerings)
  if claim.nodePool == 'golden' then local out = {} for i = 1, #offerings do out[i] = i end return out end
  return { "not a number" }
end }
]])
    local items = { h.nodepool("default", { requirements = { { "node.kubernetes.io/instance-type", "In", { "small" } } } }) }
    for i = 1, 8 do items[#items + 1] = h.pod("p" .. i, { cpu = "1500m" }) end
    local plan = assert(dt.plan { catalog_text = h.small_catalog, policy = path, packing = "ffd",
      manifests = h.docs(table.unpack(items)) })
    os.remove(path)
    assert.equal(8, #plan.nodeClaims)
    assert.equal(5, plan.policyErrors[1].count)
    assert.is_true(plan.policyErrors[1].disabled)
  end)
end)

describe("numbers past int64 where a quantity is expected", function()
  it("are read without undefined behaviour and refused with the field", function()
    local cat = '{"zones":["z"],"instanceTypes":[{"name":"t","cpu":2,"memoryMiB":4096,"onDemandPrice":0.1,' ..
      '"overhead":{"cpu":1e116}}]}'
    local plan, err = dt.plan { manifests = h.nodepool("default"), catalog_text = cat }
    assert.is_nil(plan)
    assert.matches("overhead", err, 1, true)
  end)
end)

describe("NodePool validation on shapes it does not expect", function()
  it("reports a requirement or a label map that is not a mapping without reading past it", function()
    local np = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec:\n  template:\n" ..
      "    metadata: {labels: [a, b]}\n    spec:\n      requirements: [[1, 2]]\n"
    local p, err = dt.plan { manifests = np, catalog_text = h.small_catalog }
    assert.is_nil(p)
    assert.matches("NodePool x:", err, 1, true)
  end)
end)
