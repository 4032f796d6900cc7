-- datacrumbs/filters.lua: small event filters written in Lua on top of dc.on_event.
-- require "datacrumbs.filters"; each function returns an on_event callback.
local M = {}

--- drop_prefixes(prefixes): a callback that drops events whose path starts with any of
-- the given prefixes (plain strings, e.g. { "/proc/", "/sys/" }); others are kept.
-- Returns function(ev) -> false | nil. dc.drop_paths(prefixes) does the same in C, before
-- any Lua runs (the shipped scripts use it): prefer it unless the callback does more.
function M.drop_prefixes(prefixes)
  local n = #prefixes
  return function(ev)
    local p = ev.path
    if p then
      for i = 1, n do
        local pre = prefixes[i]
        if p:sub(1, #pre) == pre then return false end
      end
    end
  end
end

return M
