-- io_mpiio.lua: the MPI-IO calls of an MPI program (MPIIO layer), per rank.
-- The MPIIO layer: MPI_File_open/read/write/..._all/_at/i.../seek/set_view/sync/
-- close of Open MPI or MPICH (probes/mpiio.yaml), one complete event per call with the
-- file (fhash), offset, count (bytes asked), bytes (moved, from the MPI_Status) and ret
-- (the MPI error code); MPI_Init and MPI_Finalize as markers. Each rank's process is named
-- "Rank N" in the trace, with a PR rank record. Run the launcher under it:
--   datacrumbs run io_mpiio.lua -- mpirun -np 4 ./app
-- Add io_posix.lua's layer (or run io_all.lua) to see the POSIX calls each MPI-IO call
-- makes nested under it.
--
-- Options (after the script name): none.
local dc = require "datacrumbs"
local options = require "datacrumbs.options"
options.parse {
  name = "io_mpiio.lua",
  about = "the MPI-IO calls of an MPI program (MPIIO layer), per rank.",
}

dc.probe { layer = "mpiio" }
-- no POSIX events, but the fd bookkeeping a rank's files need
dc.probe { layer = "posix", fds_only = true }

