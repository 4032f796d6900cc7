-- slow_cb.lua: POSIX write only, with a callback that spends ~0.1 ms of CPU per event, so a
-- fast writer overruns a small ring buffer (tests/test_overload.py).
local dc = require "datacrumbs"
dc.probe { layer = "posix", functions = { "write" } }
dc.on_event(function(ev)
	local x = 0
	for i = 1, 10000 do
		x = x + i
	end
	return x > 0
end)
