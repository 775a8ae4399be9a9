-- Every NodeClaim `dovetail plan` prints, checked against Karpenter's NodeClaim CRD
-- (spec/fixtures/crds/karpenter.sh_nodeclaims.yaml): its openAPIV3Schema by a small validator of the
-- JSON-schema keywords the CRD uses, its CEL rules where they are restated in Lua below, and the
-- object metadata as the API server checks it.
local h = require "helper"
local lyaml = require "lyaml" -- LibYAML's binding; lua-busted depends on it (through lua-cliargs)

local NOW = "2026-11-23T12:00:00Z"

---------------------------------------------------------------------------------------------------
-- Regular expressions: the subset the CRD's patterns use (ECMAScript syntax as Kubernetes reads it):
-- literals and escapes, ".", classes with ranges and negation, \d \s \w, groups, alternation, the
-- quantifiers * + ? {m} {m,} {m,n}, and ^ $ as assertions. Matched by backtracking; a pattern
-- matches when it matches anywhere in the string, as JSON Schema says.
---------------------------------------------------------------------------------------------------
local regex = {}

local function class_of(esc)
  if esc == "d" then return function(c) return c:match("%d") ~= nil end end
  if esc == "s" then return function(c) return c:match("%s") ~= nil end end
  if esc == "w" then return function(c) return c:match("[%w_]") ~= nil end end
  return nil
end

