-- The Lua 5.4 module of dovetail, built from this tree by its Makefile
-- against the Lua LuaRocks was configured for:
--   luarocks --lua-version=5.4 make            (in a checkout)
--   luarocks --lua-version=5.4 make --tree DIR (into a tree of its own)
-- The engine is linked into dovetail.so, which needs libcjson and libyaml
-- at run time and nothing else of dovetail.
rockspec_format = "3.0"
package = "dovetail"
version = "0.1.0-1"

source = {
   -- a release tarball, made with
   --   git archive --prefix=dovetail-0.1.0/ -o dovetail-0.1.0.tar.gz HEAD
   url = "dovetail-0.1.0.tar.gz",
   dir = "dovetail-0.1.0",
}

description = {
   summary = "Capacity engine for Kubernetes-style clusters and VM pools",
   detailed = [[
Given pending pods, NodePools and an instance catalog, dovetail decides
which nodes to launch (instance type, zone, on-demand, spot or reserved)
and which to delete or replace, with Karpenter's scheduling semantics; it
also converges KubeVirt VirtualMachinePools. require "dovetail" gives
plan, disrupt, pool and the quantity and requirement helpers.
]],
   labels = { "kubernetes", "scheduling", "capacity" },
}

dependencies = {
   "lua >= 5.4, < 5.5",
}

external_dependencies = {
   CJSON = { header = "cjson/cJSON.h" },
   YAML = { header = "yaml.h" },
}

build = {
   type = "make",
   -- objects of its own, apart from the tree's build/rel
   build_target = "lua-module",
   build_variables = {
      BUILD = "build/rock",
      CFLAGS = "$(CFLAGS)",
      LUA_INCDIR = "$(LUA_INCDIR)",
      CPPFLAGS = "-I$(CJSON_INCDIR) -I$(YAML_INCDIR)",
   },
   install_target = "install-lua",
   install_variables = {
      BUILD = "build/rock",
      LUA_CMOD_DIR = "$(LIBDIR)",
   },
}
