-- io_kernel.lua: what the kernel did for the command's I/O: syscalls, page cache, block.
-- What the kernel did for the command's I/O: syscalls, page cache
-- (misses, lookups, evictions), block requests and async I/O operations (io_uring,
-- io_submit), nested by thread.
--
-- Options (after the script name):
--   --all     keep the calls on files under /proc and /sys too (dropped by default)
local dc = require "datacrumbs"
local filters = require "datacrumbs.filters"

dc.probe "syscalls"
dc.probe "aio"
dc.probe "pagecache"
dc.probe "block"

local keep_all = false
for _, a in ipairs(arg) do
  if a == "--all" then keep_all = true
  else error("unknown option '" .. a .. "' (io_kernel.lua knows: --all)") end
end
if not keep_all then
  dc.on_event(filters.drop_prefixes { "/proc/", "/sys/" })
end
