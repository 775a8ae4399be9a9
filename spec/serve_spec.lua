-- The daemon: dovetail serve on a loopback port, driven over HTTP with curl.
local h = require "helper"

local function sleep(s) os.execute("sleep " .. s) end

local function slurp(path)
  local f = io.open(path)
  if not f then return "" end
  local s = f:read("a")
  f:close()
  return s
end

-- Whether process pid still runs (a zombie has stopped running: its parent
-- is gone, and the reaper may take its time).
local function alive(pid)
  local stat = io.open("/proc/" .. pid .. "/stat")
  if stat then
    local s = stat:read("a") or ""
    stat:close()
    return s:match("^%d+ %b() (%a)") ~= "Z"
  end
  return os.execute("kill -0 " .. pid .. " 2>/dev/null") == true
end

-- Wait until process pid has stopped, up to seconds of wall time (a loaded
-- machine under the sanitizers is slow, and only a failing spec waits that long).
local function wait_gone(pid, seconds, what)
  local deadline = os.time() + seconds
  while alive(pid) do
    if os.time() > deadline then error(what .. " (pid " .. pid .. ") still runs after " .. seconds .. " s") end
    sleep(0.05)
  end
end

-- Start `dovetail <args>` in the background and wait for the address it
-- logs; returns {port, pid, log, stop()}.
local function spawn(args, what, bin)
  local log = os.tmpname()
  local p = io.popen("sh -c '" .. (bin or h.bin) .. " " .. args .. " 2>" .. log .. " & echo $!'")
  local pid = p:read("l")
  p:close()
  local port
  local deadline = os.time() + 30
  repeat
    port = slurp(log):match('"listening","msg":"http://[%d.]+:(%d+)')
    if port then break end
    sleep(0.05)
  until os.time() > deadline
  assert(port, what .. " did not start: " .. slurp(log))
  local d = { port = port, pid = pid, log = log }
  -- SIGTERM, and wait until it has stopped (a graceful stop finishes the
  -- provider calls in flight for up to 10 s; the state is written last).
  function d.stop()
    os.execute("kill -TERM " .. pid .. " 2>/dev/null")
    wait_gone(pid, 40, what .. " stopped with SIGTERM")
  end
  -- SIGKILL, and wait until it is gone.
  function d.kill()
    os.execute("kill -KILL " .. pid .. " 2>/dev/null")
    wait_gone(pid, 40, what .. " killed with SIGKILL")
  end
  return d
end

-- The daemon with short batch windows; bin runs in place of dovetail (a
-- test build, with its environment).
local function start(args, bin)
  return spawn("serve --listen 127.0.0.1:0 --batch-idle 50ms --batch-max 500ms " .. (args or ""), "the daemon", bin)
end

-- A policy file in a directory of its own: its path, and put(text), which
-- writes each version whole and renames it into place. Written in place, the
-- file is empty between the truncation and the write, and a spec descheduled
-- there for the daemon's 30 ms debounce makes it read (and count) that too.
local function policy_file()
  local dir = h.tmpdir()
  local pol = dir .. "/p.lua"
  local function put(text)
    local f = assert(io.open(pol .. ".new", "w"))
    f:write(text)
    f:close()
    assert(os.rename(pol .. ".new", pol))
  end
  return dir, pol, put
end

-- curl: returns body, HTTP status. A request that gets no answer in a minute
-- fails the spec instead of hanging the suite.
local function http(d, method, path, body, extra)
  local out = os.tmpname()
  -- curl is not ours: keep the sanitizer runtime (LD_PRELOAD under SANITIZE=1) out of it
  local cmd = "env -u LD_PRELOAD curl -s --max-time 60 -o " .. out .. " -w '%{http_code}' -X " .. method .. " "
    .. (extra or "")
  if body then
    local f = h.write(body)
    cmd = cmd .. " --data-binary @" .. f
  end
  local p = io.popen(cmd .. " http://127.0.0.1:" .. d.port .. path)
  local code = tonumber(p:read("a"))
  p:close()
  local text = slurp(out)
  os.remove(out)
  return text, code
end

-- Wait until fn() is true (by default up to 15 s of wall time: a loaded
-- machine under the sanitizers is slow, and only a failing spec waits that long).
local function eventually(fn, what, seconds)
  local deadline = os.time() + (seconds or 15)
  repeat
    if fn() then return end
    sleep(0.05)
  until os.time() > deadline
  error("timed out waiting for " .. what)
end

