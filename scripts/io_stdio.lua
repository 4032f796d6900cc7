-- io_stdio.lua: the buffered stream calls of the command (STDIO layer), one event per call.
-- The STDIO layer: fopen, fread, fwrite, fgets, fprintf, fseek, fclose, ... as listed
-- in probes/stdio.yaml, one complete event per call, with the stream's fd and file
-- (fhash), count (bytes asked: size x nmemb for fread/fwrite), offset/whence for seeks,
-- mode for opens, and ret. Add io_posix.lua's layer (or run io_all.lua) to see the
-- read/write calls each stream call makes nested under it.
--
-- Options (after the script name):
--   --all     keep the calls on files under /proc and /sys too (dropped by default)
local dc = require "datacrumbs"
local options = require "datacrumbs.options"
local opt = options.parse {
  name = "io_stdio.lua",
  about = "the buffered stream calls of the command (STDIO layer), one event per call.",
  flags = { { "all", "keep the calls on files under /proc and /sys (dropped by default)" } },
}

dc.probe { layer = "stdio" }
-- no POSIX events, but the opens and dups that tell which file an fd (fdopen's) is
dc.probe { layer = "posix", fds_only = true }

if not opt.all then
  dc.drop_paths { "/proc/", "/sys/" }   -- in C: no Lua runs per event
end
