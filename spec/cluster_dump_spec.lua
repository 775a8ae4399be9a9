-- Real clusters in: what `kubectl get ... -A -o yaml` prints, as it is (status, managedFields,
-- ownerReferences, DaemonSet pods with matchFields, running Deployments with their
-- ReplicaSets and pods, gated, nominated and terminating pods, a Node with its NodeClaim).
local h = require "helper"

local DUMP = h.fixtures .. "cluster-dump.yaml"
local NOW = "--now 2026-11-23T12:00:00Z"

local function plan()
  local p, err = h.dt.plan { files = { DUMP }, now = "2026-11-23T12:00:00Z" }
  assert(p, err)
  return p
end

describe("a kubectl dump", function()
  it("plans only the pods Karpenter's provisioner would, and notes why the others are left", function()
    local _, err, code = h.cli("plan -o json " .. NOW .. " " .. DUMP)
    assert.are.equal(0, code, err)
    for _, why in ipairs {
      "Pod kube-system/aws-node-pending: owned by a DaemonSet or a Node, not provisioned",
      "Pod batch/gated: scheduling-gated, not provisioned",
      "Pod batch/nominated: nominated to a node, not provisioned",
      "Pod batch/leaving: being deleted, not provisioned",
    } do
      assert.matches(why, err, 1, true)
    end
    local p = plan()
    assert.are.equal(2, p.summary.pods, "worker and the web pod the node can take")
    assert.are.equal(1, #p.nodeClaims)
    assert.same({ "batch/worker" }, p.nodeClaims[1].pods)
    assert.are.equal("shop/web-5d4f7c9b8-klmno", p.bindings[1].pod)
    assert.are.equal("ip-10-0-12-34.ec2.internal", p.bindings[1].node)
  end)

  it("notes a finished pod that never had a node, and is silent about one that ran on a node", function()
    local f = h.write([[
apiVersion: v1
kind: Pod
metadata: {name: job-abc, namespace: batch}
spec:
  restartPolicy: Never
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
status: {phase: Failed, reason: OutOfcpu}
]])
    local out, err, code = h.cli("plan -o table " .. NOW .. " " .. f)
    assert.are.equal(0, code, err)
    assert.matches("Pod batch/job-abc: finished (Failed), not provisioned", err, 1, true)
    assert.matches("0 of 0 pending pods scheduled", out, 1, true)
    local _, derr = h.cli("plan -o json " .. NOW .. " " .. DUMP)
    assert.is_nil(derr:find("report-28851600-x2k9d", 1, true), "the Job's pod that ran on the node")
  end)

  it("counts a running Deployment's pods against its replicas, and its ReplicaSet once", function()
    local p = plan()
    for _, c in ipairs(p.nodeClaims) do
      for _, pod in ipairs(c.pods) do assert.is_nil(pod:match("^shop/web%-%d"), "no phantom replica " .. pod) end
    end
    assert.are.equal(3, p.summary.alreadyBound, "the two web pods and the DaemonSet pod on the node")
  end)

  it("counts no bare Pod that carries a Deployment's labels as one of its replicas (a chart's test Pod)", function()
    local deploy = [[
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  replicas: 3
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec: {containers: [{name: c, resources: {requests: {cpu: "1"}}}]}
---
apiVersion: v1
kind: Pod
metadata: {name: web-test-connection, namespace: shop, labels: {app: web}}
spec: {containers: [{name: t, resources: {requests: {cpu: "1"}}}]}
]]
    local p = h.plan(h.docs(h.nodepool("default"), deploy), { now = "2026-11-23T12:00:00Z" })
    assert.are.equal(4, p.summary.pods, "three replicas and the test Pod")
    -- a replica the ReplicaSet made (its hash, its owner) does count
    local replica = deploy:gsub("metadata: {name: web%-test%-connection, namespace: shop, labels: {app: web}}",
      "metadata: {name: web-5d4f-x, namespace: shop, labels: {app: web, pod-template-hash: 5d4f}}")
    p = h.plan(h.docs(h.nodepool("default"), replica), { now = "2026-11-23T12:00:00Z" })
    assert.are.equal(3, p.summary.pods, "two more replicas and the one there")
  end)

  it("reads a Node and the NodeClaim it registered as one machine, in plan and disrupt", function()
    local p = plan()
    assert.are.equal(1, p.summary.existingNodes)
    local d = assert(h.dt.disrupt { files = { DUMP }, now = "2026-11-23T12:00:00Z" })
    assert.are.equal(1, d.summary.nodes)
    for _, c in ipairs(d.commands) do
      assert.are_not.equal("Empty", c.reason, "the busy node is not empty")
      assert.are.equal("ip-10-0-12-34.ec2.internal", c.nodes[1].name)
    end
  end)

  it("counts consolidateAfter from the NodeClaim's lastPodEventTime when its Node is in the input too", function()
    local text = h.slurp(DUMP)
    -- a pod came to the machine 10 s ago: Karpenter records it on the NodeClaim, not the Node
    local fresh, n = text:gsub("(    providerID: aws:///us%-east%-1a/i%-0abc123def4567890\n)",
      "%1    lastPodEventTime: \"2026-11-23T11:59:50Z\"\n", 1)
    assert.are.equal(1, n)
    local f = h.write(fresh)
    local d = assert(h.dt.disrupt { files = { f }, now = "2026-11-23T12:00:00Z" })
    assert.are.equal(0, #d.commands, "consolidateAfter: 30s has not passed since the last pod event")
    local out = h.cli("disrupt -o table --now 2026-11-23T12:00:00Z " .. f)
    assert.matches("consolidateAfter 30s not elapsed (10s since its last pod event or initialization)", out, 1, true)
    -- and a minute later it has
    d = assert(h.dt.disrupt { files = { f }, now = "2026-11-23T12:00:50Z" })
    assert.are.equal(1, #d.commands)
  end)

  it("takes matchFields node affinity: metadata.name as the node's hostname", function()
    local pod = h.pod("pinned", { extra = [=[
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields:
          - key: metadata.name
            operator: In
            values: [somewhere-else]]=] })
    local p = h.plan(h.docs(h.nodepool("default"), pod), { catalog_text = h.small_catalog })
    assert.are.equal(1, #p.unschedulable)
    assert.matches("kubernetes.io/hostname", p.unschedulable[1].reason, 1, true)
    local bad = h.pod("bad", { extra = [=[
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields:
          - key: spec.nodeName
            operator: In
            values: [x]]=] })
    local _, err = h.dt.plan { manifests = h.docs(h.nodepool("default"), bad), catalog_text = h.small_catalog }
    assert.matches("nodeSelectorTerms[0].matchFields[0].key: matchFields supports metadata.name only", err, 1, true)
  end)
end)

describe("kubectl habits", function()
  it("takes -oyaml, -o=yaml, --output=yaml and -f, repeated", function()
    local want = h.cli("plan -o yaml " .. NOW .. " examples/quickstart.yaml")
    for _, flag in ipairs { "-oyaml", "-o=yaml", "--output=yaml", "--output yaml" } do
      local out, err, code = h.cli("plan " .. flag .. " " .. NOW .. " -f examples/quickstart.yaml")
      assert.are.equal(0, code, err)
      assert.are.equal(want, out, flag)
    end
    local extra = h.write(h.pod("extra-pod"))
    local out = h.cli("plan -o json " .. NOW .. " -f examples/quickstart.yaml -f " .. extra)
    assert.matches('"default/extra-pod"', out, 1, true)
    os.remove(extra)
  end)

  it("takes any option with a value as --name=value, and says which it does not know", function()
    local want = h.cli("plan -o json --now 2026-11-23T00:00:00Z --packing ffd --seed 3 examples/quickstart.yaml")
    local out, err, code = h.cli("plan --output=json --now=2026-11-23T00:00:00Z --packing=ffd --seed=3 "
      .. "examples/quickstart.yaml")
    assert.are.equal(0, code, err)
    assert.are.equal(want, out)
    out, err, code = h.cli("plan --nw=2026-11-23T00:00:00Z examples/quickstart.yaml")
    assert.are.equal("", out)
    assert.are.equal(2, code)
    assert.matches("unknown option --nw=2026-11-23T00:00:00Z", err, 1, true)
    out, err, code = h.cli("plan --now=soon examples/quickstart.yaml")
    assert.are.equal("", out)
    assert.are.equal(2, code)
    assert.matches('--now: invalid time "soon"', err, 1, true)
  end)

  it("answers --help per command and --version", function()
    for cmd, first in pairs { plan = "usage: dovetail plan", disrupt = "usage: dovetail disrupt",
      pool = "usage: dovetail pool", check = "usage: dovetail check", fakecloud = "usage: dovetail fakecloud",
      serve = "usage: dovetail serve" } do
      local out, _, code = h.cli(cmd .. " --help")
      assert.are.equal(0, code)
      assert.are.equal(first, out:sub(1, #first))
    end
    local out, _, code = h.cli("--version")
    assert.are.equal(0, code)
    assert.matches("^dovetail %d+%.%d+%.%d+", out)
  end)

  it("judges a cluster now by default, and byte-reproducibly with --now", function()
    local before = os.date("!%Y")
    local out = h.cli("plan -o json examples/quickstart.yaml")
    local year = out:match('"now": "(%d%d%d%d)')
    assert.is_true(year == before or year == os.date("!%Y"), year) -- the run may cross midnight of New Year
    local _, err, code = h.cli("plan")
    assert.are.equal(2, code)
    assert.matches("no input: give FILE..., -f FILE or - for standard input", err, 1, true)
  end)
end)

describe("NodePools as Karpenter's CRD takes them", function()
  local function err_of(text)
    local p, err = h.dt.plan { manifests = text, catalog_text = h.small_catalog }
    assert.is_nil(p)
    return err
  end

  it("refuses a misspelt field, naming it and the field meant", function()
    local np = h.nodepool("default"):gsub("      requirements:", "      requirement:")
    assert.matches("NodePool default: spec.template.spec.requirement: unknown field (did you mean requirements?)",
      err_of(np), 1, true)
    np = h.nodepool("default"):gsub("operator: In", "operator: In\n          valuez: [x]")
    assert.matches("spec.template.spec.requirements[0].valuez: unknown field", err_of(np), 1, true)
  end)

  it("refuses the hostname and restricted label domains, in labels and requirements", function()
    assert.matches("spec.template.spec.requirements[0].key: label kubernetes.io/hostname is restricted",
      err_of(h.nodepool("default", { requirements = { { "kubernetes.io/hostname", "In", { "a" } } } })), 1, true)
    assert.matches("spec.template.metadata.labels.karpenter.sh/team: label karpenter.sh/team is in the restricted " ..
      "domain karpenter.sh", err_of(h.nodepool("default", { labels = { ["karpenter.sh/team"] = "x" } })), 1, true)
    assert.matches("label x.karpenter.sh/team is in the restricted domain karpenter.sh",
      err_of(h.nodepool("default", { labels = { ["x.karpenter.sh/team"] = "x" } })), 1, true)
    -- well-known labels and Kubernetes' domains, restricted until Karpenter v1.10, are fine
    h.plan(h.docs(h.nodepool("default", { labels = { ["node.kubernetes.io/role"] = "web",
      ["kops.k8s.io/instancegroup"] = "nodes", ["example.kubernetes.io/team"] = "a" }, requirements = {
      { "beta.kubernetes.io/arch", "In", { "amd64" } },
      { "topology.kubernetes.io/zone", "In", { "test-1a" } }, { "karpenter.sh/capacity-type", "In", { "spot" } } } })),
      { catalog_text = h.small_catalog })
  end)

  it("refuses a karpenter.k8s.aws key the AWS provider's schema does not list, naming the one meant", function()
    -- the rule is the AWS provider's CRD's: it holds on the AWS catalog (the bundled one)
    local function aws_err(np)
      local p, err = h.dt.plan { manifests = np }
      assert.is_nil(p)
      return err
    end
    assert.matches("NodePool default: spec.template.spec.requirements: label karpenter.k8s.aws/instance-categroy is " ..
      "in the restricted domain karpenter.k8s.aws and is not one of the AWS provider's labels (did you mean " ..
      "karpenter.k8s.aws/instance-category?)",
      aws_err(h.nodepool("default", { requirements = { { "karpenter.k8s.aws/instance-categroy", "In", { "c" } } } })),
      1, true)
    assert.matches("spec.template.metadata.labels.sub.karpenter.k8s.aws/anything: label sub.karpenter.k8s.aws/" ..
      "anything is in the restricted domain karpenter.k8s.aws",
      aws_err(h.nodepool("default", { labels = { ["sub.karpenter.k8s.aws/anything"] = "x" } })), 1, true)
    -- the listed keys, and a domain that merely ends alike, are fine; so is any key on another provider's catalog
    assert(h.dt.plan { manifests = h.docs(h.nodepool("default", { labels = { ["notkarpenter.k8s.aws/x"] = "y" },
      requirements = { { "karpenter.k8s.aws/instance-family", "Exists" },
        { "karpenter.k8s.aws/instance-tenancy", "Exists" } } })) })
    h.plan(h.docs(h.nodepool("default", { labels = { ["karpenter.k8s.aws/team"] = "x" } })),
      { catalog_text = h.small_catalog })
  end)

  it("leaves out a NodePool whose capacity types are none Karpenter knows, as it is not Ready", function()
    local function reason(values, min)
      local np = h.nodepool("default", { requirements = { { "karpenter.sh/capacity-type", "In", values } } })
      if min then np = np:gsub("operator: In", "operator: In\n          minValues: " .. min) end
      local p = h.plan(h.docs(np, h.pod("a", { cpu = "1" })), { catalog_text = h.small_catalog })
      return p.unschedulable[1] and p.unschedulable[1].reason
    end
    assert.matches("NodePool default launches nothing: requirement karpenter.sh/capacity-type In has none of " ..
      "on-demand, spot and reserved", reason { "Spot" }, 1, true)
    assert.matches("fewer than its minValues", reason({ "spot", "Spot" }, 2), 1, true)
    assert.is_nil(reason { "spot", "Spot" }, "a known value among unknown ones is used")
  end)

  it("refuses a requirement value or a label key name longer than Kubernetes takes", function()
    -- the CRD's values items: maxLength 63 and the label value pattern
    local long = string.rep("x", 64)
    assert.matches("spec.template.spec.requirements[0].values[1]: \"" .. long .. "\" is not a valid label value",
      err_of(h.nodepool("default", { requirements = { { "example.com/team", "In", { "a", long } } } })), 1, true)
    assert.matches("spec.template.spec.requirements[0].values[0]: \"a/b\" is not a valid label value",
      err_of(h.nodepool("default", { requirements = { { "example.com/team", "In", { "a/b" } } } })), 1, true)
    -- IsQualifiedName: a name of at most 63 characters after the prefix
    assert.matches("spec.template.spec.requirements[0].key: \"example.com/" .. long .. "\" is not a valid label key",
      err_of(h.nodepool("default", { requirements = { { "example.com/" .. long, "Exists" } } })), 1, true)
    assert.matches("spec.template.metadata.labels." .. long .. ": not a valid label key",
      err_of(h.nodepool("default", { labels = { [long] = "x" } })), 1, true)
    local ok63 = string.rep("y", 63)
    h.plan(h.docs(h.nodepool("default", { labels = { ["example.com/" .. ok63] = ok63 },
      requirements = { { "example.com/team", "In", { ok63 } } } })), { catalog_text = h.small_catalog })
  end)

  it("reads a v1beta1 NodePool as Karpenter's conversion webhook does", function()
    local np = [[
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: old}
spec:
  disruption:
    consolidationPolicy: WhenUnderutilized
    expireAfter: 168h
  template:
    spec:
      kubelet: {maxPods: 110}
      nodeClassRef: {name: default}
      requirements:
      - {key: kubernetes.io/arch, operator: In, values: [amd64]}
]]
    local node = h.json({ apiVersion = "v1", kind = "Node", metadata = { name = "n", creationTimestamp = "2026-11-01T00:00:00Z",
      labels = { ["node.kubernetes.io/instance-type"] = "medium", ["topology.kubernetes.io/zone"] = "test-1a",
        ["karpenter.sh/capacity-type"] = "on-demand", ["karpenter.sh/nodepool"] = "old", ["kubernetes.io/arch"] = "amd64" } } })
    local pod = h.json({ apiVersion = "v1", kind = "Pod", metadata = { name = "busy", namespace = "default" },
      spec = { nodeName = "n", containers = h.array { { name = "c" } } } })
    local r = assert(h.dt.disrupt { manifests = h.docs(np, node .. "\n", pod .. "\n"), catalog_text = h.small_catalog,
      now = "2026-11-23T00:00:00Z" })
    assert.are.equal("Expired", r.commands[1].reason, "168h from spec.disruption.expireAfter, not the 720h default")
  end)
end)

describe("pod-level resources", function()
  it("are the pod's requests where set, whatever its containers ask", function()
    local pod = h.pod("big", { cpu = "100m", memory = "64Mi", extra = "  resources:\n    requests: {cpu: \"5\"}\n" ..
      "    limits: {memory: 6Gi}" })
    local p = h.plan(h.docs(h.nodepool("default"), pod), { catalog_text = h.small_catalog, packing = "ffd" })
    assert.are.equal("large", p.nodeClaims[1].instanceType, "5 cpu do not fit a small or a medium node")
  end)
end)

describe("pods resized in place", function()
  -- a Node with room for 2 cpu, a running pod on it whose spec and status disagree (a resize under
  -- way), and a pending pod of 1 cpu that fits beside the running pod only if it holds 1 cpu
  local node = "apiVersion: v1\nkind: Node\nmetadata: {name: node-1, labels: {kubernetes.io/arch: amd64, " ..
    "karpenter.sh/nodepool: default}}\nstatus: {allocatable: {cpu: '2', memory: 4Gi, pods: '10'}}\n"
  local function running(spec_cpu, status_cpu, allocated_cpu, condition)
    return ("apiVersion: v1\nkind: Pod\nmetadata: {name: resized, namespace: default}\nspec:\n  nodeName: node-1\n" ..
      "  containers:\n  - name: app\n    image: nginx\n    resources: {requests: {cpu: '%s', memory: 1Gi}}\n" ..
      "  - name: log\n    image: fluent-bit\n    resources: {requests: {cpu: '0', memory: 64Mi}}\n" ..
      "status:\n  phase: Running\n%s  containerStatuses:\n  - name: log\n    ready: true\n" ..
      "    resources: {requests: {cpu: '0', memory: 64Mi}}\n  - name: app\n    ready: true\n" ..
      "    allocatedResources: {cpu: '%s', memory: 1Gi}\n    resources: {requests: {cpu: '%s', memory: 1Gi}}\n")
      :format(spec_cpu, condition and ("  conditions:\n  - {type: PodResizePending, status: 'True', reason: " ..
        condition .. "}\n") or "", allocated_cpu, status_cpu)
  end
  local function plan_beside(bound)
    return h.plan(h.docs(h.nodepool("default"), node, bound, h.pod("new", { cpu = "1" })),
      { catalog_text = h.small_catalog, packing = "ffd" })
  end

  it("hold the most of what their spec asks and what the kubelet set and admitted, as Karpenter counts them", function()
    -- resized down from 1500m in the spec, not yet actuated: the node still gives it 1500m
    local p = plan_beside(running("500m", "1500m", "1500m"))
    assert.are.same({ 0, 1 }, { #p.bindings, #p.nodeClaims })
    -- admitted at 1500m, not yet actuated (status still 500m): 1500m too
    p = plan_beside(running("500m", "500m", "1500m"))
    assert.are.same({ 0, 1 }, { #p.bindings, #p.nodeClaims })
    -- resized down and done: 500m, and the new pod fits beside it
    p = plan_beside(running("500m", "500m", "500m"))
    assert.are.same({ 1, 0 }, { #p.bindings, #p.nodeClaims })
    -- a resize up to 1500m the node cannot take (Infeasible): it keeps its 500m, the spec's ask is not held
    p = plan_beside(running("1500m", "500m", "500m", "Infeasible"))
    assert.are.same({ 1, 0 }, { #p.bindings, #p.nodeClaims })
    -- the same resize only deferred: the spec's ask counts
    p = plan_beside(running("1500m", "500m", "500m", "Deferred"))
    assert.are.same({ 0, 1 }, { #p.bindings, #p.nodeClaims })
  end)

  it("refuse a status quantity that does not read, naming the field", function()
    local bad = running("500m", "half", "500m")
    local p, err = h.dt.plan { manifests = h.docs(h.nodepool("default"), node, bad), now = "2026-11-23T00:00:00Z" }
    assert.is_nil(p)
    assert.matches("status.containerStatuses[1].resources.requests.cpu", err, 1, true)
  end)
end)

describe("volume topology", function()
  local function pod_with(claim)
    return h.pod("db", { extra = "  volumes:\n  - name: data\n    persistentVolumeClaim: {claimName: " .. claim .. "}" })
  end
  local pvs = [[
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-data}
spec:
  capacity: {storage: 10Gi}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1d]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default, annotations: {pv.kubernetes.io/bind-completed: "yes"}}
spec: {volumeName: pv-data, storageClassName: gp3}
status: {phase: Bound}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: gp3}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.kubernetes.io/zone, values: [us-east-1c]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: fresh, namespace: default}
spec: {storageClassName: gp3}
]]

  it("plans a pod in its bound volume's zone", function()
    local p = h.plan(h.docs(h.nodepool("default"), pvs, pod_with("data")), { now = "2026-11-23T12:00:00Z" })
    assert.are.equal("us-east-1d", p.nodeClaims[1].zone)
  end)

  it("plans a pod whose claim waits for its first consumer in the StorageClass's allowed topologies", function()
    local p = h.plan(h.docs(h.nodepool("default"), pvs, pod_with("fresh")), { now = "2026-11-23T12:00:00Z" })
    assert.are.equal("us-east-1c", p.nodeClaims[1].zone)
  end)

  -- Karpenter takes each term as an alternative: a pod whose NodePool allows
  -- only the second term's zone is planned there, not left pending
  local zonal_pool = h.nodepool("default", { requirements = {
    { "kubernetes.io/arch", "In", { "amd64" } }, { "topology.kubernetes.io/zone", "In", { "us-east-1c" } } } })
  local two_zones = [[
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: zonal}
provisioner: ebs.csi.aws.com
volumeBindingMode: WaitForFirstConsumer
allowedTopologies:
- matchLabelExpressions:
  - {key: topology.kubernetes.io/zone, values: [us-east-1b]}
- matchLabelExpressions:
  - {key: topology.kubernetes.io/zone, values: [us-east-1c]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: fresh, namespace: default}
spec: {storageClassName: zonal}
---
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-either}
spec:
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}
      - matchExpressions: []
      - matchExpressions:
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1c, us-east-1a]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default, annotations: {pv.kubernetes.io/bind-completed: "yes"}}
spec: {volumeName: pv-either, storageClassName: zonal}
status: {phase: Bound}
]]

  it("takes every term of allowedTopologies and of a volume's node affinity, one per zone, as alternatives", function()
    for _, claim in ipairs { "fresh", "data" } do
      local p = h.plan(h.docs(zonal_pool, two_zones, pod_with(claim)), { now = "2026-11-23T12:00:00Z" })
      assert.are.equal(1, #p.nodeClaims, claim)
      assert.are.equal("us-east-1c", p.nodeClaims[1].zone, claim)
      assert.are.equal(0, #p.unschedulable, claim)
    end
    local p = h.plan(h.docs(h.nodepool("default"), two_zones, pod_with("data"), (pod_with("fresh"):gsub("db", "db2"))),
      { now = "2026-11-23T12:00:00Z" })
    local zones = {}
    for _, c in ipairs(p.nodeClaims) do zones[c.zone] = true end
    assert.is_nil(zones["us-east-1d"], "no term allows us-east-1d")
    for _, n in ipairs(p.notes or {}) do assert.not_matches("terms", n) end
  end)

  it("keeps a pod whose local volume is on a node that is gone pending, naming the volume's requirement", function()
    local pv = [[
apiVersion: v1
kind: PersistentVolume
metadata: {name: local-pv-1}
spec:
  capacity: {storage: 100Gi}
  accessModes: [ReadWriteOnce]
  storageClassName: local-storage
  local: {path: /mnt/disks/ssd1}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: kubernetes.io/hostname, operator: In, values: [ip-10-0-9-9.ec2.internal]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: local, namespace: default, annotations: {pv.kubernetes.io/bind-completed: "yes"}}
spec: {volumeName: local-pv-1, storageClassName: local-storage}
status: {phase: Bound}
]]
    local p = h.plan(h.docs(h.nodepool("default"), pv, pod_with("local")), { now = "2026-11-23T12:00:00Z" })
    assert.are.equal(0, #p.nodeClaims, "a new node cannot take a volume on another node's disk")
    assert.matches("the pod's volumes require kubernetes.io/hostname In [ip-10-0-9-9.ec2.internal]",
      p.unschedulable[1].reason, 1, true)
  end)

  it("compares terms' values as sets: a value twice is not another value", function()
    local pv = [[
apiVersion: v1
kind: PersistentVolume
metadata: {name: pv-twice}
spec:
  csi: {driver: ebs.csi.aws.com, volumeHandle: vol-2}
  nodeAffinity:
    required:
      nodeSelectorTerms:
      - matchExpressions:
        - {key: node.kubernetes.io/instance-type, operator: NotIn, values: [t3a.small, t3a.small]}
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1c]}
      - matchExpressions:
        - {key: node.kubernetes.io/instance-type, operator: NotIn, values: [t3a.small, t3.small]}
        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1d]}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {name: twice, namespace: default, annotations: {pv.kubernetes.io/bind-completed: "yes"}}
spec: {volumeName: pv-twice}
status: {phase: Bound}
]]
    -- folded, the union would allow a t3.small in us-east-1d, which neither term allows
    local pod = h.pod("db", { extra = "  nodeSelector: {topology.kubernetes.io/zone: us-east-1d}\n" ..
      "  volumes:\n  - name: data\n    persistentVolumeClaim: {claimName: twice}" })
    local p = h.plan(h.docs(h.nodepool("default"), pv, pod), { now = "2026-11-23T12:00:00Z" })
    assert.are.equal(0, #p.nodeClaims, "the terms differ in two labels: the first (us-east-1c) holds")
    local _, err, code = h.cli("plan --now 2026-11-23T12:00:00Z -",
      h.docs(h.nodepool("default"), pv:gsub("nodeSelectorTerms:\n", "nodeSelectorTerms:\n      - 5\n", 1), pod))
    assert.are_not.equal(0, code)
    assert.matches("PersistentVolume pv-twice: spec.nodeAffinity.required.nodeSelectorTerms[0]: expected an object", err,
      1, true)
  end)

  it("plans a workload's replicas where the class of their ephemeral volumes' claims allows", function()
    local deploy = [[
apiVersion: apps/v1
kind: Deployment
metadata: {name: scratch, namespace: default}
spec:
  replicas: 2
  selector: {matchLabels: {app: scratch}}
  template:
    metadata: {labels: {app: scratch}}
    spec:
      containers:
      - name: c
        image: busybox
        resources: {requests: {cpu: "1", memory: 1Gi}}
        volumeMounts: [{name: work, mountPath: /work}]
      volumes:
      - name: work
        ephemeral:
          volumeClaimTemplate:
            spec:
              accessModes: [ReadWriteOnce]
              storageClassName: zonal
              resources: {requests: {storage: 10Gi}}
]]
    local p = h.plan(h.docs(h.nodepool("default"), two_zones, deploy), { now = "2026-11-23T12:00:00Z" })
    assert.are.equal(0, #p.unschedulable)
    for _, c in ipairs(p.nodeClaims) do
      assert.is_truthy(c.zone == "us-east-1b" or c.zone == "us-east-1c", c.zone)
    end
    p = h.plan(h.docs(h.nodepool("default"), two_zones, (deploy:gsub("storageClassName: zonal", "storageClassName: io2"))),
      { now = "2026-11-23T12:00:00Z" })
    assert.are.equal(0, #p.nodeClaims)
    assert.are.equal("Deployment default/scratch: ephemeral volume work names StorageClass io2, which is not in the input",
      p.unschedulable[1].reason)
  end)

  it("follows the first of terms that differ in more than one label, and says so", function()
    local sc = two_zones:gsub("values: %[us%-east%-1c%]}", "values: [us-east-1c]}\n  - {key: kubernetes.io/arch, " ..
      "values: [arm64]}", 1)
    local p = h.plan(h.docs(zonal_pool, sc, pod_with("fresh")), { now = "2026-11-23T12:00:00Z" })
    assert.are.equal(1, #p.unschedulable, "the first term's us-east-1b is outside the NodePool")
    assert.matches("the pod's volumes require topology.kubernetes.io/zone In [us-east-1b] but NodePool default allows",
      p.unschedulable[1].reason, 1, true)
    local _, err = h.cli("plan --now 2026-11-23T12:00:00Z -", h.docs(zonal_pool, sc, pod_with("fresh")))
    assert.matches("StorageClass zonal: allowedTopologies has 2 terms that differ in more than one label", err, 1, true)
  end)
end)

describe("emitted NodeClaims", function()
  it("carry what the NodePool's template says, and an owner the API server accepts", function()
    local np = [[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: web, uid: 0f1e2d3c-4b5a-4697-8877-665544332211}
spec:
  template:
    metadata:
      annotations: {example.com/team: web}
    spec:
      expireAfter: 168h
      terminationGracePeriod: 24h
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
]]
    local out, err, code = h.cli("plan -o yaml --now 2026-11-23T12:00:00Z -", h.docs(np, h.pod("a")))
    assert.are.equal(0, code, err)
    for _, want in ipairs { "expireAfter: 168h", "terminationGracePeriod: 24h", "example.com/team: web",
      "kind: EC2NodeClass", "uid: 0f1e2d3c-4b5a-4697-8877-665544332211", "kind: NodePool\n    name: web" } do
      assert.matches(want, out, 1, true)
    end
  end)

  it("name a nodeClassRef in every example, as Karpenter's NodeClaim schema requires", function()
    for _, ex in ipairs { "quickstart", "mixed-arch", "vm-pool" } do
      local out, err, code = h.cli("plan -o yaml --now 2026-11-23T12:00:00Z examples/" .. ex .. ".yaml")
      assert.are.equal(0, code, err)
      local claims, refs = select(2, out:gsub("kind: NodeClaim", "")), select(2, out:gsub("nodeClassRef:", ""))
      assert.is_true(claims > 0, ex)
      assert.are.equal(claims, refs, ex)
    end
  end)
end)

describe("extended resources from the catalog", function()
  it("place a pod asking for AWS Neuron devices on an Inferentia type of the bundled catalog", function()
    local np = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: ml}\nspec: {template: {spec: {}}}\n"
    local pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: infer}\nspec:\n  containers:\n  - name: c\n" ..
      "    resources: {limits: {aws.amazon.com/neuron: \"4\"}}\n"
    local p = h.plan(h.docs(np, pod), { now = "2026-11-23T12:00:00Z" })
    assert.are.equal(1, #p.nodeClaims)
    assert.matches("^inf1%.6xlarge$", p.nodeClaims[1].instanceType)
  end)

  it("are read from a catalog's extendedResources, and refused when not a count", function()
    local cat = '{"zones":["z"],"instanceTypes":[{"name":"t","cpu":2,"memoryMiB":4096,"onDemandPrice":0.1,' ..
      '"extendedResources":{"example.com/fpga":"two"}}]}'
    local _, err = h.dt.plan { manifests = h.nodepool("default"), catalog_text = cat }
    assert.matches("extendedResources.example.com/fpga: expected a device count", err, 1, true)
  end)
end)

-- Karpenter's CapacityBuffer support (its feature gate of that name): a buffer's chunks are virtual
-- pods shaped as a template, planned after the real pods and never nominated.
describe("CapacityBuffers", function()
  local T = "2026-11-23T00:00:00Z"
  local pool = h.nodepool("default", { requirements = { { "karpenter.sh/capacity-type", "In", { "on-demand" } },
    { "node.kubernetes.io/instance-type", "In", { "m5.xlarge" } } } })
  local tmpl = "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: chunk, namespace: shop}\ntemplate:\n" ..
    "  metadata: {labels: {app: headroom}}\n  spec:\n    containers: [{name: c, resources: {requests: " ..
    "{cpu: '1', memory: 1Gi}}}]\n"
  local deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n" ..
    "  replicas: 10\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n" ..
    "    spec: {containers: [{name: c, resources: {requests: {cpu: 500m, memory: 512Mi}}}]}\n"
  local function buffer(spec)
    return "apiVersion: autoscaling.x-k8s.io/v1beta1\nkind: CapacityBuffer\nmetadata: {name: spare, namespace: " ..
      "shop}\nspec: " .. spec .. "\n"
  end
  local function chunks(p)
    local n, nominated = 0, 0
    for _, c in ipairs(p.nodeClaims) do
      for _, pod in ipairs(c.pods) do
        if pod:find("^shop/capacity%-buffer%-spare%-%d+$") then n = n + 1 end
      end
    end
    local out = h.cli("plan -o yaml --now " .. T .. " -", h.docs(pool, tmpl, deploy, buffer(
      "{podTemplateRef: {name: chunk}, replicas: 3}")))
    for _ in out:gmatch("capacity%-buffer%-spare") do nominated = nominated + 1 end
    return n, nominated
  end

  it("plan a buffer's chunks after the real pods, named as Karpenter's virtual pods, and nominate none", function()
    local p = assert(h.dt.plan { manifests = h.docs(pool, tmpl, buffer("{podTemplateRef: {name: chunk}, replicas: 3}"),
      deploy), now = T })
    local n, nominated = chunks(p)
    assert.are.same({ 3, 0 }, { n, nominated })
    -- queued after the Deployment's pods, whatever their sizes: the first claim holds real pods first
    assert.are.equal("shop/web-0", p.nodeClaims[1].pods[1])
    assert.are.equal("shop/capacity-buffer-spare-3", p.nodeClaims[#p.nodeClaims].pods[#p.nodeClaims[#p.nodeClaims].pods])
  end)

  it("size a buffer by a percentage of its workload, by replicas, and by its limits, as Karpenter's controller",
    function()
      local function count(spec)
        local p = assert(h.dt.plan { manifests = h.docs(pool, tmpl, deploy, buffer(spec)), now = T })
        return (chunks(p))
      end
      -- 25% of 10 replicas, rounded up: 3; with replicas 5, the larger; limits of 2 cpu hold 4 half-cpu chunks
      assert.are.equal(3, count("{scalableRef: {kind: Deployment, name: web}, percentage: 25}"))
      assert.are.equal(5, count("{scalableRef: {kind: Deployment, name: web}, percentage: 25, replicas: 5}"))
      assert.are.equal(4, count("{scalableRef: {apiGroup: apps, kind: Deployment, name: web}, limits: {cpu: '2'}}"))
      assert.are.equal(2, count("{podTemplateRef: {name: chunk}, replicas: 5, limits: {cpu: 2500m}}"))
      -- a template that is not there, or a kind Karpenter does not resolve: none, noted
      local _, err = h.cli("plan --now " .. T .. " -", h.docs(pool, buffer("{podTemplateRef: {name: gone}, " ..
        "replicas: 2}")))
      assert.matches("CapacityBuffer shop/spare: its podTemplateRef names no PodTemplate of the input; not " ..
        "provisioned (as Karpenter)", err, 1, true)
      assert.are.equal(0, count("{scalableRef: {apiGroup: batch, kind: Job, name: web}, replicas: 2}"))
      -- limits naming only pods, which no pod requests: none, as Karpenter's computeReplicas, noted
      assert.are.equal(0, count("{podTemplateRef: {name: chunk}, limits: {pods: '3'}}"))
      _, err = h.cli("plan --now " .. T .. " -", h.docs(pool, tmpl, buffer("{podTemplateRef: {name: chunk}, " ..
        "limits: {pods: '3'}}")))
      assert.matches("CapacityBuffer shop/spare: spec.limits names no resource its pods request", err, 1, true)
      -- a workload scaled to 0 still gives its template (replicas or limits say how many)
      local zero = deploy:gsub("replicas: 10", "replicas: 0")
      for spec, want in pairs { ["{scalableRef: {kind: Deployment, name: web}, replicas: 3}"] = 3,
        ["{scalableRef: {kind: Deployment, name: web}, percentage: 50, limits: {cpu: '2'}}"] = 4 } do
        local p = assert(h.dt.plan { manifests = h.docs(pool, zero, buffer(spec)), now = T })
        assert.are.same({ want, want * 500 }, { (chunks(p)), h.dt.milli(p.nodeClaims[1].requests.cpu) }, spec)
      end
    end)

  it("name its chunks apart from the input's pods, and read v1beta1 alone, as the CRD serves", function()
    local taken = h.pod("capacity-buffer-spare-1", { cpu = "2", namespace = "shop" })
    local p, err
    local out
    out, err = h.cli("plan -o json --now " .. T .. " -", h.docs(pool, tmpl, taken,
      buffer("{podTemplateRef: {name: chunk}, replicas: 2}")))
    assert.matches("CapacityBuffer shop/spare: pods of the input are named as its chunks; they are " ..
      "capacity-buffer-spare-virtual-<k>", err, 1, true)
    assert.are.same({ 1, 1, 1 }, { select(2, out:gsub('"shop/capacity%-buffer%-spare%-1"', "")),
      select(2, out:gsub('"shop/capacity%-buffer%-spare%-virtual%-1"', "")),
      select(2, out:gsub('"shop/capacity%-buffer%-spare%-virtual%-2"', "")) })
    p, err = h.dt.plan { manifests = h.docs(pool, tmpl, buffer("{podTemplateRef: {name: chunk}, replicas: 2}")
      :gsub("v1beta1", "v1alpha1")), now = T }
    assert.is_nil(p)
    assert.matches("apiVersion: autoscaling.x-k8s.io/v1alpha1 is no version of CapacityBuffer " ..
      "(autoscaling.x-k8s.io/v1beta1)", err, 1, true)
  end)

  it("refuse what the CRD refuses, naming the field", function()
    for spec, want in pairs {
      ["{podTemplateRef: {name: chunk}, scalableRef: {kind: Deployment, name: web}, replicas: 1}"] =
        "spec: You must define either PodTemplateRef or ScalableRef, but not both",
      ["{podTemplateRef: {name: chunk}}"] = "spec: If podTemplateRef is set, replicas or limits must also be set",
      ["{podTemplateRef: {name: chunk}, replicas: -1}"] = "spec.replicas: expected an integer from 0 to 2147483647",
      ["{podTemplateRef: {name: chunk}, replica: 1}"] = "spec.replica: unknown field",
      ["{scalableRef: {kind: Deployment}, replicas: 1}"] = "spec.scalableRef.name: missing",
    } do
      local p, err = h.dt.plan { manifests = h.docs(pool, tmpl, deploy, buffer(spec)), now = T }
      assert.is_nil(p, spec)
      assert.matches("CapacityBuffer shop/spare: " .. want, err, 1, true)
    end
  end)

  it("keep the nodes that hold a buffer's chunks from being empty in a disruption pass, as Karpenter", function()
    local node = "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n  labels: {kubernetes.io/arch: amd64, " ..
      "kubernetes.io/os: linux, karpenter.sh/nodepool: default, karpenter.sh/capacity-type: on-demand, " ..
      "node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1a, " ..
      "karpenter.sh/initialized: 'true', karpenter.sh/registered: 'true'}\n  creationTimestamp: " ..
      "'2026-11-20T00:00:00Z'\nspec: {providerID: 'aws:///us-east-1a/i-1'}\nstatus:\n  allocatable: {cpu: 3920m, " ..
      "memory: 14Gi, pods: '58'}\n  conditions: [{type: Ready, status: 'True'}]\n"
    local np = pool:gsub("spec:\n", "spec:\n  disruption: {consolidateAfter: 0s}\n", 1)
    local function taken(spec)
      local r = assert(h.dt.disrupt { manifests = h.docs(np, node, tmpl, buffer(spec)), now = T })
      return #r.commands
    end
    assert.are.equal(0, taken("{podTemplateRef: {name: chunk}, replicas: 2}"))
    assert.are.equal(1, taken("{podTemplateRef: {name: chunk}, replicas: 0}")) -- no headroom asked: empty
  end)
end)
