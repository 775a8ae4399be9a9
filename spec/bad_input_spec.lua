-- Bad input gets a message that names the file, the object and the field.
local h = require "helper"

local function err_of(manifests)
  local plan, err = h.dt.plan { manifests = manifests }
  assert.is_nil(plan)
  return err
end

describe("bad manifests", function()
  it("refuses a --now that is no real time and a --seed that is no non-negative integer", function()
    local f = h.fixtures .. "../../examples/quickstart.yaml"
    for _, now in ipairs { "2026-02-30T00:00:00Z", "2025-02-29T00:00:00Z", "2026-11-23T24:00:00Z",
      "2026-11-23T12:00:00+99:99", "2026-11-23T12:00:00+5:30" } do
      local _, err, code = h.cli("plan -o json --now " .. now .. " " .. f)
      assert.are.equal(2, code, now)
      assert.matches('invalid time "' .. now:gsub("%p", "%%%0") .. '"', err)
    end
    local _, _, code = h.cli("plan -o json --now 2024-02-29T12:00:00+05:30 " .. f)
    assert.are.equal(0, code, "a leap day, and an offset")
    for _, seed in ipairs { "-1", "99999999999999999999999", "' 7'" } do
      local _, err, c = h.cli("plan -o json --seed " .. seed .. " " .. f)
      assert.are.equal(2, c, seed)
      assert.matches("--seed: expected a non-negative integer", err, 1, true)
      _, err, c = h.cli("simulate --duration 1h --seed " .. seed .. " -f " .. f)
      assert.are.equal(2, c, seed)
      assert.matches("--seed: expected a non-negative integer", err, 1, true)
    end
  end)

  it("refuses a topology spread's maxSkew or minDomains past int32, as the API server does", function()
    for _, c in ipairs({ { "maxSkew: 2147483648", "maxSkew" }, { "maxSkew: 1, minDomains: 2147483648", "minDomains" },
      { "maxSkew: 1, minDomains: 1e300", "minDomains" } }) do
      local err = err_of(("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  topologySpreadConstraints:\n" ..
        "  - {%s, topologyKey: zone, whenUnsatisfiable: DoNotSchedule}\n  containers: [{name: c}]\n"):format(c[1]))
      assert.matches("Pod default/p: spec.topologySpreadConstraints[0]." .. c[2] ..
        ": expected an integer from 1 to 2147483647", err, 1, true)
    end
  end)

  it("refuses a kind of a group it reads spelt in another case, naming the kind meant", function()
    local err = err_of("apiVersion: karpenter.sh/v1\nkind: Nodepool\nmetadata: {name: default}\n")
    assert.matches("manifests: document 1: kind: Nodepool is no kind of karpenter.sh/v1 (kinds are case-sensitive: " ..
      "NodePool?)", err, 1, true)
    err = err_of("apiVersion: v1\nkind: List\nitems:\n- {apiVersion: apps/v1, kind: deployment, metadata: {name: w}}\n")
    assert.matches("document 1, items[0]: kind: deployment is no kind of apps/v1 (kinds are case-sensitive: " ..
      "Deployment?)", err, 1, true)
    -- a version of Karpenter's groups the API server does not serve is no v1
    err = err_of("apiVersion: karpenter.sh/v2\nkind: NodePool\nmetadata: {name: default}\n")
    assert.matches("manifests: NodePool: apiVersion: karpenter.sh/v2 is no version of NodePool (karpenter.sh/v1, " ..
      "or v1beta1 as Karpenter converts it)", err, 1, true)
    -- a kind of another group, or one it does not read, is skipped with a note as before
    local p = assert(h.dt.plan { manifests = "apiVersion: example.com/v1\nkind: Nodepool\nmetadata: {name: x}\n" ..
      "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n" })
    assert.are.equal(0, p.summary.pods)
  end)

  it("refuses a container resource Kubernetes does not define, and a workload field one edit from its own", function()
    local pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: shop}\nspec:\n  containers:\n" ..
      "  - {name: c, resources: {requests: {cpu: '1', %s: 1Gi}}}\n"
    assert.matches("Pod shop/p: spec.containers[0].resources.requests.memroy: not a resource a container can ask " ..
      "for (cpu, memory, ephemeral-storage, hugepages-<size>, or an extended resource with its domain, such as " ..
      "nvidia.com/gpu); did you mean memory?", err_of(pod:format("memroy")), 1, true)
    assert.matches("requests.gpu: not a resource a container can ask for", err_of(pod:format("gpu")), 1, true)
    for _, ok in ipairs { "memory", "ephemeral-storage", "hugepages-2Mi", "example.com/dongle" } do
      assert(h.dt.plan { manifests = pod:format(ok) }, ok)
    end
    local deploy = "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\nspec:\n" ..
      "  %s: 3\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n" ..
      "    spec: {containers: [{name: c, resources: {requests: {cpu: '1'}}}]}\n"
    assert.matches("Deployment shop/web: spec.replica: unknown field of a Deployment (did you mean replicas?)",
      err_of(deploy:format("replica")), 1, true)
    -- each kind's own fields: a StatefulSet's near miss is one, a Deployment's paused is no DaemonSet's
    local sts = deploy:gsub("kind: Deployment", "kind: StatefulSet")
    assert.matches("StatefulSet shop/web: spec.podManagmentPolicy: unknown field of a StatefulSet (did you mean " ..
      "podManagementPolicy?)", err_of(sts:format("podManagmentPolicy")), 1, true)
    assert.matches("spec.ordinal: unknown field of a StatefulSet (did you mean ordinals?)",
      err_of(sts:format("ordinal")), 1, true)
    assert(h.dt.plan { manifests = deploy:format("ordinal") }, "no Deployment field is near ordinal")
    -- a field far from every known one (a newer Kubernetes') is left alone
    assert.are.equal(0, assert(h.dt.plan { manifests = deploy:format("someFutureKnob") }).summary.pods - 1)
    -- a selector that would not own the template's pods, which the API server refuses
    for _, kind in ipairs { "Deployment", "ReplicaSet", "StatefulSet", "DaemonSet" } do
      local mismatch = deploy:format("replicas"):gsub("kind: Deployment", "kind: " .. kind)
        :gsub("labels: {app: web}", "labels: {app: api}")
      assert.matches(kind .. " shop/web: spec.template.metadata.labels: do not match spec.selector (the API server " ..
        "refuses such a " .. kind .. ")", err_of(mismatch), 1, true)
    end
    -- an empty selector would own every pod of its namespace: refused too
    for _, empty in ipairs { "{}", "{matchLabels: {}}", "{matchExpressions: []}" } do
      local e = deploy:format("replicas"):gsub("selector: {matchLabels: {app: web}}", "selector: " .. empty)
      assert.matches("Deployment shop/web: spec.selector: empty: it would select every pod", err_of(e), 1, true)
    end
  end)

  it("reports malformed YAML with line and column", function()
    local err = err_of("apiVersion: v1\nkind: Pod\nmetadata:\n  name: [oops\n")
    assert.matches("^manifests:%d+:%d+: malformed YAML", err)
  end)

  it("reports malformed JSON with line and column", function()
    local err = err_of('{"apiVersion": "v1",\n "kind": "Pod",\n "metadata": {"name": }}')
    assert.matches("manifests:3:%d+: malformed JSON", err)
  end)

  it("refuses a name or namespace that is not a string, naming the field", function()
    local err = err_of("apiVersion: v1\nkind: Pod\nmetadata: {name: 123}\nspec: {containers: [{name: c}]}\n")
    assert.matches("Pod (unnamed): metadata.name: must be a string", err, 1, true)
    err = err_of("apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: 5}\nspec: {containers: [{name: c}]}\n")
    assert.matches("Pod p: metadata.namespace: must be a string", err, 1, true)
  end)

  it("reports an unknown quantity suffix with the field path", function()
    local err = err_of(h.pod("p", { cpu = "2Qi" }))
    assert.matches("Pod default/p: spec.containers[0].resources.requests.cpu: invalid quantity \"2Qi\": unknown suffix",
      err, 1, true)
  end)

  it("refuses a fraction of an extended resource, as the API server does", function()
    local function gpu(n)
      return h.pod("p") .. '          nvidia.com/gpu: "' .. n .. '"\n'
    end
    local err = err_of(gpu("0.5"))
    assert.matches("Pod default/p: spec.containers[0].resources.requests.nvidia.com/gpu: 0.5 is not a whole number",
      err, 1, true)
    local plan, perr = h.dt.plan { manifests = gpu("1") }
    assert.is_not_nil(plan, perr)
  end)

  it("rejects negative requests", function()
    local err = err_of(h.pod("p", { memory = "-1Gi" }))
    assert.matches("Pod default/p: spec.containers[0].resources.requests.memory: must not be negative", err, 1, true)
  end)

  it("rejects absurd requests", function()
    local err = err_of(h.pod("p", { cpu = "1e12" }))
    assert.matches("requests.cpu: 1000000000000 cores is absurd", err, 1, true)
  end)

  it("rejects a NodePool with contradictory requirements", function()
    local np = h.nodepool("broken", { requirements = {
      { "kubernetes.io/arch", "In", { "amd64" } },
      { "kubernetes.io/arch", "In", { "arm64" } },
    } })
    local err = err_of(np)
    assert.matches("NodePool broken: spec.template.spec.requirements[0]: contradictory requirements", err, 1, true)
    assert.matches("kubernetes.io/arch", err, 1, true)
  end)

  it("rejects a requirement that contradicts a template label", function()
    local np = h.nodepool("team", { labels = { team = "a" }, requirements = { { "team", "NotIn", { "a" } } } })
    assert.matches("contradictory requirements", err_of(np), 1, true)
  end)

  it("rejects duplicate object names, naming where the first one was", function()
    local err = err_of(h.docs(h.pod("same"), h.pod("same")))
    assert.matches("Pod default/same: metadata.name: duplicate object (first defined in manifests)", err, 1, true)
  end)

  it("allows the same name in different namespaces", function()
    local plan = h.plan(h.docs(h.nodepool("default"), h.pod("same", { namespace = "a" }), h.pod("same", { namespace = "b" })))
    assert.are.equal(2, plan.summary.pods)
  end)

  it("rejects an unknown operator", function()
    local np = h.nodepool("np", { requirements = { { "kubernetes.io/arch", "Like", { "amd64" } } } })
    assert.matches('requirements[0].operator: expected In, NotIn, Exists, DoesNotExist, Gt or Lt, got "Like"', err_of(np), 1, true)
  end)

  it("rejects Gt with a value that is not an integer", function()
    local np = h.nodepool("np", { requirements = { { "karpenter.k8s.aws/instance-cpu", "Gt", { "four" } } } })
    assert.matches('Gt needs an integer, got "four"', err_of(np), 1, true)
  end)

  it("rejects a weight that is not a whole number, as the API server does", function()
    local err = err_of([[
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c}]
  affinity:
    podAntiAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 1.5
          podAffinityTerm: {topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app: a}}}
]])
    assert.matches("Pod default/p: spec.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution[0].weight: "
      .. "expected an integer from 1 to 100", err, 1, true)
  end)

  it("rejects a PodDisruptionBudget count past an int32, as the API server does", function()
    local err = err_of([[
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: db}
spec:
  selector: {matchLabels: {app: db}}
  maxUnavailable: 111111111111111111111111111111111111111111111111111111111111111111111111
]])
    assert.matches("PodDisruptionBudget default/db: spec.maxUnavailable: expected a non-negative integer or a percentage",
      err, 1, true)
  end)

  it("rejects an object without a name", function()
    assert.matches("Pod (unnamed): metadata.name: missing", err_of("apiVersion: v1\nkind: Pod\nspec: {}\n"), 1, true)
  end)

  it("adds nothing from a file that fails", function()
    local good = h.write(h.docs(h.nodepool("default"), h.pod("ok")))
    local bad = h.write(h.docs(h.pod("ok2"), h.pod("bad", { cpu = "x" })))
    local plan, err = h.dt.plan { files = { good, bad } }
    assert.is_nil(plan)
    assert.matches(bad, err, 1, true)
    os.remove(good)
    os.remove(bad)
  end)

  it("reports a manifest file that does not exist", function()
    local _, err, code = h.cli("plan /nonexistent/pods.yaml")
    assert.are.equal(1, code)
    assert.matches("/nonexistent/pods.yaml: cannot open: No such file or directory", err, 1, true)
  end)

  it("explains a pod that fits nothing with the largest allowed type", function()
    local plan = h.plan(h.docs(h.nodepool("default"), h.pod("huge", { cpu = "2000" })))
    local reason = plan.unschedulable[1].reason
    assert.matches("no instance type in NodePool default has 2000 cpu; the largest allowed", reason, 1, true)
    local np = h.nodepool("small", { requirements = { { "karpenter.k8s.aws/instance-cpu", "Lt", { "9" } } } })
    plan = h.plan(h.docs(np, h.pod("big", { cpu = "9" })))
    assert.matches("no instance type in NodePool small has 9 cpu; the largest allowed %(.+%) has 7910m allocatable of 8",
      plan.unschedulable[1].reason)
  end)

  it("rejects unknown CLI options and output formats", function()
    local _, err, code = h.cli("plan --frobnicate")
    assert.are.equal(2, code)
    assert.matches("unknown or incomplete option --frobnicate", err, 1, true)
    _, err, code = h.cli("plan -o xml")
    assert.are.equal(2, code)
    assert.matches("expected json, yaml or table", err, 1, true)
    -- standard input reads once
    _, err, code = h.cli("plan --scheduler-config - - examples/quickstart.yaml", "")
    assert.are.equal(2, code)
    assert.matches("- (standard input) given 2 times; it can be read once", err, 1, true)
    -- another command's option is none of this one's, not taken and ignored
    for _, c in ipairs { "disrupt --packing ffd", "disrupt --timings", "pool --catalog azure-eastus",
      "pool --packing ffd", "pool --policy-dir policies", "pool --unavailable x.yaml" } do
      _, err, code = h.cli(c .. " examples/quickstart.yaml")
      assert.are.equal(2, code, c)
      assert.matches("unknown or incomplete option " .. c:match("(%-%-%S+)") .. " (dovetail " .. c:match("^%a+") ..
        " --help lists them)", err, 1, true)
    end
  end)
end)
