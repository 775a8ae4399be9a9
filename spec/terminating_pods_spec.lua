-- A workload's pods being deleted (metadata.deletionTimestamp) still hold
-- their node's room, but do not count against its replicas: the ReplicaSet
-- controller counts active pods only (controller.FilterActivePods) and makes
-- replacements at once, which need room.
local h = require "helper"

local function input(deleting)
  local docs = { [[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
]], [[
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]}
]], [[
apiVersion: v1
kind: Node
metadata:
  name: draining
  labels: {karpenter.sh/nodepool: default, node.kubernetes.io/instance-type: m5.2xlarge,
    topology.kubernetes.io/zone: us-east-1a, karpenter.sh/capacity-type: on-demand, kubernetes.io/arch: amd64}
spec:
  unschedulable: true
status:
  allocatable: {cpu: 7910m, memory: 30Gi, pods: "58"}
  conditions: [{type: Ready, status: "True"}]
]] }
  for i = 0, 2 do
    docs[#docs + 1] = ([[
apiVersion: v1
kind: Pod
metadata:
  name: web-5d8f7-x%d
  namespace: shop
  labels: {app: web}
%s  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: web-5d8f7, uid: r1, controller: true}]
spec:
  nodeName: draining
  containers: [{name: c, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}]
status: {phase: Running}
]]):format(i, deleting and '  deletionTimestamp: "2026-11-23T11:59:00Z"\n' or "")
  end
  return h.write(table.concat(docs, "---\n"))
end

describe("a workload whose pods are being deleted", function()
  it("is planned for replacements, while the running pods it has count", function()
    local out, err, code = h.cli("plan -o json --now 2026-11-23T12:00:00Z " .. input(true))
    assert.equal(0, code, err)
    assert.matches('"pods": 3,', out, 1, true)
    assert.matches('"shop/web-0"', out, 1, true)
    assert.matches('"shop/web-2"', out, 1, true)
    out, err, code = h.cli("plan -o json --now 2026-11-23T12:00:00Z " .. input(false))
    assert.equal(0, code, err)
    assert.matches('"pods": 0,', out, 1, true)
  end)
end)
