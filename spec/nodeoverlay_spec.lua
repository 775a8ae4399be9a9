-- NodeOverlays (karpenter.sh/v1alpha1): prices and extended resources per
-- NodePool and instance type, by weight, as Karpenter's nodeoverlay controller.
local h = require "helper"
local dt = h.dt

local NOW = "2026-11-23T12:00:00Z"

-- A NodeOverlay; o: requirements ({key, op, values}), price, adjust, capacity, weight.
local function overlay(name, o)
  local reqs = h.array()
  for _, r in ipairs(o.requirements or {}) do
    reqs[#reqs + 1] = { key = r[1], operator = r[2], values = r[3] and h.array(r[3]) or nil }
  end
  return {
    apiVersion = "karpenter.sh/v1alpha1",
    kind = "NodeOverlay",
    metadata = { name = name },
    spec = { requirements = reqs, price = o.price, priceAdjustment = o.adjust, capacity = o.capacity,
      weight = o.weight },
  }
end

local function pool(name, o)
  o = o or {}
  return {
    apiVersion = "karpenter.sh/v1",
    kind = "NodePool",
    metadata = { name = name },
    spec = {
      weight = o.weight,
      disruption = { budgets = h.array({ { nodes = "100%" } }) },
      template = {
        metadata = o.labels and { labels = o.labels } or nil,
        spec = { requirements = h.array(o.requirements or {
          { key = "karpenter.sh/capacity-type", operator = "In", values = h.array({ o.ct or "on-demand" }) },
          { key = "kubernetes.io/arch", operator = "In", values = h.array({ "amd64" }) },
        }) },
      },
    },
  }
end

local function pod(name, o)
  o = o or {}
  local req = { cpu = o.cpu or "1", memory = o.memory or "1Gi" }
  for k, v in pairs(o.extra or {}) do req[k] = v end
  return {
    apiVersion = "v1",
    kind = "Pod",
    metadata = { name = name, namespace = "default" },
    spec = { nodeName = o.on, nodeSelector = o.selector,
      containers = h.array({ { name = "c", resources = { requests = req, limits = o.limits } } }) },
  }
end

local function plan(items, extra)
  local args = { manifests = h.list(items), catalog_text = h.small_catalog, now = NOW }
  for k, v in pairs(extra or {}) do args[k] = v end
  local p, err = dt.plan(args)
  assert(p, err)
  return p
end

local function note_matching(p, pat)
  for _, n in ipairs(p.notes) do
    if n:find(pat, 1, true) then return n end
  end
end

describe("NodeOverlay prices", function()
  it("a price adjustment moves the plan to another type, and the claim says an overlay priced it", function()
    local items = { pool("default"), pod("a") }
    assert.equal("small", plan(items).nodeClaims[1].instanceType)
    items[#items + 1] = overlay("small-dear", { requirements = { { "node.kubernetes.io/instance-type", "In",
      { "small" } } }, adjust = "+300%" })
    local c = plan(items).nodeClaims[1]
    assert.equal("medium", c.instanceType)
    assert.near(0.20, c.price, 1e-12)
    local js = h.cli("plan --catalog " .. h.write(h.small_catalog) .. " --now " .. NOW .. " -o json " ..
      h.write((h.list(items))))
    assert.matches('"priceOverlayApplied":%s*true', js)
    assert.is_nil(js:find("capacityOverlayApplied", 1, true))
    local out = h.cli("plan --catalog " .. h.write(h.small_catalog) .. " --now " .. NOW .. " -o yaml " ..
      h.write((h.list(items))))
    assert.matches('karpenter.sh/price%-overlay%-applied: "true"', out)
    local plain = h.cli("plan --catalog " .. h.write(h.small_catalog) .. " --now " .. NOW .. " -o yaml " ..
      h.write((h.list({ pool("default"), pod("a") }))))
    assert.is_nil(plain:find("overlay-applied", 1, true))
  end)

  it("sets, adds and scales as Karpenter's AdjustedPrice, never below 0", function()
    local cases = { { price = "0.05", want = 0.05 }, { adjust = "+0.5", want = 0.60 }, { adjust = "-0.02", want = 0.08 },
      { adjust = "+10%", want = 0.11 }, { adjust = "-25.5%", want = 0.0745 }, { adjust = "-100%", want = 0 },
      { adjust = "-.5", want = 0 } }
    for _, k in ipairs(cases) do
      local o = overlay("o", { requirements = {}, price = k.price, adjust = k.adjust })
      local p = plan({ pool("default", { requirements = {
        { key = "node.kubernetes.io/instance-type", operator = "In", values = h.array({ "small" }) },
        { key = "karpenter.sh/capacity-type", operator = "In", values = h.array({ "on-demand" }) } } }),
        pod("a"), o })
      assert.near(k.want, p.nodeClaims[1].price, 1e-9, k.price or k.adjust)
    end
  end)

  it("keeps to the capacity types and zones its requirements name", function()
    local o = overlay("spot-cheap", { requirements = { { "karpenter.sh/capacity-type", "In", { "spot" } },
      { "topology.kubernetes.io/zone", "In", { "test-1b" } } }, price = "0.001" })
    local p = plan({ pool("default"), pod("a"), o }) -- on-demand only: spot prices change nothing
    assert.equal("small", p.nodeClaims[1].instanceType)
    assert.near(0.10, p.nodeClaims[1].price, 1e-12)
    p = plan({ pool("default", { ct = "spot" }), pod("a", { cpu = "3" }), o })
    assert.equal("test-1b", p.nodeClaims[1].zone)
    assert.near(0.001, p.nodeClaims[1].price, 1e-12)
  end)

  it("reads beta label keys as their stable keys, as Karpenter's requirements normalize them", function()
    for _, k in ipairs({ { "beta.kubernetes.io/instance-type", "medium" }, { "failure-domain.beta.kubernetes.io/zone",
      "test-1b" } }) do
      local o = overlay("o", { requirements = { { k[1], "In", { k[2] } } }, price = "0.001" })
      local c = plan({ pool("default"), pod("a"), o }).nodeClaims[1]
      assert.near(0.001, c.price, 1e-12, k[1])
    end
  end)

  it("the heavier overlay wins; of one weight the name later in the alphabet, the other conflicting", function()
    local sel = { { "node.kubernetes.io/instance-type", "In", { "medium" } } }
    local base = { pool("default"), pod("a", { cpu = "3" }) }
    local function with(...)
      local t = { table.unpack(base) }
      for _, o in ipairs({ ... }) do t[#t + 1] = o end
      return plan(t)
    end
    local p = with(overlay("a", { requirements = sel, price = "0.01", weight = 10 }),
      overlay("z", { requirements = sel, price = "0.02", weight = 5 }))
    assert.near(0.01, p.nodeClaims[1].price, 1e-12)
    assert.is_nil(note_matching(p, "conflicts"))
    p = with(overlay("a", { requirements = sel, price = "0.01" }), overlay("z", { requirements = sel, price = "0.02" }))
    assert.near(0.02, p.nodeClaims[1].price, 1e-12)
    local n = note_matching(p, "NodeOverlay a: conflicts with another overlay of weight 0")
    assert.truthy(n, table.concat(p.notes, "\n"))
    assert.matches("the price of medium for NodePool default", n, 1, true)
    -- Karpenter compares with the last weight that touched an offering: two
    -- lighter overlays of one weight conflict even though the heavier one priced it
    p = with(overlay("heavy", { requirements = sel, price = "0.01", weight = 10 }),
      overlay("b", { requirements = sel, price = "0.03", weight = 5 }),
      overlay("c", { requirements = sel, price = "0.04", weight = 5 }))
    assert.near(0.01, p.nodeClaims[1].price, 1e-12)
    assert.truthy(note_matching(p, "NodeOverlay b: conflicts"))
    -- overlays touching other types, or other resources, do not conflict
    p = with(overlay("a", { requirements = sel, price = "0.01" }),
      overlay("z", { requirements = { { "node.kubernetes.io/instance-type", "In", { "large" } } }, price = "0.02" }))
    assert.is_nil(note_matching(p, "conflicts"))
  end)

  it("a price for one NodePool's offerings that another can launch keeps the catalog's price, and says so", function()
    local o = overlay("team-b", { requirements = { { "team", "In", { "b" } } }, adjust = "+1" })
    local p = plan({ pool("a"), pool("b", { labels = { team = "b" } }), pod("x"), o })
    assert.near(0.10, p.nodeClaims[1].price, 1e-12)
    local n = note_matching(p, "NodeOverlays price")
    assert.truthy(n, table.concat(p.notes, "\n"))
    assert.matches("on NodePool a, $1.1/h on b", n, 1, true)
    -- one NodePool alone: its label selects it, the price applies
    p = plan({ pool("b", { labels = { team = "b" } }), pod("x"), o })
    assert.near(1.10, p.nodeClaims[1].price, 1e-12)
    -- a label no NodePool defines selects nothing (Karpenter: not compatible)
    p = plan({ pool("a"), pod("x"), o })
    assert.near(0.10, p.nodeClaims[1].price, 1e-12)
    assert.is_nil(note_matching(p, "NodeOverlays price"))
  end)

  it("consolidation weighs nodes at the overlaid prices", function()
    local node = {
      apiVersion = "v1",
      kind = "Node",
      metadata = { name = "n1", creationTimestamp = "2026-11-20T00:00:00Z", labels = {
        ["node.kubernetes.io/instance-type"] = "medium", ["topology.kubernetes.io/zone"] = "test-1a",
        ["karpenter.sh/capacity-type"] = "on-demand", ["karpenter.sh/nodepool"] = "default",
        ["kubernetes.io/arch"] = "amd64" } },
    }
    local items = { pool("default"), node, pod("a", { cpu = "3", on = "n1" }) }
    local args = { manifests = h.list(items), catalog_text = h.small_catalog, now = NOW }
    local r = assert(dt.disrupt(args))
    assert.equal(0, #r.commands) -- large ($0.40) holds it only dearer
    items[#items + 1] = overlay("large-deal", { requirements = { { "node.kubernetes.io/instance-type", "In",
      { "large" } } }, price = "0.05" })
    args.manifests = h.list(items)
    r = assert(dt.disrupt(args))
    assert.equal(1, #r.commands)
    assert.equal("replace", r.commands[1].action)
    assert.equal("large", r.commands[1].replacements[1].instanceType)
    assert.near(0.20 - 0.05, r.commands[1].savings, 1e-9)
    -- the node's own type overlaid: it is weighed at that price too, and not replaced by itself
    -- (weighed at the catalog's, the daemon replaced it with its own type pass after pass)
    items[#items] = overlay("medium-deal", { requirements = { { "node.kubernetes.io/instance-type", "In",
      { "medium" } } }, price = "0.05" })
    args.manifests = h.list(items)
    r = assert(dt.disrupt(args))
    assert.equal(0, #r.commands)
  end)
