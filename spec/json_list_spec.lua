-- A JSON List (what `kubectl get -A -o json` prints) is read item by item,
-- each item parsed on its own; what it decides and what it reports must be
-- what the same objects decide and report any other way.
local h = require "helper"

local function pod(name, cpu, memory)
  return h.json {
    apiVersion = "v1", kind = "Pod",
    metadata = { name = name, namespace = "default" },
    spec = { containers = { { name = "c", image = "x",
      resources = { requests = { cpu = cpu or "1", memory = memory or "1Gi" } } } } },
  }
end

local nodepool = h.json {
  apiVersion = "karpenter.sh/v1", kind = "NodePool", metadata = { name = "default" },
  spec = { template = { spec = { requirements = { { key = "kubernetes.io/arch", operator = "In", values = { "amd64" } } } } } },
}

local function list(items, kind)
  return '{"apiVersion":"v1","kind":"' .. (kind or "List") .. '","metadata":{"resourceVersion":""},"items":['
    .. table.concat(items, ",") .. "]}"
end

local function plan_of(text)
  local plan, err = h.dt.plan { manifests = text, now = "2026-11-23T00:00:00Z" }
  return plan, err
end

describe("a JSON List", function()
  it("decides as the same objects as YAML documents do", function()
    local items = { nodepool }
    for i = 1, 40 do items[#items + 1] = pod("p" .. i, tostring(i % 7 + 1), (i % 5 + 1) .. "Gi") end
    local a = assert(plan_of(list(items)))
    local b = assert(plan_of("---\n" .. table.concat(items, "\n---\n"))) -- YAML documents, parsed whole
    assert.are.same(b.nodeClaims, a.nodeClaims)
    local n = 0
    for _, c in ipairs(a.nodeClaims) do n = n + #c.pods end
    assert.are.equal(40, n)
  end)

  it("reads any kind ending in List, and Lists inside its items", function()
    local a = assert(plan_of(list({ nodepool, list({ pod("a"), pod("b") }, "PodList") }, "List")))
    local n = 0
    for _, c in ipairs(a.nodeClaims) do n = n + #c.pods end
    assert.are.equal(2, n)
  end)

  it("reports malformed JSON in a later item before a bad field in an earlier one", function()
    local bad_field = pod("a", "1", "1Gx")
    local bad_json = pod("b"):gsub('"cpu":"1"', '"cpu":tru')
    local _, err = plan_of(list({ nodepool, bad_field, bad_json }))
    assert.matches("^manifests:1:%d+: malformed JSON", err)
  end)

  it("reports a bad field with the object and the field, and adds nothing", function()
    local _, err = plan_of(list({ nodepool, pod("a"), pod("b", "1", "1Gx"), pod("c") }))
    assert.matches("Pod default/b: spec.containers[0].resources.requests.memory: invalid quantity \"1Gx\"", err, 1, true)
  end)

  it("reports a trailing comma, a missing comma and a cut file where they are", function()
    local text = list({ nodepool, pod("a") })
    local _, e1 = plan_of(text:gsub("%]}$", ",]}"))
    local _, e2 = plan_of(list({ nodepool, pod("a") .. " " .. pod("b") }))
    local _, e3 = plan_of(text:sub(1, -3))
    for _, e in ipairs { e1, e2, e3 } do assert.matches("^manifests:1:%d+: malformed JSON", e) end
  end)

  it("finds a duplicate object across items", function()
    local _, err = plan_of(list({ nodepool, pod("a"), pod("a") }))
    assert.matches("Pod default/a: metadata.name: duplicate object", err, 1, true)
  end)

  it("takes a List whose keys are escaped the way cJSON reads them", function()
    local escaped = assert(plan_of(list({ nodepool, pod("a") }, "Li\\u0073t")))
    assert.are.equal(1, #escaped.nodeClaims)
  end)

  -- JSON readers differ on which of two equal keys counts (the API server's
  -- Go decoder takes the last, cJSON the first; kubectl's strict validation
  -- refuses them), so a key twice is refused, as YAML's is, wherever it is.
  it("refuses a key twice in the List or in an item, naming the place and the object", function()
    local twice = '{"apiVersion":"v1","kind":"List","kind":"List","items":[' .. nodepool .. "," .. pod("a") .. "]}"
    local _, e1 = plan_of(twice)
    assert.are.equal('manifests: duplicate key "kind"', e1)
    local cpu_twice = pod("b", "1"):gsub('"cpu":"1"', '"cpu":"1","cpu":"64"')
    local _, e2 = plan_of(list({ nodepool, pod("a"), cpu_twice, pod("c") }))
    assert.are.equal('manifests: items[2].spec.containers[0].resources.requests (Pod default/b): duplicate key "cpu"',
      e2)
    local _, e3 = plan_of(cpu_twice)
    assert.are.equal('manifests: spec.containers[0].resources.requests (Pod default/b): duplicate key "cpu"', e3)
    local keys = {}
    for i = 1, 40000 do keys[i] = ('"k%d":"v"'):format(i) end
    keys[#keys + 1] = '"k17":"w"'
    local labels = pod("d"):gsub('"namespace":"default"', '"namespace":"default","labels":{' .. table.concat(keys, ",") .. "}")
    local _, e4 = plan_of(list({ nodepool, labels }))
    assert.are.equal('manifests: items[1].metadata.labels (Pod default/d): duplicate key "k17"', e4)
  end)
end)