-- A number the daemon reports: a metric's value (name with its labels, as
-- /metrics prints it) or a number field of /v1/state.
local function metric(d, name)
  local m = http(d, "GET", "/metrics")
  local at = m:find("\n" .. name .. " ", 1, true)
  return at and tonumber(m:match("^%S+", at + #name + 2)) or error("no metric " .. name .. " in\n" .. m)
end

local function state_number(d, field)
  local s = http(d, "GET", "/v1/state")
  return tonumber(s:match('"' .. field .. '":%s*(%d+)')) or error("no " .. field .. " in " .. s)
end

-- Let the daemon work for `ms` milliseconds of its own time: its event loop
-- runs a 100 ms timer and counts each run (dovetail_loop_lag_seconds_count),
-- so a daemon starved of CPU is given the time its timers need, not a fixed
-- sleep that a loaded machine may swallow.
local function daemon_time(d, ms)
  local target = metric(d, "dovetail_loop_lag_seconds_count") + math.ceil(ms / 100) + 1
  eventually(function() return metric(d, "dovetail_loop_lag_seconds_count") >= target end,
    ms .. " ms of the daemon's time", 15 + 3 * ms // 1000)
end

-- Wait until the daemon has dispatched n more rounds (provisioning rounds
-- and disruption passes: /v1/state's "rounds"). A round is dispatched only
-- when none runs, so when round r + n + 1 starts, the n before it are done.
local function rounds(d, n, what)
  local target = state_number(d, "rounds") + n + 1
  eventually(function() return state_number(d, "rounds") >= target end, what or (n .. " more rounds"), 15 + n)
end

-- The provisioning rounds the daemon has logged: {pending, scheduled, new claims, unschedulable} each.
-- After n more rounds and passes: `launches` on-demand claims launched in all, and no node
-- deleted nor any disruption decided (a daemon that converged and stays put).
local function stays_put(d, n, launches)
  rounds(d, n, n .. " rounds and disruption passes")
  assert.equal(launches, metric(d, 'dovetail_claims_launched_total{capacity_type="on-demand"}'))
  assert.equal(0, metric(d, "dovetail_nodes_deleted_total"))
  local decisions = http(d, "GET", "/v1/decisions")
  assert.is_nil(decisions:match('"kind":%s*"disrupt"'), decisions)
end

local function logged_rounds(d)
  local out = {}
  for p, s, c, u in slurp(d.log):gmatch('"msg":"round %d+: (%d+) pending pods, (%d+) scheduled, (%d+) new claims, (%d+) unschedulable') do
    out[#out + 1] = { pending = tonumber(p), scheduled = tonumber(s), claims = tonumber(c), unschedulable = tonumber(u) }
  end
  return out
end

local quickstart = slurp("examples/quickstart.yaml")

-- A stored NodeClaim's capacity-spread label, once its requirement is seen to pin that value.
local function spread_value(o)
  local v, req = o.metadata.labels["capacity-spread"], nil
  for _, r in ipairs(o.spec.requirements) do
    if r.key == "capacity-spread" then req = r end
  end
  assert.are.same({ key = "capacity-spread", operator = "In", values = { v } }, req)
  return v
end

-- Edit a stopped daemon's state file as an earlier version stored pod a: a request of 2^51
-- devices, which this version refuses; the journal goes, so the file is the state.
local function refused_pod_a(st)
  local text = slurp(st)
  local n
  text, n = text:gsub('("name":"a","namespace":"default".-"requests":{)', '%1"example.com/dev":"2251799813685248",')
  assert.equal(1, n, text)
  local f = io.open(st, "w")
  f:write(text)
  f:close()
  os.remove(st .. ".journal")
end

-- A daemon started with args that has launched the quickstart's instance.
local function launched(args)
  local d = start(args)
  http(d, "PUT", "/v1/objects", quickstart)
  eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "an instance")
  return d
end

describe("dovetail serve", function()
  it("launches instances for pending pods after the batch window", function()
    local d = start()
    local body, code = http(d, "PUT", "/v1/objects", quickstart)
    assert.equal(200, code, body)
    assert.matches('"applied":4', body)
    eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "an instance")
    local plan = http(d, "GET", "/v1/plan")
    assert.matches('"nodeClaims"', plan)
    local metrics = http(d, "GET", "/metrics")
    assert.matches('dovetail_claims_launched_total{capacity_type="spot"} 1', metrics, 1, true)
    assert.matches("dovetail_plan_duration_seconds_count", metrics, 1, true)
    assert.matches('"kind":%s*"launch"', (http(d, "GET", "/v1/decisions")))
    d.stop()
  end)

  it("keeps a static NodePool at its replicas with no pod at all, and puts pods on its nodes", function()
    local d = start()
    local np = [[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: fixed}
spec:
  replicas: 2
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m6i.large]}
]]
    local function instances()
      return select(2, http(d, "GET", "/v1/state"):gsub('"id":%s*"i%-', ""))
    end
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", np)))
    eventually(function() return instances() == 2 end, "two instances")
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", h.pod("small", { cpu = "250m", memory = "256Mi" }))))
    eventually(function() return http(d, "GET", "/v1/plan"):match('"pod": "default/small"') end, "the pod bound")
    assert.equal(2, instances(), "the pod takes a static node; no third instance")
    d.stop()
  end)

  it("uses the next offering when the cheapest has no capacity, and shows the mark", function()
    local d = launched("--sim-ice m6i.4xlarge/us-east-1a/spot")
    local state = http(d, "GET", "/v1/state")
    assert.matches('"zone":%s*"us%-east%-1b"', state)
    assert.matches('"unavailableOfferings":%s*%[%s*{', state)
    assert.matches('insufficient_capacity"} 1', (http(d, "GET", "/metrics")), 1, true)
    d.stop()
  end)

  it("replaces an instance after a spot interruption warning, elsewhere", function()
    local d = launched()
    local state = http(d, "GET", "/v1/state")
    local id, zone = state:match('"id":%s*"(i%-%x+)".-"zone":%s*"([%w-]+)"')
    local body = http(d, "POST", "/v1/events", '{"detail-type":"EC2 Spot Instance Interruption Warning",'
      .. '"source":"aws.ec2","detail":{"instance-id":"' .. id .. '"}}')
    assert.matches('"action":"replaced"', body)
    eventually(function()
      local s = http(d, "GET", "/v1/state")
      local nid = s:match('"id":%s*"(i%-%x+)"')
      return nid and nid ~= id
    end, "a replacement")
    state = http(d, "GET", "/v1/state")
    assert.is_nil(state:match('"zone":%s*"' .. zone:gsub("%-", "%%-") .. '",%s*"capacityType"'), "not in the interrupted zone")
    assert.matches('"capacityType":%s*"spot",%s*"instanceType":%s*"m6i.4xlarge",%s*"zone":%s*"' .. zone:gsub("%-", "%%-"), state)
    d.stop()
  end)

  it("keeps the old policy when a broken one is written, and takes a fixed one", function()
    local dir, pol, put = policy_file()
    put("return { rank = function(_, offs) local s = {} for i, o in ipairs(offs) do s[i] = o.price end return s end }\n")
    local d = start("--policy " .. pol)
    put("return { rank = function( }\n")
    eventually(function() return http(d, "GET", "/metrics"):match('reloads_total{result="error"} 1\n') end, "a failed reload")
    assert.matches("kept the previous policy", (http(d, "GET", "/v1/state")))
    assert.matches('"hooks":%s*"rank"', (http(d, "GET", "/v1/state")))
    put("return { price = function(offs) local p = {} for i, o in ipairs(offs) do p[i] = o.price end return p end }\n")
    eventually(function() return http(d, "GET", "/v1/state"):match('"hooks":%s*"price"') end, "the fixed policy")
    assert.matches('reloads_total{result="ok"} 1\ndovetail_policy_reloads_total{result="error"} 1\n', (http(d, "GET", "/metrics")), 1, true)
    d.stop()
    os.execute("rm -rf " .. dir)
  end)

  it("carries out no round a new policy came during, even once the round has planned", function()
    local dir, pol, put = policy_file()
    put("return { score = function(o) return o.price end }\n") -- the cheapest: spot
    -- dovetail-faults stretches the rendering of each round's plan (after its
    -- last check for a new policy) to a second; the new policy lands in it
    local d = start("--policy " .. pol, "DOVETAIL_SIM_FAULT=slow-render " .. h.bin:gsub("dovetail$", "dovetail-faults"))
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", quickstart)))
    sleep(0.4)
    put('return { score = function(o) return (o.capacityType == "on-demand" and 0 or 1e9) + o.price end }\n')
    eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "an instance")
    local log = slurp(d.log)
    assert.matches("round stopped: the policy changed while it ran", log, 1, true)
    local state = http(d, "GET", "/v1/state")
    assert.matches('"capacityType":%s*"on%-demand"', state)
    assert.is_nil(state:match('"capacityType":%s*"spot"'), "nothing launched from the old policy's plan")
    local metrics = http(d, "GET", "/metrics")
    assert.matches('dovetail_claims_launched_total{capacity_type="spot"} 0\n', metrics, 1, true)
    d.stop()
    os.execute("rm -rf " .. dir)
  end)

  it("stops with status 0 on SIGTERM while a client holds an idle keep-alive connection", function()
    local log, rcf, pidf = os.tmpname(), os.tmpname(), os.tmpname()
    os.remove(rcf)
    os.execute("sh -c '(" .. h.bin .. " serve --listen 127.0.0.1:0 2>" .. log .. " & d=$!; echo $d >" .. pidf
      .. "; wait $d; echo $? >" .. rcf .. ") &'")
    local port
    eventually(function()
      port = slurp(log):match('"listening","msg":"http://[%d.]+:(%d+)')
      return port ~= nil
    end, "the daemon listening")
    local pid = slurp(pidf):match("%d+")
    -- a client that sent one request and keeps its connection open
    local hold = os.tmpname()
    os.execute("bash -c 'exec 3<>/dev/tcp/127.0.0.1/" .. port
      .. "; printf \"GET /healthz HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n\" >&3; sleep 8 <&3 >" .. hold .. "' &")
    sleep(0.5)
    os.execute("kill -TERM " .. pid)
    eventually(function() return slurp(rcf) ~= "" end, "the daemon's exit status", 20)
    assert.equal("0", slurp(rcf):match("%d+"), slurp(log))
    assert.falsy(slurp(log):find("Assertion", 1, true), slurp(log))
    os.remove(log)
    os.remove(rcf)
    os.remove(pidf)
    os.remove(hold)
  end)

  it("writes its state on SIGTERM and adopts it on restart without launching twice", function()
    local state = os.tmpname()
    os.remove(state)
    local d = launched("--state " .. state)
    local id = http(d, "GET", "/v1/state"):match('"id":%s*"(i%-%x+)"')
    d.stop()
    assert.matches('"instances":[{"id":"' .. id, slurp(state), 1, true)
    d = start("--state " .. state)
    -- the first round after the restart plans what the state holds: it must launch nothing
    eventually(function() return #logged_rounds(d) >= 1 end, "a round after the restart")
    local first = logged_rounds(d)[1]
    assert.equal(0, first.claims, "no new claim for pods the adopted instance holds")
    local s = http(d, "GET", "/v1/state")
    assert.matches(id, s, 1, true)
    local n = 0
    for _ in s:gmatch('"id":%s*"i%-') do n = n + 1 end
    assert.equal(1, n, "no second launch for the same pods")
    assert.matches('dovetail_claims_launched_total{capacity_type="spot"} 0\n', (http(d, "GET", "/metrics")), 1, true)
    d.stop()
    os.remove(state)
  end)

  it("answers bad input with a JSON error naming the field, and enforces token and body limit", function()
    local tok = h.write("s3cret\n")
    local d = start("--token-file " .. tok .. " --body-limit 500")
    local _, code = http(d, "GET", "/v1/state")
    assert.equal(401, code)
    assert.equal(200, select(2, http(d, "GET", "/healthz")))
    local auth = "-H 'Authorization: Bearer s3cret'"
    local body
    body, code = http(d, "PUT", "/v1/objects", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\nspec:\n"
      .. "  containers: [{name: c, resources: {requests: {cpu: lots}}}]\n", auth)
    assert.equal(400, code)
    assert.matches('"error":".*spec.containers%[0%].resources.requests.cpu', body)
    _, code = http(d, "PUT", "/v1/objects", quickstart, auth)
    assert.equal(413, code)
    _, code = http(d, "GET", "/v1/nothing", nil, auth)
    assert.equal(404, code)
    d.stop()
    -- a byte count with a unit reads as one (1Ki: the quickstart's 1.6 KB is too large), a bad one is named
    d = start("--body-limit 1Ki")
    assert.equal(413, select(2, http(d, "PUT", "/v1/objects", quickstart)))
    d.stop()
    local p = io.popen(h.bin .. " serve --listen 127.0.0.1:0 --body-limit 2Ti 2>&1; echo rc=$?")
    local out = p:read("a")
    p:close()
    assert.matches('--body-limit: expected a byte count from 1 to 1 GiB (64Mi, 16777216), got "2Ti"', out, 1, true)
    assert.matches("rc=2", out, 1, true)
    -- a list is a repeatable option's alone: one for another is refused, not its last item taken
    local cfg = h.write("body-limit: [1]\n")
    p = io.popen(h.bin .. " serve --listen 127.0.0.1:0 --config " .. cfg .. " 2>&1; echo rc=$?")
    out = p:read("a")
    p:close()
    assert.matches("body-limit: expected one value, got a list (only repeatable options take one)", out, 1, true)
    assert.matches("rc=2", out, 1, true)
  end)
  it("takes away a node its pods left, with a disruption pass every interval", function()
    local d = launched("--disrupt-interval 300ms")
    for _, path in ipairs({ "Deployment/shop/web", "StatefulSet/shop/db", "Pod/jobs/batch-1" }) do
      local _, code = http(d, "DELETE", "/v1/objects/" .. path)
      assert.equal(200, code)
    end
    eventually(function() return not http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "the instance taken away")
    assert.matches('"subject":%s*"NodeClaim [%w-]+",%s*"reason":%s*"Empty: delete', (http(d, "GET", "/v1/decisions")))
    d.stop()
  end)

  -- A pool whose nodes go at once when empty, one at a time.
  local ONE_AT_A_TIME = [[
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  disruption: {consolidateAfter: 0s, budgets: [{nodes: "1"}]}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
]]

  it("keeps a claim whose Node registered under another name while its pod waits, and takes it away after", function()
    -- On AWS a Node is named after its host and matched to its claim by the
    -- provider ID ending in the instance id: one machine, not the claim and a
    -- second, empty node (which the pass would name, and not find launched).
    local d = start("--disrupt-interval 200ms")
    local _, code = http(d, "PUT", "/v1/objects", ONE_AT_A_TIME .. [[
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - {name: c, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}
]])
    assert.equal(200, code)
    local st
    eventually(function()
      st = http(d, "GET", "/v1/state")
      return st:match('"id":%s*"i%-')
    end, "an instance")
    local id = st:match('"id":%s*"([^"]+)"')
    local claim = st:match('"nodeClaim":%s*"([^"]+)"')
    local itype = st:match('"instanceType":%s*"([^"]+)"')
    local zone = st:match('"zone":%s*"([^"]+)"')
    _, code = http(d, "PUT", "/v1/objects", h.json({ apiVersion = "v1", kind = "Node",
      metadata = { name = "ip-10-9-9-9.ec2.internal", labels = { ["karpenter.sh/nodepool"] = "default",
        ["karpenter.sh/initialized"] = "true", ["karpenter.sh/capacity-type"] = "on-demand",
        ["node.kubernetes.io/instance-type"] = itype, ["topology.kubernetes.io/zone"] = zone,
        ["kubernetes.io/hostname"] = "ip-10-9-9-9.ec2.internal" } },
      spec = { providerID = "aws:///" .. zone .. "/" .. id },
      status = { allocatable = { cpu = "1930m", memory = "1451Mi", pods = "8" },
        conditions = h.array { { type = "Ready", status = "True", lastTransitionTime = "2026-11-27T05:00:00Z" } } } }))
    assert.equal(200, code)
    rounds(d, 4, "disruption passes with the pod waiting")
    assert.matches('"nodeClaim":%s*"' .. claim:gsub("%-", "%%-") .. '"', (http(d, "GET", "/v1/state")))
    _, code = http(d, "DELETE", "/v1/objects/Pod/default/web")
    assert.equal(200, code)
    eventually(function() return not http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "the instance taken away")
    assert.matches('"subject":%s*"NodeClaim ' .. claim:gsub("%-", "%%-") .. '",%s*"reason":%s*"Empty: delete',
      (http(d, "GET", "/v1/decisions")))
    d.stop()
  end)

  it("leaves nodes it did not launch out of its disruption passes, so they use none of its budget", function()
    -- Five empty Nodes of the pool that another owner launched (tainted, so
    -- the pod cannot use them): a pass that took them as candidates spent the
    -- Empty budget of 1 on one of them every time, and never reached the
    -- daemon's own empty claim. (The feed sends no Node for the daemon's
    -- machine: its claim counts as initialized at launch.)
    local d = start("--disrupt-interval 200ms --registration launch")
    local docs = { ONE_AT_A_TIME }
    for i = 0, 4 do
      docs[#docs + 1] = h.json({ apiVersion = "v1", kind = "Node",
        metadata = { name = "foreign-" .. i, creationTimestamp = os.date("!%Y-%m-%dT%H:%M:%SZ", os.time() - 3600),
          labels = { ["karpenter.sh/nodepool"] = "default", ["karpenter.sh/initialized"] = "true",
            ["karpenter.sh/capacity-type"] = "on-demand", ["node.kubernetes.io/instance-type"] = "m5.24xlarge",
            ["topology.kubernetes.io/zone"] = "us-east-1a", ["kubernetes.io/hostname"] = "foreign-" .. i } },
        spec = { providerID = "aws:///us-east-1a/i-0f0000000000000" .. i,
          taints = h.array { { key = "dedicated", value = "batch", effect = "NoSchedule" } } },
        status = { allocatable = { cpu = "95690m", memory = "357Gi", pods = "737" },
          conditions = h.array { { type = "Ready", status = "True", lastTransitionTime = "2026-11-27T00:00:00Z" } } } })
    end
    docs[#docs + 1] = [[
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - {name: c, image: nginx, resources: {requests: {cpu: "1", memory: 1Gi}}}
]]
    local _, code = http(d, "PUT", "/v1/objects", table.concat(docs, "\n---\n"))
    assert.equal(200, code)
    eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "an instance")
    _, code = http(d, "DELETE", "/v1/objects/Pod/default/web")
    assert.equal(200, code)
    eventually(function() return not http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "the instance taken away")
    assert.not_matches("foreign%-%d: Empty delete: not a claim this daemon launched", slurp(d.log))
    d.stop()
  end)

  it("keys StorageClasses and PersistentVolumes as cluster-scoped, and refuses names that hold a /", function()
    -- A namespace on a cluster-scoped object made a second object in the store
    -- that the round's manifests read as a duplicate: every round failed, and
    -- DELETE with - (as documented) found neither.
    local d = launched("--disrupt-interval 0")
    local sc = "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata: {name: gp3%s}\n"
      .. "provisioner: ebs.csi.aws.com\nvolumeBindingMode: WaitForFirstConsumer\n"
    local pv = "apiVersion: v1\nkind: PersistentVolume\nmetadata: {name: pv1%s}\nspec: {capacity: {storage: 1Gi}}\n"
    for _, body in ipairs({ sc:format(""), sc:format(", namespace: kube-system"), pv:format(""),
      pv:format(", namespace: x") }) do
      local _, code = http(d, "PUT", "/v1/objects", body)
      assert.equal(200, code)
    end
    local _, code = http(d, "PUT", "/v1/objects", h.pod("late"))
    assert.equal(200, code)
    eventually(function() return slurp(d.log):match('"round %d+: 1 pending pods, 1 scheduled') end, "a round that plans")
    assert.not_matches("duplicate object", slurp(d.log))
    assert.equal(200, select(2, http(d, "DELETE", "/v1/objects/StorageClass/-/gp3")))
    assert.equal(200, select(2, http(d, "DELETE", "/v1/objects/PersistentVolume/-/pv1")))
    -- "x/a" + "b" and "x" + "a/b" made one key: the second replaced the first, and neither could be deleted
    local body
    body, code = http(d, "PUT", "/v1/objects", "apiVersion: v1\nkind: Pod\nmetadata: {name: a/b, namespace: x}\n"
      .. "spec: {containers: [{name: c}]}\n")
    assert.equal(400, code)
    assert.matches("metadata.name: holds a", body, 1, true)
    body, code = http(d, "PUT", "/v1/objects", "apiVersion: v1\nkind: Pod\nmetadata: {name: 'p,1', namespace: x}\n"
      .. "spec: {containers: [{name: c}]}\n")
    assert.equal(400, code)
    assert.matches('metadata.name: holds a \\",\\"', body, 1, true) -- as JSON prints it
    d.stop()
  end)

  it("sizes its launches by the EC2NodeClass it stores: maxPods 110 puts 100 small pods on one node", function()
    local d = start("--disrupt-interval 0")
    local dump = slurp(h.fixtures .. "nodeclass/cluster.yaml")
    local body, code = http(d, "PUT", "/v1/objects", dump)
    assert.equal(200, code, body)
    eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "an instance")
    daemon_time(d, 3000) -- time for a second launch, were one coming
    local state = http(d, "GET", "/v1/state")
    local n = select(2, state:gsub('"id":%s*"i%-', ""))
    assert.equal(1, n, state)
    assert.matches('"zone":%s*"us%-east%-1[bc]"', state)
    -- a node class the reader refuses is refused whole, naming the field
    body, code = http(d, "PUT", "/v1/objects", "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\n"
      .. "metadata: {name: bad}\nspec: {amiSelectorTerms: [{alias: al2023@latest}], kubelet: {maxPods: -1}}\n")
    assert.equal(400, code)
    assert.matches("EC2NodeClass bad: spec.kubelet.maxPods", body, 1, true)
    d.stop()
  end)

  it("replaces its node once when its EC2NodeClass changes, and then stays put", function()
    local d = start("--disrupt-interval 1s")
    local dump = slurp(h.fixtures .. "nodeclass/cluster.yaml")
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", dump)))
    eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "an instance")
    -- the node class without prefix delegation's headroom: 100 pods a node, so the 100 pods and aws-node need two
    local from = assert(dump:find("- apiVersion: karpenter.k8s.aws/v1\n  kind: EC2NodeClass", 1, true))
    local to = assert(dump:find("- apiVersion: apps/v1\n  kind: DaemonSet", 1, true))
    local nc = dump:sub(from, to - 1):gsub("\n  ", "\n"):sub(3):gsub("maxPods: 110", "maxPods: 100")
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", nc)))
    eventually(function() return slurp(d.log):match('"event":"disrupt","msg":"NodeClaim [%w-]+: Drifted') end,
      "the drifted node replaced", 30)
    daemon_time(d, 4000) -- four more disruption passes
    local log = slurp(d.log)
    assert.equal(3, select(2, log:gsub('"event":"launch"', "")), "one node, then its two replacements")
    assert.equal(1, select(2, log:gsub('"event":"disrupt"', "")), "and no more")
    assert.matches("NodeClassDrift: EC2NodeClass prefix changed", (http(d, "GET", "/v1/decisions")), 1, true)
    -- the replacements carry the hashes drift is told by: a second change drifts them in turn
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", (nc:gsub("maxPods: 100", "maxPods: 90")))))
    eventually(function() return select(2, slurp(d.log):gsub('"event":"disrupt"', "")) == 3 end,
      "both replacements replaced", 30)
    daemon_time(d, 4000)
    log = slurp(d.log)
    assert.equal(5, select(2, log:gsub('"event":"launch"', "")))
    assert.equal(3, select(2, log:gsub('"event":"disrupt"', "")))
    d.stop()
  end)

  it("reads a List within a List as the CLI does, and an object with an items field as itself", function()
    local d = start("--disrupt-interval 0")
    local pod = '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s", "namespace": "d"}, '
      .. '"spec": {"containers": [{"name": "c"}]}%s}'
    local body, code = http(d, "PUT", "/v1/objects", '{"apiVersion": "v1", "kind": "List", "items": '
      .. '[{"apiVersion": "v1", "kind": "List", "items": [' .. pod:format("a", "") .. ", " .. pod:format("b", "")
      .. "]}]}")
    assert.equal(200, code, body)
    assert.matches('"applied":2', body, 1, true)
    body, code = http(d, "PUT", "/v1/objects", pod:format("solo", ', "items": [' .. pod:format("inner", "") .. "]"))
    assert.equal(200, code, body)
    assert.equal(200, select(2, http(d, "DELETE", "/v1/objects/Pod/d/solo")))
    assert.equal(404, select(2, http(d, "DELETE", "/v1/objects/Pod/d/inner")))
    d.stop()
  end)

  it("takes a deleted Pod out of every claim nominating it, after a restart as before", function()
    -- A Pod DELETE found the claims nominating the pod by reading every
    -- NodeClaim's text (2.2 ms a delete at 10,000 claims); the claims are now
    -- indexed by pod as they are stored, the journal's replay included.
    local st = h.tmpdir() .. "/state.json"
    local d = start("--disrupt-interval 0 --state " .. st)
    local function claim(name, pods)
      return h.json({ apiVersion = "karpenter.sh/v1", kind = "NodeClaim",
        metadata = { name = name, annotations = { ["dovetail.dev/pods"] = pods },
          labels = { ["karpenter.sh/nodepool"] = "default", ["node.kubernetes.io/instance-type"] = "c6a.xlarge",
            ["topology.kubernetes.io/zone"] = "us-east-1a", ["karpenter.sh/capacity-type"] = "on-demand" } },
        spec = { nodeClassRef = { group = "karpenter.k8s.aws", kind = "EC2NodeClass", name = "default" } } }) .. "\n"
    end
    local body, code = http(d, "PUT", "/v1/objects", h.docs(h.nodepool("default"),
      claim("a", "default/p1,default/p2"), claim("b", "default/p10,default/p1"), claim("c", "default/p10"),
      h.pod("p1", { cpu = "100m" }), h.pod("p2", { cpu = "100m" }), h.pod("p10", { cpu = "100m" })))
    assert.equal(200, code, body)
    eventually(function()
      local j = io.open(st .. ".journal")
      local t = j and j:read("a") or ""
      if j then j:close() end
      return t:find('"pods/p10"', 1, true) or t:find('"Pod/default/p10"', 1, true)
    end, "the objects journaled")
    d.kill() -- the claims come back from the journal
    d = start("--disrupt-interval 0 --state " .. st)
    assert.equal(200, select(2, http(d, "DELETE", "/v1/objects/Pod/default/p1")))
    assert.equal(200, select(2, http(d, "DELETE", "/v1/objects/NodeClaim/-/c")))
    assert.equal(200, select(2, http(d, "DELETE", "/v1/objects/Pod/default/p10")))
    d.stop()
    local text = slurp(st)
    local function pods_of(name) -- the claim's annotation in the snapshot, nil when it is gone
      for o in (text .. '{"apiVersion":'):gmatch('"kind":"NodeClaim"(.-){"apiVersion":') do
        if o:find('"name":"' .. name .. '"', 1, true) then return o:match('"dovetail.dev/pods":"([^"]*)"') end
      end
    end
    assert.equal("default/p2", pods_of("a"), text)
    assert.equal("", pods_of("b"), text)
    assert.is_nil(pods_of("c"), text)
  end)

  it("stops cleanly and writes its state when it never launched anything", function()
    -- SIGTERM sends the last round's waiting launches first; with none ever
    -- queued that memmove'd from NULL, which UBSan (SANITIZE=1) stops on
    -- before the snapshot is written.
    local st = h.tmpdir() .. "/state.json"
    local d = start("--disrupt-interval 0 --state " .. st)
    local _, code = http(d, "PUT", "/v1/objects", h.pod("alone"))
    assert.equal(200, code)
    rounds(d, 1, "a round")
    d.stop()
    assert.matches('"event":"stopped"', slurp(d.log), 1, true)
    assert.not_matches("runtime error", slurp(d.log), 1, true)
    assert.matches('"name":%s*"alone"', slurp(st))
  end)

  it("routes interruptions through the policy's on_interruption hook", function()
    local pol = h.write([[
return {
  on_interruption = function(event)
    if event.kind == "spot-interruption" then return "ignore" end
  end,
}
]])
    -- no disruption pass: one running when the event comes would hold the policy and queue it
    local d = launched("--disrupt-interval 0 --policy " .. pol)
    local id = http(d, "GET", "/v1/state"):match('"id":%s*"(i%-%x+)"')
    local body = http(d, "POST", "/v1/events", '{"detail-type":"EC2 Spot Instance Interruption Warning",'
      .. '"detail":{"instance-id":"' .. id .. '"}}')
    assert.matches('"action":"noted"', body)
    assert.matches(id, (http(d, "GET", "/v1/state")), 1, true)
    d.stop()
    os.remove(pol)
  end)

  it("converges and stays put: one launch and no deletion over many disruption intervals", function()
    local d = launched("--disrupt-interval 200ms")
    local id = http(d, "GET", "/v1/state"):match('"id":%s*"(i%-%x+)"')
    rounds(d, 7, "seven disruption passes") -- and as many requeue chances
    local metrics = http(d, "GET", "/metrics")
    assert.matches('dovetail_claims_launched_total{capacity_type="spot"} 1\n', metrics, 1, true)
    assert.matches('dovetail_claims_launched_total{capacity_type="on-demand"} 0\n', metrics, 1, true)
    assert.matches("dovetail_nodes_deleted_total 0\n", metrics, 1, true)
    assert.matches("dovetail_pending_pods 0\n", metrics, 1, true)
    assert.matches(id, (http(d, "GET", "/v1/state")), 1, true)
    local decisions = http(d, "GET", "/v1/decisions")
    assert.is_nil(decisions:match('"kind":%s*"disrupt"'), decisions)
    -- a watcher's re-list, every object as it is stored, changes nothing and starts no round
    local before = metric(d, "dovetail_plan_duration_seconds_count")
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", quickstart)))
    daemon_time(d, 2500)
    assert.equal(before, metric(d, "dovetail_plan_duration_seconds_count"))
    d.stop()
  end)

  it("with a NodeOverlay on its nodes' own type, launches once and stays put", function()
    -- weighed at the catalog's price, a node whose type an overlay made cheaper was replaced by
    -- its own type every pass
    local d = start("--disrupt-interval 200ms --registration launch")
    local ovl = [[
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: deal}
spec:
  requirements: [{key: node.kubernetes.io/instance-type, operator: In, values: [c6a.2xlarge]}]
  priceAdjustment: "-60%"
]]
    local np = h.nodepool("od", { requirements = { { "karpenter.sh/capacity-type", "In", { "on-demand" } },
      { "node.kubernetes.io/instance-type", "In", { "c6a.2xlarge", "c6a.4xlarge" } } } })
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", h.docs(np, ovl, h.pod("a", { cpu = "3" }),
      h.pod("b", { cpu = "3" })))))
    eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "an instance")
    stays_put(d, 12, 1)
    d.stop()
  end)

  it("a Deployment and a StatefulSet of one name: four launches, no deletion, the replicas named apart", function()
    local st = h.tmpdir() .. "/state.json"
    local d = start("--disrupt-interval 200ms --registration launch --state " .. st)
    local function workload(kind, app)
      return ([[
apiVersion: apps/v1
kind: %s
metadata: {name: web, namespace: default}
spec:
  replicas: 2
  serviceName: web
  selector: {matchLabels: {app: %s}}
  template:
    metadata: {labels: {app: %s}}
    spec:
      containers: [{name: c, image: x, resources: {requests: {cpu: "3"}}}]
]]):format(kind, app, app)
    end
    -- one pod a node: the claims' nominations must tell the two web-0s apart, or a pass
    -- takes two claims for empty and deletes them, and the next round launches them again
    local body = h.docs(h.nodepool("default", { requirements = { { "karpenter.k8s.aws/instance-cpu", "In", { "4" } },
      { "karpenter.sh/capacity-type", "In", { "on-demand" } } } }), workload("Deployment", "web"),
      workload("StatefulSet", "db"))
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", body)))
    eventually(function() return metric(d, 'dovetail_claims_launched_total{capacity_type="on-demand"}') == 4 end,
      "four launches")
    rounds(d, 12, "twelve rounds and disruption passes")
    assert.equal(4, metric(d, 'dovetail_claims_launched_total{capacity_type="on-demand"}'))
    assert.equal(0, metric(d, "dovetail_nodes_deleted_total"))
    local plan = http(d, "GET", "/v1/plan")
    assert.matches("default/web%-deployment%-0", plan)
    local decisions = http(d, "GET", "/v1/decisions")
    assert.is_nil(decisions:match('"kind":%s*"disrupt"'), decisions)
    d.stop()
  end)

  it("launches a custom-label split once and stays put; drift replacements keep the values their claims took",
    function()
      -- Karpenter Blueprints' on-demand / spot split (spec/fixtures/parity): capacity-spread 1 on
      -- demand, 2-5 spot, eight pending replicas spread on it; a node of value 2 runs two. Its
      -- claims initialize at launch, so every pass weighs them: the on-demand node's two pods fit
      -- the spot nodes' room, and only the spread keeps them there
      local st = h.tmpdir() .. "/state.json"
      local d = start("--disrupt-interval 200ms --registration launch --state " .. st)
      local dump = slurp(h.fixtures .. "parity/spread-custom-key.yaml")
      assert.equal(200, select(2, http(d, "PUT", "/v1/objects", dump)))
      local function launches(ct) return metric(d, 'dovetail_claims_launched_total{capacity_type="' .. ct .. '"}') end
      eventually(function() return launches("on-demand") == 1 and launches("spot") == 3 end, "values 1, 3, 4 and 5")
      rounds(d, 16, "sixteen rounds and disruption passes")
      local state = http(d, "GET", "/v1/state")
      assert.equal(4, select(2, state:gsub('"initialized":%s*true', "")), state)
      assert.equal(1, launches("on-demand"))
      assert.equal(3, launches("spot"))
      assert.equal(0, metric(d, "dovetail_nodes_deleted_total"))
      assert.equal(0, metric(d, "dovetail_pending_pods"))
      local decisions = http(d, "GET", "/v1/decisions")
      assert.is_nil(decisions:match('"kind":%s*"disrupt"'), decisions)
      -- the spot NodePool's template gains a label: its three claims drift, and each replacement
      -- must take the value its claim had (the pool allows four), or the spread breaks and churns
      local at = assert(dump:find("    name: node-spot\n", 1, true))
      local from = assert(dump:find("      metadata: {}\n", at, true))
      local drifted = dump:sub(1, from - 1) .. "      metadata:\n        labels: {team: web}\n" ..
        dump:sub(from + #"      metadata: {}\n")
      assert.equal(200, select(2, http(d, "PUT", "/v1/objects", drifted)))
      eventually(function() return launches("spot") == 6 and metric(d, "dovetail_nodes_deleted_total") == 3 end,
        "the three spot claims replaced", 30)
      rounds(d, 16, "sixteen more")
      assert.equal(6, launches("spot"))
      assert.equal(1, launches("on-demand"))
      assert.equal(3, metric(d, "dovetail_nodes_deleted_total"))
      assert.equal(0, metric(d, "dovetail_pending_pods"))
      d.stop()
      local values = {}
      for _, o in ipairs(require("dkjson").decode(slurp(st)).objects) do
        if o.kind == "NodeClaim" and o.metadata.labels.team == "web" then
          local v = spread_value(o)
          values[#values + 1] = v
        end
      end
      table.sort(values)
      assert.are.same({ "3", "4", "5" }, values)
    end)

  it("holds the room a round gave a pending pod on an existing Node until it binds: no launch-delete cycle", function()
    -- the cluster dump: web-...-klmno fits the existing node, worker gets a claim; a pass that
    -- handed web's room to worker deleted the claim, and the next round launched it again
    local dump = h.slurp(h.fixtures .. "cluster-dump.yaml"):gsub("consolidateAfter: 30s", "consolidateAfter: 0s")
    local d = start("--disrupt-interval 200ms")
    http(d, "PUT", "/v1/objects", dump)
    eventually(function() return metric(d, 'dovetail_claims_launched_total{capacity_type="on-demand"}') == 1 end,
      "the worker's claim")
    stays_put(d, 12, 1)
    d.stop()
  end)

  -- A daemon (disruption every 200 ms) that launched one machine for pod a (2 cpu) under a
  -- NodePool with consolidateAfter; the pod maker and the machine's instance id and zone.
  local function one_machine(consolidate_after)
    local d = start("--disrupt-interval 200ms")
    local pool = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n" ..
      "  disruption: {consolidateAfter: " .. consolidate_after .. "}\n  template:\n    spec:\n      requirements:\n" ..
      "        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n"
    local function pod(name, node)
      return h.pod(name, { cpu = "2", memory = "1Gi", extra = node and ("  nodeName: " .. node) or nil })
    end
    http(d, "PUT", "/v1/objects", h.docs(pool, pod("a")))
    eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "a's instance")
    local st = http(d, "GET", "/v1/state")
    return d, pod, st:match('"id":%s*"(i%-%x+)"'), st:match('"zone":%s*"([%w-]+)"')
  end

  it("lets a machine go once its Node, deleted by someone else, has drained; provisions for its pods first", function()
    local d, pod, id, zone = one_machine("1h")
    local node = ("apiVersion: v1\nkind: Node\nmetadata:\n  name: ip-10-0-0-7.ec2.internal\n%s  labels: " ..
      "{kubernetes.io/arch: amd64, karpenter.sh/nodepool: default, topology.kubernetes.io/zone: %s}\n" ..
      "spec: {providerID: 'aws:///%s/%s'}\nstatus:\n  allocatable: {cpu: '7', memory: 28Gi, pods: '58'}\n" ..
      "  conditions: [{type: Ready, status: 'True'}]\n")
    http(d, "PUT", "/v1/objects", h.docs(node:format("", zone, zone, id), pod("a", "ip-10-0-0-7.ec2.internal")))
    -- kubectl delete node: a deletionTimestamp while a drains
    http(d, "PUT", "/v1/objects", node:format("  deletionTimestamp: '2026-11-28T10:00:00Z'\n  finalizers: " ..
      "[karpenter.sh/termination]\n", zone, zone, id))
    eventually(function() return metric(d, 'dovetail_claims_launched_total{capacity_type="on-demand"}') == 2 end,
      "a machine for a, before it is evicted")
    rounds(d, 6, "passes while a is still there")
    assert.matches(id, (http(d, "GET", "/v1/state")), 1, true)
    http(d, "DELETE", "/v1/objects/Pod/default/a")
    eventually(function()
      return not http(d, "GET", "/v1/state"):find(id, 1, true)
    end, "the drained machine let go")
    assert.matches("is being deleted and has drained", (http(d, "GET", "/v1/decisions")))
    assert.equal(2, metric(d, 'dovetail_claims_launched_total{capacity_type="on-demand"}'))
    d.stop()
  end)

  it("takes no new pods onto the Node of a machine it deleted, even when the Node comes again", function()
    local d, pod, id, zone = one_machine("0s")
    -- the machine registers as the cluster names it (an AWS hostname, the instance in its provider ID)
    local node = ("apiVersion: v1\nkind: Node\nmetadata:\n  name: ip-10-0-0-1.ec2.internal\n  labels: {kubernetes.io/arch: amd64, " ..
      "karpenter.sh/nodepool: default, topology.kubernetes.io/zone: %s}\nspec: {providerID: 'aws:///%s/%s'}\n" ..
      "status:\n  allocatable: {cpu: '7', memory: 28Gi, pods: '58'}\n  conditions: [{type: Ready, status: 'True'}]\n")
      :format(zone, zone, id)
    http(d, "PUT", "/v1/objects", h.docs(node, pod("a", "ip-10-0-0-1.ec2.internal")))
    http(d, "DELETE", "/v1/objects/Pod/default/a")
    eventually(function() return metric(d, "dovetail_nodes_deleted_total") == 1 end, "the empty machine deleted")
    http(d, "PUT", "/v1/objects", node) -- a cluster feed that lags sends the Node again
    http(d, "PUT", "/v1/objects", h.docs(pod("b"), pod("c")))
    eventually(function() return metric(d, 'dovetail_claims_launched_total{capacity_type="on-demand"}') == 2 end,
      "a machine for b and c")
    local plan = http(d, "GET", "/v1/plan")
    assert.is_nil(plan:find("ip-10-0-0-1", 1, true), plan)
    assert.equal(0, metric(d, "dovetail_pending_pods"))
    d.stop()
  end)

  it("skips consolidation while nothing changed since a pass found nothing, as Karpenter, and not after a change",
    function()
      local d = launched("--disrupt-interval 200ms")
      local function passes(how) return metric(d, 'dovetail_disruption_passes_total{consolidation="' .. how .. '"}') end
      rounds(d, 8, "eight disruption passes")
      -- the quickstart's pool consolidates at once (no consolidateAfter): one
      -- pass finds nothing, and the next ones skip consolidation
      local ran, skipped = passes("ran"), passes("skipped")
      assert.is_true(skipped >= 5, ran .. " passes ran consolidation, " .. skipped .. " skipped it")
      assert.matches("dovetail_nodes_deleted_total 0\n", http(d, "GET", "/metrics"), 1, true)
      -- any change to the cluster (a pod applied) and consolidation runs again
      http(d, "PUT", "/v1/objects", "apiVersion: v1\nkind: Pod\nmetadata: {name: extra, namespace: shop}\nspec:\n"
        .. "  containers: [{name: c, resources: {requests: {cpu: 100m}}}]\n")
      eventually(function() return passes("ran") > ran end, "a pass that runs consolidation after the change")
      d.stop()
    end)

  it("plans pending pods again by itself: a pod deferred for a reservation falls back to on-demand", function()
    local cat = h.write(h.small_catalog:gsub("%] }%s*$",
      '], "reservations": [{"id": "cr-1", "instanceType": "small", "zone": "test-1a", "count": 1}] }'))
    local d = start("--catalog " .. cat .. " --disrupt-interval 0")
    local pool = h.nodepool("default", { requirements = {
      { "karpenter.sh/capacity-type", "In", { "reserved", "on-demand" } },
      { "node.kubernetes.io/instance-type", "In", { "small" } } } })
    http(d, "PUT", "/v1/objects", h.docs(pool, h.pod("a", { cpu = "1500m" }), h.pod("b", { cpu = "1500m" })))
    eventually(function()
      local s = http(d, "GET", "/v1/state")
      return s:match('"capacityType":%s*"reserved"') and s:match('"capacityType":%s*"on%-demand"')
    end, "a reserved and an on-demand instance")
    assert.matches("dovetail_pending_pods 0\n", (http(d, "GET", "/metrics")), 1, true)
    d.stop()
    os.remove(cat)
  end)

  -- A Node registered for the quickstart's claim, Ready=False since `since`
  -- seconds ago; returns its name and its lastTransitionTime.
  local function not_ready(d, since)
    local claim = http(d, "GET", "/v1/state"):match('"nodeClaim":%s*"([%w-]+)"')
    local t = os.date("!%Y-%m-%dT%H:%M:%SZ", os.time() - since)
    local _, code = http(d, "PUT", "/v1/objects", h.json({ apiVersion = "v1", kind = "Node",
      metadata = { name = claim, labels = { ["karpenter.sh/nodepool"] = "default" } },
      status = { conditions = h.array { { type = "Ready", status = "False", lastTransitionTime = t } } } }))
    assert.equal(200, code)
    return claim, t
  end

  -- Seconds since the epoch of an RFC 3339 UTC time with whole seconds.
  local function epoch(t)
    local y, mo, dd, hh, mi, ss = assert(t:match("^(%d+)%-(%d+)%-(%d+)T(%d+):(%d+):(%d+)Z$"))
    y, mo = tonumber(y), tonumber(mo)
    if mo <= 2 then y = y - 1 end -- days from the civil date (Howard Hinnant's algorithm)
    local era = y // 400
    local yoe = y - era * 400
    local doy = (153 * (mo + (mo > 2 and -3 or 9)) + 2) // 5 + tonumber(dd) - 1
    local days = era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468
    return days * 86400 + tonumber(hh) * 3600 + tonumber(mi) * 60 + tonumber(ss)
  end

  it("replaces a NotReady node after the timeout and not before, launching first", function()
    -- "Not before" is read off the daemon's own record, not off how long this
    -- spec slept: the replace decision carries the time it was made, which must
    -- be at least the timeout after the node's lastTransitionTime (both whole
    -- seconds of the same clock), however slow the machine.
    -- the feed sends no Node for the replacement: it counts as initialized at launch
    local d = launched("--unhealthy-timeout 3s --disrupt-interval 200ms --registration launch")
    local claim, since = not_ready(d, 0)
    eventually(function() return not http(d, "GET", "/v1/state"):find('"' .. claim .. '"', 1, true) end,
      "the unhealthy node replaced")
    local decisions = http(d, "GET", "/v1/decisions")
    local r = decisions:find('"kind":%s*"replace"')
    local l = decisions:find('"kind":%s*"launch"', r)
    local del = decisions:find('"kind":%s*"disrupt",%s*"subject":%s*"NodeClaim ' .. claim:gsub("%-", "%%-"), l)
    assert.is_truthy(r and l and del, "replace, then launch, then delete: " .. decisions)
    local at = decisions:match('"time":%s*"([^"]+)",%s*"kind":%s*"replace"')
    assert.is_true(epoch(at) - epoch(since) >= 3, "replaced at " .. at .. ", NotReady since " .. since .. ", timeout 3s")
    assert.matches("Unhealthy: node " .. claim .. " Ready=False", decisions, 1, true)
    assert.matches("dovetail_remediations_total 1\n", (http(d, "GET", "/metrics")), 1, true)
    assert.matches('"id":%s*"i%-', (http(d, "GET", "/v1/state")))
    d.stop()
  end)

  it("replaces a NotReady node of a custom-label split with one of the same value", function()
    local st = h.tmpdir() .. "/state.json"
    local d = start("--unhealthy-timeout 1s --disrupt-interval 200ms --registration launch --state " .. st)
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", slurp(h.fixtures .. "parity/spread-custom-key.yaml"))))
    eventually(function() return metric(d, 'dovetail_claims_launched_total{capacity_type="spot"}') == 3 end,
      "the split launched")
    local claim = http(d, "GET", "/v1/state"):match('"nodeClaim":%s*"(node%-spot%-[%w]+)"')
    local t = os.date("!%Y-%m-%dT%H:%M:%SZ", os.time() - 60)
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", h.json({ apiVersion = "v1", kind = "Node",
      metadata = { name = claim, labels = { ["karpenter.sh/nodepool"] = "node-spot" } },
      status = { conditions = h.array { { type = "Ready", status = "False", lastTransitionTime = t } } } }))))
    eventually(function() return metric(d, "dovetail_remediations_total") == 1 end, "the unhealthy node replaced")
    eventually(function() return not http(d, "GET", "/v1/state"):find('"' .. claim .. '"', 1, true) end,
      "the unhealthy node gone")
    d.stop()
    local values, replaced = {}, 0
    for _, o in ipairs(require("dkjson").decode(slurp(st)).objects) do
      if o.kind == "NodeClaim" and o.metadata.labels["karpenter.sh/nodepool"] == "node-spot" then
        local v = spread_value(o)
        values[#values + 1] = v
        replaced = replaced + (o.metadata.annotations["dovetail.dev/replaces"] == claim and 1 or 0)
      end
    end
    table.sort(values)
    assert.are.same({ "3", "4", "5" }, values)
    assert.equal(1, replaced)
  end)

  it("deletes a replaced node only once its replacement's Node is Ready (--registration auto, the default)", function()
    local d = launched("--unhealthy-timeout 1s --disrupt-interval 200ms")
    local claim = not_ready(d, 60) -- the feed sends Nodes from here on
    local new
    eventually(function()
      for c in http(d, "GET", "/v1/state"):gmatch('"nodeClaim":%s*"([%w-]+)"') do
        if c ~= claim then new = c end
      end
      return new
    end, "the replacement launched")
    rounds(d, 6, "passes while the replacement boots")
    assert.matches('"' .. claim .. '"', (http(d, "GET", "/v1/state")), 1, true)
    local _, code = http(d, "PUT", "/v1/objects", h.json({ apiVersion = "v1", kind = "Node",
      metadata = { name = new, labels = { ["karpenter.sh/nodepool"] = "default" } },
      status = { conditions = h.array { { type = "Ready", status = "True" } } } }))
    assert.equal(200, code)
    eventually(function() return not http(d, "GET", "/v1/state"):find('"' .. claim .. '"', 1, true) end,
      "the replaced node deleted once its replacement joined")
    d.stop()
  end)

  it("stops remediation when more nodes are unhealthy than maxUnhealthy allows", function()
    local d = launched("--unhealthy-timeout 1s --disrupt-interval 200ms --max-unhealthy 0")
    local claim = not_ready(d, 60)
    eventually(function() return http(d, "GET", "/v1/decisions"):match('"kind":%s*"remediation%-paused"') end,
      "remediation paused")
    assert.matches("1 of 1 nodes unhealthy, more than maxUnhealthy 0: remediation stops",
      (http(d, "GET", "/v1/decisions")), 1, true)
    assert.matches(claim, (http(d, "GET", "/v1/state")), 1, true)
    assert.matches("dovetail_remediations_total 0\n", (http(d, "GET", "/metrics")), 1, true)
    d.stop()
  end)

  it("plans every other NodePool when one names a policy that is missing, and logs that once", function()
    local dir = h.tmpdir()
    local d = start("--policy-dir " .. dir .. " --disrupt-interval 100ms")
    local named = h.nodepool("a", { labels = { team = "a" } }):gsub("metadata:\n  name: a",
      "metadata:\n  name: a\n  annotations:\n    dovetail.dev/policy: missing")
    http(d, "PUT", "/v1/objects", h.docs(named, h.nodepool("b", { labels = { team = "b" } }),
      h.pod("pa", { nodeSelector = { team = "a" } }), h.pod("pb", { nodeSelector = { team = "b" } })))
    eventually(function() return select(2, http(d, "GET", "/v1/state"):gsub('"id":', "")) == 2 end, "two instances")
    assert.matches("NodePool policy missing: " .. dir .. "/missing.lua: cannot open",
      (http(d, "GET", "/v1/state")), 1, true)
    -- every pass tries the file again and finds the same: the log says it once
    rounds(d, 4, "four more passes")
    assert.equal(1, select(2, slurp(d.log):gsub("NodePool policy missing: ", "")), slurp(d.log))
    d.stop()
    os.execute("rm -rf " .. dir)
  end)

  it("warns when it listens off loopback without a token, and only then", function()
    local warning = "is not loopback and no --token-file is set"
    local d = spawn("serve --listen 0.0.0.0:0", "the daemon on every address")
    eventually(function() return slurp(d.log):find(warning, 1, true) end, "the warning")
    assert.matches('"level":"warn","event":"listening","msg":"0.0.0.0 ' .. warning, slurp(d.log), 1, true)
    d.stop()
    local tok = h.write("s3cret\n")
    d = spawn("serve --listen 0.0.0.0:0 --token-file " .. tok, "the daemon with a token")
    local loop = start()
    assert.equal(200, select(2, http(d, "GET", "/healthz")))
    assert.equal(200, select(2, http(loop, "GET", "/healthz")))
    assert.is_nil(slurp(d.log):find(warning, 1, true))
    assert.is_nil(slurp(loop.log):find(warning, 1, true))
    d.stop()
    loop.stop()
  end)

  it("refuses to start on a state file it cannot write", function()
    local _, err, code = h.cli("serve --listen 127.0.0.1:0 --state /nonexistent/dir/state.json")
    assert.equal(1, code)
    assert.matches("--state /nonexistent/dir/state.json: cannot be written", err, 1, true)
  end)

  it("keeps its settings when a SIGHUP brings a bad value, and says so", function()
    local cfg = h.write("batch-idle: 50ms\ndisrupt-interval: 0\n")
    local d = start("--config " .. cfg)
    local f = assert(io.open(cfg, "w"))
    f:write("batch-idle: soon\n")
    f:close()
    os.execute("kill -HUP " .. d.pid)
    eventually(function() return http(d, "GET", "/v1/state"):match("not reloaded") end, "the reload refused")
    assert.matches('--batch-idle: expected a duration such as 1s, 500ms or 3m, got \\"soon\\"',
      (http(d, "GET", "/v1/state")), 1, true)
    http(d, "PUT", "/v1/objects", quickstart)
    eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "a launch on the old settings")
    d.stop()
    os.remove(cfg)
  end)

  it("keeps its flags over the file's values after a SIGHUP, and warns only of restart options the file changed", function()
    -- the file's listen and disruption interval are overridden by flags; max-connections is the default
    local cfg = h.write("listen: 127.0.0.1:1\ndisrupt-interval: 1h\nmax-connections: 32\n")
    local d = start("--config " .. cfg .. " --disrupt-interval=100ms") -- a flag as --name=value too
    local function passes()
      return metric(d, 'dovetail_disruption_passes_total{consolidation="ran"}')
        + metric(d, 'dovetail_disruption_passes_total{consolidation="skipped"}')
    end
    local before = passes()
    eventually(function() return passes() >= before + 3 end, "passes every 100 ms")
    os.execute("kill -HUP " .. d.pid)
    eventually(function() return slurp(d.log):find(cfg .. " reloaded", 1, true) end, "the reload")
    -- the flag's 100 ms still holds, not the file's hour
    before = passes()
    eventually(function() return passes() >= before + 3 end, "passes every 100 ms after the SIGHUP")
    assert.is_nil(slurp(d.log):find("needs a restart", 1, true), slurp(d.log))
    -- a restart-only option the file now changes is named
    local f = assert(io.open(cfg, "w"))
    f:write("listen: 127.0.0.1:1\ndisrupt-interval: 1h\nmax-connections: 40\n")
    f:close()
    os.execute("kill -HUP " .. d.pid)
    eventually(function() return slurp(d.log):find("--max-connections: needs a restart to change; ignored", 1, true) end,
      "the warning")
    assert.equal(1, select(2, slurp(d.log):gsub("needs a restart", "")), slurp(d.log))
    d.stop()
    os.remove(cfg)
  end)

  it("says so when a SIGHUP finds no --config to re-read", function()
    local d = start("--disrupt-interval 0")
    os.execute("kill -HUP " .. d.pid)
    eventually(function() return slurp(d.log):match("started without %-%-config") end, "the SIGHUP logged")
    assert.matches("no options are re-read (and there is no --policy to reload)", slurp(d.log), 1, true)
    d.stop()
  end)

  it("says a SIGHUP found the policy unchanged, in the log and in /v1/state", function()
    local _, pol, put = policy_file()
    put("return {}\n")
    local d = start("--disrupt-interval 0 --policy " .. pol)
    os.execute("kill -HUP " .. d.pid)
    eventually(function() return slurp(d.log):find("(SIGHUP): unchanged; the policy in force stays", 1, true) end,
      "the SIGHUP's reload logged")
    assert.matches('"lastReload":%s*"[^"]*unchanged on SIGHUP', (http(d, "GET", "/v1/state")))
    d.stop()
  end)

  it("writes nothing to the journal for objects PUT again as they are stored: a watcher's re-list", function()
    local st = os.tmpname()
    os.remove(st)
    local d = start("--disrupt-interval 0 --state " .. st)
    local pod = h.pod("lonely", { cpu = "1", memory = "1Gi" }) -- no NodePool: the rounds write nothing
    http(d, "PUT", "/v1/objects", pod)
    rounds(d, 1, "the first round")
    local before = #slurp(st .. ".journal")
    assert.is_true(before > 0, "the pod is in the journal")
    http(d, "PUT", "/v1/objects", pod)
    rounds(d, 1, "a round after the same PUT")
    assert.equal(before, #slurp(st .. ".journal"))
    http(d, "PUT", "/v1/objects", h.pod("lonely", { cpu = "2", memory = "1Gi" }))
    eventually(function() return #slurp(st .. ".journal") > before end, "a changed pod journaled")
    d.stop()
    os.remove(st)
    os.remove(st .. ".journal")
  end)

  it("stops at a damaged journal record, and --recover keeps what came before it", function()
    local st = h.write('{"objects": [], "instances": []}')
    local j = assert(io.open(st .. ".journal", "w"))
    j:write(h.json({ op = "put", key = "Pod/default/a", obj = { apiVersion = "v1", kind = "Pod",
      metadata = { name = "a" }, spec = { containers = h.array { { name = "c" } } } } }) .. "\n")
    j:write("not json\n" .. h.json({ op = "del", key = "Pod/default/a" }) .. "\n")
    j:close()
    local _, err, code = h.cli("serve --listen 127.0.0.1:0 --state " .. st)
    assert.equal(1, code)
    assert.matches(st .. ".journal:2: a damaged record; nothing was changed. Start with --recover", err, 1, true)
    local d = start("--state " .. st .. " --recover --disrupt-interval 0")
    assert.matches("kept the 1 records before it, dropped it and the 1 after", slurp(d.log), 1, true)
    assert.matches('"objects":%s*1,', (http(d, "GET", "/v1/state")))
    d.stop()
    os.remove(st)
    os.remove(st .. ".journal")
  end)

  it("reads a large state file an object at a time: memory grows with what it keeps, not the file's tree", function()
    -- under the sanitizers freed memory is held in quarantine: the peak says nothing there
    if (os.getenv("LD_PRELOAD") or ""):find("asan", 1, true) then return end
    local function peak_kib(state)
      local d = start("--state " .. state .. " --batch-idle 60s --batch-max 60s --disrupt-interval 0")
      local kib = tonumber(slurp("/proc/" .. d.pid .. "/status"):match("VmHWM:%s*(%d+)"))
      local log = slurp(d.log)
      d.stop()
      return kib, log
    end
    local dir = h.tmpdir()
    local base = peak_kib(dir .. "/empty.json")
    local objs = { '{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"default"},'
      .. '"spec":{"template":{"spec":{"requirements":[]}}}}' }
    for i = 1, 30000 do
      objs[#objs + 1] = string.format('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%d","namespace":"default",'
        .. '"labels":{"app":"a%d"}},"spec":{"containers":[{"name":"c","image":"x","resources":{"requests":'
        .. '{"cpu":"100m","memory":"128Mi"}}}]}}', i, i % 50)
    end
    local text = '{"objects":[' .. table.concat(objs, ",") .. '],"instances":[]}'
    local f = assert(io.open(dir .. "/big.json", "w"))
    f:write(text)
    f:close()
    local kib, log = peak_kib(dir .. "/big.json")
    assert.matches("30001 objects, 0 instances", log, 1, true)
    -- a 6 MB file: its whole tree took 80 MB over the daemon's own, one object at a time 18 MB
    assert.is_true((kib - base) * 1024 < 4 * #text, (kib - base) .. " KiB over " .. base .. " for a " .. #text
      .. "-byte state")
  end)

  it("refuses a state file whose shape is wrong, and never reads it as empty", function()
    for _, text in ipairs { "null", "{}", "[]", '{"objects": 5, "instances": []}' } do
      local st = h.write(text)
      local _, err, code = h.cli("serve --listen 127.0.0.1:0 --state " .. st)
      assert.equal(1, code, text)
      assert.matches("not a dovetail state file", err, 1, true)
      os.remove(st)
    end
    local st = h.write('{"objects": [], "instances": [{"claim": "c"}]}')
    local _, err = h.cli("serve --listen 127.0.0.1:0 --state " .. st)
    assert.matches("instances[0].id: missing or not a string", err, 1, true)
    os.remove(st)
    -- read as strictly as a manifest: a key twice (cJSON read the first, empty, list, and the
    -- fleet's instances became orphans), text after the document, an instance without its claim
    local claim = '{"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c1"}}'
    local inst = '{"id": "i-1", "claim": "%s", "instanceType": "m5.large", "zone": "us-east-1a", ' ..
      '"capacityType": "on-demand", "nodePool": "default", "price": 0.096, "launched": 1795341600}'
    for _, case in ipairs {
      { '{"objects": [], "objects": [' .. claim .. '], "instances": [' .. inst:format("c1") .. ']}',
        'duplicate key "objects"' },
      { '{"objects": [' .. claim .. '], "instances": [' .. inst:format("c1") .. ']} {"objects": []}',
        "unexpected text after the document" },
      { '{"objects": [' .. claim .. '], "instances": [' .. inst:format("c2") .. ']}',
        "instances[0] (i-1) belongs to NodeClaim c2, which is not among the state's objects" },
    } do
      st = h.write(case[1])
      local _, e, code = h.cli("serve --listen 127.0.0.1:0 --state " .. st)
      assert.equal(1, code, case[1])
      assert.matches(case[2], e, 1, true)
      assert.matches("nothing was started", e, 1, true)
      os.remove(st)
    end
  end)

  it("leaves out of its rounds an object its state holds and this version refuses, says so, and plans the rest",
    function()
    -- as an earlier version stored it: a request of 2^51 devices, refused now (sums could overflow)
    local pool = '{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"}, ' ..
      '"spec": {"template": {"spec": {"requirements": []}}}}'
    local function pod(name, req)
      return ('{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "%s", "namespace": "default"}, "spec": ' ..
        '{"containers": [{"name": "c", "resources": {"requests": %s}}]}}'):format(name, req)
    end
    local st = h.write('{"objects": [' .. pool .. ", " .. pod("bad", '{"example.com/dev": "2251799813685248"}') ..
      ", " .. pod("good", '{"cpu": "1"}') .. '], "instances": []}')
    local d = start("--state " .. st)
    eventually(function() return http(d, "GET", "/v1/plan"):find('"default/good"', 1, true) end, "the good pod planned")
    local log = slurp(d.log)
    assert.matches('1 objects left out of the round, refused by the reader (replace or delete them): Pod/default/bad:',
      log, 1, true)
    http(d, "PUT", "/v1/objects", h.pod("another", { cpu = "1" })) -- another round
    eventually(function() return http(d, "GET", "/v1/plan"):find('"default/another"', 1, true) end, "another round")
    assert.equal(1, select(2, slurp(d.log):gsub("objects left out of", "")), "said once, not every round")
    d.stop()
    os.remove(st)
    os.remove(st .. ".journal")
  end)

  it("leaves out a VirtualMachinePool and an EC2NodeClass its state holds and this version refuses", function()
    -- as an earlier version stored them: a misspelt pool field, a node class without an AMI family
    local pool = '{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "default"}, ' ..
      '"spec": {"template": {"spec": {"requirements": []}}}}'
    local vmpool = '{"apiVersion": "pool.kubevirt.io/v1beta1", "kind": "VirtualMachinePool", "metadata": ' ..
      '{"name": "web", "namespace": "default"}, "spec": {"replica": 3, "selector": {"matchLabels": {"app": "web"}}, ' ..
      '"virtualMachineTemplate": {"metadata": {"labels": {"app": "web"}}, "spec": {"template": {"spec": ' ..
      '{"domain": {"devices": {}, "memory": {"guest": "1Gi"}}}}}}}}'
    local nc = '{"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "default"}, ' ..
      '"spec": {"amiSelectorTerms": [{"id": "ami-1"}]}}'
    local pod = '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "good", "namespace": "default"}, "spec": ' ..
      '{"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]}}'
    local st = h.write('{"objects": [' .. table.concat({ pool, vmpool, nc, pod }, ", ") .. '], "instances": []}')
    local d = start("--state " .. st)
    eventually(function() return http(d, "GET", "/v1/plan"):find('"default/good"', 1, true) end, "the good pod planned")
    local log = slurp(d.log)
    assert.matches("2 objects left out of the round, refused by the reader", log, 1, true)
    assert.matches("spec.replica: unknown field (did you mean replicas?)", log, 1, true)
    assert.matches("EC2NodeClass default: spec.amiFamily: missing", log, 1, true)
    d.stop()
    os.remove(st)
    os.remove(st .. ".journal")
  end)

  it("spreads pods by its --scheduler-config in every round and pass, and stays put; refuses a bad one at start",
    function()
      local cfg = h.write("podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 1, topologyKey: " ..
        "topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}\n")
      local pool = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n" ..
        "  disruption: {consolidateAfter: 0s, budgets: [{nodes: '100%'}]}\n  template:\n    spec:\n" ..
        "      requirements:\n        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n" ..
        "        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}\n" ..
        "        - {key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a, us-east-1b, us-east-1c]}\n"
      local service = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: default}\n" ..
        "spec: {selector: {app: web}, ports: [{port: 80}]}\n"
      local pods = {}
      for i = 1, 3 do pods[i] = h.pod("web-" .. i, { cpu = "1", memory = "1Gi", labels = { app = "web" } }) end
      local function zones(d)
        local z = {}
        for zone in http(d, "GET", "/v1/state"):gmatch('"zone":%s*"(us%-east%-1%a)"') do z[zone] = true end
        return z
      end
      -- the pods fit one node: without the configuration, one launch
      local d = start("--disrupt-interval 200ms")
      http(d, "PUT", "/v1/objects", h.docs(pool, service, table.unpack(pods)))
      eventually(function() return select(2, http(d, "GET", "/v1/state"):gsub('"id":%s*"i%-', "")) == 1 end,
        "an instance")
      rounds(d, 2, "two more rounds and passes")
      assert.equal(1, select(2, http(d, "GET", "/v1/state"):gsub('"id":%s*"i%-', "")))
      d.stop()
      -- with it, a node in each zone, kept over many passes (consolidation would put them together)
      d = start("--disrupt-interval 200ms --scheduler-config " .. cfg)
      http(d, "PUT", "/v1/objects", h.docs(pool, service, table.unpack(pods)))
      eventually(function() return select(2, http(d, "GET", "/v1/state"):gsub('"id":%s*"i%-', "")) == 3 end,
        "three instances")
      assert.are.same({ ["us-east-1a"] = true, ["us-east-1b"] = true, ["us-east-1c"] = true }, zones(d))
      rounds(d, 8, "eight more rounds and passes")
      assert.equal(0, metric(d, "dovetail_nodes_deleted_total"))
      assert.equal(3, select(2, http(d, "GET", "/v1/state"):gsub('"id":%s*"i%-', "")))
      assert.equal(3, metric(d, 'dovetail_claims_launched_total{capacity_type="on-demand"}'))
      -- a Service whose selector is not a map of strings is left out, and the log says so once
      http(d, "PUT", "/v1/objects", "apiVersion: v1\nkind: Service\nmetadata: {name: odd, namespace: default}\n" ..
        "spec: {selector: {app: [web]}}\n")
      rounds(d, 3, "three more rounds and passes")
      local _, said = h.slurp(d.log):gsub("the reader noted: [^\n]*Service default/odd: spec.selector is not a map of " ..
        "strings; left out", "")
      assert.equal(1, said, h.slurp(d.log))
      d.stop()
      -- a document kube-scheduler refuses stops the start, naming the file and the field
      local bad = h.write("podTopologySpread:\n  defaultConstraints:\n  - {maxSkew: 0, topologyKey: zone, " ..
        "whenUnsatisfiable: DoNotSchedule}\n")
      local p = io.popen(h.bin .. " serve --listen 127.0.0.1:0 --scheduler-config " .. bad .. " 2>&1; echo rc=$?")
      local out = p:read("a")
      p:close()
      assert.matches(bad .. ": scheduler config: podTopologySpread.defaultConstraints[0].maxSkew: expected an integer from 1 to 2147483647",
        out, 1, true)
      assert.matches("rc=1", out, 1, true)
      os.remove(cfg)
      os.remove(bad)
    end)

  it("keeps a CapacityBuffer's headroom launched, never nominated, over many passes, and restores it when pods take it",
    function()
      local pool = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n" ..
        "  disruption: {consolidateAfter: 0s, budgets: [{nodes: '100%'}]}\n  template:\n    spec:\n" ..
        "      requirements:\n        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n" ..
        "        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}\n"
      local tmpl = "apiVersion: v1\nkind: PodTemplate\nmetadata: {name: chunk, namespace: shop}\ntemplate:\n" ..
        "  metadata: {labels: {app: headroom}}\n  spec:\n    containers: [{name: c, resources: {requests: " ..
        "{cpu: '1', memory: 1Gi}}}]\n"
      local buffer = "apiVersion: autoscaling.x-k8s.io/v1beta1\nkind: CapacityBuffer\nmetadata: {name: spare, " ..
        "namespace: shop}\nspec: {podTemplateRef: {name: chunk}, replicas: 2}\n"
      local function instances(d) return select(2, http(d, "GET", "/v1/state"):gsub('"id":%s*"i%-', "")) end
      local d = start("--disrupt-interval 200ms")
      http(d, "PUT", "/v1/objects", h.docs(pool, tmpl, buffer))
      eventually(function() return instances(d) == 1 end, "the headroom's instance")
      rounds(d, 8, "eight more rounds and passes")
      assert.are.same({ 1, 0 }, { instances(d), metric(d, "dovetail_nodes_deleted_total") })
      -- no pod is nominated for the chunks: the claim's dovetail.dev/pods is empty
      local claims = http(d, "GET", "/v1/state")
      assert.is_nil(claims:find("capacity-buffer-spare", 1, true), claims)
      -- a pod of 2 cpu takes the headroom's room: the buffer gets a second node, and both stay
      http(d, "PUT", "/v1/objects", h.pod("app", { cpu = "2", memory = "1Gi", namespace = "shop" }))
      eventually(function() return instances(d) == 2 end, "the headroom restored")
      rounds(d, 8, "eight more rounds and passes")
      assert.are.same({ 2, 0 }, { instances(d), metric(d, "dovetail_nodes_deleted_total") })
      d.stop()
    end)

  it("holds, in its disruption passes, the claim nominating a pod its state holds and this version refuses",
    function()
      local st = h.tmpdir() .. "/state.json"
      local pool = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n" ..
        "  disruption: {consolidateAfter: 0s, budgets: [{nodes: '100%'}]}\n  template:\n    spec:\n" ..
        "      requirements:\n        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n"
      local d = start("--state " .. st)
      http(d, "PUT", "/v1/objects", h.docs(pool, h.pod("a", { cpu = "1" })))
      eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "an instance")
      d.stop()
      refused_pod_a(st) -- as an earlier version stored it, nominated to the claim launched for it (never bound)
      d = start("--disrupt-interval 200ms --state " .. st)
      rounds(d, 8, "eight passes")
      assert.equal(0, metric(d, "dovetail_nodes_deleted_total"))
      assert.equal(1, select(2, http(d, "GET", "/v1/state"):gsub('"id":%s*"i%-', "")))
      assert.matches("refused by the reader (replace or delete them): Pod/default/a:", h.slurp(d.log), 1, true)
      d.stop()
    end)

  it("holds, in its disruption passes, the node of a pod its state holds and this version refuses", function()
    -- The pass used to stop at such a pod, every pass: nothing was consolidated while it lasted.
    -- Left out, its node would look emptier than it is; held, the pass goes on around it.
    local st = h.tmpdir() .. "/state.json"
    local d = start("--disrupt-interval 200ms --state " .. st)
    local pool = "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata: {name: default}\nspec:\n" ..
      "  disruption: {consolidateAfter: 0s, budgets: [{nodes: '100%'}]}\n  template:\n    spec:\n" ..
      "      requirements:\n        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}\n" ..
      "        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.xlarge]}\n"
    local function pod(name, cpu, node)
      return h.pod(name, { cpu = cpu, memory = "1Gi", extra = node and ("  nodeName: " .. node) or nil })
    end
    http(d, "PUT", "/v1/objects", h.docs(pool, pod("a", "3"), pod("b", "2500m")))
    eventually(function() return select(2, http(d, "GET", "/v1/state"):gsub('"id":%s*"i%-', "")) == 2 end,
      "two instances")
    local state = http(d, "GET", "/v1/state")
    local nodes, i = {}, 0
    for id, zone in state:gmatch('"id":%s*"(i%-%x+)".-"zone":%s*"([%w-]+)"') do
      i = i + 1
      nodes[#nodes + 1] = ("apiVersion: v1\nkind: Node\nmetadata:\n  name: node-%d\n  labels: {kubernetes.io/arch: " ..
        "amd64, karpenter.sh/nodepool: default, topology.kubernetes.io/zone: %s, node.kubernetes.io/instance-type: " ..
        "m5.xlarge}\nspec: {providerID: 'aws:///%s/%s'}\nstatus:\n  allocatable: {cpu: 3920m, memory: 14Gi, pods: '58'}" ..
        "\n  conditions: [{type: Ready, status: 'True'}]\n"):format(i, zone, zone, id)
    end
    assert.equal(2, #nodes, state)
    http(d, "PUT", "/v1/objects", h.docs(nodes[1], nodes[2], pod("a", "3", "node-1"), pod("b", "2500m", "node-2")))
    rounds(d, 4, "passes over the two nodes")
    assert.equal(0, metric(d, "dovetail_nodes_deleted_total"))
    d.stop()
    refused_pod_a(st)
    d = start("--disrupt-interval 200ms --state " .. st)
    assert.equal(200, select(2, http(d, "DELETE", "/v1/objects/Pod/default/b"))) -- node-2 is empty now
    eventually(function() return metric(d, "dovetail_nodes_deleted_total") == 1 end, "the empty node deleted")
    rounds(d, 8, "eight more passes")
    assert.equal(1, metric(d, "dovetail_nodes_deleted_total")) -- node-1 runs pod a, unread: held
    assert.equal(1, select(2, http(d, "GET", "/v1/state"):gsub('"id":%s*"i%-', "")))
    assert.matches("refused by the reader (replace or delete them): Pod/default/a:", slurp(d.log), 1, true)
    d.stop()
  end)

  it("plans what it stores as the CLI plans what it reads: unquoted numbers keep their value and text", function()
    -- cpu: 0.1 read back from the stored JSON was 0.10000000000000001 cores, 101m; a label of
    -- digits, e and digits (an unquoted hash) overflowed a double and was stored as null, after
    -- which every round failed
    local pod = "apiVersion: v1\nkind: Pod\nmetadata: {name: p, namespace: d, labels: {pod-template-hash: 89445e894}}\n" ..
      "spec: {containers: [{name: c, resources: {requests: {cpu: 0.1, memory: 0.3Gi}}}]}\n"
    local f = h.write(pod)
    local out = h.cli("plan -o json --now 2026-11-23T12:00:00Z examples/quickstart.yaml " .. f)
    local cli = out:match('"requests":%s*(%b{})')
    local d = start()
    -- one request: two could fall in two rounds, and the second plan would hold the pod alone
    local body, code = http(d, "PUT", "/v1/objects", quickstart .. "---\n" .. pod)
    assert.equal(200, code, body)
    eventually(function() return http(d, "GET", "/v1/plan"):find('"d/p"', 1, true) end, "the pod planned")
    assert.equal(cli, http(d, "GET", "/v1/plan"):match('"requests":%s*(%b{})'))
    assert.matches('"cpu": "13100m"', cli, 1, true)
    assert.is_nil(slurp(d.log):find('"level":"error"', 1, true), slurp(d.log))
    d.stop()
  end)

  it("stores CSINodes and keeps to their volume limits round after round: one launch for two pods", function()
    local d = start("--disrupt-interval 200ms")
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", slurp(h.fixtures .. "parity/csinode-volume-limit.yaml"))))
    eventually(function() return metric(d, 'dovetail_claims_launched_total{capacity_type="on-demand"}') == 1 end,
      "a claim for the pods whose volumes the node cannot attach")
    local plan = require("dkjson").decode((http(d, "GET", "/v1/plan")))
    assert.are.same({ { pod = "tenant-25/db-0", node = "ip-10-0-3-41.ec2.internal" } }, plan.bindings)
    assert.are.same({ "tenant-25/db-1", "tenant-25/db-2" }, plan.nodeClaims[1].pods)
    rounds(d, 12, "twelve rounds and passes")
    assert.equal(1, metric(d, 'dovetail_claims_launched_total{capacity_type="on-demand"}'))
    assert.is_nil(slurp(d.log):find('"level":"error"', 1, true), slurp(d.log))
    d.stop()
  end)

  it("says once, not every interval, that its passes fail on an object the reader refuses", function()
    -- a NodeClaim stored by an earlier version, with an operator this one refuses: rounds and
    -- passes stop at it (left out, its machine would be launched again)
    local st = h.write('{"objects": [{"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": ' ..
      '{"name": "default"}, "spec": {"template": {"spec": {"requirements": []}}}}, {"apiVersion": ' ..
      '"karpenter.sh/v1", "kind": "NodeClaim", "metadata": {"name": "c1"}, "spec": {"requirements": [{"key": ' ..
      '"node.kubernetes.io/instance-type", "operator": "Bogus", "values": ["m5.large"]}]}}], "instances": []}')
    local d = start("--disrupt-interval 100ms --state " .. st)
    daemon_time(d, 1500) -- some fifteen passes
    local log = slurp(d.log)
    assert.equal(1, select(2, log:gsub('"msg":"disruption pass: NodeClaim//c1: NodeClaim c1: spec.requirements%[0%]' ..
      '.operator: expected In', "")), log)
    d.stop()
    os.remove(st)
    os.remove(st .. ".journal")
  end)

  it("answers wrong methods with 405 and keeps an encoded slash inside a name", function()
    local d = start()
    http(d, "PUT", "/v1/objects", quickstart)
    for _, c in ipairs { { "POST", "/v1/state" }, { "DELETE", "/metrics" }, { "PUT", "/healthz" },
      { "POST", "/v1/decisions" }, { "GET", "/v1/objects" } } do
      assert.equal(405, select(2, http(d, c[1], c[2])), c[1] .. " " .. c[2])
    end
    assert.equal(400, select(2, http(d, "DELETE", "/v1/objects/Pod%2Fjobs%2Fbatch-1")))
    assert.equal(200, select(2, http(d, "DELETE", "/v1/objects/Pod/jobs/batch%2D1")))
    -- the log names what went by kind and name, with - for no namespace
    assert.equal(200, select(2, http(d, "DELETE", "/v1/objects/NodePool/-/default")))
    local log = slurp(d.log)
    assert.matches('"event":"delete","msg":"Pod jobs/batch-1"', log, 1, true)
    assert.matches('"event":"delete","msg":"NodePool default"', log, 1, true)
    local body, code = http(d, "PUT", "/v1/objects", '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}, "spec": ')
    assert.equal(400, code)
    assert.equal('{"error":"request:1:71: malformed JSON near \\" \\""}\n', body)
    d.stop()
  end)

  it("converges a VirtualMachinePool scaled from 4 to 6, launching nodes for the new VMs once", function()
    local d = start("--disrupt-interval 200ms")
    local example = slurp("examples/vm-pool.yaml")
    http(d, "PUT", "/v1/objects", example)
    eventually(function() return http(d, "GET", "/metrics"):match('dovetail_vms{vmpool="default/web",state="Provisioning"} 2') end,
      "the two missing VMs created")
    local pool = example:match("^(.-)\n%-%-%-\n"):gsub("replicas: 4", "replicas: 6")
    http(d, "PUT", "/v1/objects", pool)
    eventually(function() return http(d, "GET", "/metrics"):match('dovetail_vms{vmpool="default/web",state="Provisioning"} 4') end,
      "four VMs created in all")
    -- the round that created them places their pods; then five disruption
    -- passes (a second of them) in which nothing more may happen
    eventually(function() return http(d, "GET", "/metrics"):find("dovetail_pending_pods 0\n", 1, true) end,
      "the new VMs' pods placed")
    rounds(d, 5, "five disruption passes")
    local metrics = http(d, "GET", "/metrics")
    assert.matches('dovetail_vmpool_actions_total{vmpool="default/web",action="create"} 4\n', metrics, 1, true)
    assert.matches('dovetail_vmpool_actions_total{vmpool="default/web",action="delete"} 0\n', metrics, 1, true)
    assert.matches("dovetail_nodes_deleted_total 0\n", metrics, 1, true)
    assert.matches('dovetail_vms{vmpool="default/web",state="Running"} 2\n', metrics, 1, true)
    assert.matches('"replicas": 6,', (http(d, "GET", "/v1/pools")))
    local launches = 0
    for n in metrics:gmatch('dovetail_claims_launched_total{capacity_type="[%w-]+"} (%d+)') do launches = launches + n end
    assert.is_true(launches >= 1 and launches <= 4, metrics)
    assert.matches("dovetail_pending_pods 0\n", metrics, 1, true)
    d.stop()
  end)

  it("rewrites a VM whose pool changed outside its instance template once, keeping it running", function()
    local d = start("--disrupt-interval 200ms")
    local dump = slurp(h.fixtures .. "kubevirt/vm-labels-changed.yaml")
    http(d, "PUT", "/v1/objects", dump)
    eventually(function()
      return http(d, "GET", "/metrics"):match('dovetail_vmpool_actions_total{vmpool="default/web",action="update"} 2')
    end, "both VMs rewritten")
    rounds(d, 5, "five more rounds")
    local metrics = http(d, "GET", "/metrics")
    assert.matches('dovetail_vmpool_actions_total{vmpool="default/web",action="update"} 2\n', metrics, 1, true)
    assert.matches('dovetail_vms{vmpool="default/web",state="Running"} 2\n', metrics, 1, true)
    assert.matches('"update rewrite: template changed outside its instance template', (http(d, "GET", "/v1/decisions")),
      1, true)
    d.stop()
  end)

  it("restarts a VM whose VMI runs an older revision once, not at every round", function()
    local d = start("--disrupt-interval 200ms")
    http(d, "PUT", "/v1/objects", slurp(h.fixtures .. "kubevirt/mid-rollout.yaml"))
    eventually(function()
      return http(d, "GET", "/metrics"):match('dovetail_vmpool_actions_total{vmpool="default/web",action="update"} 2')
    end, "both VMs restarted")
    -- another provisioning round, in which the pools converge again (the pod has no NodePool to go to)
    assert.equal(200, select(2, http(d, "PUT", "/v1/objects", h.pod("late"))))
    eventually(function() return slurp(d.log):match('"round %d+: 1 pending pods') end, "a round that plans")
    rounds(d, 5, "five more rounds")
    assert.matches('dovetail_vmpool_actions_total{vmpool="default/web",action="update"} 2\n',
      (http(d, "GET", "/metrics")), 1, true)
    d.stop()
  end)

  it("raises its soft limit on open files to the hard one, as Go programs do (a launch is a socket)", function()
    local p = io.popen("sh -c 'ulimit -Hn'")
    local hard = tonumber(p:read("l"))
    p:close()
    if not hard or hard <= 256 then return end -- nothing to raise here
    local d = start("--disrupt-interval 0", "ulimit -Sn 256; exec " .. h.bin)
    local soft = tonumber(slurp("/proc/" .. d.pid .. "/limits"):match("Max open files%s+(%d+)"))
    d.stop()
    assert.equal(hard, soft)
  end)

  it("refuses bad options and config with a message naming them", function()
    local typo, value = h.write("batch-idel: 1s\n"), h.write("batch-idle: 1 second\n")
    local cases = {
      { "--batch-idle soon", 2, '--batch-idle: expected a duration such as 1s, 500ms or 3m, got "soon"' },
      { "--provider http", 2, "--provider http and --cloud-url URL go together" },
      { "--provider aws", 2, '--provider: expected sim or http, got "aws"' },
      { "--registration later", 2, '--registration: expected auto, node or launch, got "later"' },
      { "--listen nowhere", 1, '--listen: expected HOST:PORT, got "nowhere"' },
      { "--config " .. h.write("- a list\n"), 2, "expected a map of options" },
      -- a mistake in the file names the file and the key, not a command line the user never typed
      { "--config " .. typo, 2, "--config " .. typo .. ": batch-idel: unknown option (did you mean batch-idle?)" },
      { "--config " .. value, 2, "--config " .. value .. ': --batch-idle: expected a duration such as 1s, 500ms or 3m, got "1 second"' },
      -- strtoull read "-1" as 2^64 - 1 nodes
      { "--max-unhealthy -1", 2, '--max-unhealthy: expected a count or a percentage such as 3 or 40%, got "-1"' },
      { "--max-connections -1", 2, '--max-connections: expected' },
    }
    for _, c in ipairs(cases) do
      local _, err, code = h.cli("serve " .. c[1])
      assert.equal(c[2], code, c[1])
      assert.matches(c[3], err, 1, true)
    end
  end)

  -- The HTTP API's limits: what one client may hold of the daemon.
  it("answers 503 with Retry-After when a large reply would pass --reply-limit, and still serves health and metrics",
    function()
      local d = start("--reply-limit 1")
      http(d, "PUT", "/v1/objects", quickstart)
      local pods = {}
      for i = 1, 400 do
        -- one a node: the plan has 400 NodeClaims
        pods[i] = string.format('{"apiVersion":"v1","kind":"Pod","metadata":{"name":"w-%d","namespace":"load",'
          .. '"labels":{"app":"one-a-node"}},"spec":{"affinity":{"podAntiAffinity":{'
          .. '"requiredDuringSchedulingIgnoredDuringExecution":[{"topologyKey":"kubernetes.io/hostname",'
          .. '"labelSelector":{"matchLabels":{"app":"one-a-node"}}}]}},'
          .. '"containers":[{"name":"c","resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}}', i)
      end
      assert.equal(200, select(2, http(d, "PUT", "/v1/objects",
        '{"apiVersion":"v1","kind":"List","items":[' .. table.concat(pods, ",") .. "]}")))
      -- the plan with the 400 pods (over 64 KiB) is a large reply; health, metrics and errors are not
      local body, code
      eventually(function()
        body, code = http(d, "GET", "/v1/plan", nil, "-i")
        return code == 503 and not body:find("no plan yet", 1, true)
      end, "the plan of the 400 pods refused")
      assert.equal(503, code)
      assert.matches("\r\n[Rr]etry%-[Aa]fter: 1\r\n", body)
      assert.matches('"error":"busy: replies to other clients are still being read; retry"', body, 1, true)
      assert.equal(200, select(2, http(d, "GET", "/healthz")))
      assert.is_true(metric(d, 'dovetail_http_refused_total{limit="reply-limit"}') >= 1)
      d.stop()
      -- with room, the plan is one copy whatever the number of readers
      d = start()
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return select(2, http(d, "GET", "/v1/plan")) == 200 end, "a plan")
      local plan = http(d, "GET", "/v1/plan")
      assert.equal(#plan, metric(d, "dovetail_http_reply_bytes"))
      assert.equal(#plan, tonumber(http(d, "HEAD", "/v1/plan", nil, "-i"):match("[Cc]ontent%-[Ll]ength: (%d+)")))
      d.stop()
    end)

  it("gives an idle connection's place to a new one at --max-connections, shuts stalled ones, speaks only HTTP/1.1",
    function()
      local d = start("--max-connections 3 --stall-timeout 1s")
      -- Six connections that send nothing, opened by one shell that says when all six are
      -- connected (each ends within 20 s whatever happens). The daemon takes connections
      -- off its backlog in order, so every request after that comes after all six.
      local ready_file = os.tmpname()
      os.remove(ready_file)
      os.execute("bash -c 'for i in 1 2 3 4 5 6; do exec {fd}<>/dev/tcp/127.0.0.1/" .. d.port .. " || exit; done; "
        .. ": >" .. ready_file .. "; sleep 20' >/dev/null 2>&1 &")
      eventually(function() return io.open(ready_file) and true end, "the six connections made")
      os.remove(ready_file)
      -- A request is refused while the three places hold connections still for less than
      -- 5 s: read what the daemon reports as it answers.
      local function reported(name)
        local ok, v = pcall(metric, d, name)
        return ok and v or nil
      end
      local most = 0
      local function at_least(name, n)
        local conns = reported("dovetail_http_connections")
        most = math.max(most, conns or 0)
        local v = reported(name)
        return v and v >= n
      end
      -- the three past the first three were refused; the first three, still, were shut
      eventually(function() return at_least('dovetail_http_refused_total{limit="max-connections"}', 3) end,
        "three connections refused")
      eventually(function() return at_least('dovetail_http_refused_total{limit="stall-timeout"}', 3) end,
        "the still connections shut")
      eventually(function() return select(2, http(d, "GET", "/healthz")) == 200 end, "/healthz through the flood")
      assert.is_true(most <= 4, "connections seen: " .. most) -- three, and one being shut
      -- HTTP/2 (which lets a connection hold a hundred requests) is not spoken
      local p = io.popen("env -u LD_PRELOAD curl -s -m 10 --http2-prior-knowledge -o /dev/null -w '%{http_code}' "
        .. "http://127.0.0.1:" .. d.port .. "/healthz")
      local h2 = p:read("a")
      p:close()
      assert.equal("000", h2)
      -- a body with no object in it starts no round
      local before = metric(d, "dovetail_plan_duration_seconds_count")
      assert.equal('{"applied":0}\n', (http(d, "PUT", "/v1/objects", "   \n")))
      daemon_time(d, 1000)
      assert.equal(before, metric(d, "dovetail_plan_duration_seconds_count"))
      d.stop()
    end)

  describe("with the http provider and dovetail fakecloud", function()
    local function cloud(args)
      return spawn("fakecloud --listen 127.0.0.1:0 " .. (args or ""), "the fake cloud")
    end

    local function instances(c)
      return (http({ port = c.port }, "GET", "/instances?cluster=dovetail"))
    end

    -- An instance of cluster that the cloud runs already (another fleet's, or one no state holds).
    local function cloud_instance(c, cluster, claim)
      http({ port = c.port }, "POST", "/instances", ('{"cluster":"%s","claim":"%s","instanceType":"m5.large",'
        .. '"zone":"us-east-1a","capacityType":"on-demand","nodePool":"default"}'):format(cluster, claim))
    end

    -- The instances of every cluster that run, and the cloud's listing.
    local function running(c)
      local all = http({ port = c.port }, "GET", "/instances")
      return select(2, all:gsub('"state":"running"', "")), all
    end

    local function count(c)
      local n = 0
      for _ in instances(c):gmatch('"id":') do n = n + 1 end
      return n
    end

    local function ready(d, what)
      eventually(function() return select(2, http(d, "GET", "/readyz")) == 200 end, what or "ready")
    end

    -- A daemon polling cloud c (with args) says `phrase` `times` times in its log, and n
    -- instances still run: none was deleted as an orphan.
    local function leaves_alone(c, args, phrase, times, n)
      local d = start("--provider http --cloud-url http://127.0.0.1:" .. c.port .. " --poll 200ms " .. args)
      ready(d)
      eventually(function() return select(2, slurp(d.log):gsub(phrase, "")) >= times end,
        times .. " times '" .. phrase .. "'")
      local running_now, all = running(c)
      assert.equal(n, running_now, all)
      assert.is_nil(http(d, "GET", "/v1/decisions"):match('"kind":%s*"orphan"'))
      d.stop()
    end

    -- Preempt the first instance on the cloud and wait until another runs in its place.
    local function preempt_and_wait_for_replacement(c)
      local id = instances(c):match('"id":"(i%-%x+)"')
      http({ port = c.port }, "POST", "/admin/preempt/" .. id)
      eventually(function()
        local l = instances(c)
        return l:match('"state":"running"') and not l:find(id, 1, true)
      end, "a replacement for the preempted instance")
    end

    -- A fake cloud and a daemon using it, reconciled; extra daemon options in args.
    local function on_cloud(args)
      local c = cloud()
      local d = start("--provider http --cloud-url http://127.0.0.1:" .. c.port .. " " .. args)
      ready(d)
      return c, d
    end

    -- on_cloud(args) once it has launched the quickstart's instance; and that instance's id.
    local function quickstart_on_cloud(args)
      local c, d = on_cloud(args)
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return count(c) == 1 end, "the quickstart's instance")
      return c, d, instances(c):match('"id":"(i%-%x+)"')
    end

    -- Nothing forgotten and nothing launched again: the one instance, launched once.
    local function kept_one(c, d)
      assert.is_nil(http(d, "GET", "/v1/decisions"):match('"kind":%s*"forget"'))
      assert.equal(1, count(c), instances(c))
      assert.equal(1, select(2, slurp(d.log):gsub('"event":"launch"', "")), slurp(d.log))
    end

    it("waits for a launched claim's Node (--registration node): none in time, the claim goes and another launches;"
      .. " one whose Node is Ready stays", function()
      local c, d = on_cloud("--poll 200ms --registration node --startup-timeout 2s --disrupt-interval 300ms")
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return count(c) == 1 end, "the quickstart's instance")
      assert.matches('"initialized":%s*false', (http(d, "GET", "/v1/state")), "not initialized at launch")
      eventually(function() return metric(d, "dovetail_remediations_total") == 1 end, "the startup timeout", 20)
      assert.matches("has not initialized", (http(d, "GET", "/v1/decisions")))
      eventually(function() return metric(d, 'dovetail_claims_launched_total{capacity_type="spot"}') == 2 end,
        "a second launch for the quickstart's pods")
      local st = http(d, "GET", "/v1/state")
      local id, zone = st:match('"id":%s*"(i%-%x+)"'), st:match('"zone":%s*"([%w-]+)"')
      -- it registers as the cluster names it, tainted not-ready at first, then Ready
      local node = ("apiVersion: v1\nkind: Node\nmetadata:\n  name: ip-10-0-0-9.ec2.internal\n  labels: {kubernetes.io/arch: " ..
        "amd64, karpenter.sh/nodepool: default, topology.kubernetes.io/zone: %s}\nspec:\n  providerID: 'aws:///%s/%s'\n" ..
        "  taints: %s\nstatus:\n  allocatable: {cpu: '15', memory: 56Gi, pods: '234'}\n" ..
        "  conditions: [{type: Ready, status: '%s'}]\n")
      http(d, "PUT", "/v1/objects", node:format(zone, zone, id,
        "[{key: node.kubernetes.io/not-ready, effect: NoSchedule}]", "False"))
      sleep(0.5)
      assert.matches('"initialized":%s*false', (http(d, "GET", "/v1/state")), "NotReady: not initialized")
      http(d, "PUT", "/v1/objects", node:format(zone, zone, id, "[]", "True"))
      eventually(function() return http(d, "GET", "/v1/state"):match('"initialized":%s*true') end, "initialized")
      sleep(3) -- past the startup timeout: it stays
      assert.equal(1, metric(d, "dovetail_remediations_total"))
      assert.matches(id, instances(c), 1, true)
      d.stop()
      c.stop()
    end)

    it("with --registration node, a claim not initialized at a restart waits again, timed from its launch", function()
      local state = os.tmpname()
      os.remove(state)
      local c = cloud()
      local url = "--provider http --cloud-url http://127.0.0.1:" .. c.port .. " --poll 200ms --registration node "
      local d = start(url .. "--state " .. state .. " --startup-timeout 1h --disrupt-interval 300ms")
      ready(d)
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return count(c) == 1 end, "the quickstart's instance")
      d.stop()
      sleep(2)
      d = start(url .. "--state " .. state .. " --startup-timeout 2s --disrupt-interval 300ms")
      ready(d)
      eventually(function() return metric(d, "dovetail_remediations_total") == 1 end, "the startup timeout", 20)
      assert.matches("has not initialized", (http(d, "GET", "/v1/decisions")))
      d.stop()
      c.stop()
      os.remove(state)
    end)

    it("with --registration auto, waits for Nodes once the cluster feed has sent one", function()
      local c, d = on_cloud("--poll 200ms --registration auto")
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return count(c) == 1 end, "the quickstart's instance")
      assert.matches('"initialized":%s*true', (http(d, "GET", "/v1/state")), "no Node seen yet: at launch")
      http(d, "PUT", "/v1/objects", "apiVersion: v1\nkind: Node\nmetadata:\n  name: other\n  labels: " ..
        "{node.kubernetes.io/instance-type: m5.large}\nstatus:\n  conditions: [{type: Ready, status: 'True'}]\n")
      http(d, "PUT", "/v1/objects", h.pod("big", { cpu = "30", memory = "8Gi" }))
      eventually(function() return count(c) == 2 end, "big's instance")
      assert.matches('"initialized":%s*false', (http(d, "GET", "/v1/state")), "a Node seen: big's waits for its own")
      d.stop()
      c.stop()
    end)

    it("launches through the cloud, moves on after insufficient capacity, and replaces preempted instances", function()
      local c = cloud("--ice m6i.4xlarge/us-east-1a/spot")
      local d = start("--provider http --cloud-url http://127.0.0.1:" .. c.port .. " --poll 300ms")
      ready(d)
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return instances(c):match('"state":"running"') end, "a cloud instance")
      assert.matches('"zone":"us%-east%-1b"', instances(c))
      assert.matches('"unavailableOfferings":%s*%[%s*{', (http(d, "GET", "/v1/state")))
      preempt_and_wait_for_replacement(c)
      assert.matches('"zone":"us%-east%-1c"', instances(c))
      assert.matches('"kind":%s*"interruption"', (http(d, "GET", "/v1/decisions")))
      d.stop()
      c.stop()
    end)

    it("honours keep-offering on a polled preemption: replaced, and no mark", function()
      local pol = h.write('return { on_interruption = function(e) if e.kind == "preemption" then return "keep-offering" end end }\n')
      local c, d = on_cloud("--poll 300ms --policy " .. pol)
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return instances(c):match('"state":"running"') end, "a cloud instance")
      preempt_and_wait_for_replacement(c)
      assert.matches('"unavailableOfferings":%s*%[%]', (http(d, "GET", "/v1/state")))
      d.stop()
      c.stop()
      os.remove(pol)
    end)

    it("terminates the instance it drains for an interruption event, and replaces it", function()
      -- no state file, and no poll before the spec ends: nothing would ever delete it as an orphan
      local c, d = on_cloud("--poll 1h")
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return instances(c):match('"state":"running"') end, "a cloud instance")
      local id = instances(c):match('"id":"(i%-%x+)"')
      local body = http(d, "POST", "/v1/events", '{"detail-type":"AWS Health Event","source":"aws.health",'
        .. '"detail":{"instance-id":"' .. id .. '"}}')
      assert.matches('"action":"replaced"', body)
      eventually(function()
        local l = instances(c)
        return l:match('"state":"running"') and not l:find(id, 1, true)
      end, "the drained instance terminated and a replacement running")
      assert.matches('"kind":%s*"interruption"', (http(d, "GET", "/v1/decisions")))
      d.stop()
      c.stop()
    end)

    it("leaves alone instances it cannot account for", function()
      local c = cloud()
      -- an instance of another cluster, and one of this cluster with no state file behind the daemon
      cloud_instance(c, "other", "x")
      cloud_instance(c, "dovetail", "y")
      -- the first poll reconciles; each one after it finds the instance and
      -- leaves it alone: two of them, so a delete from the first has been answered
      leaves_alone(c, "", "cannot account for", 2, 2)
      c.stop()
    end)

    it("never deletes a fleet that a new or empty state file does not hold", function()
      local c = cloud()
      for i = 1, 3 do cloud_instance(c, "dovetail", "c" .. i) end
      -- a --state path that does not exist yet: the daemon writes it, holding nothing, and every
      -- running instance of its cluster would look like an orphan
      local state = os.tmpname()
      os.remove(state)
      leaves_alone(c, "--state " .. state, "a state that does not match the cloud", 6, 3) -- six polls, a line each
      c.stop()
      os.remove(state)
      os.remove(state .. ".journal")
    end)

    it("never deletes the fleet a state lost, once it has launched a second one for the same pods", function()
      -- a state whose instances and NodeClaims are gone (an old backup, a hand edit) but whose
      -- pods are kept: the daemon launches for the pods again, and that launch must not make the
      -- running instance a trusted orphan at the next poll
      local c = cloud()
      local state = os.tmpname()
      os.remove(state)
      local args = "--provider http --cloud-url http://127.0.0.1:" .. c.port .. " --poll 200ms --disrupt-interval 0 "
        .. "--state " .. state
      local d = start(args)
      ready(d)
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return count(c) == 1 end, "the quickstart's instance")
      local first = instances(c):match('"id":"(i%-%x+)"')
      d.stop()
      local json = require "dkjson"
      local st = json.decode(slurp(state))
      st.instances = {}
      local kept = {}
      for _, o in ipairs(st.objects) do
        if o.kind ~= "NodeClaim" then kept[#kept + 1] = o end
      end
      st.objects = kept
      local f = assert(io.open(state, "w"))
      f:write(json.encode(st))
      f:close()
      os.remove(state .. ".journal")
      d = start(args)
      ready(d, "ready again")
      eventually(function() return count(c) == 2 end, "a second instance for the quickstart's pods")
      daemon_time(d, 1200) -- six polls after the launch
      assert.equal(2, count(c), instances(c))
      assert.matches(first, instances(c), 1, true)
      assert.equal(0, metric(d, "dovetail_orphans_deleted_total"))
      assert.matches("cannot account for", slurp(d.log), 1, true)
      d.stop()
      c.stop()
      os.remove(state)
      os.remove(state .. ".journal")
    end)

    it("kill -9 after many applies loses no applied object and launches nothing twice", function()
      local c = cloud()
      local state = os.tmpname()
      os.remove(state)
      -- no disruption: it may move pods between the two counts this spec compares
      local args = "--provider http --cloud-url http://127.0.0.1:" .. c.port .. " --poll 200ms --disrupt-interval 0 --state "
        .. state
      local d = start(args)
      ready(d)
      -- the pods first, then the quickstart with its NodePool: every launch
      -- comes from a round that saw every apply
      for i = 1, 40 do
        local _, code = http(d, "PUT", "/v1/objects", h.pod("extra-" .. i, { cpu = "100m", memory = "64Mi" }))
        assert.equal(200, code)
      end
      assert.equal(200, select(2, http(d, "PUT", "/v1/objects", quickstart)))
      -- settled: the last round placed every pod, and every claim it made is launched
      eventually(function()
        local rs, claims = logged_rounds(d), 0
        for _, r in ipairs(rs) do claims = claims + r.claims end
        local launches = select(2, slurp(d.log):gsub('"event":"launch"', ""))
        return #rs > 0 and rs[#rs].unschedulable == 0 and claims > 0 and launches == claims
      end, "every pod placed and every claim launched")
      local before, objects = count(c), http(d, "GET", "/v1/state"):match('"objects":%s*(%d+)')
      assert.is_true(before >= 1 and tonumber(objects) >= 44, objects)
      d.kill()
      assert.is_true(#slurp(state .. ".journal") > 0, "changes are in the journal, not yet in a snapshot")
      d = start(args)
      ready(d, "ready again")
      -- the first round after the restart launches nothing, and three polls find nothing to delete
      eventually(function() return #logged_rounds(d) >= 1 end, "a round after the restart")
      assert.equal(0, logged_rounds(d)[1].claims, "no new claim after the restart")
      daemon_time(d, 600)
      assert.matches('"objects":%s*' .. objects .. ",", (http(d, "GET", "/v1/state")))
      assert.equal(before, count(c), instances(c))
      assert.is_nil(http(d, "GET", "/v1/decisions"):match('"kind":%s*"orphan"'))
      d.stop()
      c.stop()
      os.remove(state)
      os.remove(state .. ".journal")
    end)

    it("asks the cloud for spot with a maximum price and an interruption behaviour", function()
      local c, d = on_cloud("--poll 10s")
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return instances(c):match('"state":"running"') end, "a cloud instance")
      local l = instances(c)
      assert.matches('"capacityType":"spot"', l, 1, true)
      assert.matches('"maxPrice":0.768', l, 1, true) -- m6i.4xlarge's on-demand price, Cluster API's default cap
      assert.matches('"interruptionBehavior":"terminate"', l, 1, true)
      d.stop()
      c.stop()
    end)

    -- The injected failures below go to whatever asks the cloud next, so until
    -- they are used up this spec asks the daemon, never the cloud, and the
    -- daemon polls only once (at its start): each failure meets a launch.
    it("puts an offering whose launches keep failing into a failed state with backoff, and launches elsewhere", function()
      local c, d = on_cloud("--poll 1h --retries 0")
      http({ port = c.port }, "POST", "/admin/fail", "3") -- the next three requests to the cloud: the launches
      http(d, "PUT", "/v1/objects", quickstart)
      -- three rounds, each 2 s after the failure before it
      eventually(function() return http(d, "GET", "/v1/decisions"):find("backing off", 1, true) end,
        "three failed launches", 30)
      assert.matches("launches failed in 3 rounds in a row; backing off 30s", (http(d, "GET", "/v1/decisions")), 1, true)
      eventually(function() return instances(c):match('"state":"running"') end, "a launch after three failures")
      assert.is_nil(instances(c):match('"zone":"us%-east%-1a"'), "not the offering that kept failing")
      d.stop()
      c.stop()
    end)

    it("retries failed launches with backoff", function()
      local c, d = on_cloud("--poll 1h")
      http({ port = c.port }, "POST", "/admin/fail", "2")
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "a launch after two 503s")
      assert.matches('"state":"running"', instances(c), 1, true)
      local log = slurp(d.log)
      assert.equal(2, select(2, log:gsub('"event":"retry"', "")), log)
      assert.matches("HTTP 503; retry 2 in", log, 1, true)
      d.stop()
      c.stop()
    end)

    -- The quickstart's NodePool and n pods that each take an m5.large of their own.
    local function one_node_each(n)
      local docs = { quickstart }
      for i = 1, n do
        docs[#docs + 1] = h.pod("alone-" .. i, { cpu = "1500m", memory = "1Gi",
          nodeSelector = { ["node.kubernetes.io/instance-type"] = "m5.large" } })
      end
      return h.docs(table.unpack(docs))
    end

    local function cloud_stats(c)
      local s = http({ port = c.port }, "GET", "/admin/stats")
      local t = {}
      for k, v in s:gmatch('"(%w+)":(%d+)') do t[k] = tonumber(v) end
      return t, s
    end

    -- Every claim of every round launched, and the cloud runs that many instances.
    local function all_launched(c, d)
      eventually(function()
        local rs, claims = logged_rounds(d), 0
        for _, r in ipairs(rs) do claims = claims + r.claims end
        local launches = select(2, slurp(d.log):gsub('"event":"launch"', ""))
        return #rs > 0 and rs[#rs].unschedulable == 0 and claims > 0 and launches == claims and count(c) == claims
      end, "every pod placed and every claim launched", 30)
    end

    it("counts the launches of one round that fail together as one failure of their offering", function()
      local c, d = on_cloud("--poll 1h --retries 0")
      -- the four launches of the first round fail (fewer than the five that open the circuit)
      http({ port = c.port }, "POST", "/admin/fail", "4")
      http(d, "PUT", "/v1/objects", one_node_each(3))
      eventually(function() return select(2, slurp(d.log):gsub('"event":"launch%-failed"', "")) >= 4 end,
        "four failed launches")
      -- the next round launches them, on the same offerings: the quickstart's and the three m5.large
      eventually(function() return count(c) == 4 end, "four instances")
      assert.is_nil(http(d, "GET", "/v1/decisions"):find("backing off", 1, true))
      assert.is_nil(http(d, "GET", "/v1/state"):find("rounds in a row", 1, true))
      d.stop()
      c.stop()
    end)

    it("deletes an instance the cloud launched for a claim whose launch had failed", function()
      -- no state file: an instance no claim holds is otherwise left alone as unaccounted
      local c, d = on_cloud("--poll 300ms --retries 0 --timeout 1s")
      http({ port = c.port }, "POST", "/admin/lose", "1") -- launched, the answer lost: a timeout
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return slurp(d.log):find('"event":"launch-failed"', 1, true) end, "the launch timed out")
      -- its pods get another instance, and the one launched after all is deleted
      eventually(function()
        return http(d, "GET", "/v1/decisions"):find("whose launch had failed: deleted", 1, true) and count(c) == 1
      end, "one instance left", 20)
      assert.matches('"state":"running"', instances(c), 1, true)
      assert.equal(1, metric(d, "dovetail_orphans_deleted_total"))
      d.stop()
      c.stop()
    end)

    it("keeps a node that registered while its launch's answer was lost: adopted, then answered, it stays", function()
      -- the poll adopts the instance, its Node comes and initializes it, and then the launch's
      -- retry answers: that answer took the claim for uninitialized again, and the startup
      -- timeout deleted a node running pods
      local c, d = on_cloud("--poll 200ms --timeout 2s --startup-timeout 3s --registration node --disrupt-interval 0")
      http({ port = c.port }, "POST", "/admin/lose", "1")
      http(d, "PUT", "/v1/objects", quickstart)
      local id, claim, zone
      eventually(function()
        local st = http(d, "GET", "/v1/state")
        id, claim = st:match('"id":%s*"(i%-%x+)",%s*"nodeClaim":%s*"([^"]+)"')
        zone = st:match('"zone":%s*"([^"]+)"')
        return id
      end, "the instance adopted")
      local node = ('{"apiVersion":"v1","kind":"Node","metadata":{"name":"ip-10-9-9-9.ec2.internal","labels":' ..
        '{"karpenter.sh/nodepool":"default","karpenter.sh/initialized":"true","node.kubernetes.io/instance-type":' ..
        '"m6i.4xlarge","topology.kubernetes.io/zone":"%s","karpenter.sh/capacity-type":"spot"}},"spec":' ..
        '{"providerID":"aws:///%s/%s"},"status":{"allocatable":{"cpu":"15","memory":"60Gi","pods":"234"},' ..
        '"conditions":[{"type":"Ready","status":"True"}]}}'):format(zone, zone, id)
      assert.equal(200, select(2, http(d, "PUT", "/v1/objects", node)))
      eventually(function() return slurp(d.log):find('"event":"launch","msg":"NodeClaim ' .. claim, 1, true) end,
        "the launch's retry answered", 20)
      daemon_time(d, 4500) -- past the startup timeout
      assert.matches('"initialized":%s*true', (http(d, "GET", "/v1/state")))
      assert.equal(0, metric(d, "dovetail_nodes_deleted_total"))
      assert.equal(1, count(c), instances(c))
      d.stop()
      c.stop()
    end)

    it("sends the cloud at most --cloud-connections requests at once, each timed from when it is sent", function()
      local c = cloud()
      -- every request answered 400 ms late: 30 launches through 4 connections take 3 s, and
      -- one that waited its turn for 2.8 s would time out at 1.5 s if the wait counted
      http({ port = c.port }, "POST", "/admin/slow", "400")
      local d = start("--provider http --cloud-url http://127.0.0.1:" .. c.port
        .. " --poll 1h --cloud-connections 4 --timeout 1500ms")
      ready(d)
      http(d, "PUT", "/v1/objects", one_node_each(26))
      eventually(function() return (metric(d, 'dovetail_cloud_requests{state="waiting"}') or 0) > 0 end,
        "launches waiting their turn")
      all_launched(c, d)
      local st, raw = cloud_stats(c)
      assert.is_true(st.mostAtOnce >= 2 and st.mostAtOnce <= 4, raw)
      local log = slurp(d.log)
      assert.is_nil(log:find('"event":"retry"', 1, true), log)
      -- each launch sent once, beside a poll or two (two requests each)
      local launches = select(2, log:gsub('"event":"launch"', ""))
      assert.is_true(st.requests >= launches + 2 and st.requests <= launches + 4, raw)
      d.stop()
      c.stop()
    end)

    -- On one connection (what it sends after a 429 comes after it read the 429), a daemon
    -- launches `pods` alone pods while the cloud answers `n` requests 429 as `throttle` says:
    -- every pod launched, nothing sent before the cloud's time, and no circuit opened (n
    -- throttled launches in a row would open it if they counted as failures).
    local function waits_out(throttle, pods, n)
      local c = cloud()
      local d = start("--provider http --cloud-url http://127.0.0.1:" .. c.port
        .. " --poll 1h --cloud-connections 1 --retries 6")
      ready(d)
      http({ port = c.port }, "POST", "/admin/throttle", throttle)
      http(d, "PUT", "/v1/objects", one_node_each(pods))
      all_launched(c, d)
      local st, raw = cloud_stats(c)
      assert.equal(n, st.throttled, raw)
      assert.equal(0, st.early, raw)
      local log = slurp(d.log)
      assert.equal(n, select(2, log:gsub("HTTP 429 %(Retry%-After%); retry %d+ in", "")), log)
      assert.is_nil(log:find("circuit", 1, true), log)
      d.stop()
      c.stop()
    end

    it("sends nothing while a Retry-After the cloud gave lasts, and does not count throttling as failures", function()
      waits_out("6 1", 8, 6) -- the next six requests: 429, Retry-After: 1
    end)

    it("holds only the throttled method: a launch asked to wait 5 min leaves the listings going", function()
      local c, d = on_cloud("--poll 200ms")
      http({ port = c.port }, "POST", "/admin/throttle", "1 300 POST") -- the next launch: Retry-After 300
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return cloud_stats(c).throttled == 1 end, "the launch throttled")
      local before = cloud_stats(c).requests
      daemon_time(d, 1500)
      local st, raw = cloud_stats(c)
      assert.is_true(st.requests - before >= 4, raw) -- listings and catalogs every 200 ms
      assert.equal(0, st.early, raw) -- and no launch before its time
      assert.equal(0, count(c), instances(c))
      d.stop()
      c.stop()
    end)

    it("waits out a Retry-After given as an HTTP date as one given in seconds", function()
      waits_out("3 2 date", 4, 3) -- Retry-After: <now + 2 s, as a date>
    end)

    it("counts a Retry-After under a second as a failure: 'come back at once' forever opens the circuit", function()
      local c = cloud()
      local d = start("--provider http --cloud-url http://127.0.0.1:" .. c.port .. " --poll 1h --retries 6")
      ready(d)
      http({ port = c.port }, "POST", "/admin/throttle", "1000 0") -- every request: 429, Retry-After: 0
      http(d, "PUT", "/v1/objects", one_node_each(2))
      eventually(function() return slurp(d.log):find("open for 30s after", 1, true) end, "the circuit open")
      assert.equal(0, count(c), instances(c))
      d.stop()
      c.stop()
    end)

    it("reads a listing that is not one as a failed poll: nothing forgotten, nothing launched again", function()
      local c, d = quickstart_on_cloud("--poll 200ms")
      -- the next three requests (polls) get a proxy's HTML page with a 200
      http({ port = c.port }, "POST", "/admin/garble", "3")
      daemon_time(d, 1500) -- the garbled polls, and good ones after them
      kept_one(c, d)
      assert.is_true(select(2, slurp(d.log):gsub("the reply is not JSON", "")) >= 2, slurp(d.log))
      d.stop()
      c.stop()
    end)

    it("keeps an instance a listing leaves out for a moment: forgetting it would launch a second one", function()
      local state = os.tmpname()
      os.remove(state) -- with a state file, an instance it forgot would come back as an orphan and be deleted
      local c, d = quickstart_on_cloud("--poll 200ms --state " .. state)
      http({ port = c.port }, "POST", "/admin/hide", "2") -- two listings that lag: nothing in them
      daemon_time(d, 1500)
      kept_one(c, d)
      assert.matches("not in the cloud's listing; forgotten if it stays out 3 listings and 30 s", slurp(d.log), 1, true)
      d.stop()
      c.stop()
      os.remove(state)
      os.remove(state .. ".journal")
    end)

    it("forgets an instance left out of the listing for 30 s, but not a fleet a listing leaves out at once", function()
      -- Two clouds with five instances each, watched side by side (the wait is the 30 s grace, once):
      -- on one, an instance is deleted behind the daemon's back; the other's listings come back empty.
      local pairs_ = {}
      for i = 1, 2 do
        local state = os.tmpname()
        os.remove(state)
        local c, d = on_cloud("--poll 500ms --state " .. state)
        http(d, "PUT", "/v1/objects", one_node_each(4)) -- and the quickstart's pod: five instances
        pairs_[i] = { c = c, d = d, state = state }
      end
      for _, p in ipairs(pairs_) do eventually(function() return running(p.c) == 5 end, "five instances") end
      local one, fleet = pairs_[1], pairs_[2]
      local id = instances(one.c):match('"id":"(i%-%x+)"')
      http({ port = one.c.port }, "DELETE", "/instances/" .. id) -- gone from the cloud, and from its listings
      http({ port = fleet.c.port }, "POST", "/admin/hide", "100000")
      eventually(function()
        return http(one.d, "GET", "/v1/decisions"):match('"kind":%s*"forget"') and running(one.c) == 5
          and slurp(fleet.d.log):find("taken for a listing gone wrong", 1, true)
      end, "the one instance forgotten and replaced, and the empty listings taken for a fault", 90)
      assert.matches("left out 5 of the 5 instances held", slurp(fleet.d.log), 1, true)
      assert.equal(5, metric(fleet.d, "dovetail_instances_held_back"))
      daemon_time(fleet.d, 2000) -- more empty listings: still nothing forgotten or launched
      assert.is_nil(http(fleet.d, "GET", "/v1/decisions"):match('"kind":%s*"forget"'))
      assert.equal(5, select(2, slurp(fleet.d.log):gsub('"event":"launch"', "")))
      -- one line for the five instances the first empty listing left out, not one each
      assert.equal(1, select(2, slurp(fleet.d.log):gsub("not in the cloud's listing", "")), slurp(fleet.d.log))
      http({ port = fleet.c.port }, "POST", "/admin/hide", "0")
      eventually(function() return metric(fleet.d, "dovetail_instances_held_back") == 0 end, "the listing whole again")
      assert.matches("no longer taken for one gone wrong", slurp(fleet.d.log), 1, true)
      assert.equal(5, running(fleet.c))
      assert.equal(0, metric(fleet.d, "dovetail_orphans_deleted_total"))
      assert.equal(6, select(2, slurp(one.d.log):gsub('"event":"launch"', "")))
      for _, p in ipairs(pairs_) do
        p.d.stop()
        p.c.stop()
        os.remove(p.state)
        os.remove(p.state .. ".journal")
      end
    end)

    it("forgets and replaces an instance the cloud lists as terminated", function()
      local c, d, id = quickstart_on_cloud("--poll 200ms")
      http({ port = c.port }, "POST", "/admin/terminate/" .. id)
      eventually(function() return running(c) == 1 and not instances(c):match(id .. '","cluster[^}]*"running"') end,
        "a replacement running beside the terminated one")
      assert.matches('"kind":%s*"forget"', (http(d, "GET", "/v1/decisions")))
      assert.equal(2, count(c), instances(c))
      d.stop()
      c.stop()
    end)

    it("forgets and replaces an instance the cloud lists as shutting down", function()
      local c, d, id = quickstart_on_cloud("--poll 200ms")
      http({ port = c.port }, "POST", "/admin/terminate/" .. id, "shutting-down")
      eventually(function() return running(c) == 1 end, "a replacement running beside the one shutting down")
      assert.matches('"kind":%s*"forget"', (http(d, "GET", "/v1/decisions")))
      assert.equal(2, count(c), instances(c))
      d.stop()
      c.stop()
    end)

    it("percent-encodes an instance id and its cluster's name in the cloud's URLs", function()
      local cluster = "team a&b #1"
      local c = cloud()
      local d = start("--provider http --cloud-url http://127.0.0.1:" .. c.port .. ' --poll 200ms --cluster "' .. cluster .. '"')
      ready(d, "ready: its listings reach the cloud")
      http(d, "PUT", "/v1/objects", quickstart)
      local function mine() return http({ port = c.port }, "GET", "/instances?cluster=team%20a%26b%20%231") end
      eventually(function() return mine():match('"id":"(i%-%x+)"') end, "the quickstart's instance")
      local id = mine():match('"id":"(i%-%x+)"')
      -- from now on the cloud lists it as "i-a#b?c/d e": a '#' or '?' cut the URL, a '/' named another path
      http({ port = c.port }, "POST", "/admin/reid/" .. id, "i-a#b?c/d e")
      eventually(function() return http(d, "GET", "/v1/state"):find("i-a#b?c/d e", 1, true) end, "the new id taken")
      daemon_time(d, 600)
      assert.equal(1, select(2, slurp(d.log):gsub('"event":"launch"', "")), slurp(d.log))
      http(d, "DELETE", "/v1/objects/NodePool/-/default")
      eventually(function() return not mine():find('"id"', 1, true) end, "the instance deleted", 10)
      assert.is_nil(slurp(d.log):find("HTTP 404", 1, true), slurp(d.log))
      d.stop()
      c.stop()
    end)

    it("takes a claim's instance listed under a new id, and its state still loads", function()
      local state = os.tmpname()
      os.remove(state)
      local args = "--poll 200ms --state " .. state
      local c, d, id = quickstart_on_cloud(args)
      local renamed = http({ port = c.port }, "POST", "/admin/reid/" .. id):match('"id":"(i%-%x+)"')
      eventually(function() return http(d, "GET", "/v1/state"):find(renamed, 1, true) end, "the new id taken")
      daemon_time(d, 1000)
      local st = http(d, "GET", "/v1/state")
      assert.is_nil(st:find(id, 1, true), st)
      assert.equal(1, select(2, slurp(d.log):gsub('"event":"launch"', "")), slurp(d.log))
      assert.equal(1, count(c), instances(c))
      d.stop()
      d = start("--provider http --cloud-url http://127.0.0.1:" .. c.port .. " " .. args)
      ready(d, "ready on the state written after the new id")
      assert.equal(1, count(c), instances(c))
      d.stop()
      c.stop()
      os.remove(state)
      os.remove(state .. ".journal")
    end)

    it("sends a delete the cloud failed again until it is carried out", function()
      local c, d = quickstart_on_cloud("--poll 1h")
      -- the next request to the cloud fails: the delete (no poll comes, and the spec asks the cloud nothing)
      http({ port = c.port }, "POST", "/admin/fail", "1")
      http(d, "DELETE", "/v1/objects/NodePool/-/default")
      eventually(function() return slurp(d.log):find('"event":"delete","msg":"instance i-', 1, true) end,
        "the failed delete")
      daemon_time(d, 2000)
      assert.equal(0, count(c), instances(c))
      assert.matches("HTTP 503; sent again later", slurp(d.log), 1, true)
      d.stop()
      c.stop()
    end)

    it("becomes ready soon after a first poll that failed, not a --poll later", function()
      local c = cloud()
      http({ port = c.port }, "POST", "/admin/fail", "2") -- the first poll's two requests
      local d = start("--provider http --cloud-url http://127.0.0.1:" .. c.port .. " --poll 1h")
      ready(d, "ready after the failed first poll")
      assert.matches("GET /instances: unexpected status", slurp(d.log), 1, true)
      d.stop()
      c.stop()
    end)

    it("keeps its catalog when the cloud's has no instance type", function()
      local empty = h.write('{"instanceTypes": []}\n')
      local c = cloud("--catalog " .. empty)
      local d = start("--provider http --cloud-url http://127.0.0.1:" .. c.port .. " --poll 300ms")
      ready(d)
      eventually(function() return slurp(d.log):find("the cloud's catalog has no instance type, keeping the current one",
        1, true) end, "the empty catalog refused")
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "a launch on the bundled catalog")
      d.stop()
      c.stop()
      os.remove(empty)
    end)

    it("cuts off a reply from the cloud past --cloud-reply-limit, says so and keeps what it had", function()
      -- the catalog the fake cloud serves is some 560 KB: past a limit of 100,000 bytes
      local c, d = on_cloud("--poll 300ms --cloud-reply-limit 100000")
      eventually(function() return slurp(d.log):find("GET /catalog: the reply is larger than the limit (100000 bytes)",
        1, true) end, "the catalog cut off")
      assert.is_nil(slurp(d.log):find("refreshed from the cloud", 1, true))
      -- the instances' listing is small: launches and polls go on, on the bundled catalog
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end, "a launch")
      d.stop()
      c.stop()
    end)

    it("stops at once with launches waiting out a Retry-After, and a restart launches them", function()
      local state = os.tmpname()
      os.remove(state)
      local c = cloud()
      local args = "--provider http --cloud-url http://127.0.0.1:" .. c.port
        .. " --poll 300ms --cloud-connections 1 --state " .. state
      local d = start(args)
      ready(d)
      http({ port = c.port }, "POST", "/admin/throttle", "1 300") -- come back in five minutes
      http(d, "PUT", "/v1/objects", one_node_each(4))
      eventually(function() return metric(d, 'dovetail_cloud_requests{state="waiting"}') >= 4 end,
        "launches waiting out the Retry-After")
      local t0 = os.time()
      d.stop()
      assert.is_true(os.time() - t0 <= 5, "stopped in " .. (os.time() - t0) .. " s")
      assert.equal(0, count(c), instances(c))
      d = start(args)
      ready(d, "ready again")
      eventually(function() return count(c) == 5 end, "the four pods' instances and the quickstart's", 30)
      eventually(function()
        local rs = logged_rounds(d)
        return #rs > 0 and rs[#rs].unschedulable == 0
      end, "every pod placed after the restart")
      d.stop()
      c.stop()
      os.remove(state)
      os.remove(state .. ".journal")
    end)

    -- A daemon with a state file launches the quickstart on a fresh cloud
    -- (interfere(c) runs first), stop(d) ends it, and a second daemon on the
    -- same state starts and settles; returns the cloud, it and the state.
    local function restarted(extra, interfere, stop)
      local c = cloud()
      local state = os.tmpname()
      os.remove(state)
      local args = "--provider http --cloud-url http://127.0.0.1:" .. c.port .. " --poll 300ms " .. extra
        .. "--state " .. state
      local d = start(args)
      ready(d)
      if interfere then interfere(c) end
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return instances(c):match('"state":"running"') end, "a cloud instance")
      stop(d)
      d = start(args)
      ready(d, "ready again")
      -- its first round, which must launch nothing, and three polls
      eventually(function() return #logged_rounds(d) >= 1 end, "a round after the restart")
      assert.equal(0, logged_rounds(d)[1].claims, "no new claim after the restart")
      daemon_time(d, 900)
      return c, d, state
    end

    it("adopts its instances after a restart and never launches twice", function()
      local c, d, state = restarted("", nil, function(first) first.stop() end)
      assert.equal(1, count(c))
      assert.matches(instances(c):match('"id":"(i%-%x+)"'), (http(d, "GET", "/v1/state")), 1, true)
      d.stop()
      c.stop()
      os.remove(state)
    end)
    it("kill -9 mid-launch and a restart make no second instance", function()
      local c, d, state = restarted("--timeout 5s ", function(cl)
        http({ port = cl.port }, "POST", "/admin/lose", "1") -- the cloud launches, the answer never comes
      end, function(first) first.kill() end)
      assert.equal(1, count(c), instances(c))
      -- the one instance is the daemon's (adopted from the cloud after the restart)
      local id = instances(c):match('"id":"(i%-%x+)"')
      eventually(function() return http(d, "GET", "/v1/state"):find(id, 1, true) end, "the instance adopted")
      d.stop()
      c.stop()
      os.remove(state)
    end)

    it("deletes the claims it launched for a NodePool when the NodePool is deleted, as Karpenter's owner cascade", function()
      local c = cloud()
      local d = start("--provider http --cloud-url http://127.0.0.1:" .. c.port .. " --poll 1h --disrupt-interval 0")
      ready(d)
      assert.equal(200, select(2, http(d, "PUT", "/v1/objects", quickstart)))
      eventually(function() return count(c) == 1 end, "the quickstart's node")
      local _, code = http(d, "DELETE", "/v1/objects/NodePool/-/default")
      assert.equal(200, code)
      eventually(function() return count(c) == 0 end, "its instance terminated")
      assert.matches('"NodeClaim [%w-]+: NodePool default deleted: delete %(instance i%-', slurp(d.log))
      -- its pods are pending again: no NodePool is left to launch for them
      eventually(function() return select(1, http(d, "GET", "/v1/plan")):match('"pods": 1[0-9]') end, "pods planned again")
      assert.equal(0, count(c))
      d.stop()
      c.stop()
    end)

    it("keeps a NodeClaim applied through the API across a restart: no second machine for its pods", function()
      -- the quickstart's claim, as `dovetail plan -o yaml` prints it, applied with its pods: in flight elsewhere
      local claims = h.cli("plan -o yaml --now 2026-11-27T00:00:00Z examples/quickstart.yaml")
      local state = os.tmpname()
      os.remove(state) -- a new state file
      local c = cloud()
      local args = "--provider http --cloud-url http://127.0.0.1:" .. c.port .. " --poll 1s --disrupt-interval 0 --state " .. state
      local d = start(args)
      ready(d)
      assert.equal(200, select(2, http(d, "PUT", "/v1/objects", quickstart)))
      assert.equal(200, select(2, http(d, "PUT", "/v1/objects", claims)))
      eventually(function() return #logged_rounds(d) >= 1 end, "a round")
      daemon_time(d, 1500)
      assert.equal(0, count(c), "the applied claim carries the pods")
      d.stop()
      d = start(args)
      ready(d, "ready after the restart")
      daemon_time(d, 2000)
      assert.equal(0, count(c), instances(c))
      assert.is_nil(slurp(d.log):match('"event":"reconcile"'), slurp(d.log))
      d.stop()
      c.stop()
      os.remove(state)
    end)

    it("survives 500s and timeouts from the cloud: backoff, no crash, no lost pod", function()
      -- a hung request costs the timeout; 2 s leaves the others room on a loaded machine
      local c, d = on_cloud("--poll 1h --timeout 2s")
      -- the cloud hangs before it fails: the launch times out, its first two retries get 503s
      http({ port = c.port }, "POST", "/admin/hang", "1")
      http({ port = c.port }, "POST", "/admin/fail", "2")
      http(d, "PUT", "/v1/objects", quickstart)
      eventually(function() return http(d, "GET", "/v1/state"):match('"id":%s*"i%-') end,
        "a launch after a timeout and 503s", 30)
      assert.matches('"state":"running"', instances(c), 1, true)
      assert.equal(200, select(2, http(d, "GET", "/healthz")))
      local plan = http(d, "GET", "/v1/plan")
      assert.matches('"unschedulable": %[%]', plan)
      local log = slurp(d.log)
      assert.is_true(select(2, log:gsub('"event":"retry"', "")) >= 3, log)
      assert.matches("Timeout", log)
      assert.matches("HTTP 503; retry 3 in", log, 1, true) -- --retries 3: three retries, then it launched
      d.stop()
      c.stop()
    end)
  end)
end)
