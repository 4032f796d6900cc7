-- sys.lua: the benchmark's datacrumbs script for the SYSCALL layer, without a Lua callback:
-- write(2) and pread64(2) seen at the raw_syscalls tracepoints (tp_btf programs, the
-- "syscalls" layer of probes/syscalls.yaml), the peer of nocb.lua's uprobes on libc's
-- write and pread. Events go from the ring buffer to the trace file straight from C.
-- run.sh warns when a variant wrote fewer events than the loop made calls.
local dc = require "datacrumbs"
dc.probe { layer = "syscalls", functions = { "sys_write", "sys_pread64" } }
