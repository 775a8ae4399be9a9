-- A NodeClaim and the Node it registered are one machine: the pods nominated
-- to the claim (dovetail.dev/pods) are on that machine until they are bound,
-- whatever the Node is called (a hostname on AWS, matched by provider ID).
local h = require "helper"
local json = require "dkjson"

local NOW = "2026-11-27T06:00:00Z"

local pool = [[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  disruption: {consolidateAfter: 0s, budgets: [{nodes: "1"}]}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - {name: c, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}
]]

-- The claim launched for default/web, registered as status says.
local function claim(status)
  return [[
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: default-80z6g
  creationTimestamp: "2026-11-27T05:00:00Z"
  labels:
    karpenter.sh/nodepool: default
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: t3a.small
    topology.kubernetes.io/zone: us-east-1a
    kubernetes.io/arch: amd64
  annotations: {dovetail.dev/pods: default/web}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
  requirements:
  - {key: node.kubernetes.io/instance-type, operator: In, values: [t3a.small]}
status:
]] .. status .. [[
  conditions:
  - {type: Initialized, status: "True", lastTransitionTime: "2026-11-27T05:01:00Z"}
  - {type: Ready, status: "True", lastTransitionTime: "2026-11-27T05:01:00Z"}
]]
end

local node = [[
apiVersion: v1
kind: Node
metadata:
  name: ip-10-9-9-9.ec2.internal
  creationTimestamp: "2026-11-27T05:00:30Z"
  labels:
    karpenter.sh/nodepool: default
    karpenter.sh/initialized: "true"
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: t3a.small
    topology.kubernetes.io/zone: us-east-1a
    kubernetes.io/arch: amd64
    kubernetes.io/hostname: ip-10-9-9-9.ec2.internal
spec: {providerID: "aws:///us-east-1a/i-0123456789abcdef0"}
status:
  allocatable: {cpu: 1930m, memory: 1451Mi, pods: "8"}
  conditions:
  - {type: Ready, status: "True", lastTransitionTime: "2026-11-27T05:01:00Z"}
]]

-- The same machine's Node named as its claim, with no provider ID (KWOK names
-- nodes so, and the daemon's claims carry neither nodeName nor providerID
-- until it records them).
local node_named_as_claim = node:gsub("ip%-10%-9%-9%-9%.ec2%.internal", "default-80z6g")
  :gsub('spec: {providerID: "aws:///us%-east%-1a/i%-0123456789abcdef0"}\n', "")

describe("a claim and its Node", function()
  for _, case in ipairs({
    { "by provider ID", "  providerID: aws:///us-east-1a/i-0123456789abcdef0\n" },
    { "by status.nodeName", "  nodeName: ip-10-9-9-9.ec2.internal\n" },
    { "by the claim's own name", "", node_named_as_claim },
  }) do
    local the_node = case[3] or node
    it("is not empty while the pods nominated to it wait (paired " .. case[1] .. ")", function()
      local f = h.write(pool .. "---\n" .. claim(case[2]) .. "---\n" .. the_node)
      local out, err, code = h.cli("disrupt -o json --now " .. NOW .. " " .. f)
      assert.equal(0, code, err)
      assert.matches('"commands": []', out, 1, true)
      -- without the pod, the machine is empty
      local g = h.write(pool:gsub("%-%-%-\napiVersion: v1\nkind: Pod.*$", "") .. "---\n" .. claim(case[2]) .. "---\n" .. the_node)
      out, err, code = h.cli("disrupt -o json --now " .. NOW .. " " .. g)
      assert.equal(0, code, err)
      assert.matches('"commands": [\n    {\n      "reason": "Empty"', out, 1, true)
    end)

    it("holds the pods nominated to it in a plan, not planned again (paired " .. case[1] .. ")", function()
      -- web (1 cpu) waits for the t3a.small; web2 (1.5 cpu) does not fit in the 0.93 cpu left
      local web2 = "---\napiVersion: v1\nkind: Pod\nmetadata: {name: web2, namespace: default}\nspec:\n" ..
        "  containers:\n  - {name: c, image: nginx, resources: {requests: {cpu: 1500m, memory: 256Mi}}}\n"
      local f = h.write(pool .. web2 .. "---\n" .. claim(case[2]) .. "---\n" .. the_node)
      local out, err, code = h.cli("plan -o json --now " .. NOW .. " " .. f)
      assert.equal(0, code, err)
      local doc = json.decode(out)
      assert.same({}, doc.bindings)
      assert.equal(1, #doc.nodeClaims)
      assert.same({ "default/web2" }, doc.nodeClaims[1].pods)
      assert.equal(1, doc.summary.alreadyBound)
    end)
  end
end)
