-- io_posix.lua: the POSIX layer: every libc file call of the command (open, read, write,
-- pread/pwrite, lseek, fsync, stat, mmap, ... as listed in probes/posix.yaml), one
-- complete event per call, with fd, count, offset, ret and the file's path (fhash).
--
-- Options (after the script name):
--   --all     keep the calls on files under /proc and /sys too (dropped by default)
local dc = require "datacrumbs"

dc.probe { layer = "posix" }

local keep_all = false
for _, a in ipairs(arg) do
  if a == "--all" then keep_all = true
  else error("io_posix.lua: unknown option '" .. a .. "' (known: --all)") end
end

if not keep_all then
  -- pseudo files are not the application's I/O: drop calls on them
  local skip = { "^/proc/", "^/sys/" }
  dc.on_event(function(ev)
    local p = ev.path
    if p then
      for i = 1, #skip do
        if p:find(skip[i]) then return false end
      end
    end
  end)
end
