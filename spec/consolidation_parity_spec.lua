-- Karpenter parity in consolidation and emptiness, test by test. Each fixture in
-- spec/fixtures/parity/consolidation/ restates, on AWS types of the bundled catalog, the setup of
-- one test of kubernetes-sigs/karpenter pkg/controllers/disruption/{consolidation,emptiness}_test.go
-- (at 2266468104f36373ed002241afaee2d3bbc26078; Apache-2.0: the scenarios' inputs and expected
-- outcomes only), kubectl-shaped (uids, managedFields, ownerReferences, DaemonSet pods, status).
-- Its header names the test and the outcome Karpenter expects; each `it` below asserts that outcome.
-- One case differs by design, and says so: pods pending before the pass are the provisioner's.
local h = require "helper"

local DIR = h.fixtures .. "parity/consolidation/"
local NOW = "2026-11-28T00:00:00Z"

local function pass(file, opts)
  local o = { files = { DIR .. file }, now = NOW }
  for k, v in pairs(opts or {}) do o[k] = v end
  local r, err = h.dt.disrupt(o)
  assert(r, err)
  return r
end

-- ip "1-12" is the fixtures' node ip-10-0-1-12.ec2.internal
local function ip(s) return "ip-10-0-" .. s .. ".ec2.internal" end

