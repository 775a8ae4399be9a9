-- EC2NodeClasses as `kubectl get -o yaml` prints them: the kubelet settings
-- and volumes that size a node (Karpenter's AWS provider, instancetype/
-- types.go), the zones of its subnets, its readiness. The fixture is a
-- cluster dump (spec/fixtures/nodeclass/cluster.yaml); variants edit it.
local h = require "helper"
local json = require "dkjson"

local FILE = h.fixtures .. "nodeclass/cluster.yaml"
local TEXT = h.slurp(FILE)
local NOW = "2026-11-28T00:00:00Z"

-- The dump with `from` replaced by `to` (plain text, exactly once).
local function edit(text, from, to)
  local at = assert(text:find(from, 1, true), "fixture lacks " .. from)
  return text:sub(1, at - 1) .. to .. text:sub(at + #from)
end

local function plan(text)
  return h.plan(text, { now = NOW })
end

-- The claims' status.allocatable as `plan -o yaml` prints it, first claim.
local function allocatable(text)
  local out, err, code = h.cli("plan -o yaml --now " .. NOW .. " " .. h.write(text))
  assert.are.equal(0, code, err)
  local at = assert(out:find("\n  allocatable:\n", 1, true), out)
  local a = {}
  for line in out:sub(at + 16):gmatch("[^\n]+") do
    local k, v = line:match("^    ([%w%./%-]+): \"?([^\"]+)\"?$")
    if not k then break end
    a[k] = v
  end
  return a, out
end

local function notes(p) return table.concat(p.notes or {}, "\n") end

-- Everything but the EC2NodeClass: the dump as it would be without it.
local function without_nodeclass(text)
  local from = text:find("- apiVersion: karpenter.k8s.aws/v1\n  kind: EC2NodeClass", 1, true)
  local to = text:find("- apiVersion: apps/v1\n  kind: DaemonSet", 1, true)
  return text:sub(1, from - 1) .. text:sub(to)
end

describe("EC2NodeClass", function()
  it("kubelet.maxPods sets the pods a node takes (prefix delegation): 100 small pods on one m5.large, not four", function()
    local p = plan(TEXT)
    assert.are.equal(100, h.claimed_once(p))
    assert.are.equal(1, #p.nodeClaims)
    local a = allocatable(TEXT)
    assert.are.equal("110", a.pods)
    -- AL2023 reserves memory for the ENI-limited 29 pods whatever maxPods says
    assert.are.equal("6903Mi", a.memory)
    assert.are.equal("1930m", a.cpu)
    local before = plan(without_nodeclass(TEXT))
    assert.are.equal(4, #before.nodeClaims, "m5.large takes 29 pods without the node class (28 beside aws-node)")
  end)

  it("offers only the zones of its subnets, so a zonal spread has two domains", function()
    local spread = edit(TEXT, "      spec:\n        containers:\n        - image: nginx:1.27", [[
      spec:
        topologySpreadConstraints:
        - maxSkew: 1
          topologyKey: topology.kubernetes.io/zone
          whenUnsatisfiable: DoNotSchedule
          labelSelector:
            matchLabels:
              app: tiny
        containers:
        - image: nginx:1.27]])
    spread = edit(spread, "replicas: 100", "replicas: 6")
    local p = plan(spread)
    assert.are.equal(6, h.claimed_once(p))
    local per = {}
    for _, k in ipairs(p.nodeClaims) do
      assert.truthy(k.zone == "us-east-1b" or k.zone == "us-east-1c", k.zone)
      per[k.zone] = (per[k.zone] or 0) + #k.pods
    end
    assert.are.same({ ["us-east-1b"] = 3, ["us-east-1c"] = 3 }, per)
    -- each NodeClaim carries its zone's ID from the subnets, as the AWS provider labels it
    local out, err, code = h.cli("plan -o yaml --now " .. NOW .. " " .. h.write(spread))
    assert.are.equal(0, code, err)
    local ids = { ["us-east-1b"] = "use1-az2", ["us-east-1c"] = "use1-az4" }
    local n = 0
    for _, d in ipairs(require("lyaml").load(out, { all = true })) do
      if type(d) == "table" and d.kind == "NodeClaim" then
        local l = d.metadata.labels
        assert.are.equal(ids[l["topology.kubernetes.io/zone"]], l["topology.k8s.aws/zone-id"])
        n = n + 1
      end
    end
    assert.are.equal(#p.nodeClaims, n)
    -- without the node class the six zones are domains: six nodes, one pod each
    local wide = plan(without_nodeclass(spread))
    assert.are.equal(6, #wide.nodeClaims)
  end)

  it("sizes Bottlerocket's kube-reserved memory by its maxPods", function()
    local a = allocatable(edit(TEXT, "alias: al2023@latest", "alias: bottlerocket@latest"))
    assert.are.equal("110", a.pods)
    assert.are.equal("6012Mi", a.memory) -- 7577Mi less 11 x 110 + 255 MiB and 100Mi eviction
  end)

  it("takes kubeReserved, systemReserved, evictionHard, podsPerCore and the root volume as Karpenter does", function()
    local t = edit(TEXT, "      maxPods: 110\n", [[
      podsPerCore: 4
      kubeReserved:
        cpu: 200m
        memory: 1Gi
        pid: "100"
      systemReserved:
        memory: 500Mi
      evictionHard:
        memory.available: 5%
        nodefs.available: 15%
]])
    t = edit(t, "volumeSize: 20Gi", "volumeSize: 100Gi")
    t = edit(t, "replicas: 100", "replicas: 5")
    local a = allocatable(t)
    assert.are.equal("1800m", a.cpu)
    assert.are.equal("8", a.pods) -- 4 a core, 2 vCPUs
    -- 7577Mi - 1Gi - 500Mi - ceil(5% of 7577Mi) bytes
    assert.are.equal(tostring(7577 * 1048576 - 1024 * 1048576 - 500 * 1048576 - math.ceil(7577 * 1048576 * 0.05)),
      a.memory)
    assert.are.equal("84Gi", a["ephemeral-storage"]) -- 100Gi - 1Gi kube-reserved - 15%
  end)

  it("takes spec.amiFamily over an alias's family, as Karpenter's AMIFamily()", function()
    local t = edit(TEXT, "    - alias: al2023@latest\n", "    - alias: bottlerocket@latest\n    amiFamily: Custom\n")
    local a = allocatable(t)
    assert.are.equal("110", a.pods)
    assert.are.equal("6903Mi", a.memory, "Custom reserves memory for the ENI-limited pods, Bottlerocket would not")
  end)

  it("hashes for drift as Karpenter: fields it ignores, the family as resolved and lists as sets change nothing", function()
    local function hash(text)
      local out = h.cli("plan -o yaml --now " .. NOW .. " " .. h.write(text))
      return assert(out:match("dovetail.dev/ec2nodeclass%-hash: \"?(%x+)"), out)
    end
    local base = hash(TEXT)
    assert.are.equal(base, hash(edit(TEXT, "    kubelet:\n", "    ipPrefixCount: 4\n    kubelet:\n")))
    assert.are.equal(base, hash(edit(TEXT, "    - alias: al2023@latest\n", "    - alias: al2023@latest\n    amiFamily: AL2023\n")))
    local two = edit(TEXT, "    blockDeviceMappings:\n", [[
    blockDeviceMappings:
    - deviceName: /dev/xvdb
      ebs:
        volumeSize: 100Gi
]])
    local swapped = edit(TEXT, "        volumeType: gp3\n", [[
        volumeType: gp3
    - deviceName: /dev/xvdb
      ebs:
        volumeSize: 100Gi
]])
    assert.are.equal(hash(two), hash(swapped))
    assert.are_not.equal(base, hash(two))
    assert.are_not.equal(base, hash((TEXT:gsub("maxPods: 110", "maxPods: 100"))))
  end)

  it("launches nothing until its Ready is True at its generation, and nothing for Windows", function()
    local function reason(text)
      local p = plan(text)
      assert.are.equal(0, #p.nodeClaims)
      return p.unschedulable[1].reason
    end
    -- the node class's Ready condition (the NodePool's comes first in the dump)
    local ready = "      reason: Ready\n      status: \"True\"\n      type: Ready\n    instanceProfile"
    assert.matches("has status Ready=Unknown: Reconciling", reason(edit(TEXT, ready,
      "      reason: Reconciling\n      status: \"Unknown\"\n      type: Ready\n    instanceProfile")), 1, true)
    assert.matches("a status without a Ready condition", reason(edit(TEXT, ready,
      "      reason: Ready\n      status: \"True\"\n      type: SubnetsReady\n    instanceProfile")), 1, true)
    local stale = edit(TEXT, "    generation: 1\n    managedFields:", "    generation: 2\n    managedFields:")
    assert.matches("status Ready for generation 1, not its generation 2", reason(stale), 1, true)
    assert.matches("its EC2NodeClass prefix runs Windows",
      reason(edit(TEXT, "alias: al2023@latest", "alias: windows2022@latest")), 1, true)
  end)

  it("takes reservations larger than the node as leaving it nothing, without overflow", function()
    local t = edit(TEXT, "      maxPods: 110\n", [[
      maxPods: 110
      kubeReserved:
        cpu: 9223372036854775807m
      systemReserved:
        cpu: 9223372036854775807m
]])
    local p = plan(t)
    assert.are.equal(0, #p.nodeClaims)
    assert.are.equal(100, #p.unschedulable)
  end)

  it("with instanceStorePolicy RAID0 gives the instance store as ephemeral storage", function()
    local t = edit(TEXT, "          - m5.large\n", "          - m5d.large\n")
    t = edit(t, "              cpu: 10m\n              memory: 16Mi", "              cpu: 10m\n              memory: 16Mi\n"
      .. "              ephemeral-storage: 50Gi")
    t = edit(t, "replicas: 100", "replicas: 1")
    local p = plan(t)
    assert.are.equal(1, #p.unschedulable, "a 20Gi root volume holds no 50Gi pod")
    local raid = edit(t, "    kubelet:\n", "    instanceStorePolicy: RAID0\n    kubelet:\n")
    p = plan(raid)
    assert.are.equal(0, #p.unschedulable, p.unschedulable[1] and p.unschedulable[1].reason)
    local a = allocatable(raid)
    assert.are.equal("m5d.large", p.nodeClaims[1].instanceType)
    -- 75 GB of NVMe less 1Gi and 10%
    assert.are.equal(tostring(75000000000 - 1073741824 - 7500000000), a["ephemeral-storage"])
  end)

  it("sizes a claim in flight from its pool (no status.allocatable yet) by the node class", function()
    local claim = [[
- apiVersion: karpenter.sh/v1
  kind: NodeClaim
  metadata:
    name: general-inflight
    labels:
      karpenter.sh/nodepool: general
      node.kubernetes.io/instance-type: m5.large
      topology.kubernetes.io/zone: us-east-1b
      karpenter.sh/capacity-type: on-demand
    ownerReferences:
    - apiVersion: karpenter.sh/v1
      blockOwnerDeletion: true
      kind: NodePool
      name: general
      uid: 0b3c6d0e-8a4f-4f55-9b8e-2a1d5e0f6c11
  spec:
    nodeClassRef:
      group: karpenter.k8s.aws
      kind: EC2NodeClass
      name: prefix
    requirements:
    - key: node.kubernetes.io/instance-type
      operator: In
      values:
      - m5.large
  status:
    conditions:
    - type: Launched
      status: Unknown
      reason: AwaitingReconciliation
]]
    local t = edit(TEXT, "- apiVersion: apps/v1\n  kind: DaemonSet", claim .. "- apiVersion: apps/v1\n  kind: DaemonSet")
    local p = plan(t)
    assert.are.equal(0, #p.nodeClaims, "the claim in flight takes all 100 pods")
    assert.are.equal(100, #p.bindings)
  end)

  it("launches nothing for a NodePool whose node class is not ready, and says why", function()
    local t = edit(TEXT, [[
      reason: Ready
      status: "True"
      type: Ready
    instanceProfile]], [[
      reason: SubnetsNotFound
      status: "False"
      type: Ready
    instanceProfile]])
    local p = plan(t)
    assert.are.equal(0, #p.nodeClaims)
    assert.are.equal(100, #p.unschedulable)
    assert.matches("EC2NodeClass prefix has status Ready=False: SubnetsNotFound", notes(p), 1, true)
    assert.are.equal("NodePool general launches nothing: its EC2NodeClass prefix has status Ready=False: SubnetsNotFound",
      p.unschedulable[1].reason)
  end)

  it("takes kubelet CEL expressions as Karpenter's AWS provider with its NodeClassCEL gate off, unless Ready says on",
    function()
      -- a string maxPods, or a reservation that is no quantity, is an expression: with the gate off (the
      -- default) the node class is not Ready, and its pools launch nothing, saying why
      local cel = edit(TEXT, "maxPods: 110", "maxPods: \"vcpus * 10\"\n      kubeReserved:\n        memory: " ..
        "\"memory_mib / 100\"")
      local gate = "its EC2NodeClass prefix has CEL expressions in spec.kubelet (maxPods, kubeReserved.memory), which " ..
        "Karpenter's AWS provider takes only with its NodeClassCEL feature gate (off by default) and dovetail does " ..
        "not evaluate"
      local without_status, n = cel:gsub("\n  status:\n    amis:.-\n%- apiVersion: apps/v1", "\n- apiVersion: apps/v1", 1)
      assert.are.equal(1, n)
      local disabled = edit(cel, [[
      reason: Ready
      status: "True"]], [[
      reason: KubeletExpressionsDisabled
      status: "False"]])
      for t, why in pairs { [without_status] = gate, [disabled] = "Ready=False: KubeletExpressionsDisabled" } do
        local p = plan(t)
        assert.are.same({ 0, 100 }, { #p.nodeClaims, #p.unschedulable })
        assert.matches(why, p.unschedulable[1].reason, 1, true)
      end
      -- Ready True: its Karpenter evaluated them; dovetail sizes the nodes with the family's defaults, and notes it
      local _, err, code = h.cli("plan -o json --now " .. NOW .. " -", cel)
      assert.are.equal(0, code, err)
      assert.matches("EC2NodeClass prefix: spec.kubelet maxPods, kubeReserved.memory: CEL expressions dovetail does " ..
        "not evaluate; its nodes are sized with the AMI family's defaults for them", err, 1, true)
      assert.are.equal(0, #plan(cel).unschedulable)
    end)

  it("notes a node class the input lacks when it holds others, and plans with the catalog's sizes", function()
    local p = plan(edit(TEXT, "    name: prefix\n    resourceVersion", "    name: other\n    resourceVersion"))
    assert.are.equal(4, #p.nodeClaims)
    assert.matches("EC2NodeClass prefix is not in the input", notes(p), 1, true)
  end)

  it("notes subnets in zones the catalog does not offer", function()
    local t = edit(TEXT, "zone: us-east-1b", "zone: eu-west-1a")
    t = edit(t, "zone: us-east-1c", "zone: eu-west-1b")
    local p = plan(t)
    assert.are.equal(0, #p.nodeClaims)
    assert.matches("its subnets are in zones eu%-west%-1a, %.%.%., none of which catalog", notes(p))
  end)

  it("refuses bad fields naming the file, the object and the field", function()
    local cases = {
      { "alias: al2023@latest", "alias: ubuntu@latest", "spec.amiSelectorTerms[0].alias: expected family@version" },
      { "    - alias: al2023@latest\n", "    - id: ami-0123\n", "spec.amiFamily: missing" },
      { "maxPods: 110", "maxPods: -1", "spec.kubelet.maxPods: expected a whole number" },
      { "maxPods: 110", "maxPods: 110\n      kubeReserved:\n        gpu: \"1\"", "spec.kubelet.kubeReserved.gpu: unknown resource" },
      { "maxPods: 110", "maxPods: 110\n      evictionHard:\n        memory.available: 120%",
        "spec.kubelet.evictionHard.memory.available: \"120%\": expected a percent" },
      { "maxPods: 110", "maxPods: 110\n      evictionHard:\n        memory.avail: 1Gi",
        "spec.kubelet.evictionHard.memory.avail: unknown signal" },
      { "volumeSize: 20Gi", "volumeSize: big", "spec.blockDeviceMappings[0].ebs.volumeSize: expected a size" },
      { "    kubelet:\n", "    instanceStorePolicy: RAID1\n    kubelet:\n", "spec.instanceStorePolicy: expected RAID0" },
      { "      zone: us-east-1b\n      zoneID: use1-az2\n", "      zoneID: use1-az2\n", "status.subnets[0].zone: missing" },
    }
    for _, c in ipairs(cases) do
      local f = h.write(edit(TEXT, c[1], c[2]))
      local _, err, code = h.cli("plan " .. f)
      assert.are_not.equal(0, code, c[3])
      assert.matches(f .. ": EC2NodeClass prefix: " .. c[3], err, 1, true)
      os.remove(f)
    end
  end)
end)

describe("EC2NodeClass drift", function()
  local DRIFT = h.fixtures .. "nodeclass/drift.yaml"
  local TEXT2 = h.slurp(DRIFT)

  -- the detail of the command that takes each node in a disruption pass over text
  local function details(text)
    local out, err, code = h.cli("disrupt -o json --now " .. NOW .. " -", text)
    assert.are.equal(0, code, err)
    local by = {}
    for _, c in ipairs(json.decode(out).commands) do
      for _, n in ipairs(c.nodes) do by[n.name] = c.detail end
    end
    return by
  end

  it("replaces nodes made from an earlier node class or running an image it no longer selects, as Karpenter", function()
    local by = details(TEXT2)
    assert.matches("^NodeClassDrift: EC2NodeClass default changed %(karpenter.k8s.aws/ec2nodeclass%-hash 4444, now 5555%)",
      by.n1 or "", 1)
    assert.matches("^AMIDrift: image ami%-old is not among", by.n2 or "")
    assert.matches("^AMIDrift: image ami%-arm", by.n3 or "", "an arm64 image on an amd64 node is not its image")
    assert.is_nil(by.n4, "n4 runs the current image of the current node class")
  end)

  it("compares Karpenter's hash only at the same hash version", function()
    -- the node class comes first in the dump: its annotation is the first
    local t = TEXT2:gsub("karpenter.k8s.aws/ec2nodeclass%-hash%-version: v4", "karpenter.k8s.aws/ec2nodeclass-hash-version: v5",
      1)
    assert.are_not.equal(TEXT2, t)
    local by = details(t)
    assert.is_nil(by.n1, by.n1)
    assert.truthy(by.n2)
  end)

  it("tells drift by the hash dovetail writes on its claims when Karpenter's is absent", function()
    -- plan writes it, and Karpenter's annotations copied from the node class
    local out = h.cli("plan -o yaml --now " .. NOW .. " " .. FILE)
    local hash = out:match("dovetail.dev/ec2nodeclass%-hash: \"?(%x+)")
    assert.truthy(hash, out:sub(1, 2000))
    assert.matches("karpenter.k8s.aws/ec2nodeclass-hash: \"1178495224453364853\"", out, 1, true)
    assert.matches("karpenter.k8s.aws/ec2nodeclass-hash-version: v4", out, 1, true)
    -- a claim whose hash is not the node class's now is drifted; the same hash is not
    local function with(h1)
      return TEXT2:gsub("karpenter.k8s.aws/ec2nodeclass%-hash: '4444'", "dovetail.dev/ec2nodeclass-hash: " .. h1, 1)
    end
    local stale = with("00000000000000aa")
    assert.are_not.equal(TEXT2, stale)
    assert.matches("^NodeClassDrift: EC2NodeClass default changed %(hash 00000000000000aa, now %x+%)",
      details(stale).n1 or "")
    local now_hash = details(stale).n1:match("now (%x+)")
    assert.is_nil(details(with(now_hash)).n1)
  end)
end)

describe("EC2NodeClass reservations", function()
  it("a quantity too large to hold is no CEL expression: the node class reserves it, and no type is left", function()
    for _, q in ipairs({ "8Ei", "1e400" }) do
      local text = h.docs(h.nodepool("default", { requirements = {} }):gsub("    spec:\n", "    spec:\n      " ..
        "nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: nc}\n", 1), ([[
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: nc}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  kubelet: {systemReserved: {memory: "%s"}}
status: {conditions: [{type: Ready, status: "True"}]}
]]):format(q), h.pod("p"))
      local p = plan(text)
      assert.are.equal(0, #p.nodeClaims, q)
      assert.is_nil(notes(p):find("CEL", 1, true), q)
      local _, err = h.cli("plan " .. h.write(text))
      assert.is_nil(err:find("CEL", 1, true), q)
    end
  end)
end)

describe("Karpenter v1beta1 objects as Karpenter v1 takes them", function()
  local function pool(api, kubelet, annotations)
    return ([[
apiVersion: karpenter.sh/%s
kind: NodePool
metadata:
  name: default%s
spec:
  template:
    spec:
      nodeClassRef: {%s, kind: EC2NodeClass, name: ubuntu}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}%s
]]):format(api, annotations and ("\n  annotations: {%s}"):format(annotations) or "",
      api == "v1" and "group: karpenter.k8s.aws" or "apiVersion: karpenter.k8s.aws/v1beta1",
      kubelet and "\n      kubelet: {maxPods: 110}" or "")
  end
  local function nodeclass(api, family, terms)
    return ([[
apiVersion: karpenter.k8s.aws/%s
kind: EC2NodeClass
metadata: {name: ubuntu}
spec:
  amiFamily: %s
  role: KarpenterNodeRole%s
]]):format(api, family, terms and "\n  amiSelectorTerms: [{id: ami-0123456789abcdef0}]" or "")
  end
  local function pods(n)
    local t = {}
    for i = 1, n do t[#t + 1] = h.pod("p" .. i, { cpu = "10m", memory = "16Mi" }) end
    return table.concat(t, "---\n")
  end

  it("a NodePool's kubelet: refused on v1 (its CRD has none), noted and not read on v1beta1 or as v1.0's annotation",
    function()
      local _, err, code = h.cli("plan " .. h.write(h.docs(pool("v1", true), nodeclass("v1", "AL2023"), pods(1))))
      assert.are.equal(1, code)
      assert.matches("NodePool default: spec.template.spec.kubelet: unknown field", err, 1, true)
      -- the reader's notes go to standard error
      local text = h.docs(pool("v1beta1", true), nodeclass("v1beta1", "AL2023"), pods(100))
      assert.are.equal(4, #plan(text).nodeClaims, "maxPods 110 is not read: m5.large takes its 29 pods")
      _, err = h.cli("plan " .. h.write(text))
      assert.matches("NodePool default: spec.template.spec.kubelet is not read", err, 1, true)
      text = h.docs(pool("v1", false, '"compatibility.karpenter.sh/v1beta1-kubelet-conversion": "{\\"maxPods\\":110}"'),
        nodeclass("v1", "AL2023"), pods(100))
      assert.are.equal(4, #plan(text).nodeClaims)
      _, err = h.cli("plan " .. h.write(text))
      assert.matches("v1beta1-kubelet-conversion is not read", err, 1, true)
    end)

  it("a v1beta1 EC2NodeClass of amiFamily Ubuntu: AL2 on Ubuntu's root volume; without AMI terms, incompatible", function()
    local p = plan(h.docs(pool("v1beta1"), nodeclass("v1beta1", "Ubuntu", true), pods(1)))
    assert.are.equal(1, #p.nodeClaims)
    p = plan(h.docs(pool("v1beta1"), nodeclass("v1beta1", "Ubuntu", false), pods(1)))
    assert.are.equal(0, #p.nodeClaims)
    assert.matches("amiFamily Ubuntu without amiSelectorTerms", notes(p), 1, true)
    local _, err, code = h.cli("plan " .. h.write(h.docs(pool("v1"), nodeclass("v1", "Ubuntu", true), pods(1))))
    assert.are.equal(1, code)
    assert.matches("spec.amiFamily", err, 1, true)
  end)
end)
