"""Recipes: analyses of a campaign's dataset, each a Dask computation over its tables that
brings back only its own (small) result, written as Parquet and CSV into the campaign's
folder. Each module documents its output's schema.
"""
