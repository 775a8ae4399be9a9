-- Shared set-up for the specs: load the freshly built module and drive the CLI.
local M = {}

local build = os.getenv("DOVETAIL_BUILD") or "build/rel"
package.cpath = build .. "/?.so;" .. package.cpath

M.dt = require "dovetail"
M.bin = build .. "/dovetail"
M.fixtures = "spec/fixtures/"

-- The whole content of a file (it must exist).
function M.slurp(path)
  local f = assert(io.open(path, "rb"))
  local s = f:read("a")
  f:close()
  return s
end

-- What bash completion offers for COMP_WORDS=(words) at COMP_CWORD=cword,
-- one candidate per line.
function M.complete(words, cword)
  local script = M.write(("source docs/completion/dovetail.bash\nCOMP_WORDS=(%s)\nCOMP_CWORD=%d\n_dovetail\n" ..
    "printf '%%s\\n' \"${COMPREPLY[@]}\"\n"):format(words, cword))
  local p = assert(io.popen("bash " .. script))
  local out = p:read("a")
  p:close()
  os.remove(script)
  return out
end

-- Run the CLI; returns stdout, stderr, exit code.
function M.cli(args, stdin)
  local out, err = os.tmpname(), os.tmpname()
  local cmd = M.bin .. " " .. args .. " >" .. out .. " 2>" .. err
  if stdin then
    local inp = os.tmpname()
    local f = assert(io.open(inp, "w"))
    f:write(stdin)
    f:close()
    cmd = cmd .. " <" .. inp
  end
  local ok, _, code = os.execute(cmd)
  local stdout, stderr = M.slurp(out), M.slurp(err)
  os.remove(out)
  os.remove(err)
  return stdout, stderr, ok and 0 or code
end

-- Why a disruption pass left node `name` alone (nil when it did not).
function M.blocked(r, name)
  for _, b in ipairs(r.blocked) do
    if b.node == name then return b.reason end
  end
end

-- A fresh empty directory under the system temp dir.
function M.tmpdir()
  local dir = os.tmpname()
  os.remove(dir)
  os.execute("mkdir -p " .. dir)
  return dir
end

function M.write(text)
  local p = os.tmpname()
  local f = assert(io.open(p, "w"))
  f:write(text)
  f:close()
  return p
end

