-- io_all.lua: every user-level I/O layer at once: MPI-IO, STDIO and POSIX, nested.
-- The MPIIO, STDIO and POSIX layers together (and the dynamic loader's calls): each
-- event of a thread nests in the call that made it (args.level and args.p_idx), so an
-- MPI_File_write_at is the parent of the pwrite64 calls it caused and an fwrite the
-- parent of its write(2); a call a library makes inside another (fopen -> open) appears
-- once, as the child. Layers the program does not load at start are attached when a traced
-- process loads their library (dlopen: mpi4py, h5py), before its code runs. The AIO
-- layer adds each io_uring and libaio (io_submit) operation as an I/O event.
-- Run an MPI program's launcher under it: datacrumbs run io_all.lua -- mpirun -np 4 ./app
--
-- Options (after the script name):
--   --all     keep the calls on files under /proc and /sys too (dropped by default)
local dc = require "datacrumbs"
local options = require "datacrumbs.options"
local opt = options.parse {
  name = "io_all.lua",
  about = "every user-level I/O layer at once: MPI-IO, STDIO and POSIX, nested.",
  flags = { { "all", "keep the calls on files under /proc and /sys (dropped by default)" } },
}

dc.probe { layer = "mpiio" }
dc.probe { layer = "stdio" }
dc.probe { layer = "posix" }
dc.probe { layer = "ldso" }
dc.probe { layer = "aio" }

if not opt.all then
  dc.drop_paths { "/proc/", "/sys/" }   -- in C: no Lua runs per event
end
