-- slow_io.lua: only the calls slower than a threshold, with their args and paths.
-- Probes the POSIX layer (or another with --layer) and drops every event faster than
-- --threshold, so a long run's trace keeps just the calls worth looking at. The end
-- record's `dropped` counts the fast ones.
local dc = require "datacrumbs"
local options = require "datacrumbs.options"

local opt = options.parse {
  name = "slow_io.lua",
  about = "Keeps only the I/O calls slower than a threshold.",
  options = {
    { "threshold", "10ms", "keep calls that take at least this long (us, ms, s)" },
    { "layer", "posix", "the layer to probe (posix, syscalls, ...)" },
  },
}
local threshold = options.duration_us(opt.threshold)

dc.probe { layer = opt.layer }
dc.on_event(function(ev)
  if ev.dur < threshold then return false end
end, { reuse = true }) -- keeps no ev: one table for every event
