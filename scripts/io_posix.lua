-- io_posix.lua: every libc file call of the command (POSIX layer), one event per call.
-- The POSIX layer: every libc file call of the command (open, read, write,
-- pread/pwrite, lseek, fsync, stat, ... as listed in probes/posix.yaml), one
-- complete event per call, with fd, count, offset, ret and the file's path (fhash); and
-- the dynamic loader's own calls (its system calls; its mmap from probes/ldso.yaml);
-- and asynchronous I/O (AIO layer, probes/aio.yaml): each io_uring and libaio (io_submit)
-- read, write and fsync as one event with its file, offset, bytes asked and moved.
--
-- Options (after the script name):
--   --all     keep the calls on files under /proc and /sys too (dropped by default)
local dc = require "datacrumbs"
local options = require "datacrumbs.options"
local opt = options.parse {
  name = "io_posix.lua",
  about = "every libc file call of the command (POSIX layer), one event per call.",
  flags = { { "all", "keep the calls on files under /proc and /sys (dropped by default)" } },
}

dc.probe { layer = "posix" }
dc.probe { layer = "ldso" }   -- the dynamic loader's calls, before libc is there
dc.probe { layer = "aio" }    -- io_uring and io_submit operations: the I/O libc never sees

if not opt.all then
  -- pseudo files are not the application's I/O
  dc.drop_paths { "/proc/", "/sys/" }   -- in C: no Lua runs per event
end
