#!/usr/bin/env lua5.4
--[[
convert-azure.lua: build providers/catalogs/azure-eastus.json from the Azure VM size list
(name, arch, vCPU, memory MiB, GPU count, on-demand price per size; see README.md here for its
sources) in the form Karpenter's Azure provider gives its instance types:

  - only the sizes it offers (pkg/providers/instancetype/instancetypes.go, isSupported): at
    least 2 vCPUs and 3.5 GiB, no constrained-vCPU sizes (E8-4ads_v7), no confidential sizes
    (DC*, EC*), none of the AKS-restricted sizes, and no GPU size missing from its supported-GPU
    list (pkg/utils/supported-gpus.yaml);
  - its labels, from the size name parsed as github.com/Azure/skewer's vmsize.go parses it:
    karpenter.azure.com/sku-{name,family,series,version,cpu,memory,gpu-count,gpu-manufacturer,
    gpu-name} and kubernetes.azure.com/sku-{cpu,memory};
  - GPUs as nvidia.com/gpu or amd.com/gpu for the sizes of the supported-GPU list, none for
    the others.

"provider": "azure" makes dovetail apply Karpenter's Azure node overhead. The size list has no
spot prices, so the offerings are on-demand in every zone of the region.

usage: lua5.4 providers/catalogs/convert-azure.lua AZURE.json > providers/catalogs/azure-eastus.json
(reads JSON with dkjson, which busted installs).
]]
local json = require "dkjson"

-- The sizes Karpenter's Azure provider refuses by name (pkg/providers/instancetype/skus.go).
local restricted = {}
for n in ([[Standard_A0 Standard_A1 Standard_A1_v2 Standard_B1s Standard_B1ms Standard_F1 Standard_F1s
  Basic_A0 Basic_A1 Basic_A2 Basic_A3 Basic_A4 Standard_E64i_v3 Standard_E64is_v3]]):gmatch("%S+") do
  restricted[n] = true
end

-- Its supported GPU sizes and their maker (pkg/utils/supported-gpus.yaml, lower case).
local gpu_maker = {}
for n in ([[standard_nc16ads_a10_v4 standard_nc32ads_a10_v4 standard_nc8ads_a10_v4 standard_nc24ads_a100_v4
  standard_nc48ads_a100_v4 standard_nc96ads_a100_v4 standard_nc16as_t4_v3 standard_nc4as_t4_v3 standard_nc64as_t4_v3
  standard_nc8as_t4_v3 standard_nc40ads_h100_v5 standard_nc80adis_h100_v5 standard_nd96asr_v4 standard_nd112asr_a100_v4
  standard_nd120asr_a100_v4 standard_nv12ads_a10_v5 standard_nv18ads_a10_v5 standard_nv36adms_a10_v5
  standard_nv36ads_a10_v5 standard_nv6ads_a10_v5 standard_nv72ads_a10_v5 standard_nc6 standard_nc12 standard_nc24
  standard_nc24r standard_nc12s_v3 standard_nc24rs_v3 standard_nc24s_v3 standard_nc6s_v3 standard_nc12s_v2
  standard_nc24rs_v2 standard_nc24s_v2 standard_nc6s_v2 standard_nd96amsr_a100_v4 standard_nd112amsr_a100_v4
  standard_nd120amsr_a100_v4 standard_nd96isr_h100_v5 standard_nd96is_h100_v5 standard_nd96is_noib_h100_v5
  standard_nd96is_flex_h100_v5 standard_nd6s standard_nd12s standard_nd24s standard_nd24rs standard_nd40rs_v2
  standard_nd40s_v3 standard_nv12 standard_nv24 standard_nv6 standard_nv24r standard_nv12s_v3 standard_nv24s_v3
  standard_nv48s_v3 standard_nv12_promo standard_nv24_promo standard_nv6_promo standard_nd96isf_h100_v5
  standard_nd96isrf_h100_v5 standard_nd96ams_v4 standard_nd96ams_a100_flex_v4 standard_nd96ams_a100_v4
  standard_nd96amsf_a100_v4 standard_nd96amsrf_a100_v4 standard_nc12_promo standard_nc24r_promo standard_nc24_promo
  standard_nc6_promo standard_nd96isr_h200_v5 standard_nd96is_h200_v5 standard_nd96isf_h200_v5 standard_nd96isrf_h200_v5
  standard_nd128isr_ndr_gb200_v6 standard_nd128isr_gb300_v6 standard_nc24lds_xl_rtxpro6000bse_v6
  standard_nc36ds_xl_rtxpro6000bse_v6 standard_nc36lds_xl_rtxpro6000bse_v6 standard_nc72ds_xl_rtxpro6000bse_v6
  standard_nc72lds_xl_rtxpro6000bse_v6 standard_nc144ds_xl_rtxpro6000bse_v6 standard_nc144lds_xl_rtxpro6000bse_v6
  standard_nc288ds_xl_rtxpro6000bse_v6 standard_nc288lds_xl_rtxpro6000bse_v6]]):gmatch("%S+") do
  gpu_maker[n] = "nvidia"
