-- io_syscalls.lua: the file I/O system calls of the command (SYSCALL layer).
-- The SYSCALL layer: the file I/O system calls of the command and its
-- children, from the raw_syscalls tracepoints (probes/syscalls.yaml). Sees I/O that
-- bypasses libc (static binaries, raw syscall(2)) and costs far less than a uprobe.
-- With the AIO layer: each io_uring and io_submit operation, nested in the io_uring_enter
-- that submitted it when that call waited for it too.
--
-- Options (after the script name):
--   --all     keep the calls on files under /proc and /sys too (dropped by default)
local dc = require "datacrumbs"
local options = require "datacrumbs.options"
local opt = options.parse {
  name = "io_syscalls.lua",
  about = "the file I/O system calls of the command (SYSCALL layer).",
  flags = { { "all", "keep the calls on files under /proc and /sys (dropped by default)" } },
}

dc.probe { layer = "syscalls" }
dc.probe { layer = "aio" }

if not opt.all then
  dc.drop_paths { "/proc/", "/sys/" }   -- in C: no Lua runs per event
end
