-- Cost packing of a group with hundreds of pod shapes: the many-shape workload of `make bench`
-- (bench/workload-many-shapes.json: the Azure trace's peak hour, 5,968 pods in 217 shapes), planned
-- through the CLI and held against the pattern-LP lower bounds that `make bench` computes for it
-- independently (GLPK, exact knapsack pricing).
local h = require "helper"
local json = require "dkjson"

-- Lower bounds on any plan of these pods, from `make bench` (many-full-od, many-full-spot): the
-- pattern LP by GLPK with exact knapsack pricing, Farley's bound where pricing hit its limits.
local BOUND_OD, BOUND_SPOT = 213.93, 41.75
-- How far above them the plans may land: one pattern LP over all 217 shapes that starts from
-- the patterns of parts of 64 (whose pods never share a node), each part's LP rounded by type as
-- well, lands within 1.014 on-demand and with spot.
local RATIO_OD, RATIO_SPOT = 1.015, 1.015
-- The c/m/r subset (generation 5 or later, at most 32 vCPU) with spot: the bound from `make
-- bench` (many-cmr5-32-spot). The LP's rounding lands at 1.0058 (first-fit's plan is 1.022);
-- node-by-node fills (plan E) at 1.0036, and the cheaper plan is kept.
local BOUND_SUBSET_SPOT, RATIO_SUBSET_SPOT = 83.53, 1.005

-- The workload as one JSON List: a NodePool (amd64, no GPU or other accelerator, the given
-- capacity types) and the shapes' exact counts.
local function workload(capacity_types, extra)
  local text = h.slurp("bench/workload-many-shapes.json")
  local items = {
    ('{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"default"},"spec":{"template":' ..
      '{"spec":{"requirements":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]},' ..
      '{"key":"karpenter.k8s.aws/instance-gpu-count","operator":"DoesNotExist"},' ..
      '{"key":"karpenter.k8s.aws/instance-accelerator-count","operator":"DoesNotExist"},%s' ..
      '{"key":"karpenter.sh/capacity-type","operator":"In","values":[%s]}]}}}}'):format(extra or "", capacity_types),
  }
  local n = 0
  for cpu, mem, count in text:gmatch('"cpu_millicores": (%d+), "memory_MiB": (%d+), "count": (%d+)') do
    for _ = 1, tonumber(count) do
      n = n + 1
      items[#items + 1] = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%d","namespace":"default"},' ..
        '"spec":{"containers":[{"name":"c","image":"x","resources":{"requests":{"cpu":"%sm","memory":"%sMi"}}}]}}')
        :format(n, cpu, mem)
    end
  end
  return h.write('{"apiVersion":"v1","kind":"List","items":[' .. table.concat(items, ",") .. "]}"), n
end

local function plan(path, packing)
  local out, err, code = h.cli("plan --now 2026-11-23T00:00:00Z -o json --packing " .. packing .. " " .. path)
  assert.are.equal(0, code, err)
  return out, json.decode(out)
end

