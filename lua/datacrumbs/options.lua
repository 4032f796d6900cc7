-- datacrumbs/options.lua: command-line options of a script (the words between the script's
-- name and `--`), with a --help that lists them; and durations/sizes in human units.
local dc = require "datacrumbs"
local M = {}

--- parse(spec): reads the global `arg` by spec and returns { name = value, ... }.
-- spec = { name = "slow_io.lua", about = "one line", options = {
--            { "threshold", "10ms", "keep calls slower than this (us, ms, s)" }, ... },
--          flags = { { "all", "keep everything" }, ... } }
-- Options are `--name VALUE` or `--name=VALUE` (strings; the default when absent), flags
-- `--name` (true/false). `--help` prints the usage on stdout and ends the run (dc.done).
-- An unknown option or a missing value raises an error naming it.
function M.parse(spec)
  local out, byname = {}, {}
  for _, o in ipairs(spec.options or {}) do out[o[1]] = o[2]; byname[o[1]] = "option" end
  for _, f in ipairs(spec.flags or {}) do out[f[1]] = false; byname[f[1]] = "flag" end
  local i = 1
  while i <= #arg do
    local a = arg[i]
    if a == "--help" or a == "-h" then
      io.stdout:write(("usage: datacrumbs run %s [OPTIONS] -- CMD [ARGS...]\n\n%s\n\noptions:\n")
        :format(spec.name, spec.about))
      for _, o in ipairs(spec.options or {}) do
        io.stdout:write(("  --%-14s %s (default %s)\n"):format(o[1] .. " V", o[3], o[2]))
      end
      for _, f in ipairs(spec.flags or {}) do
        io.stdout:write(("  --%-14s %s\n"):format(f[1], f[2]))
      end
      if #(spec.options or {}) + #(spec.flags or {}) == 0 then io.stdout:write("  none\n") end
      io.stdout:flush()
      dc.done(0)
    end
    local name, value = a:match("^%-%-([%w_-]+)=(.*)$")
    if not name then name = a:match("^%-%-([%w_-]+)$") end
    if not name or not byname[name] then
      error(("%s: unknown option '%s' (see: datacrumbs run %s --help)"):format(spec.name, a,
        spec.name), 0)
    end
    if byname[name] == "flag" then
      if value then error(("%s: --%s takes no value"):format(spec.name, name), 0) end
      out[name] = true
    else
      if not value then
        i = i + 1
        value = arg[i]
        if not value then error(("%s: --%s needs a value"):format(spec.name, name), 0) end
      end
      out[name] = value
    end
    i = i + 1
  end
  return out
end

local units = { ns = 0.001, us = 1, ms = 1000, s = 1000000 }

--- duration_us(text): "250us", "10ms", "1.5s", "3" (us) -> microseconds (a number).
-- Raises an error naming text when it is not a duration.
function M.duration_us(text)
  local n, u = tostring(text):match("^(%d+%.?%d*)(%a*)$")
  local f = n and units[u == "" and "us" or u]
  if not f then error(("'%s' is not a duration (e.g. 500us, 10ms, 2s)"):format(text), 0) end
  return tonumber(n) * f
end

return M
