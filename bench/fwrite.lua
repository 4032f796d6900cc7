-- fwrite.lua: the STDIO benchmark's datacrumbs script: fwrite only, no Lua callback.
local dc = require "datacrumbs"
dc.probe { layer = "stdio", functions = { "fwrite" } }
