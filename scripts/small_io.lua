-- small_io.lua: detailed events only for files accessed mostly in small or unaligned pieces.
-- Like Darshan DXT's triggers: the data calls (read, write, pread, pwrite, ...) are held
-- per file; at the end, a file whose calls are mostly small (count < --small) or unaligned
-- (offset or count not a multiple of --align) gets all its calls written, the others one
-- `io_summary` event each (calls, bytes, small, unaligned). Other calls are written as usual.
local dc = require "datacrumbs"
local options = require "datacrumbs.options"

local opt = options.parse {
  name = "small_io.lua",
  about = "Keeps the detailed calls only of files read or written in small or unaligned pieces.",
  options = {
    { "small", "4096", "a call moving fewer bytes than this is small" },
    { "align", "4096", "offsets and sizes not a multiple of this are unaligned" },
    { "fraction", "0.5", "share of small or unaligned calls that makes a file detailed" },
    { "max-events", "100000", "calls held per file (the rest only counted)" },
    { "layer", "posix", "the layer to probe" },
  },
}
local small, align = tonumber(opt.small), tonumber(opt.align)
local fraction, maxev = tonumber(opt.fraction), tonumber(opt["max-events"])
if not (small and align and align > 0 and fraction and maxev) then
  error("small_io.lua: --small, --align, --fraction and --max-events take numbers", 0)
end

local data = { read = true, write = true, pread = true, pwrite = true, readv = true,
  writev = true, preadv = true, pwritev = true, preadv2 = true,
  pwritev2 = true, fread = true, fwrite = true,
  sys_read = true, sys_write = true, sys_pread64 = true, sys_pwrite64 = true }
local files = {}   -- path -> { n, bytes, odd, first, last, events = { ... } }

dc.probe { layer = opt.layer }
dc.on_event(function(ev)
  if not (ev.path and data[ev.name]) then return end
  local f = files[ev.path]
  if not f then
    f = { n = 0, bytes = 0, odd = 0, first = ev.ts, last = ev.ts + ev.dur, events = {} }
    files[ev.path] = f
  end
  local a = ev.args
  local count, off = a.count or 0, a.offset
  f.n = f.n + 1
  if (a.ret or 0) > 0 then f.bytes = f.bytes + a.ret end
  if count < small or count % align ~= 0 or (off and off % align ~= 0) then
    f.odd = f.odd + 1
  end
  if ev.ts < f.first then f.first = ev.ts end
  if ev.ts + ev.dur > f.last then f.last = ev.ts + ev.dur end
  if #f.events < maxev then
    f.events[#f.events + 1] = { name = ev.name, cat = ev.cat, pid = ev.pid, tid = ev.tid,
      ts = ev.ts, dur = ev.dur, path = ev.path, args = a }
  end
  return false  -- held until the end
end)

dc.on_end(function()
  for path, f in pairs(files) do
    if f.odd >= fraction * f.n then
      for _, e in ipairs(f.events) do dc.emit(e) end
    else
      dc.emit { name = "io_summary", cat = "summary", pid = f.events[1].pid, ts = f.first,
        dur = f.last - f.first, path = path,
        args = { calls = f.n, bytes = f.bytes, small_or_unaligned = f.odd } }
    end
  end
end)
