-- luacheck configuration: Lua 5.4 everywhere, busted globals in specs, and a
-- `policy` std for policy files that mirrors dovetail's sandbox, so an editor
-- flags io.open, os.time, require or an unknown dovetail.* call.
std = "lua54"
max_line_length = 140
exclude_files = { "build/" }

stds.policy = {
  read_globals = {
    "assert", "error", "getmetatable", "ipairs", "load", "next", "pairs", "pcall", "rawequal", "rawget",
    "rawlen", "rawset", "select", "setmetatable", "tonumber", "tostring", "type", "xpcall", "_VERSION",
    string = { fields = { "byte", "char", "find", "format", "gmatch", "gsub", "len", "lower", "match", "rep",
                          "reverse", "sub", "upper", "pack", "packsize", "unpack" } },
    table = { fields = { "concat", "insert", "move", "pack", "remove", "sort", "unpack" } },
    math = { fields = { "abs", "ceil", "cos", "deg", "exp", "floor", "fmod", "huge", "log", "max", "maxinteger",
                        "min", "mininteger", "modf", "pi", "rad", "random", "randomseed", "sin", "sqrt", "tan",
                        "tointeger", "type", "ult" } },
    utf8 = { fields = { "char", "charpattern", "codepoint", "codes", "len", "offset" } },
    dovetail = { fields = { "now", "log", "milli" } },
  },
}

files["policies/"] = { std = "policy" }
files["examples/policies/"] = { std = "policy" }
files["spec/"] = { std = "+busted" }
