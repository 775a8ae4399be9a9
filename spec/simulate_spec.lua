-- dovetail simulate: the daemon's controller replayed on a virtual clock.
-- Scenarios whose outcome is worked out by hand, checked step by step.
local h = require "helper"
local json = require "dkjson"


-- m5.xlarge in us-east-1a only: 4 vCPU (3,920m allocatable), $0.192/h on demand.
local function pool(name, cts)
  return ([[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: %s}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [%s]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: ["m5.xlarge"]}
        - {key: topology.kubernetes.io/zone, operator: In, values: ["us-east-1a"]}
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 30s}
]]):format(name, cts)
end

local SCALE_DOWN = [[
events:
  - at: 0s
    apply:
      apiVersion: apps/v1
      kind: Deployment
      metadata: {name: web, namespace: shop}
      spec:
        replicas: 6
        template:
          metadata: {labels: {app: web}}
          spec:
            containers:
              - name: web
                resources: {requests: {cpu: "1", memory: 1Gi}}
  - at: 30m
    scale: {kind: Deployment, namespace: shop, name: web, replicas: 2}
]]

local INTERRUPT = [[
events:
  - at: 0s
    pods: {name: batch, namespace: jobs, count: 3, cpu: "1", memory: 1Gi}
  - at: 10m
    unavailable: {capacityType: spot, for: 1h}
  - at: 10m
    interrupt: {capacityType: spot}
]]

-- Run a simulation; returns the decoded --out document, stdout, stderr, code.
local function simulate(args)
  local out = os.tmpname()
  local stdout, stderr, code = h.cli("simulate --out " .. out .. " " .. args)
  local doc = code == 0 and json.decode(h.slurp(out)) or nil
  os.remove(out)
  return doc, stdout, stderr, code
end

local function at(run, t)
  for _, s in ipairs(run.series) do
    if s.t == t then return s end
  end
  error("no sample at t=" .. t)
end