end
for n in ([[standard_nv4ads_v710_v5 standard_nv8ads_v710_v5 standard_nv12ads_v710_v5 standard_nv24ads_v710_v5
  standard_nv28adms_v710_v5 standard_nd96isr_mi300x_v5 standard_nd96is_mi300x_v5]]):gmatch("%S+") do
  gpu_maker[n] = "amd"
end

-- Sizes whose name does not carry their GPU model (skewer's acceleratorTypeBySize).
local accelerator_of = {
  NC6s_v3 = "V100", NC12s_v3 = "V100", NC24s_v3 = "V100", NC24rs_v3 = "V100", ND40rs_v2 = "V100",
  ND96asr_v4 = "A100", NV12s_v3 = "M60", NV24s_v3 = "M60", NV48s_v3 = "M60",
  NV4as_v4 = "MI25", NV8as_v4 = "MI25", NV16as_v4 = "MI25", NV32as_v4 = "MI25",
}

--[[ Size names, parsed as skewer's regular expression does (leftmost-first, greedy, with
backtracking):
  ^([A-Z])([A-Z]?)([A-Z]?)([0-9]+)-?((?:[0-9]+)?)((?:[abcdeiflmnotspPr]+|C+|NP)?)_?(?:NDR_)?
   (?:((?:xl_)?[A-Z]+[0-9]+[A-Z]*)_?)?(_cc_)?(_[0-9]+_)?(_MI300X_)?(_H100_)?((?:[vV][1-9])?)?(_Promo)?$
Each matcher takes the subject, a position, the captures so far and a continuation, and
returns what the continuation returns for the first way it matches, or nil. ]]
local function chars(class, min, max) -- class{min,max}, greedy
  return function(s, i, c, k)
    local j = i
    while (not max or j - i < max) and j <= #s and s:sub(j, j):find("^" .. class .. "$") do j = j + 1 end
    for e = j, i + min, -1 do
      local r = k(e, c)
      if r then return r end
    end
  end
