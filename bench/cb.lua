-- cb.lua: nocb.lua plus io_posix.lua's per-event Lua callback (drop /proc and /sys paths),
-- so the throughput runs pay the Lua path without attaching the whole POSIX layer (whose
-- attach and detach take ~20 s on this VM).
local dc = require "datacrumbs"
local filters = require "datacrumbs.filters"
dc.probe { layer = "posix", functions = { "write", "pread" } }
dc.on_event(filters.drop_prefixes { "/proc/", "/sys/" })