-- The commands as "Reason action node+node", sorted.
local function taken(r)
  local out = {}
  for _, c in ipairs(r.commands) do
    local names = {}
    for _, n in ipairs(c.nodes) do names[#names + 1] = n.name end
    table.sort(names)
    out[#out + 1] = c.reason .. " " .. c.action .. " " .. table.concat(names, "+")
  end
  table.sort(out)
  return out
end

local function allowed(r, reason)
  for _, b in ipairs(r.budgets) do
    if b.reason == reason then return b.allowed end
  end
end

local function has(list, x)
  for _, v in ipairs(list) do
    if v == x then return true end
  end
  return false
end

-- One command, single replacement: that replacement.
local function replacement(r)
  assert.are.equal(1, #r.commands)
  local c = r.commands[1]
  assert.are.equal("replace", c.action)
  assert.are.equal(1, #c.replacements)
  return c.replacements[1], c
end

local why = h.blocked

-- Karpenter's outcome, which dovetail does not give yet: the fixture must load and pass, and
-- check(r), asserting Karpenter's outcome, must fail.
describe("Karpenter parity in emptiness (emptiness_test.go)", function()
  it("will consider a node with a DaemonSet pod as empty", function()
    local r = pass "empty-daemonset-only.yaml"
    assert.same({ "Empty delete " .. ip "1-11" }, taken(r))
    assert.are.equal(0, #r.commands[1].replacements)
  end)

  it("should ignore nodes with the karpenter.sh/do-not-disrupt annotation", function()
    local r = pass "empty-dnd-node.yaml"
    assert.same({}, taken(r))
    assert.matches("do-not-disrupt", why(r, ip "1-11"), 1, true)
  end)

  it("will consider a node with terminating Deployment pods as empty", function()
    assert.same({ "Empty delete " .. ip "1-11" }, taken(pass "empty-terminating-deployment.yaml"))
  end)

  it("will not consider a node with a terminating StatefulSet pod as empty", function()
    local r = pass "empty-terminating-statefulset.yaml"
    assert.same({}, taken(r))
    assert.is_not_nil(why(r, ip "1-11"))
  end)

  -- The test's NodePool is WhenEmpty; the fixture runs the same cluster under WhenEmptyOrUnderutilized,
  -- where the test's comment states the intent. Karpenter's SimulateScheduling schedules the pending
  -- 62-CPU pod with the candidate's pod: the replacement would need 63 CPU, which only the node's own
  -- type (m5.16xlarge) holds in the m5 NodePool, so nothing is cheaper. dovetail's simulation leaves
  -- pods pending before the pass to the provisioner and replaces the node with an m5.large.
  -- Karpenter's simulation schedules the cluster's pending pods with the candidate's, so the 62-CPU
  -- pending pod and the 1-CPU one need one 63-CPU claim and no cheaper m5 holds it: no command.
  -- dovetail leaves pods pending before the pass to the provisioner (README, Disruption: a plan
  -- nominates them first, and the daemon's next round places them), so the node is replaced.
  it("considers pending pods when consolidating: dovetail's documented difference", function()
    local r = pass "pending-pod-holds-large-node.yaml"
    assert.are.equal(1, #r.commands)
    assert.are.equal("replace", r.commands[1].action)
  end)
end)

describe("Karpenter parity in consolidation budgets (consolidation_test.go, Budgets)", function()
  it("should only allow 3 empty nodes to be disrupted", function()
    local r = pass "empty-budget-30pct.yaml"
    assert.are.equal(3, allowed(r, "Empty"), "30% of 10")
    assert.are.equal(1, #r.commands)
    assert.are.equal("Empty", r.commands[1].reason)
    assert.are.equal(3, #r.commands[1].nodes)
  end)

  it("should allow no empty nodes to be disrupted", function()
    local r = pass "empty-budget-0pct.yaml"
    assert.are.equal(0, allowed(r, "Empty"))
    assert.same({}, taken(r))
    assert.matches("budget", why(r, ip "1-11"), 1, true)
  end)

  it("should only allow 3 nodes to be deleted in multi node consolidation delete", function()
    local r = pass "budget-multi-node-30pct.yaml"
    assert.are.equal(3, allowed(r, "Underutilized"))
    assert.are.equal(1, #r.commands, "one command")
    local c = r.commands[1]
    assert.are.equal("Underutilized", c.reason)
    assert.are.equal("delete", c.action)
    assert.are.equal(3, #c.nodes, "7 of 10 remain")
    assert.matches("multi-node", c.detail, 1, true)
  end)
end)

describe("Karpenter parity in consolidation: Replace (consolidation_test.go)", function()
  it("can replace node (on-demand): one cheaper claim without the node's type", function()
    local r = pass "replace-on-demand.yaml"
    assert.same({ "Underutilized replace " .. ip "1-11" }, taken(r))
    local k, c = replacement(r)
    assert.are.equal("on-demand", k.capacityType)
    assert.is_false(has(k.instanceTypeOptions, "m5.8xlarge"))
    assert.is_true(k.price < c.nodes[1].price)
  end)

  it("can replace node (spot, SpotToSpotConsolidation on): a cheaper spot claim, 15 options at most", function()
    local r = pass("replace-spot-to-spot.yaml", { spot_to_spot = true })
    assert.same({ "Underutilized replace " .. ip "1-11" }, taken(r))
    local k, c = replacement(r)
    assert.are.equal("spot", k.capacityType)
    assert.is_true(#k.instanceTypeOptions <= 15, "MinInstanceTypesForSpotToSpotConsolidation truncates to 15")
    assert.is_false(has(k.instanceTypeOptions, "m5.8xlarge"))
    assert.is_true(k.price < c.nodes[1].price)
  end)

  it("cannot replace spot with spot if the spotToSpotConsolidation is disabled", function()
    local r = pass "spot-to-spot-disabled.yaml"
    assert.same({}, taken(r))
    assert.matches("spot-to-spot consolidation is disabled", why(r, ip "1-11"), 1, true)
  end)

  it("cannot replace spot with spot if less than minimum InstanceTypes flexibility", function()
    local r = pass("spot-to-spot-min-flexibility.yaml", { spot_to_spot = true })
    assert.same({}, taken(r))
    assert.matches("15 are needed", why(r, ip "1-11"), 1, true)
  end)

  it("can replace nodes, considers PDB", function()
    local r = pass "replace-pdb-blocks.yaml"
    assert.same({}, taken(r))
    assert.matches("PDB: PodDisruptionBudget default/web allows no eviction", why(r, ip "1-11"), 1, true)
  end)

  it("won't replace on-demand node if on-demand replacement is more expensive", function()
    local r = pass "replace-not-cheaper.yaml"
    assert.same({}, taken(r))
    assert.matches("not cheaper", why(r, ip "1-11"), 1, true)
  end)

  it("Consolidation should fail if filterByPrice breaks the minimum requirement from the NodePools", function()
    local r = pass "min-values-price-filter.yaml"
    assert.same({}, taken(r))
    assert.matches("minValues", why(r, ip "1-11"), 1, true)
  end)
end)

describe("Karpenter parity in consolidation: Delete (consolidation_test.go)", function()
  it("can delete nodes: the node with the fewest pods, no replacement", function()
    local r = pass "delete-fewest-pods.yaml"
    assert.same({ "Underutilized delete " .. ip "1-12" }, taken(r))
    assert.are.equal(0, #r.commands[1].replacements)
  end)

  it("can delete nodes, when non-Karpenter capacity can fit pods", function()
    assert.same({ "Underutilized delete " .. ip "1-11" }, taken(pass "delete-onto-unmanaged.yaml"))
  end)

  it("can delete nodes, considers PDB: the node whose pods may go", function()
    local r = pass "delete-pdb.yaml"
    assert.same({ "Underutilized delete " .. ip "1-11" }, taken(r))
    assert.matches("PDB", why(r, ip "1-12"), 1, true)
  end)

  it("can delete nodes, considers karpenter.sh/do-not-disrupt set to true on pods", function()
    local r = pass "delete-dnd-pod.yaml"
    assert.same({ "Underutilized delete " .. ip "1-11" }, taken(r))
    assert.matches("do-not-disrupt", why(r, ip "1-12"), 1, true)
  end)

  it("does not consolidate nodes with do-not-disrupt pods when the claims have a terminationGracePeriod", function()
    local r = pass "delete-dnd-termination-grace.yaml"
    assert.same({}, taken(r))
    assert.matches("do-not-disrupt", why(r, ip "1-11"), 1, true)
    assert.matches("do-not-disrupt", why(r, ip "1-12"), 1, true)
  end)

  it("does not consolidate nodes with pods that have a duration-based do-not-disrupt still active", function()
    local r = pass "delete-dnd-duration-active.yaml"
    assert.same({ "Underutilized delete " .. ip "1-11" }, taken(r))
    assert.matches("do-not-disrupt", why(r, ip "1-12"), 1, true)
  end)

  -- nodes[0]'s NodeClaim is Initialized=Unknown and its Node has no karpenter.sh/initialized label
  -- (Ready, no startup or ephemeral taint, as the test leaves it). Karpenter's SimulateScheduling
  -- fails a pod that lands on an existing node whose StateNode.Initialized() is false (for a managed
  -- node: the label); dovetail's simulation judges the destination by its Node (registered, untainted)
  -- and deletes nodes[1] onto it.
  it("won't delete node if it would require pods to schedule on an uninitialized node", function()
    local r = pass "delete-uninitialized-destination.yaml"
    assert.same({}, taken(r))
    assert.matches("not initialized", why(r, ip "1-11"), 1, true)
    assert.matches("fits on no other node", why(r, ip "1-12"), 1, true) -- the uninitialized one is no destination
  end)

  it("should not consolidate pods onto a destination node that is under its consolidateAfter window", function()
    local r = pass "delete-destination-consolidate-after.yaml"
    assert.same({}, taken(r))
    assert.matches("consolidateAfter", why(r, ip "1-11"), 1, true)
    assert.matches("fits on no other node", why(r, ip "1-12"), 1, true)
  end)

  it("should consolidate pods onto a destination node with consolidateAfter set to Never", function()
    local r = pass "delete-destination-never.yaml"
    assert.same({ "Underutilized delete " .. ip "1-11" }, taken(r))
  end)

  it("won't delete nodes if it would make a non-pending pod go pending", function()
    local r = pass "delete-would-strand-pod.yaml"
    assert.same({}, taken(r))
    assert.matches("would not fit", why(r, ip "1-11"), 1, true)
    assert.matches("would not fit", why(r, ip "1-12"), 1, true)
  end)

  it("can delete nodes with a permanently pending pod", function()
    assert.same({ "Underutilized delete " .. ip "1-12" }, taken(pass "delete-with-pending-pod.yaml"))
  end)
end)

describe("Karpenter parity in consolidation: Multi-NodeClaim (consolidation_test.go)", function()
  it("can merge 3 nodes into 1", function()
    local r = pass "multi-merge-three.yaml"
    assert.same({ "Underutilized replace " .. ip "1-11" .. "+" .. ip "1-12" .. "+" .. ip "1-13" }, taken(r))
    local k, c = replacement(r)
    assert.matches("multi-node", c.detail, 1, true)
    assert.are.equal("on-demand", k.capacityType)
    assert.is_false(has(k.instanceTypeOptions, "m5.8xlarge"))
  end)

  it("won't merge 2 nodes into 1 of the same type: deletes the node with the fewest pods", function()
    local r = pass "multi-same-type.yaml"
    assert.same({ "Underutilized delete " .. ip "1-11" }, taken(r), "not [delete both, launch an m5.large]")
  end)
end)

describe("Karpenter parity in consolidation: Topology Consideration (consolidation_test.go)", function()
  it("can replace node maintaining zonal topology spread: the replacement stays in the node's zone", function()
    local r = pass "topology-zonal-spread-replace.yaml"
    assert.same({ "Underutilized replace " .. ip "2-12" }, taken(r))
    local k, c = replacement(r)
    assert.are.equal("us-east-1b", k.zone)
    assert.is_false(has(k.instanceTypeOptions, "m5.4xlarge"))
    assert.is_true(k.price < c.nodes[1].price)
  end)

  it("won't delete node if it would violate pod anti-affinity", function()
    local r = pass "topology-anti-affinity.yaml"
    assert.same({}, taken(r))
    for _, n in ipairs { "1-11", "2-12", "3-13" } do assert.is_not_nil(why(r, ip(n)), n) end
  end)
end)

-- Karpenter's --ignore-dra-requests (on by default): its scheduler refuses a pod that asks for
-- Dynamic Resource Allocation, so a node running one cannot be consolidated (the pod would not
-- schedule in the simulation), and no capacity is planned for one pending.
describe("Karpenter parity with pods that ask for DRA", function()
  local text = h.slurp(DIR .. "replace-on-demand.yaml")
  local function with_claim(s)
    local out, n = s:gsub("    containers:\n    %- name: web\n      image: public%.ecr%.aws/nginx/nginx:1%.27\n" ..
      "      resources:\n        requests:\n          cpu: 500m\n          memory: 512Mi\n",
      "    resourceClaims:\n    - name: gpu\n      resourceClaimTemplateName: single-gpu\n" ..
      "    containers:\n    - name: web\n      image: public.ecr.aws/nginx/nginx:1.27\n" ..
      "      resources:\n        requests:\n          cpu: 500m\n          memory: 512Mi\n        claims:\n        - name: gpu\n")
    assert.are.equal(1, n)
    return out
  end

  it("keeps a node whose pod asks for DRA: Karpenter's simulation cannot place it", function()
    local r, err = h.dt.disrupt { manifests = with_claim(text), now = NOW }
    assert(r, err)
    assert.same({}, taken(r))
    r = assert(h.dt.disrupt { manifests = text, now = NOW })
    assert.are.equal(1, #r.commands, "without the claim the node is replaced")
  end)

  it("does not replace a drifted node whose pod asks for DRA (drift.go: not all pods would schedule)", function()
    local drift = h.slurp(h.fixtures .. "parity/disrupt-karpenter-drift.yaml")
    local with, n = drift:gsub("  spec:\n    nodeName: n1\n    schedulerName: default%-scheduler\n",
      "  spec:\n    nodeName: n1\n    schedulerName: default-scheduler\n    resourceClaims:\n    - name: gpu\n" ..
      "      resourceClaimTemplateName: single-gpu\n", 1)
    assert.are.equal(1, n)
    local r = assert(h.dt.disrupt { manifests = with, now = NOW })
    assert.same({ "Drifted replace n2" }, taken(r))
    r = assert(h.dt.disrupt { manifests = drift, now = NOW })
    assert.same({ "Drifted replace n1", "Drifted replace n2" }, taken(r))
  end)

  it("plans nothing for a pending pod that asks for DRA, and says why", function()
    local pending, n = with_claim(text):gsub("    serviceAccountName: default\n    terminationGracePeriodSeconds: 30\n" ..
      "    nodeName: ip%-10%-0%-1%-11%.ec2%.internal\n", "    serviceAccountName: default\n" ..
      "    terminationGracePeriodSeconds: 30\n")
    assert.are.equal(1, n)
    local p, err = h.dt.plan { manifests = pending, now = NOW }
    assert(p, err)
    assert.are.equal(0, #p.nodeClaims)
    assert.are.equal(1, #p.unschedulable)
    assert.matches("asks for Dynamic Resource Allocation", p.unschedulable[1].reason, 1, true)
  end)
end)
