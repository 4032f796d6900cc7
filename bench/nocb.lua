-- nocb.lua: the benchmark's datacrumbs script without a Lua callback: write and pread
-- events go from the ring buffer to the trace file straight from C.
local dc = require "datacrumbs"
dc.probe { layer = "posix", functions = { "write", "pread" } }
