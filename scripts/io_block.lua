-- io_block.lua: block requests the command issued, under the syscalls that issued them.
-- The BLOCK layer and the syscalls that caused it: every block request the
-- command issued (device, sector, bytes, op, queue and device time), nested under the
-- syscall (write, fsync, ...) that issued it (probes/block.yaml).
local dc = require "datacrumbs"
local options = require "datacrumbs.options"
options.parse {
  name = "io_block.lua",
  about = "block requests the command issued, under the syscalls that issued them.",
}
dc.probe "syscalls"
dc.probe "block"
