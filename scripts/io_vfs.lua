-- io_vfs.lua: the kernel's vfs_* calls under the syscalls (fentry or kprobes).
-- The VFS layer: vfs_read, vfs_write, vfs_open, vfs_fsync_range and their kin
-- (probes/vfs.yaml), under the system calls that made them, with fentry/fexit or kprobes,
-- whichever this kernel allows per function. On a kernel with neither it stops before
-- the command starts and says so: use io_syscalls.lua there.
local dc = require "datacrumbs"
local options = require "datacrumbs.options"
options.parse {
  name = "io_vfs.lua",
  about = "the kernel's vfs_* calls under the syscalls (fentry or kprobes).",
}
dc.probe "syscalls"
dc.probe "vfs"
