-- dovetail as its users install it: the Debian packages (built by `make deb`,
-- unpacked into a scratch root, never installed on this machine) and the
-- LuaRocks rockspec (built into a tree of its own).
local h = require "helper"

-- A shell command without the sanitizer preload of `make test SANITIZE=1`
-- and without the flags of the make that runs the specs: dpkg-buildpackage,
-- the compiler and the packaged programs are built without sanitizers.
-- Returns the output (stdout and stderr) and the exit code.
-- (make exports a variable set on its command line, so SANITIZE=1 is in the
-- environment too.)
local CLEAN_ENV = "env -u LD_PRELOAD -u ASAN_OPTIONS -u UBSAN_OPTIONS -u MAKEFLAGS -u MFLAGS -u MAKELEVEL " ..
  "-u SANITIZE -u DOVETAIL_BUILD -u LUA_PATH_5_4 -u LUA_CPATH_5_4 "

local function q(s) return "'" .. s:gsub("'", "'\\''") .. "'" end

local function run(cmd)
  local p = assert(io.popen(CLEAN_ENV .. "sh -c " .. q(cmd) .. " 2>&1"))
  local out = p:read("a")
  local _, _, code = p:close()
  return out, code
end

local function have(cmd) return select(2, run("command -v " .. cmd)) == 0 end


local function exists(path) return select(2, run("test -e " .. q(path) .. " || test -L " .. q(path))) == 0 end

-- What `dovetail --version` of this tree prints: the version every package
-- and the rockspec must carry.
local VERSION = h.cli("--version"):match("^dovetail (%S+)\n$")