end)

describe("NodeOverlay capacity", function()
  local fuse = { ["example.com/fuse"] = "1" }

  it("gives the types it selects an extended resource, so pods asking for it are planned", function()
    local p = plan({ pool("default"), pod("a", { extra = fuse, limits = fuse }) })
    assert.equal(0, #p.nodeClaims)
    assert.equal(1, #p.unschedulable)
    local o = overlay("fuse", { requirements = { { "node.kubernetes.io/instance-type", "In", { "medium", "large" } } },
      capacity = { ["example.com/fuse"] = "4" } })
    p = plan({ pool("default"), o, pod("a", { extra = fuse, limits = fuse }), pod("b", { extra = fuse, limits = fuse }) })
    assert.equal(1, #p.nodeClaims)
    assert.equal("medium", p.nodeClaims[1].instanceType)
    local out = h.cli("plan --catalog " .. h.write(h.small_catalog) .. " --now " .. NOW .. " -o yaml " ..
      h.write((h.list({ pool("default"), o, pod("a", { extra = fuse, limits = fuse }) }))))
    assert.matches('karpenter.sh/capacity%-overlay%-applied: "true"', out)
    assert.matches("example.com/fuse: \"?4\"?", out)
  end)

  it("per NodePool: the pod goes to the pool whose nodes the overlay gives the resource", function()
    local o = overlay("fuse", { requirements = { { "karpenter.sh/nodepool", "In", { "devices" } } },
      capacity = { ["example.com/fuse"] = "1" } })
    local p = plan({ pool("default", { weight = 50 }), pool("devices"), o, pod("a", { extra = fuse, limits = fuse }) })
    assert.equal(1, #p.nodeClaims)
    assert.equal("devices", p.nodeClaims[1].nodePool)
    p = plan({ pool("default", { weight = 50 }), pool("devices"), o, pod("b") })
    assert.equal("default", p.nodeClaims[1].nodePool) -- the heavier pool, which the overlay leaves as it is
  end)

  it("a lighter overlay adds only resources no heavier one gave; one weight naming one resource conflicts", function()
    local sel = { { "node.kubernetes.io/instance-type", "In", { "small" } } }
    local p = plan({ pool("default"), pod("a", { extra = { ["example.com/a"] = "2", ["example.com/b"] = "1" } }),
      overlay("heavy", { requirements = sel, capacity = { ["example.com/a"] = "1" }, weight = 9 }),
      overlay("light", { requirements = sel, capacity = { ["example.com/a"] = "5", ["example.com/b"] = "1" },
        weight = 1 }) })
    assert.equal(0, #p.nodeClaims) -- a stays 1: the heavier overlay set it
    p = plan({ pool("default"), pod("a", { extra = { ["example.com/a"] = "1", ["example.com/b"] = "1" } }),
      overlay("x", { requirements = sel, capacity = { ["example.com/a"] = "1", ["example.com/b"] = "1" } }),
      overlay("y", { requirements = sel, capacity = { ["example.com/a"] = "1" } }) })
    assert.equal(0, #p.nodeClaims) -- y first (the later name); x conflicts on a and applies nowhere: no b
    assert.truthy(note_matching(p, "NodeOverlay x: conflicts"))
    -- an empty capacity ({}) between them is the last of that weight to touch the type: no conflict
    -- after it (Karpenter's store keeps the last overlay's resources, none), and a taken resource stays
    local function cap(name, c) return overlay(name, { requirements = sel, capacity = c, weight = 5 }) end
    p = plan({ pool("default"), pod("a", { extra = { ["example.com/a"] = "2" } }), cap("c", { ["example.com/a"] = "1" }),
      cap("b", {}), cap("a", { ["example.com/a"] = "2" }) })
    assert.is_nil(note_matching(p, "conflicts"))
    assert.equal(0, #p.nodeClaims) -- a stays 1: c set it first
  end)
end)

describe("NodeOverlay input", function()
  local function refused(spec, field, api)
    local o = { apiVersion = api or "karpenter.sh/v1alpha1", kind = "NodeOverlay", metadata = { name = "bad" },
      spec = spec }
    local p, err = dt.plan({ manifests = h.list({ pool("default"), pod("a"), o }), catalog_text = h.small_catalog })
    assert.is_nil(p, field)
    assert.matches("NodeOverlay" .. (api and "" or " bad") .. ": " .. field, err, 1, true)
    return err
  end

  it("refuses what the API server refuses, naming the field", function()
    local none = h.array()
    refused({ requirements = none, price = "1", priceAdjustment = "+1" }, "spec: cannot set both")
    refused({ requirements = none, price = "-1" }, "spec.price")
    refused({ requirements = none, price = "1." }, "spec.price")
    refused({ requirements = none, price = 1 }, "spec.price")
    refused({ requirements = none, priceAdjustment = "10%" }, "spec.priceAdjustment")
    refused({ requirements = none, priceAdjustment = "-150%" }, "spec.priceAdjustment")
    refused({ requirements = none, priceAdjustment = "-100.0%" }, "spec.priceAdjustment")
    refused({ requirements = none, capacity = { cpu = "1" } }, "spec.capacity.cpu")
    refused({ requirements = none, capacity = { ["example.com/x"] = "lots" } }, "spec.capacity.example.com/x")
    refused({ requirements = none, weight = 0 }, "spec.weight")
    refused({ requirements = none, weight = 10001 }, "spec.weight")
    refused({ price = "1" }, "spec.requirements: missing")
    refused({ requirements = h.array({ { key = "karpenter.sh/foo", operator = "Exists" } }) },
      "spec.requirements[0].key: label domain \"karpenter.sh\" is restricted")
    refused({ requirements = h.array({ { key = "kubernetes.io/hostname", operator = "In", values = h.array({ "a" }) } }) },
      "spec.requirements[0].key")
    refused({ requirements = h.array({ { key = "x", operator = "Gt", values = h.array({ "-1" }) } }) },
      "spec.requirements[0].values")
    -- what the CRD takes: values on Exists (ignored), and Gt "-0" (CEL's int("-0") is 0)
    for _, r in ipairs({ { key = "x", operator = "Exists", values = h.array({ "v" }) },
      { key = "x", operator = "Gt", values = h.array({ "-0" }) } }) do
      local o = { apiVersion = "karpenter.sh/v1alpha1", kind = "NodeOverlay", metadata = { name = "ok" },
        spec = { requirements = h.array({ r }), price = "1" } }
      assert(dt.plan({ manifests = h.list({ pool("default"), pod("a"), o }), catalog_text = h.small_catalog }))
    end
    refused({ requirements = h.array({ { key = "x", operator = "In" } }) }, "spec.requirements[0].values")
    refused({ requirements = none, prize = "1" }, "spec.prize: unknown field (did you mean price?)")
    refused({ requirements = none }, "apiVersion: karpenter.sh/v1 is no version of NodeOverlay", "karpenter.sh/v1")
  end)

  it("takes Gte and Lte, and every price form the CRD's patterns allow", function()
    for _, a in ipairs({ "+1", "-1", "+.5", "-0.25", "+10%", "+.5%", "-9%", "-99.5%", "-100%" }) do
      local o = overlay("o", { requirements = { { "karpenter.k8s.aws/instance-cpu", "Gte", { "4" } } }, adjust = a })
      assert(dt.plan({ manifests = h.list({ pool("default"), pod("a"), o }), catalog_text = h.small_catalog }), a)
    end
  end)

  it("a duplicate is refused; the daemon's store keys it without a namespace", function()
    local o = overlay("o", { requirements = {}, price = "1" })
    local p, err = dt.plan({ manifests = h.list({ pool("default"), o, o }), catalog_text = h.small_catalog })
    assert.is_nil(p)
    assert.matches("NodeOverlay o: metadata.name: duplicate object", err, 1, true)
  end)
end)
