-- Catalogs by name (the bundled AWS and Azure ones), Karpenter's KWOK instance-type list, and
-- `dovetail catalog`: listing with filters, and --convert to dovetail's own format.
local h = require "helper"
local json = require "dkjson"

local NOW = "--now 2026-11-23T12:00:00Z"
local KWOK = h.fixtures .. "kwok-instance-types.json"

local function decode(text)
  local doc, _, err = json.decode(text)
  assert(doc, err)
  return doc
end

-- A plan through the command, decoded; asserts it ran.
local function plan_cli(args, manifests)
  local f = h.write(manifests)
  local out, err, code = h.cli("plan -o json " .. NOW .. " " .. args .. " " .. f)
  os.remove(f)
  assert.are.equal(0, code, err)
  return decode(out), out
end

local function listing(args)
  local out, err, code = h.cli("catalog -o json " .. args)
  assert.are.equal(0, code, err)
  return decode(out)
end

describe("--catalog azure-eastus", function()
  local np = h.nodepool("default", { requirements = {
    { "karpenter.azure.com/sku-family", "In", { "D" } },
    { "kubernetes.io/arch", "In", { "amd64" } },
  } })

  it("plans on the bundled Azure sizes, in eastus-N zones, on demand", function()
    local plan = plan_cli("--catalog azure-eastus", h.docs(np, h.pod("p", { cpu = "3", memory = "6Gi" })))
    local c = plan.nodeClaims[1]
    assert.matches("^Standard_D", c.instanceType)
    assert.matches("^eastus%-[123]$", c.zone)
    assert.are.equal("on-demand", c.capacityType)
    for _, t in ipairs(c.instanceTypeOptions) do assert.matches("^Standard_D", t) end
  end)

  it("labels sizes as Karpenter's Azure provider does (family, series, version, cpu)", function()
    local pool = h.nodepool("default", { requirements = {
      { "karpenter.azure.com/sku-series", "In", { "Ds_v5" } },
      { "karpenter.azure.com/sku-cpu", "In", { "4" } },
    } })
    local plan = plan_cli("--catalog azure-eastus", h.docs(pool, h.pod("p", { cpu = "1" })))
    assert.are.equal("Standard_D4s_v5", plan.nodeClaims[1].instanceType)
  end)

  it("computes allocatable with Karpenter's Azure overhead (Standard_D4s_v5: 3860m, 11743Mi)", function()
    local doc = listing("--catalog azure-eastus --type Standard_D4s_v5")
    local t = doc.instanceTypes[1]
    assert.are.equal("azure", doc.provider)
    assert.are.equal("3860m", t.allocatable.cpu)
    -- 16 GiB less 7.5%, less 2662Mi kube-reserved and 750Mi eviction threshold
    assert.are.equal("12313637683", t.allocatable.memory)
    assert.are.equal("250", t.allocatable.pods)
    assert.are.equal(128e9, h.dt.milli(t.capacity["ephemeral-storage"]) / 1000) -- the 128 GB OS disk
    assert.are.equal(3, #t.offerings)
    for _, o in ipairs(t.offerings) do assert.are.equal("on-demand", o.capacityType) end
  end)

  it("is taken by name by the Lua module too", function()
    local plan = h.plan(h.docs(np, h.pod("p", { cpu = "1" })), { catalog = "azure-eastus" })
    assert.matches("^Standard_D", plan.nodeClaims[1].instanceType)
    assert.matches("^eastus%-%d$", plan.nodeClaims[1].zone)
    local aws = h.plan(h.docs(h.nodepool("default"), h.pod("p", { cpu = "1" })), { catalog = "aws-us-east-1" })
    assert.matches("^us%-east%-1", aws.nodeClaims[1].zone)
  end)
end)

describe("an unknown catalog name", function()
  local names = "(bundled: aws-us-east-1, azure-eastus)"

  it("is an error listing the bundled names, in plan, disrupt and the Lua module", function()
    for _, cmd in ipairs { "plan", "disrupt" } do
      local _, err, code = h.cli(cmd .. " --catalog azure-westus " .. h.fixtures .. "empty.yaml")
      assert.are.equal(1, code)
      assert.matches('catalog "azure-westus": no such file, and not a bundled catalog ' .. names, err, 1, true)
    end
    local plan, err = h.dt.plan { manifests = "", catalog = "gcp" }
    assert.is_nil(plan)
    assert.matches('catalog "gcp": no such file, and not a bundled catalog ' .. names, err, 1, true)
  end)

  it("is an error in serve, simulate, catalog and the fake cloud", function()
    for _, args in ipairs { "serve --listen 127.0.0.1:0 --catalog nope",
                            "simulate -f examples/quickstart.yaml --duration 1m --catalog nope",
                            "catalog --catalog nope",
                            "fakecloud --listen 127.0.0.1:0 --catalog nope" } do
      local _, err, code = h.cli(args)
      assert.are.equal(1, code, args)
      assert.matches(names, err, 1, true)
    end
  end)

  it("the fake cloud refuses a catalog file the daemon would refuse, naming it", function()
    local f = os.tmpname()
    local w = assert(io.open(f, "w"))
    w:write("{}")
    w:close()
    local _, err, code = h.cli("fakecloud --listen 127.0.0.1:0 --catalog " .. f)
    os.remove(f)
    assert.are.equal(1, code)
    assert.matches(f .. ": instanceTypes: missing or not an array", err, 1, true)
  end)

  it("but a path that does not exist is reported as the file it names", function()
    local _, err, code = h.cli("plan --catalog ./azure-eastus.json " .. h.fixtures .. "empty.yaml")
    assert.are.equal(1, code)
    assert.matches("./azure-eastus.json: cannot open", err, 1, true)
  end)
end)

describe("Karpenter's KWOK instance-type list", function()
  it("loads as a catalog: zones and capacity types from the offerings' requirements", function()
    local doc = listing("--catalog " .. KWOK)
    assert.are.equal("kwok", doc.provider)
    assert.are.equal(4, #doc.instanceTypes)
    assert.are.equal(32, doc.summary.offerings)
    local t = doc.instanceTypes[1]
    assert.are.equal("c-2x-amd64-linux", t.name)
    -- KWOK's kube-reserved: 100m cpu, 10Mi memory
    assert.are.equal("1900m", t.allocatable.cpu)
    assert.are.equal("4086Mi", t.allocatable.memory)
    assert.are.equal("32", t.allocatable.pods)
    assert.are.equal("c", t.labels["karpenter.kwok.sh/instance-family"])
    assert.are.equal("4Gi", t.labels["karpenter.kwok.sh/instance-memory"])
    assert.are.equal("spot", t.offerings[1].capacityType)
    assert.are.equal("test-zone-a", t.offerings[1].zone)
    assert.are.equal("windows", doc.instanceTypes[3].labels["kubernetes.io/os"])
  end)

  it("plans: the cheapest fitting type and offering, its operating system honoured", function()
    local linux = h.nodepool("default", { requirements = {
      { "kubernetes.io/arch", "In", { "amd64" } }, { "kubernetes.io/os", "In", { "linux" } } } })
    local plan = plan_cli("--catalog " .. KWOK, h.docs(linux, h.pod("p", { cpu = "3", memory = "6Gi" })))
    local c = plan.nodeClaims[1]
    assert.are.equal("m-8x-amd64-linux", c.instanceType)
    assert.are.equal("spot", c.capacityType)
    assert.are.equal("test-zone-a", c.zone)
    local win = h.nodepool("win", { requirements = { { "kubernetes.io/os", "In", { "windows" } } } })
    plan = plan_cli("--catalog " .. KWOK, h.docs(win, h.pod("p", { cpu = "3", memory = "6Gi" })))
    assert.are.equal("c-4x-amd64-windows", plan.nodeClaims[1].instanceType)
  end)

  local function kwok(offering, resources)
    return ('[{"name": "t-1", "architecture": "amd64", "operatingSystems": ["linux"], "resources": %s,'
      .. ' "offerings": [%s]}]'):format(resources or '{"cpu": "2", "memory": "4Gi"}', offering)
  end

  it("honours Available: false, and reads the older Zone and CapacityType members", function()
    local cat = kwok('{"Price": 0.01, "Available": false, "Requirements": [' ..
      '{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["on-demand"]},' ..
      '{"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["z1"]}]},' ..
      '{"CapacityType": "on-demand", "Zone": "z2", "Price": 0.02, "Available": true}')
    local plan = h.plan(h.docs(h.nodepool("default"), h.pod("p")), { catalog_text = cat })
    assert.are.equal("z2", plan.nodeClaims[1].zone)
    assert.are.equal(0.02, plan.nodeClaims[1].price)
  end)

  it("names the file, the type and the field when an offering or resource cannot be read", function()
    local _, err = h.dt.plan { manifests = "", catalog_text = kwok('{"Price": 0.01, "Requirements": [' ..
      '{"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]}]}') }
    assert.matches("catalog_text: [0] (t-1): offerings[0].Requirements: no topology.kubernetes.io/zone requirement",
      err, 1, true)
    _, err = h.dt.plan { manifests = "", catalog_text = kwok('{"Price": 0.01, "Requirements": [' ..
      '{"key": "topology.kubernetes.io/zone", "operator": "NotIn", "values": ["z1"]}]}') }
    assert.matches("offerings[0].Requirements[0].operator: expected In for topology.kubernetes.io/zone", err, 1, true)
    _, err = h.dt.plan { manifests = "", catalog_text = kwok('{"Price": "cheap"}') }
    assert.matches("[0] (t-1): offerings[0].Price: expected a number", err, 1, true)
    _, err = h.dt.plan { manifests = "", catalog_text = kwok('{"Price": 1, "Zone": "z", "CapacityType": "spot"}',
      '{"cpu": "2", "memory": "4Gi", "hugepages-2Mi": "1Gi"}') }
    assert.matches("[0] (t-1): resources.hugepages-2Mi: not read", err, 1, true)
    local one = '{"Price": 1, "Zone": "z", "CapacityType": "spot"}'
    _, err = h.dt.plan { manifests = "", catalog_text = kwok(one, '{"cpu": "2x", "memory": "4Gi"}') }
    assert.matches("[0] (t-1): resources.cpu: ", err, 1, true)
    assert.is_nil(err:find("negative", 1, true), err) -- the parse's message, whatever the stack held
    _, err = h.dt.plan { manifests = "", catalog_text = kwok(one, '{"cpu": "-2", "memory": "4Gi"}') }
    assert.matches("[0] (t-1): resources.cpu: must not be negative", err, 1, true)
  end)
end)

describe("dovetail catalog", function()
  it("lists types and offerings as a JSON document, filtered", function()
    local doc = listing("--type 'm5.*' --zone us-east-1a --capacity-type spot --min-cpu 8 --max-price 0.5")
    assert.are.equal("InstanceTypeList", doc.kind)
    assert.are.equal("bundled:aws-us-east-1.json", doc.catalog)
    assert.is_true(#doc.instanceTypes > 0)
    assert.are.equal(#doc.instanceTypes, doc.summary.instanceTypes)
    local n = 0
    for _, t in ipairs(doc.instanceTypes) do
      assert.matches("^m5%.", t.name)
      assert.is_true(h.dt.milli(t.capacity.cpu) >= 8000, t.name)
      for _, o in ipairs(t.offerings) do
        n = n + 1
        assert.are.equal("us-east-1a", o.zone)
        assert.are.equal("spot", o.capacityType)
        assert.is_true(o.price <= 0.5)
        assert.is_true(o.available)
      end
    end
    assert.are.equal(n, doc.summary.offerings)
    local none = listing("--type 'm5.*' --max-price 0.0001")
    assert.are.equal(0, #none.instanceTypes)
  end)

  it("counts GPUs, not Neuron or other devices, as gpus (and so do policies' offerings)", function()
    local doc = listing("--type inf1.6xlarge --type p3.2xlarge")
    local gpus = {}
    for _, t in ipairs(doc.instanceTypes) do gpus[t.name] = t.gpus end
    assert.are.same({ ["inf1.6xlarge"] = 0, ["p3.2xlarge"] = 1 }, gpus)
    local pol = h.write([[
return { score = function(o)
  if o.instanceType == "p3.2xlarge" or o.instanceType == "inf1.6xlarge" then
    dovetail.log("info", o.instanceType .. " " .. o.gpus)
  end
  return o.price
end }
]])
    local m = h.write(h.docs(h.nodepool("default", { requirements = {
      { "node.kubernetes.io/instance-type", "In", { "p3.2xlarge", "inf1.6xlarge" } } } }),
      h.pod("p", { cpu = "1" })))
    local _, err, code = h.cli("plan -o json --now 2026-11-23T00:00:00Z --policy " .. pol .. " " .. m)
    assert.are.equal(0, code, err)
    assert.matches("info: p3.2xlarge 1\n", err, 1, true)
    assert.matches("info: inf1.6xlarge 0\n", err, 1, true)
  end)

  it("prints a table for people, and answers --help", function()
    local out, err, code = h.cli("catalog -o table --catalog azure-eastus --type Standard_D2s_v5")
    assert.are.equal(0, code, err)
    assert.matches("^INSTANCE TYPE%s+ARCH%s+VCPU%s+CPU%s+MEMORY%s+PODS%s+GPUS%s+ZONE%s+CAPACITY%s+%$/HOUR", out)
    assert.matches("Standard_D2s_v5%s+amd64%s+2%s+1900m%s+[%d.]+Gi%s+250%s+0%s+eastus%-1%s+on%-demand", out)
    assert.matches("1 instance type, 3 offerings", out, 1, true)
    local help = h.cli("catalog --help")
    assert.matches("^usage: dovetail catalog", help)
    assert.matches("--convert", help, 1, true)
    local usage = h.cli("--help")
    assert.matches("\n  catalog ", usage, 1, true)
    local _, uerr, ucode = h.cli("catalog --capacity-type cheap")
    assert.are.equal(2, ucode)
    assert.matches("--capacity-type: expected on-demand, spot or reserved", uerr, 1, true)
  end)

  -- Convert a catalog, then plan on both: the outputs must be the same bytes.
  local manifests = h.docs(h.nodepool("default", { requirements = {} }),
    h.pod("a", { cpu = "3", memory = "6Gi" }), h.pod("b", { cpu = "500m", memory = "20Gi" }),
    h.pod("c", { cpu = "7", memory = "1Gi" }))
  local function round_trip(catalog)
    local conv, err, code = h.cli("catalog --convert --catalog " .. catalog)
    assert.are.equal(0, code, err)
    local path = h.write(conv)
    for _, fmt in ipairs { "json", "yaml" } do
      local f = h.write(manifests)
      local a = h.cli(("plan -o %s %s --catalog %s %s"):format(fmt, NOW, catalog, f))
      local b = h.cli(("plan -o %s %s --catalog %s %s"):format(fmt, NOW, path, f))
      os.remove(f)
      assert.is_true(#a > 100, a)
      assert.are.equal(a, b, catalog .. " -o " .. fmt)
    end
    local again = h.cli("catalog --convert --catalog " .. path)
    os.remove(path)
    assert.are.equal(conv, again, "converting the converted catalog changes nothing")
    return conv
  end

  it("--convert writes a KWOK list in dovetail's format, which plans identically", function()
    local conv = round_trip(KWOK)
    local doc = decode(conv)
    assert.are.equal("kwok", doc.provider)
    assert.same({ "test-zone-a", "test-zone-b", "test-zone-c", "test-zone-d" }, doc.zones)
    assert.same({ cpu = "100m", memory = "10Mi" }, doc.instanceTypes[1].overhead)
  end)

  it("--convert round-trips the bundled catalogs and one with reservations and explicit overhead", function()
    round_trip("azure-eastus")
    round_trip("aws-us-east-1")
    local rich = h.write([[{"region": "test-1", "provider": "generic", "zones": ["z1", "z2"], "instanceTypes": [
      {"name": "a", "cpu": 4, "memoryMiB": 8192, "onDemandPrice": 0.2, "spotPrice": 0.07, "labels": {"x/y": 1},
       "overhead": {"cpu": "150m"}, "extendedResources": {"example.com/fpga": 1}, "ephemeralStorage": "50Gi"},
      {"name": "b", "cpu": 8, "memoryMiB": 16384, "onDemandPrice": 0.4, "gpu": 1, "gpuName": "t4",
       "offerings": [{"zone": "z1", "capacityType": "spot", "available": 1}, {"zone": "z2", "available": false}]}],
      "reservations": [{"id": "r-1", "instanceType": "b", "zone": "z2", "count": 1}]}]])
    local conv = round_trip(rich)
    os.remove(rich)
    assert.matches('"reservationID": "r-1"', conv, 1, true)
    assert.matches('"ephemeralStorage": "50Gi"', conv, 1, true)
  end)

  it("--convert keeps what the filters leave, and that loads back", function()
    local conv = h.cli("catalog --convert --catalog azure-eastus --type 'Standard_D*s_v5' --zone eastus-2")
    local doc = decode(conv)
    assert.same({ "eastus-2" }, doc.zones)
    assert.is_true(#doc.instanceTypes > 3)
    for _, t in ipairs(doc.instanceTypes) do
      assert.matches("^Standard_D.*s_v5$", t.name)
      assert.are.equal(1, #t.offerings)
    end
    local path = h.write(conv)
    local back = listing("--catalog " .. path)
    os.remove(path)
    assert.are.equal(#doc.instanceTypes, back.summary.instanceTypes)
    assert.are.equal("azure", back.provider)
  end)
end)

describe("completion", function()
  it("offers the catalog command, its options and the bundled names", function()
    assert.matches("catalog\n", h.complete("dovetail cat", 1), 1, true)
    assert.matches("--capacity-type", h.complete("dovetail catalog --cap", 2), 1, true)
    assert.matches("azure-eastus", h.complete("dovetail plan --catalog az", 3), 1, true)
    assert.matches("on-demand", h.complete("dovetail catalog --capacity-type ''", 3), 1, true)
  end)
end)
