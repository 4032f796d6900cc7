-- phases.lua: tags every event with the application phase it happened in.
-- A phase starts when the process makes a call on a file whose path matches the phase's
-- pattern (--phase NAME=PATTERN, Lua patterns, repeatable), e.g. the first open of a
-- checkpoint file starts "checkpoint"; every event then carries args.phase = NAME until
-- another phase starts. Events before any phase carry --initial (default "init").
local dc = require "datacrumbs"

local phases, initial, layer = {}, "init", "posix"
local i = 1
while i <= #arg do
  local a = arg[i]
  if a == "--help" or a == "-h" then
    io.stdout:write("usage: datacrumbs run phases.lua [--phase NAME=PATTERN]... "
      .. "[--initial NAME] [--layer LAYER] -- CMD [ARGS...]\n\n"
      .. "Tags every event with its phase: a phase starts at the first call on a path\n"
      .. "matching its Lua pattern; events before any phase are tagged --initial (init).\n")
    io.stdout:flush()
    dc.done(0)
  end
  local v = arg[i + 1]
  if a == "--phase" and v and v:find("=") then
    local name, pat = v:match("^([^=]+)=(.+)$")
    phases[#phases + 1] = { name = name, pattern = pat }
  elseif a == "--initial" and v then
    initial = v
  elseif a == "--layer" and v then
    layer = v
  else
    error(("phases.lua: unknown option or missing value '%s' (see: datacrumbs run "
      .. "phases.lua --help)"):format(a), 0)
  end
  i = i + 2
end
if #phases == 0 then
  error("phases.lua: give at least one --phase NAME=PATTERN", 0)
end

local current, started = {}, {}   -- pid -> phase name; pid -> { phase = true }
dc.probe { layer = layer }
dc.on_event(function(ev)
  local p = ev.path
  if p then
    local seen = started[ev.pid]
    if not seen then seen = {}; started[ev.pid] = seen end
    for _, ph in ipairs(phases) do
      -- only the first call on a phase's files starts it: later calls on them (reading
      -- back the checkpoint) stay in whatever phase the process is in by then
      if not seen[ph.name] and p:find(ph.pattern) then
        seen[ph.name] = true
        current[ev.pid] = ph.name
        break
      end
    end
  end
  ev.args.phase = current[ev.pid] or initial
end, { reuse = true }) -- keeps no ev: one table for every event