describe("dovetail simulate", function()
  local od = h.write(pool("od", '"on-demand"'))
  local mixed = h.write(pool("mixed", '"spot", "on-demand"'))

  it("scales up, holds still, and consolidates after a scale-down", function()
    local doc, _, err, code = simulate("-f " .. od .. " --scenario " .. h.write(SCALE_DOWN) ..
      " --duration 1h --disrupt-interval 1m --check")
    assert.are.equal(0, code, err)
    local run = doc.runs[1]
    -- 6 pods of 1 cpu: 3 per m5.xlarge, 2 nodes, launched (and billed) at 6 s (1 s batch, 5 s answer),
    -- running at 66 s (60 s start-up)
    assert.are.same({ 2, 6, 0 }, { at(run, 60).nodes["on-demand"], at(run, 60).pending, at(run, 60).running })
    local s = at(run, 120)
    assert.are.same({ 2, 0, 6, 2 }, { s.nodes["on-demand"], s.pending, s.running, s.launches })
    assert.are.equal(66, run.summary.pendingP99Seconds)
    -- nothing moves while nothing changes: no launch, no disruption for 28 minutes
    s = at(run, 1740)
    assert.are.same({ 2, 2, 0 }, { s.nodes["on-demand"], s.launches, s.disruptions })
    -- scaled to 2 at 30m: the 2 pods fit one node, the other goes
    s = at(run, 1920)
    assert.are.same({ 1, 0, 2, 1 }, { s.nodes["on-demand"], s.pending, s.running, s.disruptions })
    assert.are.same({ 1, 2, 0, "held" },
      { run.summary.disruptions, run.summary.nodesLaunched, run.summary.pendingAtEnd, run.summary.invariants })
    -- the cost is the nodes' lifetimes at $0.192/h: 2 nodes for 114 s at t=120
    assert.is_true(math.abs(at(run, 120).cost - 2 * 0.192 * 114 / 3600) < 1e-5)
  end)

  it("spreads a Deployment's replicas by --scheduler-config over the zones, and keeps them so for hours", function()
    local zonal = h.write("podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: " ..
      "topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n")
    local three = h.write((pool("od3", '"on-demand"'):gsub('values: %["us%-east%-1a"%]',
      'values: ["us-east-1a", "us-east-1b", "us-east-1c"]')))
    -- three 1-cpu replicas with a selector (its ReplicaSet's, which the simulator stores)
    local scenario = h.write((SCALE_DOWN:gsub("replicas: 6\n", "replicas: 3\n        selector: {matchLabels: " ..
      "{app: web}}\n"):gsub("  %- at: 30m\n[^\n]*\n", "")))
    local doc, _, err, code = simulate("-f " .. three .. " --scenario " .. scenario ..
      " --duration 3h --disrupt-interval 1m --check")
    assert.are.equal(0, code, err)
    local s = at(doc.runs[1], 10800)
    assert.are.same({ 1, 3, 1, 0 }, { s.nodes["on-demand"], s.running, s.launches, s.disruptions })
    doc, _, err, code = simulate("-f " .. three .. " --scenario " .. scenario ..
      " --duration 3h --disrupt-interval 1m --check --scheduler-config " .. zonal)
    assert.are.equal(0, code, err)
    s = at(doc.runs[1], 10800)
    assert.are.same({ 3, 3, 3, 0 }, { s.nodes["on-demand"], s.running, s.launches, s.disruptions })
    -- a ReplicaSet of the cluster named as the Deployment (scaled to 0, selecting other pods) stays
    -- the cluster's: the Deployment's pods keep their own selector, and spread
    local rs = h.write("apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: web, namespace: shop}\nspec:\n" ..
      "  replicas: 0\n  selector: {matchLabels: {app: batch}}\n  template:\n    metadata: {labels: {app: batch}}\n" ..
      "    spec:\n      containers:\n      - name: b\n        resources: {requests: {cpu: '3', memory: 1Gi}}\n")
    local dep = h.write(((SCALE_DOWN:gsub("replicas: 6\n", "replicas: 3\n        selector: {matchLabels: " ..
      "{app: web}}\n"):match("apply:\n(.-)  %- at: 30m")):gsub("\n      ", "\n"):gsub("^      ", "")))
    -- nor does one named as the simulator's own would be, before or after the Deployment
    local rs2 = h.write((h.slurp(rs):gsub("name: web,", "name: web-simulated,")))
    for _, files in ipairs({ dep .. " -f " .. rs, rs .. " -f " .. dep, dep .. " -f " .. rs2, rs2 .. " -f " .. dep }) do
      doc, _, err, code = simulate("-f " .. three .. " -f " .. files ..
        " --duration 1h --disrupt-interval 1m --check --scheduler-config " .. zonal)
      assert.are.equal(0, code, err)
      s = at(doc.runs[1], 3600)
      assert.are.same({ 3, 0, 3 }, { s.nodes["on-demand"], s.pending, s.running })
    end
  end)

  it("runs pods on the Nodes the cluster started with, as the kube-scheduler binds them", function()
    -- an m5.xlarge the cluster has (3,910m allocatable) with room for two of the three pods;
    -- the third needs a new node
    local node = [[
apiVersion: v1
kind: Node
metadata:
  name: existing-1
  creationTimestamp: "2026-01-01T00:00:00Z"
  labels:
    karpenter.sh/nodepool: od
    karpenter.sh/initialized: "true"
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: m5.xlarge
    topology.kubernetes.io/zone: us-east-1a
    kubernetes.io/arch: amd64
    kubernetes.io/os: linux
    kubernetes.io/hostname: existing-1
spec: {providerID: "aws:///us-east-1a/i-0aaaaaaaaaaaaaaa1"}
status:
  allocatable: {cpu: 2500m, memory: 14Gi, pods: "58"}
  conditions:
  - {type: Ready, status: "True", lastTransitionTime: "2026-01-01T00:00:00Z"}
]]
    local scenario = [[
events:
  - at: 0s
    pods: {name: batch, namespace: jobs, count: 3, cpu: "1", memory: 1Gi}
]]
    local doc, _, err, code = simulate("-f " .. od .. " -f " .. h.write(node) .. " --scenario " ..
      h.write(scenario) .. " --duration 1h --disrupt-interval 1m --check")
    assert.are.equal(0, code, err)
    local run = doc.runs[1]
    -- two bound to existing-1 by the first round (1 s batch), the third on a new m5.xlarge
    -- launched then and running at 66 s
    local s = at(run, 60)
    assert.are.same({ 1, 1, 2 }, { s.nodes["on-demand"], s.pending, s.running })
    s = at(run, 120)
    assert.are.same({ 1, 0, 3 }, { s.nodes["on-demand"], s.pending, s.running })
    assert.are.same({ 1, 0, "held" }, { run.summary.nodesLaunched, run.summary.pendingAtEnd, run.summary.invariants })
    assert.are.equal(66, run.summary.pendingP99Seconds)
  end)

  it("checks budgets against every node of a pool, those it did not launch too, as the pass counts them", function()
    -- the dump's pool has a Node the daemon did not launch: 20 claims and it
    -- make 21 nodes, 10% of which is 3 (rounded up); a check that counted
    -- the claims alone called the third disruption of a pass a broken budget
    local doc, _, err, code = simulate("-f spec/fixtures/cluster-dump.yaml --trace bench/trace-azure-vm-2017.csv.gz "
      .. "--trace-limit 3000 --duration 1h --disrupt-interval 1m --check")
    assert.equal(0, code, err)
    assert.is_true(doc.runs[1].summary.disruptions > 0)
  end)

  it("falls back to on-demand when spot is interrupted and out, and returns to spot after", function()
    local doc, _, err, code = simulate("-f " .. mixed .. " --scenario " .. h.write(INTERRUPT) ..
      " --duration 2h --disrupt-interval 1m --check")
    assert.are.equal(0, code, err)
    local run = doc.runs[1]
    local s = at(run, 120) -- spot is cheaper: one spot node for the 3 pods
    assert.are.same({ 1, 0, 3 }, { s.nodes.spot, s.nodes["on-demand"], s.running })
    s = at(run, 600) -- the two-minute warning at 10m: the node is drained, its pods pending
    assert.are.same({ 0, 3, 1 }, { s.nodes.spot, s.pending, s.interruptions })
    s = at(run, 720) -- spot is refused for the hour: on-demand takes the pods
    assert.are.same({ 0, 1, 0, 3 }, { s.nodes.spot, s.nodes["on-demand"], s.pending, s.running })
    s = at(run, 4200) -- still on-demand until spot is back at 70m ...
    assert.are.same({ 0, 1 }, { s.nodes.spot, s.nodes["on-demand"] })
    s = at(run, 7200) -- ... then consolidation replaces it with the cheaper spot node
    assert.are.same({ 1, 0, 3 }, { s.nodes.spot, s.nodes["on-demand"], s.running })
    assert.are.same({ Underutilized = 1 }, run.summary.disruptionsByReason)
    assert.are.same({ 1, 3, 0 }, { run.summary.interruptions, run.summary.nodesLaunched, run.summary.pendingAtEnd })
  end)

  it("launches every replacement of a drifted node before the node goes", function()
    -- 6 pods on one m5.2xlarge; at 10m the NodePool allows only m5.xlarge, which holds 3 of them:
    -- the drifted node needs two replacements, and its pods run on it until both are up
    local start = h.write((pool("drifty", '"on-demand"'):gsub("m5%.xlarge", "m5.2xlarge")))
    local scen = h.write("events:\n  - at: 0s\n    pods: {name: app, namespace: shop, count: 6, cpu: \"1\", memory: 1Gi}\n" ..
      "  - at: 10m\n    apply:\n" .. pool("drifty", '"on-demand"'):gsub("\n(.)", "\n      %1"):gsub("^", "      "))
    local doc, _, err, code = simulate("-f " .. start .. " --scenario " .. scen ..
      " --duration 30m --disrupt-interval 1m --step 10s --check")
    assert.are.equal(0, code, err)
    local run = doc.runs[1]
    for _, s in ipairs(run.series) do
      if s.t >= 70 then assert.are.same({ s.t, 0, 6 }, { s.t, s.pending, s.running }) end
    end
    assert.are.same({ Drifted = 1 }, run.summary.disruptionsByReason)
    assert.are.same({ 3, 2 }, { run.summary.nodesLaunched, run.series[#run.series].nodes["on-demand"] })
  end)

  it("deletes a claim whose node never initializes after the startup timeout, and not before", function()
    local scen = h.write("events:\n  - at: 0s\n    failStartup: {count: 1}\n" ..
      "  - at: 0s\n    pods: {name: app, namespace: shop, count: 3, cpu: \"1\", memory: 1Gi}\n")
    local doc, _, err, code = simulate("-f " .. od .. " --scenario " .. scen .. " --duration 30m --disrupt-interval 1m --check")
    assert.are.equal(0, code, err)
    local run = doc.runs[1]
    -- launched at 6 s, billed, never initialized: its pods wait
    local s = at(run, 900)
    assert.are.same({ 1, 3, 0, 0 }, { s.nodes["on-demand"], s.pending, s.running, s.disruptions })
    -- 15 minutes after the launch the next pass (at 16m) deletes it; a new claim takes the pods
    s = at(run, 960)
    assert.are.same({ 0, 3, 1 }, { s.nodes["on-demand"], s.pending, s.disruptions })
    s = at(run, 1080)
    assert.are.same({ 1, 0, 3, 2 }, { s.nodes["on-demand"], s.pending, s.running, s.launches })
    assert.are.same({ Unhealthy = 1 }, run.summary.disruptionsByReason)
    assert.are.equal(1026, run.summary.pendingP99Seconds) -- 960 s + 1 s batch + 5 s launch + 60 s start-up
  end)

  it("interrupts spot nodes at the advisor's rate, and every interrupted pod runs again", function()
    local advisor = h.write('{"instanceTypes": {"m5.xlarge": {"r": 4, "perHour": 0.2}}}')
    local scen = h.write("events:\n  - at: 0s\n    pods: {name: p, count: 30, cpu: \"1\", memory: 1Gi}\n")
    local doc, _, err, code = simulate("-f " .. mixed .. " --scenario " .. scen .. " --spot-advisor " .. advisor ..
      " --duration 12h --step 10m --check --seed 7")
    assert.are.equal(0, code, err)
    local sm = doc.runs[1].summary
    -- 10 nodes x 12 h x 0.2/h: about 24 interruptions expected
    assert.is_true(sm.interruptions >= 10 and sm.interruptions <= 45, "interruptions " .. sm.interruptions)
    assert.are.same({ 0, "held" }, { sm.pendingAtEnd, sm.invariants })
    assert.is_true(sm.nodesLaunched >= 10 + sm.interruptions - 2)
  end)

  it("replays the trace format, compares policies and is byte-identical for the same seed", function()
    local trace = h.write([[
# arrival_s,batch,cpu_millicores,memory_MiB,duration_s,duration_hi_s,censored
arrival_s,batch,cpu_millicores,memory_MiB,duration_s,duration_hi_s,censored
0,0,2000,4096,600,900,0
0,0,2000,4096,3600,7200,0
300,1,4000,8192,1200,1800,0
300,1,1000,2048,0,300,0
600,2,8000,16384,0,0,1
900,3,500,1024,300,600,0
]])
    local args = "-f " .. mixed .. " --trace " .. trace .. " --baseline --policy policies/default.lua --step 5m --check"
    local a, table_out, err, code = simulate(args)
    assert.are.equal(0, code, err)
    assert.are.same({ "baseline (ffd)", "default.lua" }, { a.runs[1].name, a.runs[2].name })
    assert.are.same({ "ffd", "cost" }, { a.runs[1].packing, a.runs[2].packing })
    for _, r in ipairs(a.runs) do
      assert.are.same({ 6, 1 }, { r.summary.pods, r.series[#r.series].running }) -- the censored one stays
    end
    assert.truthy(table_out:match("baseline %(ffd%)") and table_out:match("default%.lua"))
    local o1, o2 = os.tmpname(), os.tmpname()
    assert.are.equal(0, select(3, h.cli("simulate --out " .. o1 .. " " .. args)))
    assert.are.equal(0, select(3, h.cli("simulate --out " .. o2 .. " " .. args)))
    assert.are.equal(h.slurp(o1), h.slurp(o2))
  end)

  describe("catches a broken invariant (a test build breaks each on purpose)", function()
    local five = "0,0,1000,1024,3600,3600,0\n0,0,1000,1024,3600,3600,0\n0,0,1000,1024,3600,3600,0\n" ..
      "0,0,1000,1024,3600,3600,0\n0,0,1000,1024,3600,3600,0\n"
    -- four pods of 3 cpu, a node each, all gone at 30 minutes: four empty nodes at once, and
    -- the NodePool's default budget (10%, rounded up) lets one go per pass
    local four = "0,0,3000,1024,1800,1800,0\n60,1,3000,1024,1740,1740,0\n120,2,3000,1024,1680,1680,0\n" ..
      "180,3,3000,1024,1620,1620,0\n"
    local faults = {
      ["lose-pod"] = { "pods: %d+ arrived, but", five },
      overcommit = { "more than its allocatable", five },
      ["silent-delete"] = { "was deleted with pods on it, and no decision names it", five },
      cost = { "the cost integral", five },
      -- the controller is given the NodePool without its budgets
      budget = { "NodePool od: 2 of its 4 nodes disrupting at once, more than its Empty budget of 1", four },
    }
    for fault, case in pairs(faults) do
      local message, rows = case[1], case[2]
      it(fault, function()
        local trace = h.write(rows)
        local bin = h.bin:gsub("dovetail$", "dovetail-faults")
        local errf = os.tmpname()
        local ok, _, code = os.execute("DOVETAIL_SIM_FAULT=" .. fault .. " " .. bin .. " simulate -f " .. od ..
          " --trace " .. trace .. " --duration 1h --disrupt-interval 1m --check >/dev/null 2>" .. errf)
        local err = h.slurp(errf)
        assert.is_falsy(ok)
        assert.are.equal(1, code)
        assert.truthy(err:match("invariant broken at 2026%-01%-01T[%d:]+Z %(%+%d+s%): .*" .. message), err)
        -- the same run without the fault holds every invariant
        local _, _, code2 = os.execute(bin .. " simulate -f " .. od .. " --trace " .. trace ..
          " --duration 1h --disrupt-interval 1m --check >/dev/null 2>&1")
        assert.are.equal(0, code2)
      end)
    end
  end)

  describe("bad input", function()
    it("names the file and line of a bad trace row", function()
      local trace = h.write("0,0,1000,1024,60,60,0\n60,0,abc,1024,60,60,0\n")
      local _, _, err, code = simulate("-f " .. od .. " --trace " .. trace)
      assert.are.equal(1, code)
      assert.truthy(err:find(trace .. ":2: expected arrival_s,batch,cpu_millicores", 1, true), err)
      trace = h.write("60,0,1000,1024,60,60,0\n0,0,1000,1024,60,60,0\n")
      _, _, err = simulate("-f " .. od .. " --trace " .. trace)
      assert.truthy(err:find(trace .. ":2: arrivals must be in time order", 1, true), err)
    end)

    it("names the event and field of a bad scenario", function()
      local scen = h.write("events:\n  - at: 1m\n    scael: {name: web}\n")
      local _, _, err, code = simulate("-f " .. od .. " --scenario " .. scen)
      assert.are.equal(1, code)
      assert.truthy(err:find(scen .. ": events[0].scael: unknown field", 1, true), err)
      scen = h.write("events:\n  - at: soon\n    pods: {count: 1}\n")
      _, _, err = simulate("-f " .. od .. " --scenario " .. scen)
      assert.truthy(err:find("events[0].at: expected a duration", 1, true), err)
    end)

    it("checks every event's fields at the start, as plan reads objects: a bad one never stalls the run", function()
      for _, c in ipairs {
        { "apply: {kind: Pod, apiVersion: v1, metadata: {name: bad, namespace: b}, spec: {containers: [{name: c, "
          .. "resources: {requests: {cpu: \"-1\"}}}]}}",
          "events[0].apply: Pod b/bad: spec.containers[0].resources.requests.cpu: must not be negative" },
        { "apply: {apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: x}, spec: {weight: lots}}",
          "events[0].apply: NodePool x: spec.weight" },
        { "price: {instanceType: m5.xlarge, price: -5}", "events[0].price: expected instanceType and a price" },
        { "pods: {count: -1}", "events[0].pods.count: expected a whole number from 1 to 2000000" },
        { "pods: {count: x}", "events[0].pods.count: expected a whole number" },
        { "pods: {count: 1000000000, cpu: 1m}", "events[0].pods.count: expected a whole number from 1 to 2000000" },
        { "pods: {cpu: NaN}", "events[0].pods.cpu: expected a quantity" },
        { "pods: {lifetime: -1h}", "events[0].pods.lifetime: expected a duration" },
        { "pods: {cuont: 3}", "events[0].pods.cuont: unknown field" },
        { "delete: Pod", "events[0].delete: expected Kind/namespace/name" },
        { "delete: Pod/a/b/c/d", "events[0].delete: expected Kind/namespace/name" },
        { "unavailable: {capacityType: bogus}", "events[0].unavailable.capacityType: expected on-demand, spot or" },
        { "unavailable: {for: -1h}", "events[0].unavailable.for: expected a duration" },
        { "failStartup: {count: -1}", "events[0].failStartup.count: expected a whole number" },
        { "interrupt: {count: -5}", "events[0].interrupt.count: expected a whole number" },
        { "scale: {kind: Deployment, name: web, replicas: -2}", "events[0].scale.replicas: expected a whole number" },
      } do
        local scen = h.write("events:\n  - at: 1m\n    " .. c[1] .. "\n")
        local _, _, err, code = simulate("-f " .. od .. " --duration 1h --scenario " .. scen)
        assert.are.equal(1, code, c[1])
        assert.truthy(err:find(scen .. ": " .. c[2], 1, true), c[1] .. " -> " .. err)
      end
    end)

    it("refuses a trace cut short or with a row past the limits on a pod", function()
      local rows = {}
      for i = 1, 4000 do rows[i] = ("%d,0,1000,1024,60,60,0"):format(i) end
      local plain = h.write(table.concat(rows, "\n") .. "\n")
      local gz = plain .. ".gz"
      assert(os.execute("gzip -c " .. plain .. " > " .. gz))
      local f = assert(io.open(gz, "rb"))
      local bytes = f:read("a")
      f:close()
      local cut = h.write(bytes:sub(1, 30))
      local _, _, err, code = simulate("-f " .. od .. " --duration 1h --trace " .. cut)
      assert.are.equal(1, code, err)
      assert.truthy(err:find("the gzip stream ends early", 1, true), err)
      local _, _, err2, code2 = simulate("-f " .. od .. " --duration 1h --trace " .. gz)
      assert.are.equal(0, code2, err2)
      local big = h.write("0,0,500,999999999999,600,1200,0\n") -- 2^63 milli-bytes and more
      _, _, err, code = simulate("-f " .. od .. " --duration 1h --trace " .. big)
      assert.are.equal(1, code)
      assert.truthy(err:find(big .. ":1: memory_MiB is absurd", 1, true), err)
      os.remove(gz)
    end)

    it("summarizes a run in which no pod ever waited", function()
      local doc, _, err, code = simulate("-f " .. od .. " --duration 10m")
      assert.are.equal(0, code, err)
      assert.are.equal(0, doc.runs[1].summary.pods)
    end)

    it("refuses a missing cluster, a bad duration or packing with the usage", function()
      local _, err, code = h.cli("simulate --duration 1h")
      assert.are.equal(2, code)
      assert.truthy(err:match("the cluster to start from is missing"))
      _, err, code = h.cli("simulate -f " .. od .. " --duration soon")
      assert.are.equal(2, code)
      assert.truthy(err:match('%-%-duration: expected a duration %(90s, 10m, 2h%), got "soon"'))
      _, err, code = h.cli("simulate -f " .. od .. " --packing best")
      assert.are.same({ 2, true }, { code, err:match("expected cost or ffd") ~= nil })
      local out = h.cli("simulate --help")
      assert.truthy(out:match("^usage: dovetail simulate"))
    end)

    it("reports a cluster file the planner cannot read with its file and field", function()
      local bad = h.write("apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: x}\nspec: {weight: lots}\n")
      local _, _, err, code = simulate("-f " .. bad)
      assert.are.equal(1, code)
      assert.truthy(err:find(bad, 1, true) and err:match("weight"), err)
    end)
  end)

  it("writes a self-contained HTML report that a browser renders", function()
    local dir = h.tmpdir()
    local report = dir .. "/report.html"
    local _, _, err, code = simulate("-f " .. mixed .. " --scenario " .. h.write(INTERRUPT) ..
      " --baseline --policy policies/default.lua --duration 2h --report " .. report)
    assert.are.equal(0, code, err)
    local html = h.slurp(report)
    assert.is_nil(html:match("<script") or html:match("https?://[%w.]+/[%w/]*%.js"))
    assert.is_nil(html:match('src="http') or html:match('href="http'))
    local chromium = io.popen("command -v chromium chromium-browser 2>/dev/null"):read("l")
    if not chromium then
      pending("chromium is not installed (make deps installs it)")
      return
    end
    -- the browser is not ours to sanitize: it runs without the sanitizer runtime the suite may preload
    local clean = "timeout 120 env -u LD_PRELOAD -u ASAN_OPTIONS -u UBSAN_OPTIONS -u LSAN_OPTIONS "
    local flags = " --headless --no-sandbox --disable-gpu --disable-quic --no-first-run --disable-background-networking" ..
      " --disable-component-update --disable-sync --user-data-dir=" .. dir .. "/profile "
    local dom = io.popen(clean .. chromium .. flags .. "--dump-dom file://" .. report .. " 2>/dev/null"):read("a")
    local _, charts = dom:gsub("<svg", "")
    local _, lines = dom:gsub('<polyline class="series"', "")
    assert.are.equal(8, charts)
    assert.are.equal(16, lines) -- 8 charts x 2 runs
    assert.truthy(dom:match('<table id="summary">') and dom:match("baseline %(ffd%)") and dom:match("default%.lua"))
    os.execute(clean .. chromium .. flags .. "--window-size=1200,1400 --screenshot=" .. dir .. "/shot.png file://" .. report ..
      " >/dev/null 2>&1")
    local png = h.slurp(dir .. "/shot.png")
    assert.are.equal("\137PNG", png:sub(1, 4))
    -- a blank 1200x1400 page compresses to a few KB; charts and a table do not
    assert.is_true(#png > 30000, "screenshot of " .. #png .. " bytes")
  end)
  it("frees each run's policy when the run ends: the peak RSS does not grow by a Lua heap per --policy", function()
    local pols = {}
    for _ = 1, 12 do pols[#pols + 1] = "--policy policies/default.lua" end
    local _, err, code = h.cli("simulate -f examples/simulate/cluster.yaml --scenario examples/simulate/scenario.yaml"
      .. " --duration 24h --timings -o json " .. table.concat(pols, " "))
    assert.are.equal(0, code, err)
    local peaks = {}
    for mib in err:gmatch("peak RSS (%d+) MiB") do peaks[#peaks + 1] = tonumber(mib) end
    assert.are.equal(12, #peaks, err)
    -- each run's hooks leave some 15 MiB of Lua heap; kept to the end, 12 runs took it from 46 to 200+ MiB
    assert.is_true(peaks[12] - peaks[1] < 80, err)
  end)

end)
