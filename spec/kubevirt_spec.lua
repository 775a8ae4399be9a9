-- KubeVirt semantics of VM pools: name generation (nameGeneration), the VM
-- architecture as the virt-launcher pod's kubernetes.io/arch, and the
-- VirtualMachines `dovetail pool -o yaml` prints checked against KubeVirt's
-- own VirtualMachine schema (spec/fixtures/crds/kubevirt-virtualmachine.yaml).
local h = require "helper"
local lyaml = require "lyaml"
local dt = h.dt

local NOW = "2026-11-23T12:00:00Z"
local POOL_UID = "3b0d7d2e-5a3c-4c1e-9a47-1f2e3d4c5b6a"

-- A VirtualMachinePool as `kubectl get vmpool -o yaml` shows one; o.spec
-- fields override, o.vmi replaces the VMI spec's extra fields.
local function pool(o)
  o = o or {}
  local vmispec = {
    domain = { cpu = { cores = 2 }, memory = { guest = "4Gi" }, devices = {} },
    volumes = {
      { name = "rootdisk", dataVolume = { name = "rootdisk" } },
      { name = "config", configMap = { name = "db-config" } },
      { name = "creds", secret = { secretName = "db-creds" } },
      { name = "cloudinit", cloudInitNoCloud = {
        secretRef = { name = "db-userdata" }, networkDataSecretRef = { name = "db-network" } } },
    },
  }
  for k, v in pairs(o.vmi or {}) do vmispec[k] = v end
  local spec = {
    replicas = o.replicas or 2,
    selector = { matchLabels = { app = "db" } },
    virtualMachineTemplate = {
      metadata = { labels = { app = "db" } },
      spec = {
        runStrategy = "Always",
        dataVolumeTemplates = { {
          metadata = { name = "rootdisk" },
          spec = { storage = { resources = { requests = { storage = "20Gi" } } },
            sourceRef = { kind = "DataSource", name = "fedora" } },
        } },
        template = { metadata = { labels = { app = "db" } }, spec = vmispec },
      },
    },
  }
  for k, v in pairs(o.spec or {}) do spec[k] = v end
  return {
    apiVersion = "pool.kubevirt.io/v1beta1",
    kind = "VirtualMachinePool",
    metadata = { name = o.name or "db", namespace = "prod", uid = o.uid, generation = 3 },
    spec = spec,
  }
end

local function run(items)
  local r, err = dt.pool({ manifests = h.list(items), now = NOW })
  assert(r, err)
  return r.pools[1]
end

-- The first pool's updates of a run as "action name", sorted and joined, and the pool.
local function updates_of(args)
  local r, err = dt.pool(args)
  assert(r, err)
  local out = {}
  for _, a in ipairs(r.pools[1].update or {}) do out[#out + 1] = a.action .. " " .. a.name end
  table.sort(out)
  return table.concat(out, ", "), r.pools[1]
end

local function by_name(list)
  local out = {}
  for _, v in ipairs(list or {}) do out[v.name] = v end
  return out
end

-- The VM KubeVirt's controller would have made at index i of the pool (its
-- names indexed as the pool's nameGeneration says), running and ready, from
-- the pool's generation gen (3, the pool's own, unless an older one made it).
local function kubevirt_vm(pl, i, indexed, gen)
  local tmpl = pl.spec.virtualMachineTemplate
  local sfx = "-" .. i
  local vols = {}
  for k, v in ipairs(tmpl.spec.template.spec.volumes) do
    local c = {}
    for kk, vv in pairs(v) do c[kk] = vv end
    if v.dataVolume then c.dataVolume = { name = v.dataVolume.name .. sfx } end
    if v.configMap then c.configMap = { name = v.configMap.name .. (indexed.configMaps and sfx or "") } end
    if v.secret then c.secret = { secretName = v.secret.secretName .. (indexed.secrets and sfx or "") } end
    if v.cloudInitNoCloud then
      local s = indexed.secrets and sfx or ""
      c.cloudInitNoCloud = {
        secretRef = { name = v.cloudInitNoCloud.secretRef.name .. s },
        networkDataSecretRef = { name = v.cloudInitNoCloud.networkDataSecretRef.name .. s },
      }
    end
    vols[k] = c
  end
  local vmispec = {}
  for k, v in pairs(tmpl.spec.template.spec) do vmispec[k] = v end
  vmispec.volumes = vols
  return {
    apiVersion = "kubevirt.io/v1",
    kind = "VirtualMachine",
    metadata = {
      name = pl.metadata.name .. sfx, namespace = "prod", creationTimestamp = "2026-11-01T10:00:00Z",
      labels = { app = "db", ["kubevirt.io/vm-pool-revision-name"] = pl.metadata.name .. "-" .. (gen or 3) },
      ownerReferences = { { apiVersion = "pool.kubevirt.io/v1beta1", kind = "VirtualMachinePool",
        name = pl.metadata.name, uid = pl.metadata.uid, controller = true, blockOwnerDeletion = true } },
    },
    spec = {
      runStrategy = "Always",
      dataVolumeTemplates = { {
        metadata = { name = "rootdisk" .. sfx },
        spec = tmpl.spec.dataVolumeTemplates[1].spec,
      } },
      template = { metadata = { labels = { app = "db" } }, spec = vmispec },
    },
    status = { ready = true, printableStatus = "Running" },
  }
