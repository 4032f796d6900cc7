-- filetop.lua: bytes and calls per file, printed every --every (1s), like filetop.
-- A live view on stderr of the files the command reads and writes the most (POSIX layer),
-- and a last table when it ends. The events themselves are not kept unless --keep.
local dc = require "datacrumbs"
local options = require "datacrumbs.options"
local uv = require "luv"

local opt = options.parse {
  name = "filetop.lua",
  about = "Prints the files read and written the most, every interval and at the end.",
  options = {
    { "every", "1s", "time between two tables" },
    { "top", "10", "files per table" },
  },
  flags = { { "keep", "also write every event to the trace" } },
}
local interval_ms = math.max(1, math.floor(options.duration_us(opt.every) / 1000))
local top = tonumber(opt.top) or error("filetop.lua: --top needs a number", 0)

local reads = { read = true, pread = true, readv = true, preadv = true, preadv2 = true, fread = true,
  __read_nocancel = true, __pread64_nocancel = true }
local writes = { write = true, pwrite = true, writev = true, pwritev = true, pwritev2 = true, fwrite = true,
  __write_nocancel = true }
local files = {}   -- path -> { r = calls, rb = bytes, w = calls, wb = bytes }

dc.probe { layer = "posix" }
dc.on_event(function(ev)
  local p, kind = ev.path, reads[ev.name] and "r" or writes[ev.name] and "w"
  if p and kind then
    local f = files[p]
    if not f then f = { r = 0, rb = 0, w = 0, wb = 0 }; files[p] = f end
    local moved = ev.args.ret or 0
    f[kind] = f[kind] + 1
    if moved > 0 then f[kind .. "b"] = f[kind .. "b"] + moved end
  end
  if not opt.keep then return false end
end, { reuse = true }) -- keeps no ev: one table for every event

-- one table: the files with the most bytes moved, then the counts since the last one
local function print_table(title)
  local list = {}
  for p, f in pairs(files) do list[#list + 1] = { p = p, f = f } end
  table.sort(list, function(a, b)
    local x, y = a.f.rb + a.f.wb, b.f.rb + b.f.wb
    if x ~= y then return x > y end
    return a.p < b.p
  end)
  io.stderr:write(("%s\n%8s %12s %8s %12s  %s\n"):format(title, "READS", "READ_B",
    "WRITES", "WRITE_B", "FILE"))
  for i = 1, math.min(top, #list) do
    local f = list[i].f
    io.stderr:write(("%8d %12d %8d %12d  %s\n"):format(f.r, f.rb, f.w, f.wb, list[i].p))
  end
end

local timer = uv.new_timer()
timer:start(interval_ms, interval_ms, function()
  print_table(os.date("%H:%M:%S"))
  files = {}
end)
dc.on_end(function()
  timer:stop()
  print_table("end")
end)