-- A NodePool manifest; opts.requirements is a list of {key, op, values}.
function M.nodepool(name, opts)
  opts = opts or {}
  local lines = {
    "apiVersion: karpenter.sh/v1",
    "kind: NodePool",
    "metadata:",
    "  name: " .. name,
    "spec:",
  }
  if opts.weight then lines[#lines + 1] = "  weight: " .. opts.weight end
  if opts.limits then
    lines[#lines + 1] = "  limits:"
    for k, v in pairs(opts.limits) do lines[#lines + 1] = "    " .. k .. ': "' .. v .. '"' end
  end
  lines[#lines + 1] = "  template:"
  if opts.labels then
    lines[#lines + 1] = "    metadata:"
    lines[#lines + 1] = "      labels:"
    for k, v in pairs(opts.labels) do lines[#lines + 1] = "        " .. k .. ': "' .. v .. '"' end
  end
  lines[#lines + 1] = "    spec:"
  lines[#lines + 1] = "      requirements:"
  local reqs = opts.requirements or { { "kubernetes.io/arch", "In", { "amd64" } } }
  if #reqs == 0 then lines[#lines] = "      requirements: []" end
  for _, r in ipairs(reqs) do
    lines[#lines + 1] = "        - key: " .. r[1]
    lines[#lines + 1] = "          operator: " .. r[2]
    if r[3] then
      local vals = {}
      for _, v in ipairs(r[3]) do vals[#vals + 1] = '"' .. v .. '"' end
      lines[#lines + 1] = "          values: [" .. table.concat(vals, ", ") .. "]"
    end
    if r.minValues then lines[#lines + 1] = "          minValues: " .. r.minValues end
  end
  if opts.taints then
    lines[#lines + 1] = "      taints:"
    for _, t in ipairs(opts.taints) do
      lines[#lines + 1] = "        - key: " .. t[1]
      if t[2] then lines[#lines + 1] = '          value: "' .. t[2] .. '"' end
      lines[#lines + 1] = "          effect: " .. t[3]
    end
  end
  return table.concat(lines, "\n") .. "\n"
end

-- A Pod manifest. opts: cpu, memory, namespace, labels, nodeSelector, tolerations (raw yaml), extra (raw spec yaml)
function M.pod(name, opts)
  opts = opts or {}
  local lines = {
    "apiVersion: v1",
    "kind: Pod",
    "metadata:",
    "  name: " .. name,
    "  namespace: " .. (opts.namespace or "default"),
  }
  if opts.labels then
    lines[#lines + 1] = "  labels:"
    local keys = {}
    for k in pairs(opts.labels) do keys[#keys + 1] = k end
    table.sort(keys)
    for _, k in ipairs(keys) do lines[#lines + 1] = "    " .. k .. ': "' .. opts.labels[k] .. '"' end
  end
  lines[#lines + 1] = "spec:"
  if opts.nodeSelector then
    lines[#lines + 1] = "  nodeSelector:"
    for k, v in pairs(opts.nodeSelector) do lines[#lines + 1] = "    " .. k .. ': "' .. v .. '"' end
  end
  if opts.extra then lines[#lines + 1] = opts.extra end
  lines[#lines + 1] = "  containers:"
  lines[#lines + 1] = "    - name: main"
  lines[#lines + 1] = "      image: busybox"
  lines[#lines + 1] = "      resources:"
  lines[#lines + 1] = "        requests:"
  lines[#lines + 1] = '          cpu: "' .. (opts.cpu or "1") .. '"'
  lines[#lines + 1] = '          memory: "' .. (opts.memory or "1Gi") .. '"'
  return table.concat(lines, "\n") .. "\n"
end

function M.docs(...)
  return table.concat({ ... }, "---\n")
end

-- How many pods a plan's claims hold, asserting none is on two claims.
function M.claimed_once(plan)
  local seen, n = {}, 0
  for _, c in ipairs(plan.nodeClaims) do
    for _, name in ipairs(c.pods) do
      if seen[name] then error(name .. " is on two claims", 2) end
      seen[name] = true
      n = n + 1
    end
  end
  return n
end

-- Plan through the Lua module; raises with the engine's message on failure.
function M.plan(manifests, extra)
  local args = { manifests = manifests }
  for k, v in pairs(extra or {}) do args[k] = v end
  local plan, err = M.dt.plan(args)
  assert(plan, err)
  return plan
end

-- A small catalog for precise specs.
M.small_catalog = [[
{ "region": "test-1", "provider": "generic", "zones": ["test-1a", "test-1b"],
  "instanceTypes": [
    { "name": "small", "family": "t", "arch": "amd64", "cpu": 2, "memoryMiB": 4096, "maxPods": 10,
      "onDemandPrice": 0.10, "spotPrice": 0.04, "overhead": { "cpu": "100m", "memory": "100Mi" } },
    { "name": "medium", "family": "t", "arch": "amd64", "cpu": 4, "memoryMiB": 8192, "maxPods": 20,
      "onDemandPrice": 0.20, "spotPrice": 0.07, "overhead": { "cpu": "100m", "memory": "100Mi" } },
    { "name": "large", "family": "t", "arch": "amd64", "cpu": 8, "memoryMiB": 16384, "maxPods": 40,
      "onDemandPrice": 0.40, "spotPrice": 0.15, "overhead": { "cpu": "100m", "memory": "100Mi" } },
    { "name": "arm", "family": "g", "arch": "arm64", "cpu": 4, "memoryMiB": 8192, "maxPods": 20,
      "onDemandPrice": 0.15, "overhead": { "cpu": "100m", "memory": "100Mi" } }
  ] }
]]

-- A small JSON encoder (object keys sorted) for building manifests as tables.
-- Tables with a sequence part, or marked by M.array, are arrays.
local array_mt = {}
function M.array(t) return setmetatable(t or {}, array_mt) end

function M.json(v)
  local t = type(v)
  if t == "table" then
    if getmetatable(v) == array_mt or #v > 0 then
      local parts = {}
      for i = 1, #v do parts[i] = M.json(v[i]) end
      return "[" .. table.concat(parts, ",") .. "]"
    end
    local keys = {}
    for k in pairs(v) do keys[#keys + 1] = k end
    table.sort(keys)
    local parts = {}
    for i, k in ipairs(keys) do parts[i] = string.format("%q", k) .. ":" .. M.json(v[k]) end
    return "{" .. table.concat(parts, ",") .. "}"
  elseif t == "string" then
    return '"' .. v:gsub('[%c"\\]', function(c) return string.format("\\u%04x", c:byte()) end) .. '"'
  elseif t == "number" then
    return math.type(v) == "integer" and tostring(v) or string.format("%.17g", v)
  end
  return tostring(v)
end

-- A JSON kind: List of objects (tables).
function M.list(items)
  return M.json({ apiVersion = "v1", kind = "List", items = M.array(items) })
end

return M
