-- The examples in examples/ run as documented.
local h = require "helper"

local build = os.getenv("DOVETAIL_BUILD") or "build/rel"

local function run(cmd)
  local p = io.popen(cmd .. " 2>&1")
  local out = p:read("a")
  local ok = p:close()
  return out, ok
end

describe("examples", function()
  it("embeds dovetail from stock Lua", function()
    local out, ok = run("LUA_CPATH='" .. build .. "/?.so;;' lua5.4 examples/embed.lua")
    assert.is_true(ok, out)
    assert.matches("16 pods, 1 new node,", out, 1, true)
  end)

  it("embeds libdovetail from C", function()
    local out, ok = run(build .. "/embed examples/quickstart.yaml")
    assert.is_true(ok, out)
    assert.matches("16 pods: 16 scheduled on 1 new node for", out, 1, true)
    -- the claim as dt_plan_claim gives it, the same as the plan's JSON says
    local plan = assert(require("dovetail").plan { files = { "examples/quickstart.yaml" } })
    local c = plan.nodeClaims[1]
    assert.matches(("claim %s: %s in %s (%s, $%s/hour) for 16 pods of NodePool %s\n"):format(c.name, c.instanceType,
      c.zone, c.capacityType, c.price, c.nodePool), out, 1, true)
    assert.matches("kind: NodeClaim", out, 1, true)
  end)

  it("prices and sizes with examples/overlay.yaml's NodeOverlays as the README shows", function()
    local out, err, code = h.cli("plan -o table examples/overlay.yaml")
    assert.are.equal(0, code, err)
    assert.matches("m7i.xlarge%s+us%-east%-1a%s+on%-demand%s+0.14112", out)
    assert.matches("8 of 8 pending pods scheduled", out, 1, true)
    local plan = assert(require("dovetail").plan { files = { "examples/overlay.yaml" } })
    for _, c in ipairs(plan.nodeClaims) do
      for _, pod in ipairs(c.pods) do
        if pod:find("^shop/db%-") then assert.matches("^r", c.instanceType) end
      end
    end
  end)

  it("runs the newcomer policy as docs/policies.md shows", function()
    local out, err, code = h.cli("plan -o table --policy examples/policies/prefer-amd64.lua examples/mixed-arch.yaml")
    assert.are.equal(0, code, err)
    assert.matches("c6a.2xlarge", out, 1, true)
    local plain = h.cli("plan -o table examples/mixed-arch.yaml")
    assert.matches("c6g.2xlarge", plain, 1, true)
  end)

  it("plans the quickstart manifests through the CLI as the README shows", function()
    local out, _, code = h.cli("plan -o table examples/quickstart.yaml")
    assert.are.equal(0, code)
    assert.matches("m6i.4xlarge", out, 1, true)
  end)
  it("disrupts the example cluster as the README shows", function()
    local out, _, code = h.cli("disrupt -o table --now 2026-11-23T00:00:00Z examples/disrupt.yaml")
    assert.are.equal(0, code)
    assert.matches("Empty%s+delete%s+e", out)
    assert.matches("Underutilized%s+delete%s+a b c", out)
    assert.matches("left alone    held: do%-not%-disrupt", out)
    assert.matches("left alone    guarded: PDB", out)
    local ex = h.cli("disrupt -o table --now 2026-11-23T12:00:00Z --explain a examples/disrupt.yaml")
    assert.matches("explain: Underutilized: deleted", ex, 1, true)
  end)

  it("keeps a Deployment's headroom as examples/headroom.yaml says, and holds it on the claims it launched",
    function()
      local out, _, code = h.cli("plan -o json --now 2026-11-23T00:00:00Z examples/headroom.yaml")
      assert.are.equal(0, code)
      assert.matches('"shop/web-7", "shop/capacity-buffer-web-headroom-1", "shop/capacity-buffer-web-headroom-2"',
        out, 1, true)
      local claims = h.cli("plan -o yaml --now 2026-11-23T00:00:00Z examples/headroom.yaml")
      assert.is_nil(claims:find("capacity-buffer", 1, true), "no claim nominates a chunk")
      local again = h.cli("plan -o table --now 2026-11-23T00:00:00Z examples/headroom.yaml " .. h.write(claims))
      assert.matches("0 new nodes, $0/hour; 2 of 2 pending pods scheduled (0 on existing nodes, 2 on claims in " ..
        "flight)", again, 1, true)
    end)

  it("feeds a plan's NodeClaims back as the README's outputs-are-inputs shows", function()
    local claims = h.write((h.cli("plan -o yaml examples/quickstart.yaml")))
    local again = h.cli("plan -o table examples/quickstart.yaml " .. claims)
    assert.matches("0 new nodes, $0/hour; 0 of 0 pending pods scheduled", again, 1, true)
    local more = h.cli("plan -o table examples/quickstart.yaml examples/mixed-arch.yaml " .. claims)
    assert.matches("6 of 6 pending pods scheduled (0 on existing nodes, 2 on claims in flight)", more, 1, true)
    os.remove(claims)
  end)
end)
