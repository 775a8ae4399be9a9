-- VM pools: KubeVirt VirtualMachinePool semantics through `dovetail.pool`.
local h = require "helper"
local dt = h.dt

local NOW = "2026-11-23T12:00:00Z"
local NOW_S = 1795435200 -- NOW in Unix seconds

local function at(s) return os.date("!%Y-%m-%dT%H:%M:%SZ", NOW_S + s) end

local function vmi()
  return {
    metadata = { labels = { app = "web" } },
    spec = {
      domain = { cpu = { cores = 2 }, memory = { guest = "4Gi" }, devices = {} },
    },
  }
end

-- A pool; spec fields in o override the defaults.
local function pool(o)
  o = o or {}
  local spec = {
    replicas = o.replicas or 3,
    selector = { matchLabels = { app = "web" } },
    virtualMachineTemplate = {
      metadata = { labels = { app = "web" } },
      spec = { runStrategy = "Always", template = vmi() },
    },
  }
  for k, v in pairs(o) do
    if k ~= "name" and k ~= "annotations" then spec[k] = v end
  end
  return {
    apiVersion = "pool.kubevirt.io/v1beta1",
    kind = "VirtualMachinePool",
    metadata = { name = o.name or "web", namespace = "default", annotations = o.annotations },
    spec = spec,
  }
end

-- A VM of pool "web" (or o.pool); o: created (seconds before NOW), labels,
-- ready, halted, status, fails, annotations, owned (default true), deleting.
local function vm(name, o)
  o = o or {}
  local labels = { app = "web" }
  for k, v in pairs(o.labels or {}) do labels[k] = v end
  local owners
  if o.owned ~= false then
    owners = { { apiVersion = "pool.kubevirt.io/v1beta1", kind = "VirtualMachinePool", name = o.pool or "web",
      controller = true } }
  end
  local ready = o.ready
  if ready == nil then ready = not o.halted end
  -- its labels on its template too, as the pool's template gave them (selectors read the template's)
  local tmpl = o.template or vmi()
  if o.labels and not o.template then
    for k, v in pairs(o.labels) do tmpl.metadata.labels[k] = v end
  end
  return {
    apiVersion = "kubevirt.io/v1",
    kind = "VirtualMachine",
    metadata = {
      name = name,
      namespace = "default",
      creationTimestamp = at(-(o.created or 86400)),
      deletionTimestamp = o.deleting and at(-10) or nil,
      labels = labels,
      annotations = o.annotations,
      ownerReferences = owners,
    },
    spec = { runStrategy = o.halted and "Halted" or "Always", template = tmpl },
    status = {
      ready = ready,
      printableStatus = o.status or (o.halted and "Stopped" or (ready and "Running" or "Starting")),
      startFailure = o.fails and { consecutiveFailCount = o.fails } or nil,
    },
  }
end

local function run(items, extra)
  local args = { manifests = h.list(items), now = NOW }
  for k, v in pairs(extra or {}) do args[k] = v end
  local r, err = dt.pool(args)
  assert(r, err)
  return r.pools[1], r
end

