-- Karpenter's scheduling on inputs as a cluster prints them: label keys it
-- normalises, pods another scheduler owns, host ports, and what an error or a
-- reason names. The fixtures in spec/fixtures/parity/ are kubectl-shaped
-- (status, managedFields, ownerReferences).
local h = require "helper"

local DIR = h.fixtures .. "parity/"
local NOW = "2026-11-28T00:00:00Z"

local function plan(file)
  local p, err = h.dt.plan { files = { DIR .. file }, now = NOW }
  assert(p, err)
  return p
end

local function placed(p)
  local where = {}
  for _, k in ipairs(p.nodeClaims) do
    for _, pod in ipairs(k.pods) do where[pod] = k end
  end
  for _, b in ipairs(p.bindings or {}) do where[b.pod] = b.node end
  return where
end

describe("Karpenter parity on real inputs", function()
  it("reads a volume's EBS CSI zone key as the zone, as the AWS provider normalises it", function()
    local p = plan "ebs-csi-zone.yaml"
    assert.are.equal(0, p.summary.unschedulable, p.unschedulable[1] and p.unschedulable[1].reason)
    local where = placed(p)
    assert.are.equal("us-east-1d", where["shop/db-0"].zone, "db-0's volume is in us-east-1d")
    assert.are_not.equal("us-east-1a", where["shop/db-1"].zone, "db-1's class allows b and c")
    assert.are_not.equal("us-east-1d", where["shop/db-1"].zone)
  end)

  describe("leaves pending, with the claim and what is wrong, a pod whose claim Karpenter refuses", function()
    local text = h.slurp(DIR .. "ebs-csi-zone.yaml")
    local function json(input)
      local out, err, code = h.cli("plan -o json --now " .. NOW .. " -", input)
      assert.are.equal(0, code, err)
      return require("dkjson").decode(out)
    end
    -- db-0's claim is bound (data-db-0 -> pvc-1111), db-1's waits for its first consumer (gp3)
    local function outcome(input)
      local p = json(input)
      local why = {}
      for _, u in ipairs(p.unschedulable) do why[u.pod] = u.reason end
      return why, placed(p), p
    end
    local function edit(from, to)
      local s, n = text:gsub(from, to)
      assert.are.equal(1, n, from)
      return s
    end

    it("plans both when every claim is sound", function()
      local why, where = outcome(text)
      assert.is_nil(next(why))
      assert.is_not_nil(where["shop/db-0"])
      assert.is_not_nil(where["shop/db-1"])
    end)

    it("a bound claim without pv.kubernetes.io/bind-completed (kube-scheduler takes it as unbound)", function()
      local why, where = outcome(edit("      pv%.kubernetes%.io/bind%-completed: 'yes'\n", ""))
      assert.are.equal("PersistentVolumeClaim shop/data-db-0 names PersistentVolume pvc-1111 but has no " ..
        "pv.kubernetes.io/bind-completed annotation: kube-scheduler takes it as unbound", why["shop/db-0"])
      assert.is_nil(where["shop/db-0"])
      assert.is_not_nil(where["shop/db-1"], "the other pod is planned as before")
    end)

    it("an unbound claim whose StorageClass binds Immediate", function()
      local why, where = outcome(edit("volumeBindingMode: WaitForFirstConsumer", "volumeBindingMode: Immediate"))
      assert.matches("PersistentVolumeClaim shop/data-db-1 is unbound and its StorageClass gp3 binds Immediate",
        why["shop/db-1"], 1, true)
      assert.is_nil(where["shop/db-1"])
      assert.is_not_nil(where["shop/db-0"], "a bound claim does not read its class's binding mode")
    end)

    it("a claim being deleted, a Lost claim, a claim the input lacks", function()
      local why = outcome(edit("    name: data%-db%-1\n    namespace: shop\n",
        "    name: data-db-1\n    namespace: shop\n    deletionTimestamp: '2026-11-27T10:00:00Z'\n"))
      assert.are.equal("PersistentVolumeClaim shop/data-db-1 is being deleted (metadata.deletionTimestamp)",
        why["shop/db-1"])
      why = outcome(edit("    phase: Bound\n    capacity:", "    phase: Lost\n    capacity:"))
      assert.matches("shop/data-db-0 is Lost (status.phase): bound to PersistentVolume pvc-1111", why["shop/db-0"],
        1, true)
      why = outcome(edit("    name: data%-db%-1\n    namespace: shop\n", "    name: data-db-9\n    namespace: shop\n"))
      assert.matches("PersistentVolumeClaim shop/data-db-1 is not in the input", why["shop/db-1"], 1, true)
      assert.is_nil(why["shop/db-0"])
    end)

    it("a volume or class the input lacks counts only when it holds objects of that kind", function()
      -- the bound claim's volume renamed: the input holds a PersistentVolume, not db-0's
      local why = outcome(edit("    name: pvc%-1111\n", "    name: pvc-2222\n"))
      assert.are.equal("PersistentVolumeClaim shop/data-db-0 names PersistentVolume pvc-1111 (spec.volumeName), " ..
        "which is not in the input", why["shop/db-0"])
      -- claims of another namespace only (kubectl get pvc -n other): nothing is known of shop's
      local other = text:gsub("kind: PersistentVolumeClaim\n  metadata:\n    name: (data%-db%-%d)\n    namespace: shop",
        "kind: PersistentVolumeClaim\n  metadata:\n    name: %1\n    namespace: other")
      assert.is_nil(other:find("namespace: shop\n    uid: uid%-pvc"))
      assert.is_nil(next((outcome(other))))
      -- no PersistentVolume at all: nothing is known of volumes, and the pod is planned
      local at, to = text:find("%- apiVersion: v1\n  kind: PersistentVolume\n.-\n%- apiVersion")
      local no_pv = text:sub(1, at - 1) .. text:sub(to - #"- apiVersion" + 1)
      assert.is_nil(no_pv:find("kind: PersistentVolume\n"))
      why = outcome(no_pv)
      assert.is_nil(next(why))
      -- a class renamed: the input holds a StorageClass, not db-1's
      why = outcome(edit("kind: StorageClass\n  metadata:\n    name: gp3\n", "kind: StorageClass\n  metadata:\n" ..
        "    name: gp2\n"))
      assert.are.equal("PersistentVolumeClaim shop/data-db-1 is unbound and its StorageClass gp3 is not in the input",
        why["shop/db-1"])
    end)

    it("takes a DataVolume for the claim CDI makes of it, and a class with no binding mode as Karpenter reads it",
      function()
      local renamed = edit("    name: data%-db%-1\n    namespace: shop\n", "    name: data-db-9\n    namespace: shop\n")
      local why = outcome(renamed .. "\n- apiVersion: cdi.kubevirt.io/v1beta1\n  kind: DataVolume\n" ..
        "  metadata: {name: data-db-1, namespace: shop}\n  spec: {storage: {storageClassName: gp3}}\n")
      assert.is_nil(why["shop/db-1"])
      -- no volumeBindingMode (an API server would default it to Immediate): its allowed topologies hold
      local _, where = outcome(edit("  volumeBindingMode: WaitForFirstConsumer\n", ""))
      assert.is_true(where["shop/db-1"].zone == "us-east-1b" or where["shop/db-1"].zone == "us-east-1c",
        where["shop/db-1"].zone)
    end)

    it("gives a claim that names no class the input's default class, as the API server does", function()
      local unnamed = edit("    storageClassName: gp3\n    volumeMode: Filesystem\n  status:\n    phase: Pending",
        "    volumeMode: Filesystem\n  status:\n    phase: Pending")
      -- gp3 is no default: the API server left the claim without a class, and Karpenter refuses it
      local why = outcome(unnamed)
      assert.matches("PersistentVolumeClaim shop/data-db-1 is unbound and names no StorageClass", why["shop/db-1"],
        1, true)
      -- gp3 the default: the claim is gp3's, and its pod is planned in gp3's allowed zones
      local dflt = unnamed:gsub("kind: StorageClass\n  metadata:\n    name: gp3\n", "kind: StorageClass\n  metadata:\n" ..
        "    name: gp3\n    annotations:\n      storageclass.kubernetes.io/is-default-class: 'true'\n", 1)
      local why2, where = outcome(dflt)
      assert.is_nil(why2["shop/db-1"])
      assert.is_true(where["shop/db-1"].zone == "us-east-1b" or where["shop/db-1"].zone == "us-east-1c",
        where["shop/db-1"].zone)
      -- "" is no class at all, default or not
      local none = dflt:gsub("    volumeMode: Filesystem\n  status:\n    phase: Pending",
        "    storageClassName: ''\n    volumeMode: Filesystem\n  status:\n    phase: Pending", 1)
      assert.matches("spec.storageClassName is \"\" (no dynamic provisioning)", (outcome(none))["shop/db-1"], 1, true)
    end)

    it("keeps a claim's name, whatever it carries, inside the YAML comment that reports it", function()
      local input = edit("        claimName: data%-db%-1\n", "        claimName: \"x\\nkind: NodePool\\nmetadata: {name: injected}\\n#\"\n")
      local out, err, code = h.cli("plan -o yaml --now " .. NOW .. " -", input)
      assert.are.equal(0, code, err)
      assert.is_nil(out:find("\nkind: NodePool", 1, true), out)
      assert.matches("\n# unschedulable shop/db-1: PersistentVolumeClaim shop/x kind: NodePool metadata: " ..
        "{name: injected} # is not in the input", out, 1, true)
    end)

    it("explains the refusal under --explain and keeps a moving pod's claim out of it", function()
      local input = edit("      pv%.kubernetes%.io/bind%-completed: 'yes'\n", "")
      local out = h.cli("plan --now " .. NOW .. " --explain shop/db-0 -", input)
      assert.matches("bind-completed", out, 1, true)
      assert.is_nil(out:find("queue:", 1, true), "a refused pod is never queued")
      -- the other pod's place in the queue counts only the pods queued
      out = h.cli("plan --now " .. NOW .. " --explain shop/db-1 -", input)
      assert.matches("queue: 1 of 1 pending pods", out, 1, true)
      -- consolidation moves pods off nodes without validating their claims (Karpenter's simulation
      -- reschedules them as they are): the volume-limit case decides the same without the annotations
      local dtext = h.slurp(DIR .. "disrupt-csinode-volume-limit.yaml")
      local stripped, n = dtext:gsub("      pv%.kubernetes%.io/bind%-completed: 'yes'\n", "")
      assert.is_true(n > 1)
      local r = require("dkjson").decode((h.cli("disrupt -o json --now " .. NOW .. " -", stripped)))
      assert.are.equal(1, #r.commands)
      assert.are.equal("replace", r.commands[1].action)
      assert.are.same({ "tenant-25/db-1" }, r.commands[1].replacements[1].pods)
    end)
  end)

  it("reads the deprecated beta label keys in node selectors as the stable ones", function()
    local p = plan "beta-labels.yaml"
    assert.are.equal(0, p.summary.unschedulable, p.unschedulable[1] and p.unschedulable[1].reason)
    assert.are.equal(4, p.summary.scheduled)
    local where = placed(p)
    assert.are.equal("us-east-1c", where["default/p-betazone"].zone)
  end)

  -- Two web pods run on n-a (us-east-1a); the two pending ones spread over zones with maxSkew 1.
  local function zones(text)
    local out, err, code = h.cli("plan -o json --now " .. NOW .. " -", text)
    assert.are.equal(0, code, err)
    local p = require("dkjson").decode(out)
    local z = {}
    for _, k in ipairs(p.nodeClaims) do
      for _ = 1, #k.pods do z[#z + 1] = k.zone end
    end
    table.sort(z)
    return table.concat(z, " ")
  end

  it("counts for a spread only pods on nodes matching the pod's node selector (nodeAffinityPolicy)", function()
    local text = h.slurp(DIR .. "spread-affinity-honor.yaml")
    -- n-a lacks the pods' nodeSelector label: its pods do not count, so zone a is as empty as b
    assert.are.equal("us-east-1a us-east-1b", zones(text))
    local default = text:gsub("\n      nodeAffinityPolicy: Honor", "")
    assert.are.equal("us-east-1a us-east-1b", zones(default), "Honor is the default")
    local ignore = text:gsub("nodeAffinityPolicy: Honor", "nodeAffinityPolicy: Ignore")
    assert.are.equal("us-east-1b us-east-1b", zones(ignore), "Ignore counts n-a's two pods in zone a")
    local bad = text:gsub("nodeAffinityPolicy: Honor", "nodeAffinityPolicy: Always")
    local _, err, code = h.cli("plan -o json -", bad)
    assert.are.equal(1, code)
    assert.matches("topologySpreadConstraints%[0%]%.nodeAffinityPolicy: expected Honor or Ignore", err)
  end)

  it("counts for a spread only pods on nodes whose taints the pod tolerates when nodeTaintsPolicy is Honor", function()
    local text = h.slurp(DIR .. "spread-taints-honor.yaml")
    assert.are.equal("us-east-1a us-east-1b", zones(text), "n-a's taint is not tolerated: its pods do not count")
    local default = text:gsub("\n      nodeTaintsPolicy: Honor", "")
    assert.are.equal("us-east-1b us-east-1b", zones(default), "Ignore is the default")
  end)

  it("plans onto a Karpenter node still initializing, not onto a second node", function()
    for _, f in ipairs { "initializing-notready.yaml", "initializing-startup-taint.yaml" } do
      local text = h.slurp(DIR .. f)
      local p = plan(f)
      assert.are.equal(0, #p.nodeClaims, f)
      assert.are.equal("ip-10-0-1-5.ec2.internal", placed(p)["default/new1"], f)
      -- once its NodeClaim says Initialized, a taint still on it is the node's own, and holds
      local init = text:gsub("    %- type: Initialized\n      status: Unknown", "    - type: Initialized\n      status: 'True'")
      assert.are_not.equal(text, init)
      local out, err = h.cli("plan -o json --now " .. NOW .. " -", init)
      assert.matches('"nodes": 1', out, 1, true, err)
      -- and so does the label Karpenter puts on an initialized Node
      local labelled = text:gsub("      karpenter.sh/registered: 'true'\n",
        "      karpenter.sh/registered: 'true'\n      karpenter.sh/initialized: 'true'\n")
      assert.are_not.equal(text, labelled)
      out, err = h.cli("plan -o json --now " .. NOW .. " -", labelled)
      assert.matches('"nodes": 1', out, 1, true, err)
    end
  end)

  it("reads an anti-affinity's namespaceSelector: {} as every namespace, a name selector as those names, and one on "
    .. "other labels against the Namespaces", function()
    local text = h.slurp(DIR .. "anti-namespace-selector.yaml")
    local p = plan "anti-namespace-selector.yaml"
    assert.are.equal(1, #p.nodeClaims, "data/db-0 on n1 matches the selector in every namespace")
    local named = text:gsub("namespaceSelector: {}", "namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: data}}")
    assert.are_not.equal(text, named)
    local out, err = h.cli("plan -o json --now " .. NOW .. " -", named)
    assert.matches('"nodes": 1', out, 1, true, err)
    local other = text:gsub("namespaceSelector: {}", "namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: other}}")
    out, err = h.cli("plan -o json --now " .. NOW .. " -", other)
    assert.matches('"nodes": 0', out, 1, true, err)
    local by_label = text:gsub("namespaceSelector: {}", "namespaceSelector: {matchLabels: {team: data}}")
    out, err = h.cli("plan -o json --now " .. NOW .. " -", by_label)
    assert.matches('"nodes": 1', out, 1, true, err)
    assert.matches("a namespaceSelector selects namespaces by their labels, and the input holds no Namespace: every "
      .. "namespace is taken", out, 1, true)
    -- with the cluster's Namespaces (as kubectl prints them), the selector picks those its labels match
    local function namespaces(team)
      local ns = ""
      for _, n in ipairs { "data", "web", "kube-system" } do
        ns = ns .. ("- apiVersion: v1\n  kind: Namespace\n  metadata:\n    name: %s\n    uid: 5d0c6b1e-0000-4000-8000-00000000000%d\n"
          .. "    creationTimestamp: '2026-11-01T00:00:00Z'\n    labels:\n      kubernetes.io/metadata.name: %s\n%s"
          .. "  spec:\n    finalizers:\n    - kubernetes\n  status:\n    phase: Active\n"):format(n, #ns % 10, n,
            n == "data" and ("      team: " .. team .. "\n") or "")
      end
      return (by_label:gsub("\nitems:\n", "\nitems:\n" .. ns, 1))
    end
    out, err = h.cli("plan -o json --now " .. NOW .. " -", namespaces("data"))
    assert.matches('"nodes": 1', out, 1, true, err)
    assert.is_nil(out:find("holds no Namespace", 1, true))
    out, err = h.cli("plan -o json --now " .. NOW .. " -", namespaces("analytics"))
    assert.matches('"nodes": 0', out, 1, true, err)
    -- matchExpressions on other labels too
    local expr = namespaces("data"):gsub("namespaceSelector: {matchLabels: {team: data}}",
      "namespaceSelector: {matchExpressions: [{key: team, operator: NotIn, values: [data]}]}")
    out, err = h.cli("plan -o json --now " .. NOW .. " -", expr)
    assert.matches('"nodes": 0', out, 1, true, err)
    -- a Namespace whose labels are not a map is refused, naming it and the field
    local bad = namespaces("data"):gsub("    labels:\n      kubernetes.io/metadata.name: data\n      team: data\n",
      "    labels: [team]\n", 1)
    local _, berr, code = h.cli("plan -o json --now " .. NOW .. " -", bad)
    assert.are.equal(1, code)
    assert.matches("Namespace data: metadata.labels: expected a map of strings", berr, 1, true)
  end)

  it("keeps room on an existing node for the DaemonSet pods that have not landed on it yet", function()
    local p = plan "daemonset-due.yaml"
    assert.are.equal(1, #p.nodeClaims, "n1 has 1930m; its agent pod (500m) is due, so a 1500m pod does not fit")
    -- a 1400m pod fits beside the agent's due 500m
    local text = h.slurp(DIR .. "daemonset-due.yaml")
    local smaller = text:gsub("cpu: 1500m", "cpu: 1400m")
    local out, err = h.cli("plan -o json --now " .. NOW .. " -", smaller)
    assert.matches('"nodes": 0', out, 1, true, err)
    -- once the agent's pod is bound there, its room is the pod's own, not taken twice
    local bound = smaller:gsub("(name: agent%-pn7zq.-\n  spec:\n)", "%1    nodeName: n1\n", 1)
    assert.are_not.equal(smaller, bound)
    out, err = h.cli("plan -o json --now " .. NOW .. " -", bound)
    assert.matches('"nodes": 0', out, 1, true, err)
    -- and the 1500m pod does not fit beside it either way
    out, err = h.cli("plan -o json --now " .. NOW .. " -", (bound:gsub("cpu: 1400m", "cpu: 1500m")))
    assert.matches('"nodes": 1', out, 1, true, err)
  end)

  it("leaves another scheduler's pod alone until it is marked Unschedulable, and says so", function()
    local out, err, code = h.cli("plan -o json --now " .. NOW .. " " .. DIR .. "other-scheduler.yaml")
    assert.are.equal(0, code, err)
    assert.matches("Pod fargate/fargate%-app%-6d9c%-abcde: spec.schedulerName fargate%-scheduler, which has not "
      .. "marked it Unschedulable, not provisioned", err)
    assert.matches('"pods": 1', out, 1, true)
    -- once marked, it is planned as any other
    local text = h.slurp(DIR .. "other-scheduler.yaml")
    local marked = text:gsub("schedulerName: fargate%-scheduler\n", "schedulerName: fargate-scheduler\n", 1)
    marked = marked:gsub("  status:\n    phase: Pending\n", [[
  status:
    phase: Pending
    conditions:
    - {type: PodScheduled, status: "False", reason: Unschedulable}
]], 1)
    local out2, err2 = h.cli("plan -o json --now " .. NOW .. " -", marked)
    assert.matches('"pods": 2', out2, 1, true, err2)
  end)

  it("counts host ports as Karpenter does: '::' is every address, a plain init container's ports are gone", function()
    local any = plan "hostport-ipv6-any.yaml"
    assert.are.equal(1, #any.nodeClaims, "'::' conflicts with 10.0.0.5 on n1")
    local init = plan "hostport-init.yaml"
    assert.are.equal(0, #init.nodeClaims, "the init container's port is free once it has run")
    assert.are.equal("n1", placed(init)["default/new"])
  end)

  it("names the pending pod that declares the anti-affinity a pod cannot get past", function()
    local p = plan "anti-owner-pending.yaml"
    assert.are.equal(1, #p.unschedulable)
    assert.matches("anti-affinity declared by pod default/a on topology.kubernetes.io/zone",
      p.unschedulable[1].reason, 1, true)
  end)

  it("names a List's item when it is no object or has no kind", function()
    local _, err, code = h.cli("plan -o json " .. DIR .. "list-item-nokind.yaml")
    assert.are.equal(1, code)
    assert.matches("list%-item%-nokind.yaml: document 1, items%[3%]: kind: missing", err)
    _, err, code = h.cli("plan -o json " .. DIR .. "list-item-scalar.json")
    assert.are.equal(1, code)
    assert.matches("list%-item%-scalar.json: document 1, items%[2%]: expected a Kubernetes object", err)
    _, err = h.cli("plan -o json -", "kind: List\napiVersion: v1\nitems:\n- {metadata: {name: x, namespace: y}}\n")
    assert.matches("document 1, items[0] (y/x): kind: missing", err, 1, true)
  end)
end)

describe("Karpenter parity in disruption on real inputs", function()
  local function pass(file)
    local r, err = h.dt.disrupt { files = { DIR .. file }, now = NOW }
    assert(r, err)
    return r
  end
  local function taken(r)
    local names = {}
    for _, c in ipairs(r.commands) do
      for _, n in ipairs(c.nodes) do names[#names + 1] = c.reason .. " " .. (n.name or n) end
    end
    table.sort(names)
    return names
  end
  local why = h.blocked
  local function allowed(r, reason)
    for _, b in ipairs(r.budgets) do
      if b.reason == reason then return b.allowed, b.nodes, b.disrupting end
    end
  end

  it("leaves a node whose NodeClaim has not initialized, and does not count it in budgets", function()
    local r = pass "disrupt-uninitialized.yaml"
    assert.matches("not initialized yet", why(r, "n1"), 1, true)
    local l = pass "disrupt-launching-budget.yaml"
    local a, nodes, disrupting = allowed(l, "Underutilized")
    assert.are.equal(1, a, "a claim still launching uses up none of the 10%")
    assert.are.equal(10, nodes)
    assert.are.equal(0, disrupting)
  end)

  it("counts nodes being deleted in a budget's total", function()
    local r = pass "disrupt-deleting-total.yaml"
    local a, nodes, disrupting = allowed(r, "Underutilized")
    assert.are.equal(11, nodes)
    assert.are.equal(1, disrupting)
    assert.are.equal(1, a, "10% of 11 is 2, one of them deleting")
  end)

  it("expires by the NodeClaim's own expireAfter", function()
    local r = pass "disrupt-claim-expire.yaml"
    local t = taken(r)
    assert.truthy(table.concat(t, ","):find("Expired n1", 1, true), table.concat(t, ","))
    assert.falsy(table.concat(t, ","):find("Expired n2", 1, true), "n2's claim says Never")
  end)

  it("lets a DaemonSet pod's do-not-disrupt hold its node, and reads '1.5h'", function()
    assert.matches("do%-not%-disrupt: pod kube%-system/ds%-agent%-x1", why(pass "disrupt-daemon-dnd.yaml", "n1"))
    -- started 23:00, held 1.5h: the reason says when the hold ends
    assert.matches("do-not-disrupt: pod default/web-1 is annotated karpenter.sh/do-not-disrupt (until " ..
      "2026-11-28T00:30:00Z)", why(pass "disrupt-dnd-fraction.yaml", "n1"), 1, true)
  end)

  it("takes terminating pods as gone: the node is empty, their do-not-disrupt does not hold", function()
    assert.same({ "Empty n1" }, taken(pass "disrupt-terminating-empty.yaml"))
    local r = pass "disrupt-terminating-dnd.yaml"
    assert.is_nil(why(r, "n1"))
  end)

  it("finds drift as Karpenter marks it on the claims it made: its NodePool hash, its Drifted condition", function()
    local r = pass "disrupt-karpenter-drift.yaml"
    assert.same({ "Drifted n1", "Drifted n2" }, taken(r))
    local text = h.slurp(DIR .. "disrupt-karpenter-drift.yaml")
    -- another hash version is not compared, as Karpenter
    local other = text:gsub("karpenter.sh/nodepool%-hash%-version: v3", "karpenter.sh/nodepool-hash-version: v2", 1)
    local out = h.cli("disrupt -o table --now " .. NOW .. " -", other)
    assert.matches("Drifted +replace +n2", out)
    assert.falsy(out:find("Drifted  *replace  *n1"), out)
  end)

  it("drifts a node past do-not-disrupt pods when its claim has a terminationGracePeriod", function()
    assert.same({ "Drifted n1" }, taken(pass "disrupt-drift-tgp.yaml"))
    local text = h.slurp(DIR .. "disrupt-drift-tgp.yaml")
    local without = text:gsub("\n *terminationGracePeriod: [^\n]*", "")
    assert.are_not.equal(text, without)
    local out = h.cli("disrupt -o table --now " .. NOW .. " -", without)
    assert.matches("left alone +n1: do%-not%-disrupt", out)
  end)

  it("asks a PDB only about pods a drain evicts, as Karpenter's IsEvictable", function()
    -- unhealthyPodEvictionPolicy: AlwaysAllow lets a pod that is not Ready go
    assert.is_nil(why(pass "disrupt-pdb-unhealthy.yaml", "n1"))
    -- a pod tolerating karpenter.sh/disrupted stays to the end: its PDB has no say
    assert.is_nil(why(pass "disrupt-pdb-tolerates.yaml", "n1"))
    -- a DaemonSet's pod is evicted, so its PDB holds the node
    local r = pass "disrupt-pdb-daemonset.yaml"
    assert.matches("PDB: PodDisruptionBudget monitoring/agent allows no eviction", why(r, "n1"))
  end)

  it("keeps the room of pods nominated to a registered claim taken in its simulations", function()
    -- x holds 1800m of 1930m and b1 (100m) is nominated to its claim: y's 100m pod does not fit
    -- there, so deleting y would only see the next round launch a node for it again
    local r = assert(h.dt.disrupt { files = { DIR .. "disrupt-nominated-room.json" }, now = "2026-11-28T09:00:00Z" })
    assert.same({}, taken(r))
    assert.matches("pod default/c1 fits on no other node", why(r, "y"), 1, true)
  end)

  -- ip-10-0-1-17 is being deleted; default-x7k2p (ip-10-0-3-88) was launched for its two web pods,
  -- which the last round nominated to it (dovetail.dev/pods) while they wait to be evicted.
  it("counts the pods of a node being deleted on the claim nominated for them: that claim is not empty", function()
    local r, err = h.dt.disrupt { files = { DIR .. "disrupt-deleting-nominated.yaml" }, now = "2026-11-28T10:05:00Z" }
    assert(r, err)
    local names = table.concat(taken(r), ", ")
    assert.is_nil(names:find("Empty ip-10-0-3-88", 1, true), names)
  end)

  it("moves a pod that tolerates everything onto a cordoned node to delete its own", function()
    local r, err = h.dt.disrupt { files = { DIR .. "node-consolidate-onto-cordoned.yaml" }, now = "2026-11-28T12:00:00Z" }
    assert(r, err)
    assert.are.same({ "Underutilized ip-10-0-1-22.ec2.internal" }, taken(r))
    assert.are.equal("delete", r.commands[1].action)
  end)

  it("refuses a replacement whose cheaper types fail the NodePool's minValues (Karpenter's Strict policy)", function()
    local r, err = h.dt.disrupt { files = { DIR .. "disrupt-min-values-replace.yaml" }, now = "2026-11-28T12:00:00Z" }
    assert(r, err)
    assert.are.equal(0, #r.commands)
    assert.matches("minValues", why(r, "ip-10-0-1-63.ec2.internal"))
  end)

  it("counts consolidateAfter from the claim's initialization when no pod event came", function()
    local r, err = h.dt.disrupt { files = { DIR .. "disrupt-consolidate-after-init.yaml" }, now = "2026-11-28T12:00:00Z" }
    assert(r, err)
    assert.are.equal(0, #r.commands, "initialized 4 min ago, consolidateAfter 5m")
    r = assert(h.dt.disrupt { files = { DIR .. "disrupt-consolidate-after-init.yaml" }, now = "2026-11-28T12:02:00Z" })
    assert.are.equal(1, #r.commands)
  end)

  it("reads budgets: [] as no budget and reasons: [] as a budget for no reason", function()
    assert.are.equal(12, #taken(pass "disrupt-budgets-empty.yaml"))
    assert.are.equal(12, #taken(pass "disrupt-reasons-empty.yaml"))
  end)

  it("puts pods that tolerate a cordoned or NotReady node's taint on it, as Karpenter's existing nodes take them", function()
    for _, f in ipairs { "node-cordoned.yaml", "node-notready.yaml" } do
      local p = plan(f)
      assert.are.equal(0, #p.nodeClaims, f)
      assert.are.equal(0, p.summary.unschedulable, f)
    end
  end)

  -- A managed node group's node (tainted CriticalAddonsOnly) runs in us-east-1f, outside the NodePool's
  -- zones; six api pods spread over zones with maxSkew 1.
  it("counts an existing node's zone outside every NodePool as a spread domain, as Karpenter and the kube-scheduler",
    function()
      local p = plan "spread-zone-outside-pools.yaml"
      assert.are.equal(3, p.summary.scheduled, "one per zone a, b, c: us-east-1f holds none")
      assert.are.equal(3, p.summary.unschedulable)
    end)

  -- Karpenter Blueprints' on-demand / spot split: NodePools with disjoint values of a custom
  -- label (capacity-spread 1 on-demand, 2-5 spot), ten replicas spread on it with maxSkew 1; an
  -- existing spot node of value 2 runs two of them.
  it("spreads over a custom label's values that NodePools split, and writes the value on each claim", function()
    local p = plan "spread-custom-key.yaml"
    assert.are.equal(8, p.summary.scheduled)
    assert.are.equal(0, p.summary.unschedulable)
    local out, err, code = h.cli("plan -o yaml --now " .. NOW .. " " .. DIR .. "spread-custom-key.yaml")
    assert.are.equal(0, code, err)
    local per, od = {}, 0
    for _, d in ipairs(require("lyaml").load(out, { all = true })) do
      if type(d) == "table" and d.kind == "NodeClaim" then
        local v = d.metadata.labels["capacity-spread"]
        local req
        for _, r in ipairs(d.spec.requirements) do
          if r.key == "capacity-spread" then req = r end
        end
        assert.are.same({ key = "capacity-spread", operator = "In", values = { v } }, req)
        per[v] = (per[v] or 0) + 1
        if d.metadata.labels["karpenter.sh/nodepool"] == "node-od" then
          od = od + 1
          assert.are.equal("1", v)
        end
      end
    end
    -- value 2 holds the running two: each other value gets two pods on one node
    assert.are.same({ ["1"] = 1, ["3"] = 1, ["4"] = 1, ["5"] = 1 }, per)
    assert.are.equal(1, od, "one on-demand node in five, the blueprint's 20/80")
    for _, k in ipairs(p.nodeClaims) do assert.are.equal(2, #k.pods) end
    assert.is_nil(table.concat(p.notes or {}, "\n"):match("capacity%-spread"))
  end)

  it("keeps the custom-label spread in consolidation: no node of the split is merged into the others", function()
    -- five nodes, two replicas each, one node per value: moving the on-demand node's pods onto
    -- the spot nodes (which have room) would leave value 1 empty with 3 elsewhere
    local r = assert(h.dt.disrupt { files = { DIR .. "disrupt-spread-custom-key.yaml" }, now = NOW })
    assert.are.equal(0, #r.commands)
    -- the on-demand node oversized: it is replaced by a smaller one that keeps value 1
    local text = h.slurp(DIR .. "disrupt-spread-custom-key.yaml"):gsub("c6a%.large", "c6a.2xlarge")
    local out, err, code = h.cli("disrupt -o json --now " .. NOW .. " -", text)
    assert.are.equal(0, code, err)
    r = require("dkjson").decode(out)
    assert.are.equal(1, #r.commands)
    assert.are.equal("ip-10-0-1-11.ec2.internal", r.commands[1].nodes[1].name)
    assert.are.equal(1, #r.commands[1].replacements)
    assert.are.same({ ["capacity-spread"] = "1" }, r.commands[1].replacements[1].labels)
  end)

  -- Karpenter's "should ignore unknown topology keys": a DoNotSchedule spread on a key no NodePool
  -- or instance type gives a value leaves the pod pending (no claim can take the key), as
  -- kube-scheduler would on every node without the label; one that only an existing node carries
  -- lets pods go there; a ScheduleAnyway one is a preference, relaxed.
  it("keeps pending, as Karpenter, pods spread on a label no NodePool or instance type gives a value", function()
    local text = h.slurp(DIR .. "spread-custom-key.yaml"):gsub("topologyKey: capacity%-spread", "topologyKey: rack")
    local out, err, code = h.cli("plan -o json --now " .. NOW .. " -", text)
    assert.are.equal(0, code, err)
    local p = require("dkjson").decode(out)
    assert.are.equal(0, p.summary.scheduled)
    assert.are.equal(8, #p.unschedulable)
    assert.matches("topology spread on rack: no NodePool's requirements or labels, nor instance type's labels, give "
      .. "rack a value a new node could take", p.unschedulable[1].reason, 1, true)
    assert.are.equal(0, #p.notes)
    -- the node with rack r1 has room for one more (1930m: kube-proxy and two replicas use 1100m)
    local labelled = text:gsub("      capacity%-spread: '2'\n", "%0      rack: r1\n")
    p = require("dkjson").decode((h.cli("plan -o json --now " .. NOW .. " -", labelled)))
    assert.are.equal(1, p.summary.scheduled)
    assert.are.same({ { pod = p.bindings[1].pod, node = "ip-10-0-1-17.ec2.internal" } }, p.bindings)
    assert.are.equal(0, #p.nodeClaims)
    local anyway = text:gsub("whenUnsatisfiable: DoNotSchedule", "whenUnsatisfiable: ScheduleAnyway")
    p = require("dkjson").decode((h.cli("plan -o json --now " .. NOW .. " -", anyway)))
    assert.are.equal(8, p.summary.scheduled)
  end)

  -- A node group's node whose CSINode attaches at most 26 EBS volumes (25 attached), and pods each
  -- with a volume (PVCs bound to CSI PVs, or of a gp3 class of ebs.csi.aws.com waiting for them).
  it("keeps to a node's CSINode volume limit, as Karpenter's volume usage: one pod of three joins it", function()
    local p = plan "csinode-volume-limit.yaml"
    assert.are.equal(3, p.summary.scheduled)
    assert.are.equal(1, #p.bindings, "the node attaches one more volume")
    assert.are.equal(1, #p.nodeClaims)
    assert.are.equal(2, #p.nodeClaims[1].pods)
    local on_claim = p.nodeClaims[1].pods[2]
    local out = h.cli("plan --now " .. NOW .. " --explain " .. on_claim .. " " .. DIR .. "csinode-volume-limit.yaml")
    assert.matches("ip-10-0-3-41.ec2.internal: its CSINode attaches at most 26 volumes of ebs.csi.aws.com and 26 are " ..
      "attached or planned", out, 1, true)
    -- consolidation moves a Karpenter node's two pods only where their volumes can attach: one onto the
    -- node group's node, the other onto a smaller replacement (not a delete that strands it)
    local r = assert(h.dt.disrupt { files = { DIR .. "disrupt-csinode-volume-limit.yaml" }, now = NOW })
    assert.are.equal(1, #r.commands)
    assert.are.equal("replace", r.commands[1].action)
    assert.are.same({ "tenant-25/db-1" }, r.commands[1].replacements[1].pods)
    -- bound claims whose PersistentVolumes the input lacks count by their StorageClass's driver, as
    -- kube-scheduler's CSI limits do: the same replace, not a delete onto the full node
    local text = h.slurp(DIR .. "disrupt-csinode-volume-limit.yaml")
    local no_pvs = text:gsub("(kind: PersistentVolume\n  metadata:\n    name: )", "%1gone-")
    assert.are_not.equal(text, no_pvs)
    local dout, err = h.cli("disrupt -o json --now " .. NOW .. " -", no_pvs)
    r = require("dkjson").decode(dout)
    assert(r, err)
    assert.are.equal(1, #r.commands)
    assert.are.equal("replace", r.commands[1].action)
    assert.are.same({ "tenant-25/db-1" }, r.commands[1].replacements[1].pods)
  end)

  it("counts a pod's generic ephemeral volume, the claim <pod>-<volume>, against a CSINode's limit", function()
    local text = h.slurp(DIR .. "csinode-volume-limit.yaml")
    local at = text:find("    name: data%-db%-0\n    namespace: tenant%-25\n")
    local head, tail = text:sub(1, at - 1), text:sub(at)
    -- the three pending pods' volumes become ephemeral, their claims the ones the ephemeral controller made
    tail = tail:gsub("    name: data%-db%-(%d)\n", "    name: db-%1-data\n")
      :gsub("      persistentVolumeClaim:\n        claimName: data%-db%-%d\n",
        "      ephemeral:\n        volumeClaimTemplate:\n          spec:\n            accessModes: [ReadWriteOnce]\n"
        .. "            storageClassName: gp3\n            resources: {requests: {storage: 10Gi}}\n")
    assert.is_nil(tail:find("claimName: data%-db"))
    local p = require("dkjson").decode((h.cli("plan -o json --now " .. NOW .. " -", head .. tail)))
    assert.are.equal(3, p.summary.scheduled)
    assert.are.equal(1, #p.bindings, "the node attaches one more volume")
    assert.are.equal(1, #p.nodeClaims)
  end)

  it("refuses a CSINode whose driver has no name or a count that is not a whole number", function()
    local text = h.slurp(DIR .. "csinode-volume-limit.yaml")
    local _, err, code = h.cli("plan --now " .. NOW .. " -", (text:gsub("count: 26", "count: 2.5")))
    assert.are.equal(1, code)
    assert.matches("CSINode ip%-10%-0%-3%-41%.ec2%.internal.*spec%.drivers%[0%]%.allocatable%.count", err)
    _, err, code = h.cli("plan --now " .. NOW .. " -", (text:gsub("%- name: efs%.csi%.aws%.com", "- name: ''")))
    assert.are.equal(1, code)
    assert.matches("spec%.drivers%[1%]%.name: missing", err)
    -- the API server keys the list by name; a list it must be; drivers and provisioners are strings
    _, err, code = h.cli("plan --now " .. NOW .. " -", (text:gsub("%- name: efs%.csi%.aws%.com", "- name: ebs.csi.aws.com")))
    assert.are.equal(1, code)
    assert.matches("spec.drivers[1].name: driver ebs.csi.aws.com is listed twice", err, 1, true)
    _, err, code = h.cli("plan --now " .. NOW .. " -", (text:gsub("    drivers:\n", "    drivers: x\n    was:\n", 1)))
    assert.are.equal(1, code)
    assert.matches("CSINode ip-10-0-3-41.ec2.internal: spec.drivers: expected a list", err, 1, true)
    _, err, code = h.cli("plan --now " .. NOW .. " -", (text:gsub("provisioner: ebs%.csi%.aws%.com", "provisioner: 5", 1)))
    assert.are.equal(1, code)
    assert.matches("StorageClass gp3: provisioner: expected a string", err, 1, true)
    _, err, code = h.cli("plan --now " .. NOW .. " -", (text:gsub("driver: ebs%.csi%.aws%.com", "driver: 7", 1)))
    assert.are.equal(1, code)
    assert.matches("spec.csi.driver: expected a string", err, 1, true)
  end)

  it("launches nothing for a NodePool being deleted or whose status says Ready=False", function()
    for _, f in ipairs { "nodepool-not-ready.yaml", "nodepool-deleting.yaml" } do
      local p = plan(f)
      assert.are.equal(0, p.summary.unschedulable, f)
      for _, k in ipairs(p.nodeClaims) do assert.are.equal("general", k.nodePool, f) end
      assert.matches("no claim is launched for it", table.concat(p.notes or {}, "\n"), 1, true)
    end
    -- Ready=Unknown (its NodeClass not reconciled yet) too: Karpenter takes only a pool Ready=True
    local text = h.slurp(DIR .. "nodepool-not-ready.yaml")
    local unknown = text:gsub("    %- type: Ready\n      status: 'False'\n      reason: UnhealthyDependents",
      "    - type: Ready\n      status: 'Unknown'\n      reason: AwaitingReconciliation", 1)
    assert.are_not.equal(text, unknown)
    local out = h.cli("plan -o json --now " .. NOW .. " -", unknown)
    assert.matches("status Ready=Unknown: AwaitingReconciliation; no claim is launched for it", out, 1, true)
  end)

  -- The AWS provider's labels and interface resources on a kubectl-shaped List: three
  -- NodePools (xen only; local NVMe over 1,000 GB; c/m/r with a label the catalog lacks).
  local function type_of(name)
    local out, err, code = h.cli("catalog -o json --type " .. name)
    assert.are.equal(0, code, err)
    return require("dkjson").decode(out).instanceTypes[1]
  end

  it("filters types by the AWS provider's labels and places pods asking for pod ENIs", function()
    local p = plan "aws-labels.yaml"
    assert.are.equal(0, p.summary.unschedulable, p.unschedulable[1] and p.unschedulable[1].reason)
    local where = placed(p)
    local legacy = type_of(where["shop/legacy-0"].instanceType)
    assert.are.equal("xen", legacy.labels["karpenter.k8s.aws/instance-hypervisor"])
    local scratch = type_of(where["shop/scratch-0"].instanceType)
    assert.is_true(tonumber(scratch.labels["karpenter.k8s.aws/instance-local-nvme"]) > 1000)
    -- the security-groups-for-pods pod asks for a branch interface
    local payments = type_of(where["shop/payments-0"].instanceType)
    assert.is_true(tonumber(payments.allocatable["vpc.amazonaws.com/pod-eni"] or "0") >= 1)
    local encoder = type_of(where["shop/encoder-0"].instanceType)
    assert.are.equal("amd", encoder.labels["karpenter.k8s.aws/instance-cpu-manufacturer"])
    -- a provider label no type carries is named, not silently ignored
    local said = table.concat(p.notes or {}, "\n")
    assert.matches("NodePool general: requirement karpenter.k8s.aws/instance%-encryption%-in%-transit%-supported: no instance "
      .. "type in catalog [^ ]+ has this label, so it is not checked", said)
  end)

  it("types bare metal's hypervisor as empty, and one without a label fails In and passes DoesNotExist", function()
    local metal = type_of "c5.metal"
    assert.are.equal("", metal.labels["karpenter.k8s.aws/instance-hypervisor"])
    local text = h.slurp(DIR .. "aws-labels.yaml")
    -- c1.medium has no network bandwidth figure: DoesNotExist admits it where Exists would not
    local only = text:gsub("operator: Gt\n          values:\n          %- '1000'",
      "operator: DoesNotExist"):gsub("karpenter.k8s.aws/instance%-local%-nvme", "karpenter.k8s.aws/instance-network-bandwidth")
    local out, err, code = h.cli("plan -o json --now " .. NOW .. " -", only)
    assert.are.equal(0, code, err)
    local q = require("dkjson").decode(out)
    local t
    for _, k in ipairs(q.nodeClaims) do
      if k.nodePool == "scratch" then t = type_of(k.instanceType) end
    end
    assert.is_nil(t.labels["karpenter.k8s.aws/instance-network-bandwidth"])
  end)

  -- ip-10-0-1-17 is being deleted (deletionTimestamp, disrupted taint) with two web pods, a
  -- terminating StatefulSet pod, a terminating Deployment pod, a DaemonSet pod and a mirror pod.
  it("plans the pods of a node being deleted with the pending ones, as Karpenter's provisioner", function()
    local p = plan "deleting-node-pods.yaml"
    assert.are.equal(3, p.summary.pods, "the two web pods and db-0 (a StatefulSet's, terminating)")
    assert.are.equal(0, p.summary.unschedulable)
    local where = placed(p)
    assert.are.equal("ip-10-0-2-40.ec2.internal", where["shop/db-0"], "room on the node that stays")
    assert.is_table(where["shop/web-7d9f8c6b5d-x2k9q"], "a new claim for the rest")
    assert.are.equal(where["shop/web-7d9f8c6b5d-x2k9q"], where["shop/web-7d9f8c6b5d-p4m1z"])
    for _, stays in ipairs { "shop/cache-5b7c9d-qq8rt", "shop/node-exporter-7h2xk",
      "shop/kube-proxy-ip-10-0-1-17.ec2.internal" } do
      assert.is_nil(where[stays], stays)
    end
    assert.matches("3 pods on nodes being deleted planned again", table.concat(p.notes or {}, "\n"))
  end)

  -- zone IDs name the same zones in every account; an EC2NodeClass's subnets say which zone each is
  it("reads topology.k8s.aws/zone-id requirements and spreads by the zone IDs of the EC2NodeClass's subnets", function()
    local p = plan "zone-id.yaml"
    assert.are.equal(0, p.summary.unschedulable, p.unschedulable[1] and p.unschedulable[1].reason)
    local where = placed(p)
    assert.are.equal("us-east-1c", where["prod/pinned-0"].zone, "use1-az4 is us-east-1c here")
    local zones = {}
    for pod, k in pairs(where) do
      if pod:find("^prod/api") then zones[k.zone] = (zones[k.zone] or 0) + 1 end
    end
    assert.are.same({ ["us-east-1a"] = 1, ["us-east-1b"] = 1, ["us-east-1c"] = 1 }, zones)
    -- without the node class nothing says which zone an ID is
    local text = h.slurp(DIR .. "zone-id.yaml")
    local from = assert(text:find("\n%- apiVersion: karpenter.k8s.aws/v1\n"))
    local to = assert(text:find("\n%- apiVersion:", from + 1))
    local out = h.cli("plan -o json --now " .. NOW .. " -", text:sub(1, from) .. text:sub(to + 1))
    assert.matches('"prod/pinned%-0"', out)
    assert.matches("does not define label topology.k8s.aws/zone%-id", out)
  end)

  -- ip-10-0-1-41 is being deleted; it runs ml/train-job (do-not-disrupt) and db/zk-0, whose PDB
  -- has maxUnavailable 0: neither will be evicted, so Karpenter provisions nothing for them
  it("provisions nothing for pods of a deleting node that will not be evicted (do-not-disrupt, a PDB at 0)", function()
    local p = plan "deleting-node-unevictable.yaml"
    assert.are.equal(0, #p.nodeClaims)
    assert.are.equal(0, p.summary.pods)
    local text = h.slurp(DIR .. "deleting-node-unevictable.yaml")
    local allows = text:gsub("maxUnavailable: 0\n", "maxUnavailable: 1\n", 1)
    assert.are_not.equal(text, allows)
    local out = h.cli("plan -o json --now " .. NOW .. " -", allows)
    assert.matches('"db/zk%-0"', out, "a PDB that allows an eviction: zk-0 gets a node")
    assert.falsy(out:find('"ml/train-job', 1, true), "train-job stays do-not-disrupt")
  end)
end)

-- dovetail makes the replicas a StatefulSet still lacks (Karpenter sees them once its controller
-- has): each is the ordinal without a pod, with its claims <template>-<name>-<ordinal>.
-- sts-claim-templates.yaml: cache (replicas 4, template class gp3 in us-east-1b); cache-0 runs
-- with data-cache-0 in us-east-1a; data-cache-2 (retained after a scale-down) is in us-east-1c.
describe("StatefulSet replicas dovetail makes", function()
  local text = h.slurp(DIR .. "sts-claim-templates.yaml")
  local function run(input)
    local out, err, code = h.cli("plan -o json --now " .. NOW .. " -", input)
    assert.are.equal(0, code, err)
    local p = require("dkjson").decode(out)
    local why = {}
    for _, u in ipairs(p.unschedulable) do why[u.pod] = u.reason end
    return placed(p), why, p, err
  end
  local function edit(from, to, n)
    local s, k = text:gsub(from, to)
    assert.are.equal(n or 1, k, from)
    return s
  end

  it("are the ordinals without a pod, each with its own claims: a retained claim keeps its zone", function()
    local where, why, p = run(text)
    assert.is_nil(next(why))
    assert.are.equal(3, p.summary.scheduled, "cache-0 runs: three replicas are made")
    assert.is_nil(where["shop/cache-0"], "never made again: cache-0 has its pod")
    assert.are.equal("us-east-1b", where["shop/cache-1"].zone, "a new claim of the template's class (gp3)")
    assert.are.equal("us-east-1c", where["shop/cache-2"].zone, "data-cache-2 is bound to a volume in us-east-1c")
    assert.are.equal("us-east-1b", where["shop/cache-3"].zone)
    local out = h.cli("plan -o table --now " .. NOW .. " --explain shop/cache-2 -", text)
    assert.matches("the pod's volumes require topology.kubernetes.io/zone In [us-east-1c]", out, 1, true)
  end)

  it("start at spec.ordinals.start", function()
    local where = run(edit("    podManagementPolicy: Parallel\n", "    podManagementPolicy: Parallel\n" ..
      "    ordinals:\n      start: 2\n"))
    -- ordinals 2..5: cache-0 is none of them, and cache-2's claim is data-cache-2's
    assert.is_nil(where["shop/cache-1"])
    assert.are.equal("us-east-1c", where["shop/cache-2"].zone)
    for _, k in ipairs { 3, 4, 5 } do assert.are.equal("us-east-1b", where["shop/cache-" .. k].zone, k) end
  end)

  it("take the default StorageClass for a template that names none", function()
    local where = run(edit("        storageClassName: gp3\n        volumeMode: Filesystem\n      status:\n",
      "        volumeMode: Filesystem\n      status:\n"))
    assert.are.equal("us-east-1d", where["shop/cache-1"].zone, "standard (the default) allows us-east-1d")
    assert.are.equal("us-east-1c", where["shop/cache-2"].zone, "a claim of its own is read as it is")
  end)

  it("wait, with the template and what is wrong, when its claims could not be provisioned", function()
    local where, why = run(edit("        storageClassName: gp3\n        volumeMode: Filesystem\n      status:\n",
      "        storageClassName: gp3-encrypted\n        volumeMode: Filesystem\n      status:\n"))
    local want = "StatefulSet shop/cache: volumeClaimTemplate data names StorageClass gp3-encrypted, which is not in the input"
    assert.are.equal(want, why["shop/cache-1"])
    assert.are.equal(want, why["shop/cache-3"])
    assert.are.equal("us-east-1c", where["shop/cache-2"].zone, "its claim is there: it does not wait for one")
    why = select(2, run(edit("        storageClassName: gp3\n        volumeMode: Filesystem\n      status:\n",
      "        storageClassName: ''\n        volumeMode: Filesystem\n      status:\n")))
    assert.matches('volumeClaimTemplate data names storageClassName "": its claims are unbound', why["shop/cache-1"],
      1, true)
  end)

  it("are refused for a template without a name or an ordinal start that is not one", function()
    local _, err, code = h.cli("plan --now " .. NOW .. " -", edit("        creationTimestamp: null\n        name: data\n",
      "        creationTimestamp: null\n"))
    assert.are_not.equal(0, code)
    assert.matches("StatefulSet shop/cache: spec.volumeClaimTemplates[0].metadata.name: missing", err, 1, true)
    _, err, code = h.cli("plan --now " .. NOW .. " -", edit("    podManagementPolicy: Parallel\n",
      "    podManagementPolicy: Parallel\n    ordinals: {start: -1}\n"))
    assert.are_not.equal(0, code)
    assert.matches("spec.ordinals.start: expected an integer from 0 to 2147483647", err, 1, true)
    _, err = h.cli("plan --now " .. NOW .. " -", edit("    podManagementPolicy: Parallel\n",
      "    podManagementPolicy: Parallel\n    ordinals: x\n"))
    assert.matches("StatefulSet shop/cache: spec.ordinals: expected an object", err, 1, true)
    _, err = h.cli("plan --now " .. NOW .. " -", edit("    volumeClaimTemplates:\n", "    volumeClaimTemplates:\n    - 5\n"))
    assert.matches("spec.volumeClaimTemplates[0]: expected an object", err, 1, true)
  end)

  it("are made once for a pod being deleted off a node being deleted, which Karpenter plans again itself", function()
    local input = edit("    providerID: aws:///us%-east%-1a/i%-0aaa111\n",
      "    providerID: aws:///us-east-1a/i-0aaa111\n    unschedulable: true\n")
    input = input:gsub("    name: ip%-10%-0%-1%-17%.ec2%.internal\n    uid: uid%-node%-1\n",
      "    name: ip-10-0-1-17.ec2.internal\n    uid: uid-node-1\n    deletionTimestamp: '2026-11-27T23:50:00Z'\n", 1)
    input = input:gsub("    name: cache%-0\n    namespace: shop\n",
      "    name: cache-0\n    namespace: shop\n    deletionTimestamp: '2026-11-27T23:55:00Z'\n", 1)
    local where, why, p = run(input)
    assert.is_nil(next(why))
    assert.are.equal(4, p.summary.scheduled, "cache-0 once, and cache-1..3")
    local n = 0
    for _, c in ipairs(p.nodeClaims) do
      for _, pod in ipairs(c.pods) do n = n + (pod == "shop/cache-0" and 1 or 0) end
    end
    assert.are.equal(1, n)
    assert.are.equal("us-east-1a", where["shop/cache-0"].zone, "data-cache-0 is in us-east-1a")
    local out = h.cli("plan -o table --now " .. NOW .. " --explain shop/cache-0 -", input)
    assert.matches("result: it opened NodeClaim", out, 1, true)
  end)

  it("count a pod of a replica's name whatever its labels: the controller cannot make that pod again", function()
    local where, _, p = run(edit("      app: cache\n      apps.kubernetes.io/pod%-index: '0'\n",
      "      app: cache-old\n      apps.kubernetes.io/pod-index: '0'\n"))
    assert.are.equal(3, p.summary.scheduled)
    assert.is_nil(where["shop/cache-0"])
  end)

  it("take a template volume named as a claim template as that template's claim, as the controller does", function()
    local where = run(edit("        dnsPolicy: ClusterFirst\n", "        volumes:\n        - name: data\n" ..
      "          persistentVolumeClaim: {claimName: data-cache-0}\n        dnsPolicy: ClusterFirst\n"))
    assert.are.equal("us-east-1b", where["shop/cache-1"].zone, "data-cache-1, not data-cache-0 in us-east-1a")
  end)

  it("keep to the allowed topologies of a template class that binds Immediate", function()
    local where, why = run(edit("  volumeBindingMode: WaitForFirstConsumer\n  allowVolumeExpansion: true\n",
      "  volumeBindingMode: Immediate\n  allowVolumeExpansion: true\n"))
    assert.is_nil(next(why), "their claims are made, and bound, by the provisioner")
    assert.are.equal("us-east-1b", where["shop/cache-1"].zone)
    assert.are.equal("us-east-1c", where["shop/cache-2"].zone, "a bound claim is where its volume is")
  end)

  it("wait, naming both, when a retained claim and a template's class allow no zone in common", function()
    local logs = "    - apiVersion: v1\n      kind: PersistentVolumeClaim\n      metadata: {name: logs}\n" ..
      "      spec: {accessModes: [ReadWriteOnce], storageClassName: gp3, resources: {requests: {storage: 1Gi}}}\n"
    local where, why = run(edit("    volumeClaimTemplates:\n", "    volumeClaimTemplates:\n" .. logs))
    assert.are.equal("us-east-1b", where["shop/cache-1"].zone, "data and logs both new, both of gp3")
    assert.is_nil(where["shop/cache-2"])
    assert.matches("on topology.kubernetes.io/zone its volumes (a PersistentVolume's node affinity, a StorageClass's " ..
      "allowedTopologies) require In [us-east-1b] and In [us-east-1c], which no node meets at once", why["shop/cache-2"],
      1, true)
  end)

  it("are the names a claim in flight carries, so a replica it was launched for is not planned twice", function()
    local claim = [[
- apiVersion: karpenter.sh/v1
  kind: NodeClaim
  metadata:
    name: default-x7k2p
    uid: uid-nc-1
    creationTimestamp: '2026-11-27T23:59:30Z'
    annotations:
      dovetail.dev/pods: shop/cache-3
    labels:
      karpenter.sh/nodepool: default
      node.kubernetes.io/instance-type: c6a.large
      topology.kubernetes.io/zone: us-east-1b
      karpenter.sh/capacity-type: on-demand
  spec:
    nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
    requirements:
    - {key: node.kubernetes.io/instance-type, operator: In, values: [c6a.large]}
    - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1b]}
    - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
    resources:
      requests: {cpu: '1', memory: 2Gi, pods: '1'}
  status:
    conditions:
    - {type: Launched, status: 'True', reason: Launched, lastTransitionTime: '2026-11-27T23:59:32Z'}
]]
    local where, _, p = run(text .. claim)
    assert.are.equal(2, p.summary.scheduled, "cache-1 and cache-2 get nodes; cache-3 waits for its claim")
    assert.is_nil(where["shop/cache-3"])
    assert.are.equal("us-east-1b", where["shop/cache-1"].zone)
    assert.are.equal("us-east-1c", where["shop/cache-2"].zone)
  end)
end)

describe("StatefulSet replicas and volume limits", function()
  it("count a claim each, made from the template, against the node's CSINode limit", function()
    local text = h.slurp(DIR .. "sts-claim-templates.yaml")
    local function sub(from, to, n)
      local s, k = text:gsub(from, to)
      assert.are.equal(n, k, from)
      text = s
    end
    sub("      values:\n      %- us%-east%-1b\n", "      values:\n      - us-east-1a\n", 1) -- gp3 in the node's zone
    sub("              cpu: '1'\n              memory: 2Gi\n", "              cpu: 100m\n              memory: 256Mi\n", 1)
    sub("          cpu: '1'\n          memory: 2Gi\n", "          cpu: 100m\n          memory: 256Mi\n", 1)
    -- the node attaches two EBS volumes at most: data-cache-0 and one more
    local csinode = [[
- apiVersion: storage.k8s.io/v1
  kind: CSINode
  metadata:
    name: ip-10-0-1-17.ec2.internal
    ownerReferences:
    - {apiVersion: v1, kind: Node, name: ip-10-0-1-17.ec2.internal, uid: uid-node-1}
  spec:
    drivers:
    - name: ebs.csi.aws.com
      nodeID: i-0aaa111
      allocatable: {count: 2}
      topologyKeys: [topology.ebs.csi.aws.com/zone]
]]
    local out, err, code = h.cli("plan -o json --now " .. NOW .. " -", text .. csinode)
    assert.are.equal(0, code, err)
    local p = require("dkjson").decode(out)
    local on_node = 0
    for _, b in ipairs(p.bindings) do
      if b.node == "ip-10-0-1-17.ec2.internal" then on_node = on_node + 1 end
    end
    assert.are.equal(1, on_node, "cache-1 and cache-3 each have a claim of their own: one fits the limit")
    assert.are.equal(3, p.summary.scheduled)
  end)
end)

-- Replicas a claim carries, and what a replica's own claims say, in disrupt and --explain
-- (spec/fixtures/parity/sts/: each file's header gives the case and the outcome expected).
describe("StatefulSet replicas a claim carries", function()
  local SDIR = h.fixtures .. "parity/sts/"
  local function disrupt(file)
    local r, err = h.dt.disrupt { files = { SDIR .. file }, now = NOW }
    assert(r, err)
    return r
  end

  it("are not carried when a pod of that name runs elsewhere: the claim is empty", function()
    local r = disrupt "s10-stale-nomination.yaml"
    local empty = false
    for _, c in ipairs(r.commands) do
      empty = empty or (c.reason == "Empty" and c.nodes[1].name == "ip-10-0-1-12.ec2.internal")
      for _, k in ipairs(c.replacements or {}) do
        local seen = {}
        for _, pod in ipairs(k.pods) do
          assert.is_nil(seen[pod], pod .. " twice")
          seen[pod] = true
        end
      end
    end
    assert.is_true(empty)
  end)

  it("keep their own claims: a replacement stays in the zone of the replica's retained volume", function()
    local r = disrupt "s9-nominated-retained-claim.yaml"
    local replaced = 0
    for _, c in ipairs(r.commands) do
      if c.nodes[1].name == "ip-10-0-3-12.ec2.internal" then
        for _, k in ipairs(c.replacements) do
          assert.are.equal("us-east-1c", k.zone, "data-db-7's volume is in us-east-1c")
          replaced = replaced + 1
        end
      end
    end
    assert.are.equal(1, replaced)
  end)

  it("are told apart by their own claims when they wait, in the reason and in --explain", function()
    local p = assert(h.dt.plan { files = { SDIR .. "s6e-retained-claim-reason.yaml" }, now = NOW })
    assert.matches("require In [us-east-1a] and In [us-east-1c], which no node meets at once",
      p.unschedulable[1].reason, 1, true)
    local out = h.cli("plan -o table --now " .. NOW .. " --explain default/db-1 " .. SDIR .. "s6-doesnotexist-explain.yaml")
    assert.matches("the pod's requirements on topology.kubernetes.io/zone exclude each other", out, 1, true)
    assert.falsy(out:find("DoesNotExist", 1, true), out)
  end)

  it("are explained as carried by a claim whose Node has registered, with their requests", function()
    for _, pod in ipairs { "default/solo", "default/db-0" } do
      local out, err, code = h.cli("plan -o table --now " .. NOW .. " --explain " .. pod .. " " .. SDIR ..
        "s13-explain-nominated.yaml")
      assert.are.equal(0, code, err)
      assert.matches("already carried by in-flight NodeClaim", out, 1, true)
      assert.matches("requests: cpu 1,", out, 1, true)
    end
  end)
end)