describe("Debian packages", function()
  local skip, root, multiarch, libdir, debs = nil, nil, nil, nil, {}

  setup(function()
    for _, tool in ipairs({ "dpkg-buildpackage", "dh", "dpkg-deb" }) do
      if not have(tool) then
        skip = tool .. " is not installed (make deps installs debhelper and dpkg-dev)"
        return
      end
    end
    local out, code = run("make --no-print-directory deb")
    assert(code == 0, "make deb failed:\n" .. out)
    root = h.tmpdir()
    local list = run("ls build/deb/*.deb")
    for deb in list:gmatch("[^\n]+") do
      debs[assert(run("dpkg-deb -f " .. deb .. " Package"):match("^(%S+)"))] = deb
      local xout, xcode = run("dpkg -x " .. deb .. " " .. root)
      assert(xcode == 0, xout)
    end
    multiarch = run("dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch"):match("^(%S+)")
    libdir = root .. "/usr/lib/" .. multiarch
  end)

  teardown(function()
    if root then os.execute("rm -rf " .. q(root)) end
  end)

  local function need()
    if skip then pending(skip) end
    return not skip
  end

  it("are the four packages, at the version dovetail --version prints", function()
    if not need() then return end
    assert.is_string(VERSION)
    for _, name in ipairs({ "dovetail", "libdovetail0", "libdovetail-dev", "lua-dovetail" }) do
      assert.is_string(debs[name], name .. " was built")
      assert.are.equal(VERSION .. "\n", (run("dpkg-deb -f " .. debs[name] .. " Version")))
    end
    assert.are.equal("dovetail " .. VERSION .. "\n", (run(root .. "/usr/bin/dovetail --version")))
  end)

  it("split the files as Debian's library packaging does", function()
    if not need() then return end
    local function files(name)
      local out = {}
      for path in run("dpkg-deb -c " .. debs[name]):gmatch("%s%./(%S+)[^\n]*\n") do
        if not path:match("/$") and not path:match("^usr/share/doc/") then out[#out + 1] = path end
      end
      table.sort(out)
      return out
    end
    local lib = "usr/lib/" .. multiarch .. "/"
    assert.same({ lib .. "libdovetail.so.0", lib .. "libdovetail.so." .. VERSION }, files("libdovetail0"))
    assert.same({ "usr/include/dovetail.h", lib .. "libdovetail.a", lib .. "libdovetail.so",
      lib .. "pkgconfig/dovetail.pc" }, files("libdovetail-dev"))
    assert.same({ lib .. "lua/5.4/dovetail.so" }, files("lua-dovetail"))
    local cmd = {}
    for _, p in ipairs(files("dovetail")) do cmd[p] = true end
    for _, want in ipairs({ "usr/bin/dovetail", "usr/share/man/man1/dovetail.1.gz", "etc/dovetail/config.yaml",
      "usr/share/bash-completion/completions/dovetail", "usr/share/zsh/vendor-completions/_dovetail",
      "usr/share/dovetail/policies/default.lua", "usr/share/dovetail/catalogs/aws-us-east-1.json" }) do
      assert.is_true(cmd[want], want)
    end
    assert.is_true(cmd["lib/systemd/system/dovetail.service"] or cmd["usr/lib/systemd/system/dovetail.service"],
      "dovetail.service is in the dovetail package")
    -- the soname, and the links the linker and the loader follow
    assert.matches("SONAME%)%s+Library soname: %[libdovetail%.so%.0%]",
      run("readelf -d " .. libdir .. "/libdovetail.so." .. VERSION))
    assert.are.equal("libdovetail.so." .. VERSION .. "\n", (run("readlink " .. libdir .. "/libdovetail.so.0")))
    assert.are.equal("libdovetail.so.0\n", (run("readlink " .. libdir .. "/libdovetail.so")))
  end)

  it("the installed command plans the quick start", function()
    if not need() then return end
    local out, code = run("LD_LIBRARY_PATH=" .. libdir .. " " .. root ..
      "/usr/bin/dovetail plan -o table --now 2026-11-23T12:00:00Z examples/quickstart.yaml")
    assert.are.equal(0, code, out)
    assert.matches("16 of 16 pending pods scheduled", out, 1, true)
    assert.are.equal(h.cli("plan -o table --now 2026-11-23T12:00:00Z examples/quickstart.yaml"), out)
  end)

  it("the Lua module is where Debian's lua5.4 looks, and loads from there", function()
    if not need() then return end
    if not have("lua5.4") then return pending("lua5.4 is not installed") end
    -- one of lua5.4's own cpath templates names the installed file
    local cpath = run("lua5.4 -e 'io.write(package.cpath)'")
    local found
    for template in cpath:gmatch("[^;]+") do
      local path = template:gsub("%?", "dovetail")
      if path:sub(1, 1) == "/" and exists(root .. path) then found = path end
    end
    assert.are.equal("/usr/lib/" .. multiarch .. "/lua/5.4/dovetail.so", found)
    local script = h.write(([[
package.cpath = %q
local dt = require "dovetail"
local plan = assert(dt.plan { files = { "examples/quickstart.yaml" }, now = "2026-11-23T12:00:00Z" })
print(package.searchpath("dovetail", package.cpath), dt.version, plan.summary.nodes, plan.summary.scheduled)
]]):format(root .. "/usr/lib/" .. multiarch .. "/lua/5.4/?.so"))
    local out, code = run("lua5.4 " .. script)
    os.remove(script)
    assert.are.equal(0, code, out)
    assert.are.equal(table.concat({ root .. found, VERSION, "1", "16" }, "\t") .. "\n", out)
  end)

  describe("a C program built with pkg-config against the packages", function()
    local pcdir, bin
    local function pkgconfig(args)
      local out, code = run("PKG_CONFIG_PATH=" .. pcdir .. " pkg-config " .. args .. " dovetail")
      assert.are.equal(0, code, out)
      return (out:gsub("%s+$", ""))
    end
    before_each(function()
      if skip then return end
      -- the packaged dovetail.pc with its prefix moved into the scratch root
      pcdir, bin = h.tmpdir(), h.tmpdir()
      local out, code = run("sed 's|^prefix=.*|prefix=" .. root .. "/usr|' " .. libdir .. "/pkgconfig/dovetail.pc > " ..
        pcdir .. "/dovetail.pc")
      assert.are.equal(0, code, out)
    end)
    after_each(function()
      if pcdir then os.execute("rm -rf " .. q(pcdir) .. " " .. q(bin)) end
    end)

    it("links the shared library", function()
      if not need() then return end
      local cflags = pkgconfig("--cflags")
      assert.are.equal("-I" .. root .. "/usr/include", cflags:match("^%S+"), cflags)
      local out, code = run("cc -Wall -Wextra -Werror examples/embed.c -o " .. bin .. "/embed " .. pkgconfig("--cflags --libs"))
      assert.are.equal(0, code, out)
      assert.matches("NEEDED%)%s+Shared library: %[libdovetail%.so%.0%]", run("readelf -d " .. bin .. "/embed"))
      out, code = run("LD_LIBRARY_PATH=" .. libdir .. " " .. bin .. "/embed examples/quickstart.yaml")
      assert.are.equal(0, code, out)
      assert.matches("^16 pods: 16 scheduled on 1 new node for %$[%d.]+/hour, 0 unschedulable\n", out)
      -- the library it ran with is the packaged one
      assert.matches(libdir .. "/libdovetail.so.0 ", run("LD_LIBRARY_PATH=" .. libdir .. " ldd " .. bin .. "/embed"), 1, true)
    end)

    it("links libdovetail.a with what pkg-config --static adds", function()
      if not need() then return end
      local libs = pkgconfig("--static --libs")
      for _, lib in ipairs({ "-llua5.4", "-lcjson", "-lyaml", "-lm" }) do
        assert.truthy((" " .. libs .. " "):find(" " .. lib .. " ", 1, true), lib .. " in " .. libs)
      end
      -- the static archive in place of the shared library; the rest as pkg-config says
      local flags = pkgconfig("--static --cflags --libs"):gsub("%-ldovetail", "-l:libdovetail.a")
      local out, code = run("cc -Wall -Wextra -Werror examples/embed.c -o " .. bin .. "/embed " .. flags)
      assert.are.equal(0, code, out)
      assert.is_nil(run("readelf -d " .. bin .. "/embed"):match("libdovetail"))
      out, code = run(bin .. "/embed examples/quickstart.yaml")
      assert.are.equal(0, code, out)
      assert.matches("^16 pods: 16 scheduled on 1 new node for %$[%d.]+/hour, 0 unschedulable\n", out)
    end)
  end)

  describe("the service", function()
    local unit
    before_each(function()
      if skip then return end
      local path = exists(root .. "/lib/systemd/system/dovetail.service") and root .. "/lib/systemd/system/dovetail.service"
        or root .. "/usr/lib/systemd/system/dovetail.service"
      unit = h.slurp(path)
    end)

    it("runs dovetail serve as its own user, with its state under /var/lib/dovetail, hardened", function()
      if not need() then return end
      local function has(line) assert.truthy(unit:find("\n" .. line .. "\n", 1, true), line) end
      has("ExecStart=/usr/bin/dovetail serve --config /etc/dovetail/config.yaml --state /var/lib/dovetail/state.json")
      has("ExecReload=/bin/kill -HUP $MAINPID")
      for _, line in ipairs({ "User=dovetail", "StateDirectory=dovetail", "NoNewPrivileges=yes", "ProtectSystem=strict",
        "ProtectHome=yes", "PrivateTmp=yes", "PrivateDevices=yes", "ProtectKernelTunables=yes",
        "ProtectKernelModules=yes", "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX", "MemoryDenyWriteExecute=yes",
        "SystemCallFilter=@system-service", "CapabilityBoundingSet=", "WantedBy=multi-user.target" }) do
        has(line)
      end
      -- the user is made when the package is configured, before the service may start
      local postinst = run("dpkg-deb -I " .. debs.dovetail .. " postinst")
      local user = postinst:find("adduser --quiet --system --group", 1, true)
      assert.truthy(user, postinst)
      assert.truthy(user < assert(postinst:find("#DEBHELPER#", 1, true) or postinst:find("deb-systemd", 1, true)))
      assert.are.equal("/etc/dovetail/config.yaml\n", (run("dpkg-deb -I " .. debs.dovetail .. " conffiles")))
    end)

    it("passes systemd-analyze verify", function()
      if not need() then return end
      if not have("systemd-analyze") then return pending("systemd-analyze is not installed") end
      -- the unit as installed, its command pointed into the scratch root and
      -- its man page found there (Documentation=man:dovetail(1))
      local dir = h.tmpdir()
      local f = assert(io.open(dir .. "/dovetail.service", "w"))
      f:write((unit:gsub("/usr/bin/dovetail", root .. "/usr/bin/dovetail")))
      f:close()
      local out, code = run("MANPATH=" .. root .. "/usr/share/man systemd-analyze verify " .. dir .. "/dovetail.service")
      os.execute("rm -rf " .. q(dir))
      assert.are.equal(0, code, out)
      assert.are.equal("", out) -- not even a warning (an unknown key is only a warning)
    end)

    it("starts with the shipped config and reloads it on SIGHUP", function()
      if not need() then return end
      local dir = h.tmpdir()
      local config = root .. "/etc/dovetail/config.yaml"
      -- the service's command line, with a free port and a scratch state file
      local script = ([[
%s/usr/bin/dovetail serve --config %s --state %s/state.json --listen 127.0.0.1:0 2>%s/log &
pid=$!
wait_for() { i=0; while ! grep -q "$1" %s/log; do i=$((i+1)); [ $i -gt 300 ] && return 1; sleep 0.05; done; }
wait_for '"listening"' || { kill $pid; exit 3; }
kill -HUP $pid
wait_for 'reloaded' || { kill $pid; exit 4; }
kill -TERM $pid
wait $pid
]]):format(root, config, dir, dir, dir)
      local out, code = run(script)
      local log = h.slurp(dir .. "/log")
      os.execute("rm -rf " .. q(dir))
      assert.are.equal(0, code, out .. log)
      assert.matches('"event":"config","msg":"' .. config .. ' reloaded"', log, 1, true)
      assert.matches('"event":"stopped"', log, 1, true)
      assert.is_nil(log:match('"level":"error"'), log)
      -- options that need a restart are quiet when the values in force stay as
      -- they are: the command line's --listen still overrides the file's
      local warned = {}
      for opt in log:gmatch('"msg":"(%-%-[%w-]+): needs a restart to change; ignored"') do warned[#warned + 1] = opt end
      assert.same({}, warned)
    end)
  end)
end)

describe("the rockspec", function()
  it("is named for the version dovetail --version prints", function()
    assert.is_string(VERSION)
    local spec = h.slurp("dovetail-" .. VERSION .. "-1.rockspec")
    assert.matches('\nversion = "' .. VERSION:gsub("%p", "%%%0") .. '%-1"\n', spec)
    assert.matches('\n   type = "make",\n', spec, 1, true)
  end)

  it("builds the module with luarocks make, and require finds it in the rock tree", function()
    if not have("luarocks") then return pending("luarocks is not installed (make deps installs it)") end
    if not have("lua5.4") then return pending("lua5.4 is not installed") end
    local tree = h.tmpdir()
    local rockspec = "dovetail-" .. VERSION .. "-1.rockspec"
    local out, code = run("luarocks --lua-version=5.4 make --tree " .. tree .. " " .. rockspec)
    assert.are.equal(0, code, out)
    local script = h.write([[
local dt = require "dovetail"
local plan = assert(dt.plan { files = { "examples/quickstart.yaml" }, now = "2026-11-23T12:00:00Z" })
print(package.searchpath("dovetail", package.cpath), dt.version, plan.summary.nodes, plan.summary.scheduled)
]])
    -- the tree's paths as LuaRocks gives them, and nothing of the checkout
    out, code = run("eval \"$(luarocks --lua-version=5.4 --tree " .. tree .. " path)\" && lua5.4 " .. script)
    os.remove(script)
    os.execute("rm -rf " .. q(tree))
    assert.are.equal(0, code, out)
    assert.are.equal(table.concat({ tree .. "/lib/lua/5.4/dovetail.so", VERSION, "1", "16" }, "\t") .. "\n", out)
  end)
end)
