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
local filters = require "datacrumbs.filters"

dc.probe { layer = "syscalls" }
dc.probe { layer = "aio" }

local keep_all = false
for _, a in ipairs(arg) do
  if a == "--all" then keep_all = true
  else error("unknown option '" .. a .. "' (io_syscalls.lua knows: --all)") end
end

if not keep_all then
  dc.on_event(filters.drop_prefixes { "/proc/", "/sys/" })
end