end
local function lit(str)
  return function(s, i, c, k)
    if s:sub(i, i + #str - 1) == str then return k(i + #str, c) end
  end
end
local function seq(...)
  local ps = { ... }
  local function from(n, s, i, c, k)
    if n > #ps then return k(i, c) end
    return ps[n](s, i, c, function(i2, c2) return from(n + 1, s, i2, c2, k) end)
  end
  return function(s, i, c, k) return from(1, s, i, c, k) end
end
local function opt(p)
  return function(s, i, c, k) return p(s, i, c, k) or k(i, c) end
end
local function alt(...)
  local ps = { ... }
  return function(s, i, c, k)
    for _, p in ipairs(ps) do
      local r = p(s, i, c, k)
      if r then return r end
    end
  end
end
local function cap(n, p)
  return function(s, i, c, k)
    return p(s, i, c, function(i2, c2)
      local c3 = table.move(c2, 1, 13, 1, {})
      c3[n] = s:sub(i, i2 - 1)
      return k(i2, c3)
    end)
  end
end

local size_scheme = seq(
  cap(1, chars("[A-Z]", 1, 1)), cap(2, chars("[A-Z]", 0, 1)), cap(3, chars("[A-Z]", 0, 1)), cap(4, chars("[0-9]", 1)),
  chars("%-", 0, 1), cap(5, chars("[0-9]", 0)),
  cap(6, opt(alt(chars("[abcdeiflmnotspPr]", 1), chars("C", 1), lit("NP")))),
  chars("_", 0, 1), opt(lit("NDR_")),
  opt(seq(cap(7, seq(opt(lit("xl_")), chars("[A-Z]", 1), chars("[0-9]", 1), chars("[A-Z]", 0))), chars("_", 0, 1))),
  cap(8, opt(lit("_cc_"))), cap(9, opt(seq(lit("_"), chars("[0-9]", 1), lit("_")))), cap(10, opt(lit("_MI300X_"))),
  cap(11, opt(lit("_H100_"))), cap(12, opt(seq(chars("[vV]", 1, 1), chars("[1-9]", 1, 1)))), cap(13, opt(lit("_Promo"))))

-- The parts of a size ("D4pls_v6"): family, series, version (as Karpenter labels them),
-- accelerator, constrained vCPUs.
local function parse_size(size)
  local c = size_scheme(size, 1, { "", "", "", "", "", "", "", "", "", "", "", "", "" }, function(i, c)
    if i == #size + 1 then return c end
  end)
  if not c then
    if size == "M416s_8_v2" then return { family = "M", series = "Ms_v2", version = "2" } end
    return nil
  end
  local accel = c[7] ~= "" and c[7]:gsub("^xl_", "") or accelerator_of[size:gsub("_Promo$", "")]
  local version = c[12] ~= "" and c[12]:sub(2) or "1"
  return { family = c[1], series = c[1] .. c[2] .. c[3] .. c[6] .. (c[12] ~= "" and "_" .. c[12] or ""),
           version = version, accelerator = accel, constrained = c[5] ~= "" }
end

-- Numbers as the shortest text that reads back the same.
local function num(v)
  if math.type(v) == "integer" or (v == math.floor(v) and math.abs(v) < 2 ^ 53) then
    return string.format("%d", math.tointeger(v) or v)
  end
  for p = 1, 17 do
    local s = string.format("%." .. p .. "g", v)
    if tonumber(s) == v then return s end
  end
end

local function str(s) return json.encode(s) end

local function obj(pairs_)
  local out = {}
  for _, kv in ipairs(pairs_) do out[#out + 1] = str(kv[1]) .. ": " .. kv[2] end
  return "{" .. table.concat(out, ", ") .. "}"
end

local path = assert(arg[1], "usage: lua5.4 convert-azure.lua AZURE.json > azure-eastus.json")
local f = assert(io.open(path, "r"))
local src = assert(json.decode(f:read("a")), path .. ": not JSON")
f:close()

local types, seen, dropped = {}, {}, {}
local function drop(why) dropped[why] = (dropped[why] or 0) + 1 end
for _, t in ipairs(src.instanceTypes) do
  local name = t.name
  assert(not seen[name], name .. ": listed twice")
  seen[name] = true
  local size = name:gsub("^Standard_", "")
  local p = parse_size(size)
  local maker = gpu_maker[name:lower()]
  if not p then
    drop("size name not parsed")
  elseif t.cpu < 2 then
    drop("fewer than 2 vCPUs")
  elseif t.memoryMiB / 1024 < 3.5 then
    drop("less than 3.5 GiB")
  elseif p.constrained then
    drop("constrained vCPUs")
  elseif size:find("^DC") or size:find("^EC") then
    drop("confidential")
  elseif restricted[name] then
    drop("restricted by AKS or Karpenter")
  elseif t.gpu > 0 and not maker then
    drop("GPU size not supported")
  else
    local gpus = maker and t.gpu or 0
    local labels = {
      { "karpenter.azure.com/sku-name", str(name) },
      { "karpenter.azure.com/sku-family", str(p.family) },
      { "karpenter.azure.com/sku-series", str(p.series) },
      { "karpenter.azure.com/sku-version", str(p.version) },
      { "karpenter.azure.com/sku-cpu", str(num(t.cpu)) },
      { "karpenter.azure.com/sku-memory", str(num(t.memoryMiB)) },
      { "kubernetes.azure.com/sku-cpu", str(num(t.cpu)) },
      { "kubernetes.azure.com/sku-memory", str(num(t.memoryMiB)) },
      { "karpenter.azure.com/sku-gpu-count", str(num(gpus)) },
    }
    if maker then
      labels[#labels + 1] = { "karpenter.azure.com/sku-gpu-manufacturer", str(maker) }
      if p.accelerator then labels[#labels + 1] = { "karpenter.azure.com/sku-gpu-name", str(p.accelerator) } end
    end
    local fields = {
      { "name", str(name) }, { "arch", str(t.arch) }, { "cpu", num(t.cpu) }, { "memoryMiB", num(t.memoryMiB) },
    }
    if gpus > 0 and maker == "nvidia" then
      fields[#fields + 1] = { "gpu", num(gpus) }
      if p.accelerator then fields[#fields + 1] = { "gpuName", str(p.accelerator:lower()) } end
    end
    fields[#fields + 1] = { "maxPods", num(t.maxPods) }
    fields[#fields + 1] = { "onDemandPrice", num(t.onDemandPrice) }
    if gpus > 0 and maker == "amd" then fields[#fields + 1] = { "extendedResources", obj { { "amd.com/gpu", num(gpus) } } } end
    fields[#fields + 1] = { "labels", obj(labels) }
    types[#types + 1] = obj(fields)
  end
end

local zones = {}
for i, z in ipairs(src.zones) do zones[i] = str(z) end
local summary = {}
for why, n in pairs(dropped) do summary[#summary + 1] = string.format("%s: %d", why, n) end
table.sort(summary)
io.stderr:write(string.format("%d sizes kept, %d left out (%s)\n", #types, #src.instanceTypes - #types,
  table.concat(summary, "; ")))

io.write("{\n")
io.write('  "source": ', str("Azure VM sizes in " .. src.region .. " as Karpenter's Azure provider offers them, " ..
  "written by providers/catalogs/convert-azure.lua; sources in providers/catalogs/README.md"), ",\n")
io.write('  "provider": "azure",\n')
io.write('  "region": ', str(src.region), ",\n")
io.write('  "zones": [', table.concat(zones, ", "), "],\n")
io.write('  "instanceTypes": [\n    ', table.concat(types, ",\n    "), "\n  ]\n}\n")