local function names(list)
  local out = {}
  for _, a in ipairs(list or {}) do out[#out + 1] = a.name end
  return out
end

local function fail(items)
  local r, err = dt.pool({ manifests = h.list(items), now = NOW })
  assert.is_nil(r)
  return err
end

describe("VM pool naming", function()
  it("scales 2 -> 4 by filling the gap first, then the next index", function()
    local p = run({ pool({ replicas = 4 }), vm("web-0"), vm("web-2") })
    assert.same({ "web-1", "web-3" }, names(p.create))
    assert.equal(4, p.status.replicas)
    assert.equal(2, p.status.current)
  end)

  it("starts at index 0 and skips names held by foreign VMs", function()
    local p = run({ pool({ replicas = 2 }), vm("web-0", { owned = false, labels = { app = "other" } }) })
    assert.same({ "web-1", "web-2" }, names(p.create))
  end)

  it("creates VMs owned by the pool, indexed data volumes, and the template hash", function()
    local pl = pool({ replicas = 1 })
    pl.spec.virtualMachineTemplate.spec.dataVolumeTemplates = { { metadata = { name = "root" }, spec = {} } }
    pl.spec.virtualMachineTemplate.spec.template.spec.volumes = {
      { name = "root", dataVolume = { name = "root" } },
      { name = "shared", persistentVolumeClaim = { claimName = "shared" } },
    }
    local p = run({ pl })
    local o = p.create[1].object
    assert.equal("web-0", o.metadata.name)
    assert.equal("VirtualMachinePool", o.metadata.ownerReferences[1].kind)
    assert.equal("root-0", o.spec.dataVolumeTemplates[1].metadata.name)
    assert.equal("root-0", o.spec.template.spec.volumes[1].dataVolume.name)
    assert.equal("shared", o.spec.template.spec.volumes[2].persistentVolumeClaim.claimName)
    assert.equal(p.templateHash, o.metadata.annotations["dovetail.dev/template-hash"])
  end)

  it("reuses a preserved volume of the same index on scale-out", function()
    local pl = pool({ replicas = 2, scaleInStrategy = { proactive = { statePreservation = "Offline" } } })
    pl.spec.virtualMachineTemplate.spec.dataVolumeTemplates = { { metadata = { name = "root" }, spec = {} } }
    local pvc = { apiVersion = "v1", kind = "PersistentVolumeClaim", metadata = { name = "root-1", namespace = "default" } }
    local p = run({ pl, vm("web-0"), pvc })
    assert.same({ "web-1" }, names(p.create))
    assert.same({ "root-1" }, p.create[1].reusesVolumes)
  end)

  it("keeps names stable across detach and re-attach", function()
    -- web-1's labels leave the selector: released, its index stays taken
    local p = run({ pool({ replicas = 3 }), vm("web-0"), vm("web-1", { labels = { app = "debug" } }), vm("web-2") })
    assert.same({ "web-1" }, names(p.detached))
    assert.same({ "web-3" }, names(p.create))
    -- after the release (no owner) the pool has web-0, web-2, web-3; web-1 still holds its name
    p = run({ pool({ replicas = 3 }), vm("web-0"), vm("web-1", { owned = false, labels = { app = "debug" } }),
      vm("web-2"), vm("web-3") })
    assert.same({}, names(p.create))
    assert.same({}, names(p.detached))
    -- re-attached (owner and labels back): four VMs for three replicas, web-1 keeps its name
    p = run({ pool({ replicas = 3, scaleInStrategy = { proactive = { selectionPolicy = { basePolicy = "Newest" } } } }),
      vm("web-0", { created = 400 }), vm("web-1", { created = 300 }), vm("web-2", { created = 200 }),
      vm("web-3", { created = 100 }) })
    assert.same({ "web-3" }, names(p.delete))
    assert.same({}, names(p.create))
  end)
end)

describe("VM pool scale-in", function()
  local function three()
    return { vm("web-0", { created = 300 }), vm("web-1", { created = 100 }), vm("web-2", { created = 200 }) }
  end

  it("scales 3 -> 2 by the base policy: Oldest removes the oldest", function()
    local items = three()
    table.insert(items, 1, pool({ replicas = 2, scaleInStrategy = { proactive = { selectionPolicy = { basePolicy = "Oldest" } } } }))
    local p = run(items)
    assert.same({ "web-0" }, names(p.delete))
    assert.matches("oldest", p.delete[1].reason)
  end)

  it("Newest, AscendingOrder and DescendingOrder order as named", function()
    for base, want in pairs({ Newest = "web-1", AscendingOrder = "web-0", DescendingOrder = "web-2" }) do
      local items = three()
      table.insert(items, 1, pool({ replicas = 2, scaleInStrategy = { proactive = { selectionPolicy = { sortPolicy = base } } } }))
      assert.same({ want }, names(run(items).delete), base)
    end
  end)

  it("an ordered label selector beats the base policy", function()
    local p = run({
      pool({ replicas = 2, scaleInStrategy = { proactive = { selectionPolicy = {
        orderedPolicies = { { matchLabels = { tier = "canary" } } }, basePolicy = "Oldest" } } } }),
      vm("web-0", { created = 300 }), vm("web-1", { created = 100 }),
      vm("web-2", { created = 10, labels = { tier = "canary" } }),
    })
    assert.same({ "web-2" }, names(p.delete))
    assert.matches("orderedPolicies%[0%]", p.delete[1].reason)
  end)

  it("matches a label selector against the VM template's labels only, as KubeVirt", function()
    local own = vm("web-0", { created = 300 })
    own.metadata.labels.tier = "canary" -- on the VM, not its template: not selected
    local p = run({
      pool({ replicas = 2, scaleInStrategy = { proactive = { selectionPolicy = {
        orderedPolicies = { { matchLabels = { tier = "canary" } } }, basePolicy = "Oldest" } } } }),
      own, vm("web-1", { created = 100 }), vm("web-2", { created = 200, labels = { tier = "canary" } }),
    })
    assert.same({ "web-2" }, names(p.delete))
  end)

  it("falls back to the base policy when too few VMs match (KubeVirt indexes past the end here)", function()
    local p = run({
      pool({ replicas = 1, scaleInStrategy = { proactive = { selectionPolicy = {
        orderedPolicies = { { matchLabels = { tier = "canary" } }, { labelSelector = { matchLabels = { tier = "batch" } } } },
        basePolicy = "Oldest" } } } }),
      vm("web-0", { created = 300 }), vm("web-1", { created = 100, labels = { tier = "batch" } }),
      vm("web-2", { created = 10, labels = { tier = "canary" } }), vm("web-3", { created = 50 }),
    })
    -- canary first, then batch, then the oldest of the rest
    assert.same({ "web-2", "web-1", "web-0" }, names(p.delete))
  end)

  it("KubeVirt's single `selectors` is a priority too, and nodeSelectorRequirementMatcher matches the template", function()
    local spot = vmi()
    spot.spec.nodeSelector = { ["karpenter.sh/capacity-type"] = "spot" }
    local p = run({
      pool({ replicas = 2, scaleInStrategy = { proactive = { selectionPolicy = { sortPolicy = "Oldest", selectors = {
        nodeSelectorRequirementMatcher = { { key = "karpenter.sh/capacity-type", operator = "In", values = { "spot" } } },
      } } } } }),
      vm("web-0", { created = 300 }), vm("web-1", { created = 10, template = spot }), vm("web-2", { created = 200 }),
    })
    assert.same({ "web-1" }, names(p.delete))
    assert.matches("selectionPolicy.selectors", p.delete[1].reason)
  end)

  it("Random is seeded, deterministic, and takes halted, then unready VMs first", function()
    local function items()
      return { pool({ replicas = 3 }), vm("web-0"), vm("web-1"), vm("web-2", { halted = true }), vm("web-3"),
        vm("web-4", { ready = false }), vm("web-5") }
    end
    local a = run(items(), { seed = 7 })
    assert.same({ "web-2", "web-4", a.delete[3].name }, names(a.delete))
    assert.same(names(a.delete), names(run(items(), { seed = 7 }).delete))
    local seen = {}
    for seed = 1, 20 do seen[run(items(), { seed = seed }).delete[3].name] = true end
    local n = 0
    for _ in pairs(seen) do n = n + 1 end
    assert.is_true(n > 1, "different seeds pick different running VMs")
  end)

  it("Opportunistic scale-in deletes only halted VMs and waits for the rest", function()
    local p = run({ pool({ replicas = 1, scaleInStrategy = { opportunistic = {} } }), vm("web-0"),
      vm("web-1", { halted = true }), vm("web-2") })
    assert.same({ "web-1" }, names(p.delete))
    assert.equal("halt", p.waiting[1]["for"])
    assert.equal(1, p.waiting[1].count)
  end)

  it("Unmanaged scale-in leaves the excess to the user", function()
    local p = run({ pool({ replicas = 1, scaleInStrategy = { unmanaged = {} } }), vm("web-0"), vm("web-1") })
    assert.same({}, names(p.delete))
    assert.matches("unmanaged", p.notes[1])
  end)

  it("VMs already being deleted count toward the scale-in", function()
    local p = run({ pool({ replicas = 2 }), vm("web-0"), vm("web-1", { deleting = true }), vm("web-2") })
    assert.same({}, names(p.delete))
  end)

  it("scales in at once whatever maxUnavailable says, as KubeVirt's scaleIn (it holds updates only)", function()
    local by_index = { proactive = { selectionPolicy = { basePolicy = "AscendingOrder" } } }
    local items = { pool({ replicas = 2, maxUnavailable = 1, scaleInStrategy = by_index }) }
    for i = 0, 4 do items[#items + 1] = vm("web-" .. i) end
    local p = run(items)
    assert.same({ "web-0", "web-1", "web-2" }, names(p.delete))
    assert.same({}, names(p.waiting))
  end)

  it("preserves state on delete when statePreservation is Offline", function()
    local p = run({ pool({ replicas = 0, scaleInStrategy = { proactive = { statePreservation = "Offline" } } }), vm("web-0") })
    assert.is_true(p.delete[1].preserveState)
    p = run({ pool({ replicas = 0 }), vm("web-0") })
    assert.is_false(p.delete[1].preserveState)
  end)

  it("the burst limit caps creations per round", function()
    local p = run({ pool({ replicas = 10, annotations = { ["dovetail.dev/burst-replicas"] = "4" } }) })
    assert.equal(4, #p.create)
    assert.equal("burst", p.waiting[1]["for"])
    assert.equal(6, p.waiting[1].count)
  end)

  it("the default burst is 250", function()
    local p = run({ pool({ replicas = 300 }) })
    assert.equal(250, #p.create)
  end)

  it("a paused pool neither scales nor updates", function()
    local p = run({ pool({ replicas = 5, paused = true }), vm("web-0") })
    assert.same({}, names(p.create))
    assert.matches("paused", p.notes[1])
  end)

  it("the scale_in hook may reorder the candidates", function()
    local path = h.write([[
return {
  scale_in = function(pool, vms)
    local out = {}
    for i = #vms, 1, -1 do out[#out + 1] = vms[i].name end
    return out
  end,
}
]])
    local items = { pool({ replicas = 1, scaleInStrategy = { proactive = { selectionPolicy = { basePolicy = "AscendingOrder" } } } }),
      vm("web-0"), vm("web-1"), vm("web-2") }
    assert.same({ "web-0", "web-1" }, names(run(items).delete))
    local p = run(items, { policy = path })
    assert.same({ "web-2", "web-1" }, names(p.delete))
    assert.matches("scale_in hook", p.delete[1].reason)
    os.remove(path)
  end)

  it("a scale_in hook returning nil keeps the engine's order, as nil does in every hook", function()
    local path = h.write("return { scale_in = function() return nil end }\n")
    local items = { pool({ replicas = 1, scaleInStrategy = { proactive = { selectionPolicy = { basePolicy = "AscendingOrder" } } } }),
      vm("web-0"), vm("web-1"), vm("web-2") }
    local p, r = run(items, { policy = path })
    assert.same({ "web-0", "web-1" }, names(p.delete))
    assert.is_true(r.policyErrors == nil or #r.policyErrors == 0)
    os.remove(path)
  end)

  it("a failing scale_in hook keeps the engine's order and is reported", function()
    local path = h.write([[
local calls = 0
return {
  scale_in = function(pool, vms)
    calls = calls + 1
    if calls > 1 then return { "nobody" } end
    return {}
  end,
}
]])
    local items = { pool({ replicas = 1, scaleInStrategy = { proactive = { selectionPolicy = { basePolicy = "AscendingOrder" } } } }),
      vm("web-0"), vm("web-1"), vm("web-2") }
    local p, r = run(items, { policy = path })
    assert.same({ "web-0", "web-1" }, names(p.delete))
    assert.matches("not a candidate", r.policyErrors[1].message)
    os.remove(path)
  end)
end)

describe("VM pool updates", function()
  local function changed()
    local t = vmi()
    t.spec.domain.cpu.cores = 4
    return t
  end

  it("maxUnavailable 25% of 10 restarts 2 outdated VMs and holds 8 (percent floored, at least 1)", function()
    local items = { pool({ replicas = 10, maxUnavailable = "25%" }) }
    for i = 0, 9 do items[#items + 1] = vm("web-" .. i, { template = changed() }) end
    local p = run(items)
    assert.equal(2, p.status.maxUnavailable)
    assert.same({ "web-0", "web-1" }, names(p.update))
    assert.equal("restart", p.update[1].action)
    assert.equal(8, #p.waiting)
    -- 5% of 10 floors to 0 and is raised to 1
    items[1] = pool({ replicas = 10, maxUnavailable = "5%" })
    assert.equal(1, #run(items).update)
  end)

  it("updates stay within the burst limit, as creations and deletions do", function()
    local items = { pool({ replicas = 300, annotations = { ["dovetail.dev/burst-replicas"] = "250" } }) }
    for i = 0, 299 do items[#items + 1] = vm("web-" .. i, { template = changed() }) end
    local p = run(items)
    assert.equal(250, #p.update)
    assert.equal("burst", p.waiting[1]["for"])
    assert.equal(50, p.waiting[1].count)
    -- each update carries the VM as it is to be: the pool's template
    assert.equal(2, p.update[1].object.spec.template.spec.domain.cpu.cores)
  end)

  it("the default maxUnavailable is 100%", function()
    local items = { pool({ replicas = 4 }) }
    for i = 0, 3 do items[#items + 1] = vm("web-" .. i, { template = changed() }) end
    assert.equal(4, #run(items).update)
  end)

  it("VMs matching the template are current; the hash annotation decides when present", function()
    local p = run({ pool({ replicas = 2 }), vm("web-0"),
      vm("web-1", { annotations = { ["dovetail.dev/template-hash"] = "0000000000000000" } }) })
    assert.same({ "web-1" }, names(p.update))
    assert.equal(1, p.status.outdated)
  end)

  it("halted and unready outdated VMs update without using the budget", function()
    local items = { pool({ replicas = 4, maxUnavailable = 1 }), vm("web-0", { template = changed(), halted = true }),
      vm("web-1", { template = changed(), ready = false }), vm("web-2", { template = changed() }),
      vm("web-3", { template = changed() }) }
    local p = run(items)
    -- two unavailable already: the budget of 1 is used up, so only the free ones go
    assert.same({ "web-0", "web-1" }, names(p.update))
    assert.equal("apply", p.update[1].action)
    assert.equal("restart", p.update[2].action)
  end)

  it("Opportunistic rewrites specs and waits for running VMs to halt", function()
    local p = run({ pool({ replicas = 2, updateStrategy = { opportunistic = {} } }),
      vm("web-0", { template = changed() }), vm("web-1", { template = changed(), halted = true }) })
    assert.equal("wait-for-halt", p.update[1].action)
    assert.equal("apply", p.update[2].action)
  end)

  it("Unmanaged updates nothing; updates wait while the pool scales", function()
    local p = run({ pool({ replicas = 1, updateStrategy = { unmanaged = {} } }), vm("web-0", { template = changed() }) })
    assert.same({}, names(p.update))
    p = run({ pool({ replicas = 2 }), vm("web-0", { template = changed() }) })
    assert.same({}, names(p.update))
    assert.matches("wait until the pool is at its replica count", p.notes[1])
  end)

  it("changed data volume templates re-create the VM", function()
    local pl = pool({ replicas = 1 })
    pl.spec.virtualMachineTemplate.spec.dataVolumeTemplates = { { metadata = { name = "root" }, spec = { size = 2 } } }
    local v = vm("web-0")
    v.spec.dataVolumeTemplates = { { metadata = { name = "root-0" }, spec = { size = 1 } } }
    local p = run({ pl, v })
    assert.equal("recreate", p.update[1].action)
    v.spec.dataVolumeTemplates[1].spec.size = 2
    assert.same({}, names(run({ pl, v }).update), "same volumes after removing the index: current")
  end)
end)

describe("VM pool autohealing", function()
  local function healing(o)
    return pool({ replicas = 1, autohealing = {}, annotations = o })
  end

  it("takes web-01 for no index: the name web-1 is free, as KubeVirt checks exact names", function()
    local p = run({ pool({ replicas = 3 }), vm("web-0"), vm("web-01") })
    assert.same({ "web-1" }, names(p.create))
  end)

  it("updates only the outdated VMs KubeVirt's update selectors select (a staged rollout)", function()
    local function old(name, canary)
      local t = vmi()
      t.spec.domain.cpu.cores = 1 -- the pool's template says 2
      if canary then t.metadata.labels.tier = "canary" end
      return vm(name, { template = t })
    end
    local p = run({ pool({ replicas = 3, updateStrategy = { proactive = { selectionPolicy = {
      selectors = { labelSelector = { matchLabels = { tier = "canary" } } } } } } }),
      old("web-0", true), old("web-1"), old("web-2") })
    assert.same({ "web-0" }, names(p.update))
    assert.matches("2 outdated VMs are outside updateStrategy's selectors", table.concat(p.notes or {}, "\n"), 1, true)
  end)

  it("deletes a failing VM when the pool scales in, and counts it toward the scale-in (KubeVirt heals, then scales)",
    function()
      local p = run({ pool({ replicas = 2, autohealing = {}, scaleInStrategy = { proactive = { selectionPolicy = {
        basePolicy = "DescendingOrder" } } } }), vm("web-0", { fails = 3, ready = false }), vm("web-1"), vm("web-2") })
      assert.same({}, names(p.heal))
      assert.same({ "web-0" }, names(p.delete), "web-2, healthy, stays: web-0's deletion is the scale-in")
    end)

  it("heals a VM after 3 start failures, not before", function()
    local p = run({ healing(), vm("web-0", { fails = 2, ready = false }) })
    assert.same({}, names(p.heal))
    p = run({ healing(), vm("web-0", { fails = 3, ready = false }) })
    assert.same({ "web-0" }, names(p.heal))
    assert.equal("recreate", p.heal[1].action)
    assert.equal(1, p.heal[1].attempt)
    assert.equal("1", p.heal[1].object.metadata.annotations["dovetail.dev/heal-attempt"])
    assert.equal(NOW, p.heal[1].object.metadata.annotations["dovetail.dev/healed-at"])
  end)

  it("backs off exponentially between attempts: 60s, 120s, 240s ... capped at 30m", function()
    local function attempt(prev, ago)
      return run({ healing(), vm("web-0", { fails = 3, ready = false, annotations = {
        ["dovetail.dev/heal-attempt"] = tostring(prev), ["dovetail.dev/healed-at"] = at(-ago) } }) }).heal[1]
    end
    local a = attempt(1, 30)
    assert.equal("wait", a.action)
    assert.equal(2, a.attempt)
    assert.equal(at(30), a.nextAllowed)
    assert.equal("recreate", attempt(1, 60).action)
    a = attempt(2, 100)
    assert.equal("wait", a.action)
    assert.equal(at(20), a.nextAllowed) -- 120 s after the last heal
    assert.equal("recreate", attempt(3, 240).action)
    assert.equal("recreate", attempt(9, 3000).action, "capped at 1800 s, and 3000 s have passed")
    a = attempt(9, 1000) -- 60 * 2^7 = 7680 s, capped at 1800
    assert.equal(at(800), a.nextAllowed)
    assert.equal(1, attempt(9, 3601).attempt, "a count older than twice the cap starts again")
  end)

  it("the backoff parameters are configurable", function()
    local p = run({ healing({ ["dovetail.dev/heal-backoff-base"] = "10s", ["dovetail.dev/heal-backoff-factor"] = "3" }),
      vm("web-0", { fails = 3, ready = false, annotations = {
        ["dovetail.dev/heal-attempt"] = "2", ["dovetail.dev/healed-at"] = at(-5) } }) })
    assert.equal(at(25), p.heal[1].nextAllowed) -- 10 * 3^1
  end)

  it("heals VMs stuck in a failing status for minFailingToStartDuration", function()
    local function stuck(since)
      local v = vm("web-0", { ready = false, status = "CrashLoopBackOff" })
      v.status.conditions = { { type = "Ready", status = "False", lastTransitionTime = at(-since) } }
      return v
    end
    assert.same({}, names(run({ healing(), stuck(60) }).heal))
    assert.same({ "web-0" }, names(run({ healing(), stuck(400) }).heal))
  end)

  it("does nothing without spec.autohealing, and never heals halted VMs", function()
    assert.same({}, names(run({ pool({ replicas = 1 }), vm("web-0", { fails = 9, ready = false }) }).heal))
    assert.same({}, names(run({ healing(), vm("web-0", { fails = 9, halted = true }) }).heal))
  end)
end)

describe("VM pools and capacity", function()
  it("VMs a pool creates join the plan as pending pods and get nodes", function()
    local items = { pool({ replicas = 3 }), vm("web-0") }
    local np = h.nodepool("vms")
    local plan = h.plan({ h.list(items), np }, { now = NOW })
    assert.equal(2, plan.summary.pods)
    local bound = {}
    for _, k in ipairs(plan.nodeClaims) do
      for _, pod in ipairs(k.pods) do bound[pod] = true end
    end
    assert.is_true(bound["default/virt-launcher-web-1"])
    assert.is_true(bound["default/virt-launcher-web-2"])
    assert.is_true(#plan.nodeClaims >= 1)
  end)

  it("an existing VM waiting for a node is pending capacity", function()
    local v = vm("solo", { owned = false, ready = false, status = "ErrorUnschedulable" })
    v.spec.template.spec.domain.resources = { requests = { cpu = "3", memory = "6Gi" } }
    local plan = h.plan({ h.list({ v }), h.nodepool("vms") }, { now = NOW })
    assert.equal("default/virt-launcher-solo", plan.nodeClaims[1].pods[1])
    assert.equal("3", plan.nodeClaims[1].requests.cpu)
  end)

  it("halted pools add no capacity", function()
    local pl = pool({ replicas = 2 })
    pl.spec.virtualMachineTemplate.spec.runStrategy = "Halted"
    local plan = h.plan({ h.list({ pl }), h.nodepool("vms") }, { now = NOW })
    assert.equal(0, #plan.nodeClaims)
  end)
end)

describe("VM pool bad input", function()
  local cases = {
    { "maxUnavailable 0%", { maxUnavailable = "0%" }, "spec.maxUnavailable" },
    { "maxUnavailable 150%", { maxUnavailable = "150%" }, "spec.maxUnavailable" },
    { "maxUnavailable text", { maxUnavailable = "half" }, "spec.maxUnavailable" },
    { "maxUnavailable 0", { maxUnavailable = 0 }, "spec.maxUnavailable: an integer must be greater than 0" },
    { "negative replicas", { replicas = -1 }, "spec.replicas" },
    { "two strategies", { scaleInStrategy = { proactive = {}, opportunistic = {} } }, "only one strategy" },
    { "unknown strategy", { updateStrategy = { rolling = {} } }, "spec.updateStrategy.rolling" },
    { "bad sort policy", { scaleInStrategy = { proactive = { selectionPolicy = { basePolicy = "Cheapest" } } } },
      "selectionPolicy.basePolicy" },
    { "bad preservation", { scaleInStrategy = { proactive = { statePreservation = "Frozen" } } }, "statePreservation" },
    { "threshold 0", { autohealing = { startUpFailureThreshold = 0 } }, "startUpFailureThreshold" },
    { "bad duration", { autohealing = { minFailingToStartDuration = "soon" } }, "minFailingToStartDuration" },
    { "bad burst", { annotations = { ["dovetail.dev/burst-replicas"] = "0" } }, "burst-replicas" },
    { "a burst of a million (7 GB a round)", { replicas = 1000000,
      annotations = { ["dovetail.dev/burst-replicas"] = "1000000" } },
      "burst-replicas: expected an integer from 1 to 10000" },
    { "bad factor", { annotations = { ["dovetail.dev/heal-backoff-factor"] = "fast" } }, "heal-backoff-factor" },
  }
  for _, c in ipairs(cases) do
    it("rejects " .. c[1] .. " naming the file, the pool and the field", function()
      local err = fail({ pool(c[2]) })
      assert.matches("manifests: VirtualMachinePool default/web: ", err, 1, true)
      assert.matches(c[3], err, 1, true)
    end)
  end

  it("rejects a selector that does not match the template labels", function()
    local pl = pool()
    pl.spec.selector = { matchLabels = { app = "db" } }
    assert.matches("spec.selector: does not match spec.virtualMachineTemplate.metadata.labels", fail({ pl }), 1, true)
  end)

  it("rejects a pool without a selector or template", function()
    local pl = pool()
    pl.spec.selector = nil
    assert.matches("spec.selector: missing", fail({ pl }), 1, true)
    pl = pool()
    pl.spec.virtualMachineTemplate = nil
    assert.matches("spec.virtualMachineTemplate: missing", fail({ pl }), 1, true)
  end)

  it("rejects bad VM fields naming the VM", function()
    local v = vm("web-0", { annotations = { ["dovetail.dev/heal-attempt"] = "many" } })
    assert.matches("VirtualMachine default/web-0: metadata.annotations.dovetail.dev/heal-attempt", fail({ pool(), v }), 1, true)
    v = vm("web-0", { ready = false, status = "Unschedulable" }) -- pending: its launcher pod is built
    v.spec.template.spec.domain.cpu.cores = 0
    assert.matches("spec.template.spec.domain.cpu.cores", fail({ pool(), v }), 1, true)
  end)

  it("notes VMs owned by a pool that is not in the input", function()
    local _, r = run({ pool(), vm("db-0", { pool = "db" }) })
    assert.matches("VirtualMachinePool db, which is not in the input", r.notes[1], 1, true)
  end)
end)

describe("dovetail pool (CLI)", function()
  it("converges the example and is byte-identical across runs", function()
    local a, err, code = h.cli("pool --now " .. NOW .. " examples/vm-pool.yaml")
    assert.equal(0, code, err)
    local b = h.cli("pool --now " .. NOW .. " examples/vm-pool.yaml")
    assert.equal(a, b)
    assert.matches('"name": "web%-1"', a)
    local t = h.cli("pool -o table --now " .. NOW .. " examples/vm-pool.yaml")
    assert.matches("create%s+web%-1", t)
    local y = h.cli("pool -o yaml --now " .. NOW .. " examples/vm-pool.yaml")
    -- the VMs to apply, not the actions document
    assert.is_nil(y:match("kind: PoolActions"))
    assert.are.equal(2, select(2, y:gsub("kind: VirtualMachine\n", "")))
    assert.matches("name: web%-1\n", y)
    assert.matches("name: web%-3\n", y)
  end)

  it("owns the VMs it creates by the pool's uid when the pool has one", function()
    local items = { pool({ replicas = 1 }) }
    items[1].metadata.uid = "7e6d5c4b-3a29-4180-9f8e-7d6c5b4a3928"
    local p = run(items)
    assert.are.equal("7e6d5c4b-3a29-4180-9f8e-7d6c5b4a3928", p.create[1].object.metadata.ownerReferences[1].uid)
  end)

  it("plans the nodes the example pool needs", function()
    local out, err, code = h.cli("plan -o json examples/vm-pool.yaml")
    assert.equal(0, code, err)
    assert.matches("virt%-launcher%-web%-3", out)
  end)

  it("exits 1 with the error on bad input", function()
    local path = h.write(h.list({ pool({ maxUnavailable = "0%" }) }))
    local _, err, code = h.cli("pool " .. path)
    assert.equal(1, code)
    assert.matches("spec.maxUnavailable", err, 1, true)
    os.remove(path)
  end)
end)
