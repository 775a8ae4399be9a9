-- The shared library exports its public API and nothing else.
local h = require "helper"

describe("libdovetail.so", function()
  it("exports only the public dt_ API (internal dt__ symbols are hidden)", function()
    local lib = (os.getenv("DOVETAIL_BUILD") or "build/rel") .. "/libdovetail.so"
    local p = assert(io.popen("nm -D --defined-only " .. lib .. " 2>&1"))
    local names, bad = 0, {}
    for line in p:lines() do
      local sym = line:match("%S+%s+%S+%s+(%S+)$")
      if sym then
        names = names + 1
        if not sym:match("^dt_%l") then bad[#bad + 1] = sym end
      end
    end
    p:close()
    assert.is_true(names > 30, "the public API is there")
    assert.same({}, bad)
    assert.is_truthy(h.dt.milli, "and the Lua module still loads")
  end)
end)

describe("the Lua module's options", function()
  it("refuse a key they do not know, naming it, instead of planning nothing", function()
    local plan, err = h.dt.plan { file = { "examples/quickstart.yaml" } }
    assert.is_nil(plan)
    assert.matches("unknown option file (dovetail.plan takes manifests, files,", err, 1, true)
    local pools, perr = h.dt.pool { files = { "examples/vm-pool.yaml" }, packing = "ffd" }
    assert.is_nil(pools)
    assert.matches("unknown option packing (dovetail.pool takes", perr, 1, true)
  end)
end)

describe("shell completion", function()
  it("completes commands, options and their values in bash", function()
    assert.matches("plan\n", h.complete("dovetail pl", 1), 1, true)
    local fmts = h.complete("dovetail plan -o ''", 3)
    assert.matches("json\nyaml\ntable", fmts, 1, true)
    assert.matches("--spot-to-spot", h.complete("dovetail disrupt --sp", 2), 1, true)
  end)

  it("completes simulate and its options from its own --help", function()
    assert.matches("simulate\n", h.complete("dovetail si", 1), 1, true)
    local bin = h.bin:match("^(.*)/[^/]+$")
    local script = h.write(("PATH=%s:$PATH\nsource docs/completion/dovetail.bash\nCOMP_WORDS=(dovetail simulate --tr)\n" ..
      "COMP_CWORD=2\n_dovetail\nprintf '%%s\\n' \"${COMPREPLY[@]}\"\n"):format(bin))
    local p = assert(io.popen("bash " .. script))
    local out = p:read("a")
    p:close()
    os.remove(script)
    assert.matches("--trace\n", out, 1, true)
    assert.matches("--trace-limit\n", out, 1, true)
  end)
end)