end

local function volumes(vm)
  local out = {}
  for _, v in ipairs(vm.spec.template.spec.volumes) do out[v.name] = v end
  return out
end

describe("VirtualMachinePool nameGeneration", function()
  it("names VMs <pool>-<index> and indexes data volumes whatever nameGeneration says", function()
    local p = run({ pool() })
    local c = by_name(p.create)
    assert.is_not_nil(c["db-0"])
    assert.is_not_nil(c["db-1"])
    local v = volumes(c["db-1"].object)
    assert.equal("rootdisk-1", v.rootdisk.dataVolume.name)
    assert.equal("rootdisk-1", c["db-1"].object.spec.dataVolumeTemplates[1].metadata.name)
    -- without nameGeneration, ConfigMap and Secret references are shared
    assert.equal("db-config", v.config.configMap.name)
    assert.equal("db-creds", v.creds.secret.secretName)
    assert.equal("db-userdata", v.cloudinit.cloudInitNoCloud.secretRef.name)
  end)

  it("appends -<index> to ConfigMap and Secret references, cloud-init's among them, as KubeVirt's indexVMSpec", function()
    local p = run({ pool({ spec = { nameGeneration = { appendIndexToConfigMapRefs = true,
      appendIndexToSecretRefs = true } } }) })
    local v = volumes(by_name(p.create)["db-1"].object)
    assert.equal("db-config-1", v.config.configMap.name)
    assert.equal("db-creds-1", v.creds.secret.secretName)
    assert.equal("db-userdata-1", v.cloudinit.cloudInitNoCloud.secretRef.name)
    assert.equal("db-network-1", v.cloudinit.cloudInitNoCloud.networkDataSecretRef.name)
    assert.equal("rootdisk-1", v.rootdisk.dataVolume.name)
  end)

  it("indexes only what each flag names; false is the default", function()
    local cm = volumes(by_name(run({ pool({ spec = { nameGeneration = {
      appendIndexToConfigMapRefs = true, appendIndexToSecretRefs = false } } }) }).create)["db-0"].object)
    assert.equal("db-config-0", cm.config.configMap.name)
    assert.equal("db-creds", cm.creds.secret.secretName)
    assert.equal("db-userdata", cm.cloudinit.cloudInitNoCloud.secretRef.name)
    local sec = volumes(by_name(run({ pool({ spec = { nameGeneration = { appendIndexToSecretRefs = true } } })
    }).create)["db-0"].object)
    assert.equal("db-config", sec.config.configMap.name)
    assert.equal("db-creds-0", sec.creds.secret.secretName)
    assert.equal("db-network-0", sec.cloudinit.cloudInitNoCloud.networkDataSecretRef.name)
  end)

  it("takes VMs as current whether nameGeneration indexed their references or not, as KubeVirt", function()
    -- KubeVirt's isOutdatedVM compares the VM template alone: the setting
    -- shapes only the VMs created after it changes (its indexVMSpec)
    local pl = pool({ uid = POOL_UID, spec = { nameGeneration = { appendIndexToConfigMapRefs = true,
      appendIndexToSecretRefs = true } } })
    local both = { configMaps = true, secrets = true }
    local p = run({ pl, kubevirt_vm(pl, 0, both), kubevirt_vm(pl, 1, both) })
    assert.equal(0, #p.create)
    assert.equal(0, #p.update)
    assert.equal(0, p.status.outdated)
    -- db-1 was made before ConfigMap references were indexed: still current
    p = run({ pl, kubevirt_vm(pl, 0, both), kubevirt_vm(pl, 1, { secrets = true }, 2) })
    assert.equal(0, #p.update)
    -- nor are indexed references outdated once the setting is off
    local plain = pool({ uid = POOL_UID })
    p = run({ plain, kubevirt_vm(plain, 0, {}), kubevirt_vm(plain, 1, both, 2) })
    assert.equal(0, #p.update)
    -- an instance template that changed is
    local changed = kubevirt_vm(plain, 1, both, 2)
    changed.spec.template.spec.terminationGracePeriodSeconds = 99
    p = run({ plain, kubevirt_vm(plain, 0, {}), changed })
    assert.equal(1, #p.update)
    assert.equal("db-1", p.update[1].name)
    assert.equal("restart", p.update[1].action)
  end)

  it("leaves the VMs it created before nameGeneration was turned on running, and indexes the new ones", function()
    local first = by_name(run({ pool({ uid = POOL_UID }) }).create)
    local vms = { first["db-0"].object, first["db-1"].object }
    for _, v in ipairs(vms) do v.status = { ready = true, printableStatus = "Running" } end
    local p = run({ pool({ uid = POOL_UID }), vms[1], vms[2] })
    assert.equal(0, #p.update)
    local on = pool({ uid = POOL_UID, replicas = 3, spec = { nameGeneration = { appendIndexToSecretRefs = true } } })
    p = run({ on, vms[1], vms[2] })
    assert.equal(0, #p.update)
    assert.equal(1, #p.create)
    assert.equal("db-creds-2", volumes(p.create[1].object).creds.secret.secretName)
  end)

  it("names the file, the object and the field of a bad nameGeneration", function()
    local cases = {
      { { appendIndexToConfigMapRef = true }, "spec.nameGeneration.appendIndexToConfigMapRef: unknown field" },
      { { appendIndexToSecretRefs = "yes" }, "spec.nameGeneration.appendIndexToSecretRefs: expected true or false" },
      { "all", "spec.nameGeneration: expected an object" },
    }
    for _, c in ipairs(cases) do
      local path = h.write(h.list({ pool({ spec = { nameGeneration = c[1] } }) }))
      local _, err, code = h.cli("pool " .. path)
      assert.equal(1, code)
      assert.matches(path .. ": VirtualMachinePool prod/db: " .. c[2], err, 1, true)
      os.remove(path)
    end
  end)
end)

describe("VM architecture", function()
  -- amd64 and arm64 types in one NodePool: the architecture alone decides
  local np = h.nodepool("vms", { requirements = { { "kubernetes.io/arch", "In", { "amd64", "arm64" } },
    { "karpenter.sh/capacity-type", "In", { "on-demand" } } } })
  local function plan(items)
    local docs = { lyaml.load(np) }
    for _, i in ipairs(items) do docs[#docs + 1] = i end
    local p = h.plan(h.list(docs), { catalog_text = h.small_catalog, now = NOW })
    local where = {}
    for _, c in ipairs(p.nodeClaims) do
      for _, pod in ipairs(c.pods) do where[pod] = c.instanceType end
    end
    return where, p
  end

  it("defaults to amd64, KubeVirt's default architecture on an amd64 cluster", function()
    local where = plan({ pool({ replicas = 1 }) })
    assert.equal("medium", where["prod/virt-launcher-db-0"])
  end)

  it("selects spec.architecture as kubernetes.io/arch for the virt-launcher pod", function()
    local where = plan({ pool({ replicas = 1, vmi = { architecture = "arm64" } }) })
    assert.equal("arm", where["prod/virt-launcher-db-0"])
  end)

  it("takes the cluster's default from the KubeVirt object, status first", function()
    local kv = {
      apiVersion = "kubevirt.io/v1", kind = "KubeVirt", metadata = { name = "kubevirt", namespace = "kubevirt" },
      spec = { configuration = { architectureConfiguration = { defaultArchitecture = "arm64" } } },
    }
    assert.equal("arm", plan({ kv, pool({ replicas = 1 }) })["prod/virt-launcher-db-0"])
    kv.status = { defaultArchitecture = "amd64" }
    assert.equal("medium", plan({ kv, pool({ replicas = 1 }) })["prod/virt-launcher-db-0"])
    -- a VM's own architecture wins over the default
    assert.equal("arm", plan({ kv, pool({ replicas = 1, vmi = { architecture = "arm64" } }) })["prod/virt-launcher-db-0"])
  end)

  it("lets the VMI's own nodeSelector on kubernetes.io/arch win, as KubeVirt's renderer copies it last", function()
    local where = plan({ pool({ replicas = 1, vmi = { architecture = "arm64",
      nodeSelector = { ["kubernetes.io/arch"] = "amd64" } } }) })
    assert.equal("medium", where["prod/virt-launcher-db-0"])
  end)

  it("plans a waiting VM's virt-launcher pod on its architecture too", function()
    local pl = pool({ replicas = 1, vmi = { architecture = "arm64" } })
    local vm = kubevirt_vm(pl, 0, {})
    vm.status = { printableStatus = "Provisioning" }
    local where = plan({ pl, vm })
    assert.equal("arm", where["prod/virt-launcher-db-0"])
  end)

  it("refuses an architecture KubeVirt does not run, naming the field", function()
    local path = h.write(h.list({ pool({ vmi = { architecture = "ppc64le" } }) }))
    local _, err, code = h.cli("plan " .. path)
    assert.equal(1, code)
    assert.matches(path .. ": VirtualMachinePool prod/db: spec.virtualMachineTemplate.spec.template.spec.architecture: "
      .. 'unsupported architecture "ppc64le"', err, 1, true)
    os.remove(path)
  end)
end)

describe("VM size (the virt-launcher pod KubeVirt renders)", function()
  local np = h.nodepool("vms", { requirements = { { "karpenter.sh/capacity-type", "In", { "on-demand" } },
    { "kubernetes.io/arch", "In", { "amd64" } } } })
  -- the first claim's requests and the plan, for one VM of the pool with domain d (and VM spec extra)
  local function size(domain, extra, more)
    local pl = pool({ replicas = 1, vmi = { domain = domain } })
    for k, v in pairs(extra or {}) do pl.spec.virtualMachineTemplate.spec[k] = v end
    local docs = { lyaml.load(np), pl }
    for _, m in ipairs(more or {}) do docs[#docs + 1] = m end
    local p = h.plan(h.list(docs), { catalog_text = h.small_catalog, now = NOW })
    return p.nodeClaims[1] and p.nodeClaims[1].requests, p
  end
  local function itype(kind, name, spec, ns)
    return { apiVersion = "instancetype.kubevirt.io/v1beta1", kind = kind,
      metadata = { name = name, namespace = ns }, spec = spec }
  end

  it("the guest memory with KubeVirt's launcher overhead, 100m a vCPU", function()
    -- 2Gi: 240Mi of processes, 8Mi a vCPU, 8Mi IO thread, 32Mi video; page tables only of the
    -- VMI's own memory request, which KubeVirt does not default from the guest's
    local r = size({ cpu = { cores = 1 }, memory = { guest = "2Gi" }, devices = {} })
    assert.equal("2336Mi", r.memory)
    assert.equal("100m", r.cpu)
    r = size({ cpu = { cores = 2, sockets = 2 }, memory = { guest = "2Gi" },
      devices = { autoattachGraphicsDevice = false } })
    assert.equal("400m", r.cpu)
    assert.equal(tostring(2048 + 240 + 8 * 4 + 8) .. "Mi", r.memory)
    -- asked for: 4Mi of page tables (a byte per 512); a downwardMetrics disk: 1Mi more
    r = size({ cpu = { cores = 1 }, resources = { requests = { memory = "2Gi" } }, devices = {} })
    assert.equal("2340Mi", r.memory)
    local pl = pool({ replicas = 1, vmi = { domain = { cpu = { cores = 1 }, resources = { requests = { memory = "2Gi" } },
      devices = {} }, volumes = { { name = "m", downwardMetrics = {} } } } })
    local p = h.plan(h.list({ lyaml.load(np), pl }), { catalog_text = h.small_catalog, now = NOW })
    assert.equal("2341Mi", p.nodeClaims[1].requests.memory)
    r = size({ cpu = { cores = 1 }, memory = { guest = "2Gi" }, devices = {},
      resources = { overcommitGuestOverhead = true } })
    assert.equal("2Gi", r.memory)
  end)

  it("limits stand in for missing requests; dedicated CPUs are whole cores", function()
    local r = size({ resources = { limits = { cpu = "3", memory = "2Gi" } }, devices = {} })
    assert.equal("3", r.cpu)
    -- 3 vCPUs from the limit, Guaranteed QoS (+100Mi)
    assert.equal(tostring(2048 + 240 + 8 * 3 + 8 + 32 + 100) .. "Mi", r.memory)
    r = size({ cpu = { cores = 2, dedicatedCpuPlacement = true, isolateEmulatorThread = true },
      memory = { guest = "1Gi" }, devices = {} })
    assert.equal("3", r.cpu)
    assert.equal(tostring(1024 + 240 + 16 + 8 + 32 + 100) .. "Mi", r.memory)
  end)

  it("a VM's instancetype sizes it, cluster-wide or of its namespace; one the input lacks is not planned", function()
    local u1 = itype("VirtualMachineClusterInstancetype", "u1.xlarge", { cpu = { guest = 4 }, memory = { guest = "4Gi" } })
    local r = size({ devices = {} }, { instancetype = { name = "u1.xlarge" } }, { u1 })
    assert.equal("400m", r.cpu)
    assert.equal(tostring(4096 + 240 + 32 + 8 + 32) .. "Mi", r.memory)
    local mine = itype("VirtualMachineInstancetype", "big", { cpu = { guest = 2, dedicatedCPUPlacement = true },
      memory = { guest = "2Gi", overcommitPercent = 50 } }, "prod")
    r = size({ devices = {} }, { instancetype = { name = "big", kind = "VirtualMachineInstancetype" } }, { mine })
    assert.equal("2", r.cpu)
    -- overcommitted, the VMI's request is set (page tables: a byte per 512 of it, rounded up to
    -- kilobytes) as KubeVirt computes it, in float32: 3Gi at 33% is 2,158,220,800 bytes
    assert.equal(tostring(1024 + 2 + 240 + 16 + 8 + 32 + 100) .. "Mi", r.memory)
    local odd = itype("VirtualMachineClusterInstancetype", "odd", { cpu = { guest = 1 },
      memory = { guest = "3Gi", overcommitPercent = 33 } })
    r = size({ devices = {} }, { instancetype = { name = "odd" } }, { odd })
    local Mi = 1024 * 1024
    assert.equal(tostring(2158220800 + (2158220800 + 200) // 512 + (240 + 8 + 8 + 32) * Mi), r.memory)
    local _, p = size({ devices = {} }, { instancetype = { name = "u1.xlarge" } })
    assert.equal(0, #p.nodeClaims)
    assert.equal(1, #p.unschedulable)
    assert.matches("VirtualMachineClusterInstancetype u1.xlarge, which is not in the input", p.unschedulable[1].reason,
      1, true)
    -- a namespaced one of another namespace is not the VM's
    _, p = size({ devices = {} }, { instancetype = { name = "big", kind = "VirtualMachineInstancetype" } },
      { itype("VirtualMachineInstancetype", "big", { cpu = { guest = 2 }, memory = { guest = "2Gi" } }, "dev") })
    assert.equal(0, #p.nodeClaims)
  end)

  it("refuses an instancetype without its guest vCPUs or memory, naming the field", function()
    local path = h.write(h.list({ itype("VirtualMachineClusterInstancetype", "x", { cpu = { guest = 2 } }) }))
    local _, err, code = h.cli("plan " .. path)
    assert.equal(1, code)
    assert.matches("VirtualMachineClusterInstancetype x: spec.memory.guest", err, 1, true)
    os.remove(path)
  end)
end)

-- A subset of OpenAPI v3 schema validation, enough for a CRD's structural
-- schema: type (and nullable), required, properties (unknown fields are
-- refused, as kubectl's strict field validation), additionalProperties,
-- items, enum, anyOf, $ref, x-kubernetes-int-or-string and
-- x-kubernetes-preserve-unknown-fields. Returns the list of violations.
local function is_array(v)
  if type(v) ~= "table" then return false end
  local n = 0
  for _ in pairs(v) do n = n + 1 end
  return n == #v
end

local function type_ok(v, t)
  if t == "object" then return type(v) == "table" and (next(v) == nil or not is_array(v)) end
  if t == "array" then return is_array(v) end
  if t == "string" then return type(v) == "string" end
  if t == "boolean" then return type(v) == "boolean" end
  if t == "integer" then return math.type(v) == "integer" or (type(v) == "number" and v == math.floor(v)) end
  if t == "number" then return type(v) == "number" end
  return false
end

local function validate(v, s, defs, path, errs)
  errs = errs or {}
  path = path or ""
  local ref = s["$ref"]
  if ref then s = assert(defs[ref:match("^#/definitions/(.+)$")], ref) end
  if v == lyaml.null then
    if not s.nullable then errs[#errs + 1] = path .. ": null" end
    return errs
  end
  if s.anyOf and not s["x-kubernetes-int-or-string"] then
    local ok = false
    for _, alt in ipairs(s.anyOf) do ok = ok or #validate(v, alt, defs, path) == 0 end
    if not ok then errs[#errs + 1] = path .. ": matches none of anyOf" end
  end
  if s["x-kubernetes-int-or-string"] then
    if not (type(v) == "string" or math.type(v) == "integer") then errs[#errs + 1] = path .. ": not an int or string" end
    return errs
  end
  local types = type(s.type) == "table" and s.type or { s.type }
  if #types > 0 then
    local ok = false
    for _, t in ipairs(types) do ok = ok or type_ok(v, t) end
    if not ok then
      errs[#errs + 1] = path .. ": expected " .. table.concat(types, " or ")
      return errs
    end
  end
  if s.enum then
    local ok = false
    for _, e in ipairs(s.enum) do ok = ok or e == v end
    if not ok then errs[#errs + 1] = path .. ": " .. tostring(v) .. " is not one of the enum" end
  end
  if type(v) ~= "table" then return errs end
  if s.items then
    for i, x in ipairs(v) do validate(x, s.items, defs, path .. "[" .. (i - 1) .. "]", errs) end
  end
  for _, k in ipairs(s.required or {}) do
    if v[k] == nil then errs[#errs + 1] = path .. "." .. k .. ": required" end
  end
  if s.properties or s.additionalProperties then
    for k, x in pairs(v) do
      local ps = s.properties and s.properties[k]
      if ps then
        validate(x, ps, defs, path .. "." .. k, errs)
      elseif type(s.additionalProperties) == "table" then
        validate(x, s.additionalProperties, defs, path .. "." .. k, errs)
      elseif not s["x-kubernetes-preserve-unknown-fields"] and s.additionalProperties ~= true then
        errs[#errs + 1] = path .. "." .. k .. ": unknown field"
      end
    end
  end
  return errs
end

describe("VirtualMachines from dovetail pool -o yaml against KubeVirt's VirtualMachine schema", function()
  local f = assert(io.open(h.fixtures .. "crds/kubevirt-virtualmachine.yaml"))
  local schema = lyaml.load(f:read("a"))
  f:close()
  local META = { ["$ref"] = "#/definitions/k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta" }

  -- every document of `dovetail pool -o yaml` on the files, each checked
  local function vms_of(files)
    local out, err, code = h.cli("pool -o yaml --now " .. NOW .. " " .. files)
    assert.equal(0, code, err)
    local docs = lyaml.load(out, { all = true })
    assert.is_true(#docs > 0)
    return docs, out
  end

  local function check(vm)
    local errs = validate(vm, schema.virtualMachine, schema.definitions)
    validate(vm.metadata, META, schema.definitions, ".metadata", errs)
    return errs
  end

  it("accepts every VM the example pool makes; a pool without a uid owns none of them", function()
    local docs, out = vms_of("examples/vm-pool.yaml")
    for _, vm in ipairs(docs) do
      assert.equal("VirtualMachine", vm.kind)
      assert.same({}, check(vm))
      assert.is_nil(vm.metadata.ownerReferences)
    end
    assert.matches("# VirtualMachinePool default/web has no metadata.uid", out, 1, true)
  end)

  it("accepts every VM of a pool with nameGeneration and an architecture, owned by the pool's uid", function()
    local pl = pool({ uid = POOL_UID, replicas = 3, vmi = { architecture = "arm64" },
      spec = { nameGeneration = { appendIndexToConfigMapRefs = true, appendIndexToSecretRefs = true } } })
    -- with two VMs: db-0 is outdated (an update), db-1 fails (a heal);
    -- with none, all three are created
    local stale = kubevirt_vm(pl, 0, {}, 2)
    stale.spec.template.spec.terminationGracePeriodSeconds = 99
    local failing = kubevirt_vm(pl, 1, { configMaps = true, secrets = true })
    failing.status = { ready = false, printableStatus = "CrashLoopBackOff", startFailure = { consecutiveFailCount = 5 } }
    pl.spec.autohealing = { startUpFailureThreshold = 3 }
    pl.spec.replicas = 2
    local path = h.write(h.list({ pl, stale, failing }))
    local docs, out = vms_of(path)
    assert.equal(2, #docs)
    pl.spec.replicas = 3
    local path2 = h.write(h.list({ pl }))
    local created, out2 = vms_of(path2)
    os.remove(path)
    os.remove(path2)
    assert.equal(3, #created)
    for _, vm in ipairs(created) do docs[#docs + 1] = vm end
    out = out .. out2
    local names = {}
    for _, vm in ipairs(docs) do
      names[#names + 1] = vm.metadata.name
      assert.same({}, check(vm))
      local own = vm.metadata.ownerReferences
      assert.equal(1, #own)
      assert.same({ apiVersion = "pool.kubevirt.io/v1beta1", kind = "VirtualMachinePool", name = "db", uid = POOL_UID,
        controller = true, blockOwnerDeletion = true }, own[1])
      assert.equal("arm64", vm.spec.template.spec.architecture)
      local v = volumes(vm)
      local i = vm.metadata.name:match("%-(%d+)$")
      assert.equal("db-config-" .. i, v.config.configMap.name)
      assert.equal("db-creds-" .. i, v.creds.secret.secretName)
    end
    table.sort(names)
    assert.same({ "db-0", "db-0", "db-1", "db-1", "db-2" }, names)
    assert.is_nil(out:match("no metadata.uid"))
  end)

  it("refuses a VM missing a required field, so the check can fail", function()
    local docs = vms_of("examples/vm-pool.yaml")
    local vm = docs[1]
    assert.same({}, check(vm))
    vm.spec.template = nil
    assert.same({ ".spec.template: required" }, check(vm))
    vm = vms_of("examples/vm-pool.yaml")[1]
    vm.metadata.ownerReferences = { { apiVersion = "pool.kubevirt.io/v1beta1", kind = "VirtualMachinePool", name = "web" } }
    assert.same({ ".metadata.ownerReferences[0].uid: required" }, check(vm))
    vm = vms_of("examples/vm-pool.yaml")[1]
    vm.spec.template.spec.domain.rebootPolicy = "Sometimes"
    vm.spec.template.spec.domain.cpu.cores = "two"
    local errs = check(vm)
    table.sort(errs)
    assert.same({ ".spec.template.spec.domain.cpu.cores: expected integer",
      ".spec.template.spec.domain.rebootPolicy: Sometimes is not one of the enum" }, errs)
  end)

  -- A converged pool read from a cluster: KubeVirt compares revisions, so it does nothing; the VMs
  -- carry what the cluster adds (the revision label in their template, creationTimestamp: null in
  -- their data volume templates, virt-api's firmware, machine and architecture defaults).
  describe("on a converged pool as kubectl prints it", function()
    local text = h.slurp(h.fixtures .. "kubevirt/pool-steady-dump.yaml")
    local function updates(t) return updates_of { manifests = t, now = NOW } end
    local function bumped(t) -- the pool's generation only (a replicas change bumps it too)
      local at = t:find("generation: 1", t:find("kind: VirtualMachinePool", 1, true), true)
      return t:sub(1, at - 1) .. "generation: 2" .. t:sub(at + #"generation: 1")
    end

    it("updates no VM at the revision the VMs carry", function()
      assert.equal("", (updates(text)))
    end)

    it("updates no VM at a later generation whose template is the same", function()
      assert.equal("", (updates(bumped(text))))
    end)

    it("rewrites without a restart when only the VM's own labels changed (its instance template is the same)", function()
      local at = text:find("labels:", text:find("virtualMachineTemplate:", 1, true), true)
      assert(at, "the dump's pool has VM template labels")
      local changed = bumped(text:sub(1, at - 1) .. "labels:\n          team: blue" .. text:sub(at + #"labels:"))
      local names, res = updates(changed)
      assert.equal("rewrite web-0, rewrite web-1, rewrite web-2", names)
      assert.matches("without a restart", res.update[1].reason, 1, true)
    end)

    it("restarts every VM when the template changed", function()
      local at = text:find("guest: 1Gi", 1, true)
      local changed = bumped(text:sub(1, at - 1) .. "guest: 2Gi" .. text:sub(at + #"guest: 1Gi"))
      assert.equal("restart web-0, restart web-1, restart web-2", (updates(changed)))
    end)
  end)

  -- KubeVirt v1.9.0's pool controller: an outdated VM (isOutdatedVM: its
  -- revision's VirtualMachineTemplate, metadata and spec, differs) is
  -- rewritten (opportunisticUpdate); only an instance template that differs
  -- restarts it (isOutdatedVMI), else its VMI gets the new revision label
  describe("updates outside the instance template", function()
    local function actions(file) return updates_of { files = { h.fixtures .. "kubevirt/" .. file }, now = NOW } end

    it("restarts no VM dovetail made when only the VM template's labels changed", function()
      assert.equal("rewrite web-0, rewrite web-1", (actions "metadata-label-changed.yaml"))
    end)

    it("takes VMs made before nameGeneration was turned on as current: nothing restarts into missing ConfigMaps", function()
      assert.equal("", (actions "namegen-toggled.yaml"))
    end)

    it("rewrites KubeVirt's VMs when the VM template's labels or run strategy changed", function()
      assert.equal("rewrite web-0, rewrite web-1", (actions "vm-labels-changed.yaml"))
      local names, res = actions "runstrategy-halted.yaml"
      assert.equal("rewrite web-0, rewrite web-1", names)
      assert.matches("its new run strategy applies", res.update[1].reason, 1, true)
      assert.equal("Halted", res.update[1].object.spec.runStrategy)
    end)
  end)

  -- KubeVirt's isOutdatedVMI: a VM rewritten to the pool's revision whose
  -- running VMI is of an older one with another instance template restarts
  describe("a rollout half done", function()
    local text = h.slurp(h.fixtures .. "kubevirt/mid-rollout.yaml")
    local function updates(t) return updates_of { manifests = t, now = NOW } end
    -- the dump without its ControllerRevisions (kubectl get of pools, VMs and VMIs)
    local function no_revisions(t)
      local at = assert(t:find("\n%- apiVersion: apps/v1\n"))
      return t:sub(1, at) .. "kind: List\n"
    end

    it("restarts the VMs whose VMIs run an older revision with another instance template", function()
      local names, res = updates(text)
      assert.equal("restart web-0, restart web-1", names)
      assert.matches("the ControllerRevisions differ", res.update[1].reason, 1, true)
    end)

    it("reads RestartRequired when the dump holds no ControllerRevisions", function()
      local t = no_revisions(text)
      assert.is_nil(t:find("kind: ControllerRevision", 1, true))
      local names, res = updates(t)
      assert.equal("restart web-0, restart web-1", names)
      assert.matches("RestartRequired", res.update[1].reason, 1, true)
      -- and without it, nothing says the VMI's spec is old
      assert.equal("", (updates((t:gsub("type: RestartRequired", "type: Paused")))))
    end)

    it("leaves VMIs alone whose revision has the same instance template (KubeVirt relabels them)", function()
      -- the revision web-1 with web-2's two cores: only the revision name differs
      -- its data comes before its metadata, as kubectl sorts the keys
      local at = text:find("kind: ControllerRevision\n  metadata:\n    name: web-1\n", 1, true)
      assert(at, "the fixture's revision web-1")
      local from = 1
      for k in text:gmatch("()\n%- apiVersion: apps/v1\n") do
        if k < at then from = k end
      end
      local cores = text:find("cores: 1", from, true)
      assert(cores and cores < at)
      local same = text:sub(1, cores - 1) .. "cores: 2" .. text:sub(cores + #"cores: 1")
      assert.equal("", (updates(same)))
    end)

    it("does not restart a VMI already being deleted (KubeVirt passes over VMIs that are going)", function()
      local t = text:gsub("kind: VirtualMachineInstance\n  metadata:\n",
        "kind: VirtualMachineInstance\n  metadata:\n    deletionTimestamp: '2026-08-01T23:30:00Z'\n")
      assert.are_not.equal(text, t)
      assert.equal("", (updates(t)))
    end)

    it("restarts nothing with updateStrategy opportunistic (KubeVirt skips proactiveUpdate)", function()
      assert.equal("", (updates(h.slurp(h.fixtures .. "kubevirt/opportunistic-mid-rollout.yaml"))))
    end)

    it("restarts a VMI without a revision label, or whose revision is gone; not when the VM's own is gone", function()
      local function of(file) return (updates(h.slurp(h.fixtures .. "kubevirt/" .. file))) end
      assert.equal("restart web-0", of "vmi-no-revision-label.yaml")
      assert.equal("restart web-0", of "vmi-revision-missing.yaml")
      assert.equal("", of "vm-revision-missing.yaml")
    end)

    it("restarts within maxUnavailable", function()
      local t = text:gsub("replicas: 2\n", "replicas: 2\n    maxUnavailable: 1\n", 1)
      local names, res = updates(t)
      assert.equal("restart web-0", names)
      assert.equal(1, #res.waiting)
    end)
  end)

  it("names a misspelt pool field with the field meant, as the API server refuses it, not read as its default", function()
    local file = h.fixtures .. "kubevirt/pool-typos.yaml"
    local _, err, code = h.cli("pool " .. file)
    assert.are_not.equal(0, code)
    assert.matches(file .. ": VirtualMachinePool default/web: spec.replica: unknown field (did you mean replicas?)", err,
      1, true)
    local text = h.slurp(file):gsub("replica: 5", "replicas: 5")
    _, err = h.cli("pool -", text)
    assert.matches("spec.maxUnavailble: unknown field (did you mean maxUnavailable?)", err, 1, true)
  end)

  describe("VMs KubeVirt v1.9 made", function()
    local function updates(file) return updates_of { files = { h.fixtures .. "kubevirt/" .. file }, now = NOW } end

    -- its pci-topology annotation, resources: {} and a quantity written otherwise are the cluster's,
    -- and the ControllerRevision the VM's label names says its template is the pool's
    it("are current at an older revision whose template is the pool's", function()
      assert.equal("", (updates "v19-defaults.yaml"))
      assert.equal("", (updates "quantity-1024Mi.yaml"))
    end)

    it("keep their firmware UUID and serial when rewritten or restarted (KubeVirt's preserveVMIdentityFields)", function()
      local input = {}
      local function firmware(vm) return vm.spec.template.spec.domain.firmware end
      for _, file in ipairs { "firmware-label-added.yaml", "firmware-cores-changed.yaml" } do
        local r = assert(dt.pool({ files = { h.fixtures .. "kubevirt/" .. file }, now = NOW }))
        local names, res = updates(file)
        assert.matches(file == "firmware-label-added.yaml" and "^rewrite web%-0, rewrite web%-1$" or
          "^restart web%-0, restart web%-1$", names)
        for _, a in ipairs(res.update) do
          local fw = firmware(a.object)
          assert.truthy(fw and fw.uuid and fw.serial, a.name)
          input[file .. a.name] = fw.uuid
        end
        assert(r)
      end
      -- the UUIDs the VMs had (web-0's differs from web-1's) are the ones written
      local text = h.slurp(h.fixtures .. "kubevirt/firmware-label-added.yaml")
      for name in ("web-0 web-1"):gmatch("%S+") do
        assert.truthy(text:find(input["firmware-label-added.yaml" .. name], 1, true), name)
      end
      assert.are_not.equal(input["firmware-label-added.yaml" .. "web-0"], input["firmware-label-added.yaml" .. "web-1"])
    end)
  end)

  it("says when its VMs' names or revision label are longer than the API server takes", function()
    local pl = pool({ uid = POOL_UID, replicas = 2 })
    pl.metadata.name = string.rep("w", 62)
    pl.metadata.generation = 12
    local notes = table.concat(run({ pl }).notes or {}, "\n")
    assert.matches("revision label value " .. pl.metadata.name .. "%-12 is 65 characters, over the 63", notes)
    pl.metadata.name = string.rep("w", 252)
    notes = table.concat(run({ pl }).notes or {}, "\n")
    assert.matches("would be 254 characters, over the 253", notes, 1, true)
    pl.metadata.name = "db"
    assert.equal("", table.concat(run({ pl }).notes or {}, "\n"))
  end)

  it("creates nothing for a pool being deleted (KubeVirt only releases its VMs)", function()
    local pl = pool({ uid = POOL_UID, replicas = 3 })
    pl.metadata.deletionTimestamp = "2026-11-23T11:59:00Z"
    pl.metadata.finalizers = { "pool.kubevirt.io/finalizer" }
    local p = run({ pl, kubevirt_vm(pl, 0, {}) })
    assert.equal(0, #p.create)
    assert.equal(0, #p.update)
  end)

  it("takes a runStrategy Manual VM that runs and is ready as running", function()
    local pl = pool({ uid = POOL_UID, replicas = 1, spec = { scaleInStrategy = { opportunistic = {} } } })
    pl.spec.virtualMachineTemplate.spec.runStrategy = "Manual"
    local vms = {}
    for i = 0, 2 do
      vms[i + 1] = kubevirt_vm(pl, i, {})
      vms[i + 1].spec.runStrategy = "Manual"
    end
    local p = run({ pl, vms[1], vms[2], vms[3] })
    assert.equal(0, #p.delete, "opportunistic scale-in deletes only halted VMs")
    assert.equal(3, p.status.ready)
    vms[2].status = { printableStatus = "Stopped", ready = false }
    p = run({ pl, vms[1], vms[2], vms[3] })
    assert.equal(1, #p.delete)
    assert.equal("db-1", p.delete[1].name)
  end)

  it("owns the VMs whose controller reference names its uid, as KubeVirt's isOwned", function()
    local pl = pool({ uid = POOL_UID, replicas = 2 })
    local stale, loose = kubevirt_vm(pl, 0, {}), kubevirt_vm(pl, 1, {})
    stale.metadata.ownerReferences[1].uid = "0000dead-0000-0000-0000-00000000beef" -- a pool of that name before
    loose.metadata.ownerReferences[1].controller = nil -- not the controller reference
    local p = run({ pl, stale, loose })
    assert.equal(0, p.status.current)
    local made = {}
    for _, c in ipairs(p.create) do made[#made + 1] = c.name end
    assert.same({ "db-2", "db-3" }, made, "their names stay taken")
  end)

  it("puts the revision label on a created VM and on its VMI template, as KubeVirt's controller", function()
    local p = run({ pool({ uid = POOL_UID, replicas = 1 }) })
    local vm = p.create[1].object
    assert.equal("db-3", vm.metadata.labels["kubevirt.io/vm-pool-revision-name"])
    assert.equal("db-3", vm.spec.template.metadata.labels["kubevirt.io/vm-pool-revision-name"])
  end)
end)
