"""rocflow's Python side: campaigns of many processes' runs on Dask.

`rocflow campaign` converts the per-rank inputs of a job into one Parquet dataset (see
:mod:`rocflow.campaign`) and runs the recipes of :mod:`rocflow.recipes` over it.
"""
