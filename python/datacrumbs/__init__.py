"""datacrumbs' Python tools: reading DFTracer traces (ours and upstream's) into records or
pandas/Dask dataframes (datacrumbs.analysis), converting them to the Chrome trace format
(datacrumbs.chrome) and the HTML job report (datacrumbs.report)."""