function regex.compile(src)
  local pos = 1
  local function peek() return src:sub(pos, pos) end
  local function take()
    local c = src:sub(pos, pos)
    pos = pos + 1
    return c
  end
  local parse_alt
  local function parse_class()
    local negate = false
    if peek() == "^" then
      negate = true
      take()
    end
    local tests, first = {}, true
    while pos <= #src and (peek() ~= "]" or first) do
      first = false
      local c = take()
      if c == "\\" then
        local e = take()
        local cls = class_of(e)
        if cls then
          tests[#tests + 1] = cls
        else
          tests[#tests + 1] = function(x) return x == e end
        end
      elseif peek() == "-" and src:sub(pos + 1, pos + 1) ~= "]" and pos + 1 <= #src then
        take()
        local hi = take()
        local lo = c
        tests[#tests + 1] = function(x) return x >= lo and x <= hi end
      else
        tests[#tests + 1] = function(x) return x == c end
      end
    end
    assert(take() == "]", "unterminated class in " .. src)
    return function(x)
      local hit = false
      for _, t in ipairs(tests) do hit = hit or t(x) end
      return hit ~= negate
    end
  end
  local function parse_atom()
    local c = take()
    if c == "(" then
      local alt = parse_alt()
      assert(take() == ")", "unbalanced group in " .. src)
      return { t = "group", alt = alt }
    elseif c == "[" then
      return { t = "char", set = parse_class() }
    elseif c == "." then
      return { t = "char", set = function(x) return x ~= "\n" end }
    elseif c == "^" then
      return { t = "bol" }
    elseif c == "$" then
      return { t = "eol" }
    elseif c == "\\" then
      local e = take()
      local cls = class_of(e)
      return { t = "char", set = cls or function(x) return x == e end }
    end
    return { t = "char", set = function(x) return x == c end }
  end
  local function parse_seq()
    local seq = {}
    while pos <= #src and peek() ~= "|" and peek() ~= ")" do
      local node = parse_atom()
      local min, max = 1, 1
      local q = peek()
      if q == "*" then
        min, max = 0, math.huge
        take()
      elseif q == "+" then
        min, max = 1, math.huge
        take()
      elseif q == "?" then
        min, max = 0, 1
        take()
      elseif q == "{" then
        local m, rest = src:match("^{(%d+)(,?%d*)}", pos)
        assert(m, "bad quantifier in " .. src)
        pos = pos + #m + #rest + 2
        min = tonumber(m)
        max = rest == "" and min or (rest == "," and math.huge or tonumber(rest:sub(2)))
      end
      seq[#seq + 1] = { node = node, min = min, max = max }
    end
    return seq
  end
  parse_alt = function()
    local alt = { parse_seq() }
    while peek() == "|" do
      take()
      alt[#alt + 1] = parse_seq()
    end
    return alt
  end
  local ast = parse_alt()
  assert(pos > #src, "unexpected " .. peek() .. " in " .. src)
  return ast
end

local match_alt
local function match_node(n, s, i, k)
  if n.t == "char" then
    return i <= #s and n.set(s:sub(i, i)) and k(i + 1)
  elseif n.t == "bol" then
    return i == 1 and k(i)
  elseif n.t == "eol" then
    return i == #s + 1 and k(i)
  end
  return match_alt(n.alt, s, i, k)
end

local function match_seq(seq, j, s, i, k)
  if j > #seq then return k(i) end
  local it = seq[j]
  local function rep(count, at)
    if count < it.max and match_node(it.node, s, at, function(nxt)
      if nxt == at and count + 1 >= it.min then -- more empty repetitions change nothing
        return match_seq(seq, j + 1, s, nxt, k)
      end
      return rep(count + 1, nxt)
    end) then
      return true
    end
    return count >= it.min and match_seq(seq, j + 1, s, at, k)
  end
  return rep(0, i)
end

match_alt = function(alt, s, i, k)
  for _, seq in ipairs(alt) do
    if match_seq(seq, 1, s, i, k) then return true end
  end
  return false
end

local compiled = {}
function regex.find(pattern, s)
  compiled[pattern] = compiled[pattern] or regex.compile(pattern)
  local done = function() return true end
  for start = 1, #s + 1 do
    if match_alt(compiled[pattern], s, start, done) then return true end
  end
  return false
end

---------------------------------------------------------------------------------------------------
-- CEL rules (x-kubernetes-validations) restated in Lua, by their message. A rule this table does
-- not know is not checked: the spec lists those and expects only the transition rule (it needs
-- the object as it was, so it has nothing to say of a new one).
---------------------------------------------------------------------------------------------------
local function domain(key) return key:match("^([^/]+)") or "" end
local function ends_with(s, suffix) return suffix == "" or s:sub(-#suffix) == suffix end

local rules = {
  ["group may not be empty"] = function(v) return v ~= "" end,
  ["kind may not be empty"] = function(v) return v ~= "" end,
  ["name may not be empty"] = function(v) return v ~= "" end,
  ['label domain "karpenter.sh" is restricted'] = function(v)
    return v == "karpenter.sh/capacity-type" or v == "karpenter.sh/nodepool" or not ends_with(domain(v), "karpenter.sh")
  end,
  ['label "kubernetes.io/hostname" is restricted'] = function(v) return v ~= "kubernetes.io/hostname" end,
  ["requirements with operator 'In' must have a value defined"] = function(list)
    for _, r in ipairs(list) do
      if r.operator == "In" and #(r.values or {}) == 0 then return false end
    end
    return true
  end,
  ["requirements operator 'Gt', 'Lt', 'Gte', or 'Lte' must have a single positive integer value"] = function(list)
    for _, r in ipairs(list) do
      local op = r.operator
      if op == "Gt" or op == "Lt" or op == "Gte" or op == "Lte" then
        local v = r.values or {}
        if #v ~= 1 or not tostring(v[1]):match("^[+-]?%d+$") or tonumber(v[1]) < 0 then return false end
      end
    end
    return true
  end,
  ["requirements with 'minValues' must have at least that many values specified in the 'values' field"] = function(list)
    for _, r in ipairs(list) do
      if r.operator == "In" and r.minValues and #(r.values or {}) < r.minValues then return false end
    end
    return true
  end,
}

---------------------------------------------------------------------------------------------------
-- The validator: type, properties, required, additionalProperties (a schema, or false), unknown
-- fields where the schema lists properties and does not preserve unknown fields (a structural
-- schema: the API server drops them, or refuses them under strict field validation, kubectl's
-- default), enum, pattern, minLength, maxLength, minItems, maxItems, minimum, maximum, items,
-- anyOf, x-kubernetes-int-or-string, format date-time, and the CEL rules above. Keywords apply to
-- values of their type only (a pattern on an array checks nothing), as JSON Schema has it.
---------------------------------------------------------------------------------------------------
local skipped_rules = {}

local function kind(v)
  if v == lyaml.null then return "null" end
  local t = type(v)
  if t == "table" then
    if next(v) == nil then return "empty" end
    for k in pairs(v) do
      if type(k) ~= "number" then return "object" end
    end
    return "array"
  end
  if t == "number" then return math.type(v) == "integer" and "integer" or "number" end
  return t
end

local function type_ok(want, k)
  if want == "object" or want == "array" then return k == want or k == "empty" end
  if want == "number" then return k == "number" or k == "integer" end
  return k == want
end

local function validate(schema, v, path, errs)
  local function err(msg) errs[#errs + 1] = (path == "" and "(root)" or path) .. ": " .. msg end
  local k = kind(v)
  if schema["x-kubernetes-int-or-string"] and k ~= "integer" and k ~= "string" then
    return err("expected an integer or a string, got " .. k)
  end
  if schema.type and not type_ok(schema.type, k) then
    return err("expected " .. schema.type .. ", got " .. k)
  end
  if schema.anyOf then
    local any = false
    for _, alt in ipairs(schema.anyOf) do
      local sub = {}
      validate(alt, v, path, sub)
      any = any or #sub == 0
    end
    if not any then err("matches none of anyOf") end
  end
  if schema.enum then
    local ok = false
    for _, e in ipairs(schema.enum) do ok = ok or e == v end
    if not ok then err("not one of the enum values: " .. tostring(v)) end
  end
  if k == "string" then
    if schema.pattern and not regex.find(schema.pattern, v) then
      err(string.format("%q does not match %s", v, schema.pattern))
    end
    if schema.minLength and utf8.len(v) < schema.minLength then err("shorter than " .. schema.minLength) end
    if schema.maxLength and utf8.len(v) > schema.maxLength then err("longer than " .. schema.maxLength) end
    if schema.format == "date-time" and not v:match("^%d%d%d%d%-%d%d%-%d%dT%d%d:%d%d:%d%d") then
      err("not an RFC 3339 date-time")
    end
  end
  if (k == "integer" or k == "number") then
    if schema.minimum and v < schema.minimum then err("below the minimum " .. schema.minimum) end
    if schema.maximum and v > schema.maximum then err("above the maximum " .. schema.maximum) end
  end
  if k == "array" or (k == "empty" and schema.type == "array") then
    if schema.minItems and #v < schema.minItems then err("fewer than " .. schema.minItems .. " items") end
    if schema.maxItems and #v > schema.maxItems then err("more than " .. schema.maxItems .. " items") end
    for i, item in ipairs(v) do
      if schema.items then validate(schema.items, item, path .. "[" .. (i - 1) .. "]", errs) end
    end
  end
  if k == "object" or (k == "empty" and schema.type == "object") then
    for _, req in ipairs(schema.required or {}) do
      if v[req] == nil then err("required field " .. req .. " is missing") end
    end
    local closed = schema.properties ~= nil and schema.additionalProperties == nil
      and not schema["x-kubernetes-preserve-unknown-fields"]
    for key, val in pairs(v) do
      local sub = path == "" and key or path .. "." .. key
      local ps = schema.properties and schema.properties[key]
      if ps then
        validate(ps, val, sub, errs)
      elseif type(schema.additionalProperties) == "table" then
        validate(schema.additionalProperties, val, sub, errs)
      elseif schema.additionalProperties == false or closed then
        errs[#errs + 1] = sub .. ": unknown field"
      end
    end
  end
  for _, r in ipairs(schema["x-kubernetes-validations"] or {}) do
    local check = rules[r.message]
    if not check then
      skipped_rules[r.message] = r.rule
    elseif not check(v) then
      err("CEL rule: " .. r.message)
    end
  end
end

-- Object metadata as the API server validates it (the CRD leaves metadata to it): a name that is
-- a DNS subdomain, labels with qualified-name keys and label values, annotation keys that are
-- qualified names, and owner references with apiVersion, kind, name and uid.
local DNS_LABEL = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
local function subdomain(s)
  if #s == 0 or #s > 253 then return false end
  for part in (s .. "."):gmatch("([^.]*)%.") do
    if not regex.find(DNS_LABEL, part) then return false end
  end
  return true
end
local NAME = "^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$"
local function qualified(key)
  local prefix, name = key:match("^([^/]*)/(.*)$")
  if not prefix then name = key end
  return (prefix == nil or subdomain(prefix)) and #name <= 63 and regex.find(NAME, name)
end
local VALUE = "^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$"

local function object_meta(md, errs)
  if kind(md) ~= "object" then
    errs[#errs + 1] = "metadata: expected an object"
    return
  end
  if type(md.name) ~= "string" or not subdomain(md.name) then errs[#errs + 1] = "metadata.name: not a DNS subdomain" end
  for key, val in pairs(md.labels or {}) do
    if not qualified(key) then errs[#errs + 1] = "metadata.labels: bad key " .. key end
    if type(val) ~= "string" or #val > 63 or not regex.find(VALUE, val) then
      errs[#errs + 1] = "metadata.labels." .. key .. ": bad value " .. tostring(val)
    end
  end
  local size = 0
  for key, val in pairs(md.annotations or {}) do
    if not qualified(key) then errs[#errs + 1] = "metadata.annotations: bad key " .. key end
    if type(val) ~= "string" then errs[#errs + 1] = "metadata.annotations." .. key .. ": not a string" end
    size = size + #key + #tostring(val)
  end
  if size > 256 * 1024 then errs[#errs + 1] = "metadata.annotations: over 256 KiB" end
  for i, o in ipairs(md.ownerReferences or {}) do
    for _, f in ipairs { "apiVersion", "kind", "name", "uid" } do
      if type(o[f]) ~= "string" or o[f] == "" then
        errs[#errs + 1] = string.format("metadata.ownerReferences[%d].%s: required", i - 1, f)
      end
    end
  end
end

---------------------------------------------------------------------------------------------------
-- The CRD and the claims.
---------------------------------------------------------------------------------------------------
local function read(path)
  local f = assert(io.open(path))
  local s = f:read("a")
  f:close()
  return s
end

local crd = lyaml.load(read(h.fixtures .. "crds/karpenter.sh_nodeclaims.yaml"))
local schema
for _, v in ipairs(crd.spec.versions) do
  if v.name == "v1" then schema = v.schema.openAPIV3Schema end
end

local function problems(claim)
  local errs = {}
  validate(schema, claim, "", errs)
  object_meta(claim.metadata, errs)
  return errs
end

local function claims_in(yaml)
  local out = {}
  for _, d in ipairs(lyaml.load(yaml, { all = true })) do
    if type(d) == "table" and d.kind == "NodeClaim" then out[#out + 1] = d end
  end
  return out
end

-- Plans files (or manifests) both ways; checks every NodeClaim of the YAML against the CRD and
-- that the YAML holds exactly the claims the JSON plan lists, as the JSON plan describes them.
local function check(what, args)
  local opts = { now = NOW }
  for k, v in pairs(args) do opts[k] = v end
  local plan = assert(h.dt.plan(opts))
  opts.format = "yaml"
  local yaml = assert(h.dt.plan(opts))
  local claims = claims_in(yaml)
  assert.are.equal(#plan.nodeClaims, #claims, what .. ": one NodeClaim object per claim of the plan")
  local by_name = {}
  for _, c in ipairs(claims) do
    assert.same({}, problems(c), what .. ": NodeClaim " .. tostring(c.metadata.name))
    by_name[c.metadata.name] = c
  end
  for _, pc in ipairs(plan.nodeClaims) do
    local c = by_name[pc.name]
    assert.is_not_nil(c, what .. ": " .. pc.name .. " is in the JSON plan and not in the YAML")
    local l = c.metadata.labels
    assert.are.equal(pc.instanceType, l["node.kubernetes.io/instance-type"])
    assert.are.equal(pc.zone, l["topology.kubernetes.io/zone"])
    assert.are.equal(pc.capacityType, l["karpenter.sh/capacity-type"])
    assert.are.equal(pc.nodePool, l["karpenter.sh/nodepool"])
    -- a CapacityBuffer's chunks, the last virtualPods of pods, are nominated to no claim
    assert.are.equal(table.concat(pc.pods, ",", 1, #pc.pods - (pc.virtualPods or 0)),
      c.metadata.annotations["dovetail.dev/pods"])
  end
  return claims, plan
end

local function req(claim, key)
  local found = {}
  for _, r in ipairs(claim.spec.requirements) do
    if r.key == key then found[#found + 1] = r end
  end
  return found[1], found
end

local function set(list)
  local s = {}
  for _, v in ipairs(list or {}) do s[v] = true end
  return s
end

---------------------------------------------------------------------------------------------------
-- Karpenter-style NodePools (after the AWS provider's examples: minValues on families, a maximum
-- node lifetime, several architectures) and a static pool, with pods for them.
---------------------------------------------------------------------------------------------------
local CLASS = "      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"

local function deployment(name, n, cpu, extra)
  return string.format([[
apiVersion: apps/v1
kind: Deployment
metadata: {name: %s, namespace: apps}
spec:
  replicas: %d
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
%s      containers:
      - name: c
        resources: {requests: {cpu: "%s", memory: 1Gi}}
]], name, n, name, name, extra or "", cpu)
end

local min_values_family = [[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: spot, annotations: {kubernetes.io/description: spot capacity across families}}
spec:
  template:
    spec:
]] .. CLASS .. [[
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot]}
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: karpenter.k8s.aws/instance-family, operator: Exists, minValues: 5}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]}
]]

local max_node_lifetime = [[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default, uid: 6b3f2a10-7c1d-4e8f-9a2b-3c4d5e6f7a8b}
spec:
  template:
    metadata:
      labels: {team: payments}
      annotations: {example.com/owner: payments}
    spec:
]] .. CLASS .. [[
      expireAfter: 168h
      terminationGracePeriod: 24h
      taints: [{key: example.com/dedicated, value: payments, effect: NoSchedule}]
      startupTaints: [{key: example.com/booting, effect: NoExecute}]
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]}
  disruption:
    consolidationPolicy: WhenEmpty
    consolidateAfter: 60s
]]

local function arch_pool(arch, categories)
  return string.format([[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %s}
spec:
  template:
    spec:
]] .. CLASS .. [[
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [%s]}
      - {key: kubernetes.io/os, operator: In, values: [linux]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: karpenter.k8s.aws/instance-category, operator: In, values: [%s]}
      - {key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ["2"]}
]], arch, arch, categories)
end

local static_pool = [[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: fixed, uid: 0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d}
spec:
  replicas: 3
  limits: {nodes: 4}
  template:
    spec:
]] .. CLASS .. [[
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.large, m6i.xlarge]}
]]

describe("NodeClaims against Karpenter's NodeClaim CRD", function()
  it("restates the CRD's patterns faithfully enough to tell good values from bad", function()
    local expire = schema.properties.spec.properties.expireAfter.pattern
    for _, good in ipairs { "720h", "1h30m", "90s", "Never", "0s" } do assert.is_true(regex.find(expire, good), good) end
    for _, bad in ipairs { "1d", "500ms", "", "never", "1.5h", "720" } do assert.is_false(regex.find(expire, bad), bad) end
    local quantity = schema.properties.spec.properties.resources.properties.requests.additionalProperties.pattern
    for _, good in ipairs { "13", "1500m", "32Gi", "1e3", "0.5", "+1", ".5Ki" } do
      assert.is_true(regex.find(quantity, good), good)
    end
    for _, bad in ipairs { "1.5 Gi", "Gi", "1GB", "-", "1e" } do assert.is_false(regex.find(quantity, bad), bad) end
    local key = schema.properties.spec.properties.requirements.items.properties.key.pattern
    for _, good in ipairs { "kubernetes.io/arch", "karpenter.k8s.aws/instance-family", "team", "a.b-c/D_e.f" } do
      assert.is_true(regex.find(key, good), good)
    end
    for _, bad in ipairs { "Example.com/x", "a//b", "-a", "a/", "/a", "a b" } do assert.is_false(regex.find(key, bad), bad) end
  end)

  it("accepts every NodeClaim planned for the examples, and each is one the JSON plan lists", function()
    local total = 0
    for file in io.popen("ls examples/*.yaml"):lines() do
      total = total + #check(file, { files = { file } })
    end
    assert.is_true(total >= 3, "the examples plan NodeClaims")
    check("cluster dump", { files = { h.fixtures .. "cluster-dump.yaml" } })
  end)

  it("carries a min-values-family NodePool's requirements, minValues included", function()
    local claims = check("min-values-family",
      { manifests = h.docs(min_values_family, deployment("web", 12, "1")) })
    assert.is_true(#claims > 0)
    for _, c in ipairs(claims) do
      local fam = req(c, "karpenter.k8s.aws/instance-family")
      assert.same({ key = "karpenter.k8s.aws/instance-family", operator = "Exists", minValues = 5 }, fam)
      local gen = req(c, "karpenter.k8s.aws/instance-generation")
      assert.same({ "2" }, gen.values)
      assert.are.equal("Gt", gen.operator)
      assert.same({ "c", "m", "r" }, req(c, "karpenter.k8s.aws/instance-category").values)
      assert.same({ "spot" }, req(c, "karpenter.sh/capacity-type").values)
      -- the types it may launch span at least five families, and hold the one planned
      local types, families = req(c, "node.kubernetes.io/instance-type").values, {}
      for _, t in ipairs(types) do families[t:match("^[^.]+")] = true end
      local n = 0
      for _ in pairs(families) do n = n + 1 end
      assert.is_true(n >= 5, "families: " .. n)
      assert.is_true(set(types)[c.metadata.labels["node.kubernetes.io/instance-type"]])
      assert.is_true(#types <= 600)
    end
  end)

  it("carries a maximum node lifetime, the grace period, template metadata, taints and the owner", function()
    local tolerate = "      tolerations: [{key: example.com/dedicated, operator: Exists}]\n"
    local claims = check("max-node-lifetime",
      { manifests = h.docs(max_node_lifetime, deployment("pay", 4, "2", tolerate)) })
    assert.is_true(#claims > 0)
    for _, c in ipairs(claims) do
      assert.are.equal("168h", c.spec.expireAfter)
      assert.are.equal("24h", c.spec.terminationGracePeriod)
      assert.same({ group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "default" }, c.spec.nodeClassRef)
      assert.same({ { key = "example.com/dedicated", value = "payments", effect = "NoSchedule" } }, c.spec.taints)
      assert.same({ { key = "example.com/booting", effect = "NoExecute" } }, c.spec.startupTaints)
      assert.are.equal("payments", c.metadata.labels.team)
      assert.are.equal("default", c.metadata.labels["karpenter.k8s.aws/ec2nodeclass"])
      assert.are.equal("payments", c.metadata.annotations["example.com/owner"])
      assert.same({ { apiVersion = "karpenter.sh/v1", kind = "NodePool", name = "default",
        uid = "6b3f2a10-7c1d-4e8f-9a2b-3c4d5e6f7a8b", blockOwnerDeletion = true } }, c.metadata.ownerReferences)
      assert.same({ "payments" }, req(c, "team").values, "template labels are requirements too")
      assert.matches("^%x+$", c.metadata.annotations["dovetail.dev/nodepool-hash"])
    end
  end)

  it("plans a NodeClaim per architecture from multiple-arch NodePools", function()
    local function on(arch) return "      nodeSelector: {kubernetes.io/arch: " .. arch .. "}\n" end
    local claims = check("multiple-arch", { manifests = h.docs(arch_pool("amd64", "c, m, r"), arch_pool("arm64", "c, m"),
      deployment("x86", 3, "1", on("amd64")), deployment("graviton", 3, "1", on("arm64"))) })
    local arches = {}
    for _, c in ipairs(claims) do
      local a = req(c, "kubernetes.io/arch").values
      assert.are.equal(1, #a)
      assert.are.equal(a[1], c.metadata.labels["kubernetes.io/arch"])
      arches[a[1]] = true
    end
    assert.same({ amd64 = true, arm64 = true }, arches)
  end)

  it("plans a static NodePool's NodeClaims as valid ones too", function()
    local claims = check("static", { manifests = h.docs(static_pool, deployment("small", 2, "500m")) })
    local fixed = 0
    for _, c in ipairs(claims) do
      if c.metadata.labels["karpenter.sh/nodepool"] == "fixed" then
        fixed = fixed + 1
        assert.same({ "on-demand" }, req(c, "karpenter.sh/capacity-type").values)
        assert.is_true(set(req(c, "node.kubernetes.io/instance-type").values)["m6i.large"])
      end
    end
    assert.are.equal(3, fixed)
  end)

  it("keeps a reservation, and zones open where a minValues needs more types than one zone has", function()
    local cat = [[
{ "region": "test-1", "provider": "generic", "zones": ["test-1a", "test-1b"],
  "instanceTypes": [
    { "name": "a1", "family": "a", "arch": "amd64", "cpu": 4, "memoryMiB": 8192, "maxPods": 20, "onDemandPrice": 0.10,
      "zones": ["test-1a"] },
    { "name": "b1", "family": "b", "arch": "amd64", "cpu": 4, "memoryMiB": 8192, "maxPods": 20, "onDemandPrice": 0.12,
      "zones": ["test-1b"] },
    { "name": "c1", "family": "c", "arch": "amd64", "cpu": 4, "memoryMiB": 8192, "maxPods": 20, "onDemandPrice": 0.14,
      "zones": ["test-1b"] } ],
  "reservations": [ { "id": "cr-7", "instanceType": "c1", "zone": "test-1b", "count": 1 } ] }
]]
    local function pool(ct, min_values)
      return string.format([=[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: flex}
spec:
  template:
    spec:
      nodeClassRef: {group: example.com, kind: TestNodeClass, name: t}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [%s]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [a1, b1, c1]%s}
]=], ct, min_values and ", minValues: " .. min_values or "")
    end
    local c = check("minValues across zones", { catalog_text = cat,
      manifests = h.docs(pool("on-demand", 2), h.pod("x", { cpu = "1" })) })[1]
    assert.same({ "a1", "b1", "c1" }, req(c, "node.kubernetes.io/instance-type").values)
    assert.are.equal(2, req(c, "node.kubernetes.io/instance-type").minValues)
    assert.same({ "test-1a", "test-1b" }, req(c, "topology.kubernetes.io/zone").values)
    c = check("reserved", { catalog_text = cat, manifests = h.docs(pool("reserved"), h.pod("x", { cpu = "1" })) })[1]
    assert.same({ "cr-7" }, req(c, "karpenter.k8s.aws/capacity-reservation-id").values)
    assert.same({ "reserved" }, req(c, "karpenter.sh/capacity-type").values)
    assert.same({ "c1" }, req(c, "node.kubernetes.io/instance-type").values)
    assert.same({ "test-1b" }, req(c, "topology.kubernetes.io/zone").values)
  end)

  it("labels a NodeClaim for the custom requirements its pods have, as Karpenter does", function()
    local np = h.nodepool("custom", { requirements = { { "example.com/tier", "In", { "gold", "silver" } },
      { "example.com/slot", "Exists" } } }):gsub("    spec:\n", "    spec:\n      nodeClassRef: {group: g, kind: K, name: n}\n")
    local pod = h.pod("p", { extra = [=[
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions:
          - {key: example.com/tier, operator: NotIn, values: [gold]}]=] })
    local c = check("custom labels", { catalog_text = h.small_catalog, manifests = h.docs(np, pod) })[1]
    assert.are.equal("silver", c.metadata.labels["example.com/tier"])
    assert.are.equal("0", c.metadata.labels["example.com/slot"])
    assert.same({ "silver" }, req(c, "example.com/tier").values)
    assert.same({ key = "example.com/slot", operator = "Exists" }, req(c, "example.com/slot"))
  end)

  it("refuses a NodeClaim with a required field taken away, an unknown field or a broken rule", function()
    local c = check("quickstart", { files = { "examples/quickstart.yaml" } })[1]
    assert.same({}, problems(c))
    local function copy(t)
      if type(t) ~= "table" then return t end
      local o = {}
      for k, v in pairs(t) do o[k] = copy(v) end
      return o
    end
    local m = copy(c)
    m.spec.nodeClassRef = nil
    assert.same({ "spec: required field nodeClassRef is missing" }, problems(m))
    m = copy(c)
    m.spec.requirements[1].operator = nil
    assert.same({ "spec.requirements[0]: required field operator is missing" }, problems(m))
    m = copy(c)
    m.spec.requirements[1].operator = "Like"
    assert.same({ "spec.requirements[0].operator: not one of the enum values: Like" }, problems(m))
    m = copy(c)
    m.spec.nodeClassRef.version = "v1"
    assert.same({ "spec.nodeClassRef.version: unknown field" }, problems(m))
    m = copy(c)
    m.spec.expireAfter = "30d"
    assert.matches("spec.expireAfter: \"30d\" does not match", problems(m)[1], 1, true)
    m = copy(c)
    local r = req(m, "karpenter.k8s.aws/instance-category")
    r.minValues = #r.values + 1
    assert.same({ "spec.requirements: CEL rule: requirements with 'minValues' must have at least that many values " ..
      "specified in the 'values' field" }, problems(m))
    m = copy(c)
    m.metadata.labels["example.com/bad"] = "no spaces allowed"
    assert.same({ "metadata.labels.example.com/bad: bad value no spaces allowed" }, problems(m))
  end)

  it("checks every CEL rule of the CRD but the one that compares with the object as it was", function()
    assert.same({ ["spec is immutable"] = "self == oldSelf" }, skipped_rules)
  end)
end)