describe("cost packing with hundreds of pod shapes", function()
  local od, npods = workload('"on-demand"')
  local spot = workload('"on-demand","spot"')
  teardown(function()
    os.remove(od)
    os.remove(spot)
  end)

  it("has the shapes it is meant to have", function()
    assert.are.equal(5968, npods)
    assert.matches('"distinct_shapes": 217', h.slurp("bench/workload-many-shapes.json"), 1, true)
  end)

  it("lands near the pattern-LP bound on the full catalog, on-demand", function()
    local _, p = plan(od, "cost")
    assert.are.equal(npods, p.summary.scheduled)
    assert.is_true(p.summary.hourlyCost <= RATIO_OD * BOUND_OD,
      ("$%.3f/h against a bound of $%.3f/h"):format(p.summary.hourlyCost, BOUND_OD))
  end)

  it("lands near the pattern-LP bound on the full catalog with spot", function()
    local _, p = plan(spot, "cost")
    assert.are.equal(npods, p.summary.scheduled)
    assert.is_true(p.summary.hourlyCost <= RATIO_SPOT * BOUND_SPOT,
      ("$%.3f/h against a bound of $%.3f/h"):format(p.summary.hourlyCost, BOUND_SPOT))
  end)

  it("lands near the pattern-LP bound on the c/m/r subset with spot", function()
    local subset = workload('"on-demand","spot"',
      '{"key":"karpenter.k8s.aws/instance-category","operator":"In","values":["c","m","r"]},' ..
      '{"key":"karpenter.k8s.aws/instance-generation","operator":"Gt","values":["4"]},' ..
      '{"key":"karpenter.k8s.aws/instance-cpu","operator":"Lt","values":["33"]},')
    local _, p = plan(subset, "cost")
    os.remove(subset)
    assert.are.equal(npods, p.summary.scheduled)
    assert.is_true(p.summary.hourlyCost <= RATIO_SUBSET_SPOT * BOUND_SUBSET_SPOT,
      ("$%.3f/h against a bound of $%.3f/h"):format(p.summary.hourlyCost, BOUND_SUBSET_SPOT))
  end)

  it("is never more expensive than first-fit", function()
    local _, c = plan(od, "cost")
    local _, f = plan(od, "ffd")
    assert.is_true(c.summary.hourlyCost <= f.summary.hourlyCost)
  end)

  it("prints the same plan byte for byte every time", function()
    local a = plan(spot, "cost")
    local b = plan(spot, "cost")
    assert.are.equal(a, b)
  end)
end)

-- Pods each of a shape of its own (as when every workload's requests are sized apart): the LP's
-- optimum is then a few nodes, rounding it loses most, and the few-shape path also runs the
-- node-by-node fills and the rounding by type, and empties nodes into the others' room.
describe("cost packing of pods each of a shape of its own", function()
  local function own_shapes(requests)
    local items = {
      '{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"default"},"spec":{"template":' ..
        '{"spec":{"requirements":[{"key":"kubernetes.io/arch","operator":"In","values":["amd64"]}]}}}}',
    }
    for i, r in ipairs(requests) do
      items[#items + 1] = ('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%d","namespace":"default"},' ..
        '"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"%s","memory":"%s"}}}]}}')
        :format(i - 1, r[1], r[2])
    end
    return h.write('{"apiVersion":"v1","kind":"List","items":[' .. table.concat(items, ",") .. "]}")
  end

  it("puts five on three nodes at $0.1175/h, not $0.1335", function()
    -- Column generation alone rounded to an r6in.large for two, a t3.small and a t2.2xlarge for
    -- two ($0.1335/h); the fills put three on the t2.2xlarge and one on an r7a.medium.
    local path = own_shapes({ { "2896m", "6273Mi" }, { "3763m", "3460Mi" }, { "870m", "7693Mi" },
      { "683m", "5771Mi" }, { "559m", "1038Mi" } })
    local _, p = plan(path, "cost")
    os.remove(path)
    assert.are.equal(5, p.summary.scheduled)
    assert.is_true(p.summary.hourlyCost <= 0.1175 + 1e-9, ("$%.4f/h"):format(p.summary.hourlyCost))
  end)

  it("plans sixty of random requests for no more than the fills find", function()
    -- spec/fixtures/one-of-a-kind-60.json: 60 pods, cpu and memory drawn uniformly (seeded) up to
    -- about 3 vCPU and 6.4 GiB. Column generation's rounding alone: $0.9732/h on five nodes.
    local _, p = plan("spec/fixtures/one-of-a-kind-60.json", "cost")
    assert.are.equal(60, p.summary.scheduled)
    assert.is_true(p.summary.hourlyCost <= 0.8948 + 1e-9, ("$%.4f/h"):format(p.summary.hourlyCost))
    local _, f = plan("spec/fixtures/one-of-a-kind-60.json", "ffd")
    assert.is_true(p.summary.hourlyCost <= f.summary.hourlyCost)
  end)
end)
