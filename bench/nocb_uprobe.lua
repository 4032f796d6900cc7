-- nocb_uprobe.lua: nocb.lua the old way: the POSIX layer's write and pread as uprobes on
-- libc's functions (session uprobes: one program run at entry, one at return) instead of
-- the raw_syscalls tracepoints, so that the uprobe cost stays measured beside bpftrace's
-- uprobe + uretprobe pair. No Lua callback.
local dc = require "datacrumbs"
dc.probe { layer = "posix", functions = { "write", "pread" }, mechanism = "uprobe" }
