-- writes.lua: POSIX write(2) alone, no callback: the spool tests' script (tests/test_spool.py).
local dc = require "datacrumbs"
dc.probe { layer = "posix", functions = { "write" } }
