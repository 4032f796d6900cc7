-- io_kernel.lua: what the kernel did for the command's I/O: syscalls, page cache, block.
-- What the kernel did for the command's I/O: syscalls, page cache
-- (misses, lookups, evictions), block requests and async I/O operations (io_uring,
-- io_submit), nested by thread.
--
-- Options (after the script name):
--   --all     keep the calls on files under /proc and /sys too (dropped by default)
local dc = require "datacrumbs"
local options = require "datacrumbs.options"
local opt = options.parse {
  name = "io_kernel.lua",
  about = "what the kernel did for the command's I/O: syscalls, page cache, block.",
  flags = { { "all", "keep the calls on files under /proc and /sys (dropped by default)" } },
}

dc.probe "syscalls"
dc.probe "aio"
dc.probe "pagecache"
dc.probe "block"

if not opt.all then
  dc.drop_paths { "/proc/", "/sys/" }   -- in C: no Lua runs per event
end
