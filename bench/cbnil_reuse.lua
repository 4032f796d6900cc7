-- cbnil_reuse.lua: cbnil.lua with dc.on_event's reuse = true: one ev table (and one
-- ev.args) for the run, overwritten per event, instead of two new tables per event.
local dc = require "datacrumbs"
dc.probe { layer = "posix", functions = { "write", "pread" } }
dc.on_event(function(ev) end, { reuse = true })
