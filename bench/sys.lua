-- sys.lua: the benchmark's datacrumbs script for the SYSCALL layer, without a Lua callback:
-- write(2) and pread64(2) seen at the raw_syscalls tracepoints (tp_btf programs, the
-- "syscalls" layer of probes/syscalls.yaml), the peer of nocb.lua's uprobes on libc's
-- write and pread. Events go from the ring buffer to the trace file straight from C.
--
-- "sys_open" first is a workaround, not part of the measurement: the syscall layer takes
-- an attach cookie of 0 for "not traced" (bpf/syscall.bpf.c), and the first probe of the
-- table (index 0) gets cookie 0 unless it has a path argument (core/attach.c, cookie_of),
-- so with { "sys_write", "sys_pread64" } no write is ever recorded. sys_open (index 0,
-- path argument) is never called by glibc on x86-64 (it uses openat), so it adds no event
-- and the loop's calls cost the same. Drop it once the cookie no longer means both.
-- run.sh warns when a variant wrote fewer events than the loop made calls.
local dc = require "datacrumbs"
dc.probe { layer = "syscalls", functions = { "sys_open", "sys_write", "sys_pread64" } }
