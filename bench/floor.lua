-- floor.lua: the benchmark's floor of datacrumbs' syscall mechanism: dc_sys_enter and
-- dc_sys_exit attached to the raw_syscalls tracepoints (every system call of every
-- process runs them, as under io_posix.lua), tracing one call IOR never makes
-- (sync_file_range(2)): what each system call pays before any work of ours.
local dc = require "datacrumbs"
dc.probe { layer = "syscalls", functions = { "sys_sync_file_range" } }
