-- io_pagecache.lua: page cache misses, lookups and evictions, under their syscalls.
-- The PAGE_CACHE layer and the syscalls that caused it: pages of the
-- command's files entering the cache (misses), looked up (reads), dropped; each nested
-- under the read/write syscall that caused it (probes/pagecache.yaml).
local dc = require "datacrumbs"
local options = require "datacrumbs.options"
options.parse {
  name = "io_pagecache.lua",
  about = "page cache misses, lookups and evictions, under their syscalls.",
}
dc.probe "syscalls"
dc.probe "pagecache"
