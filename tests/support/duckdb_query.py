"""DuckDB for the Parquet sink's tests: `python3 duckdb_query.py DIR SQL...` runs each query
in DIR and prints the rows of all of them as one JSON array (one array of rows per query;
values JSON lacks, such as timestamps, as text)."""

import json
import os
import sys

import duckdb

os.chdir(sys.argv[1])
connection = duckdb.connect()
print(json.dumps([connection.sql(query).fetchall() for query in sys.argv[2:]], default=str))
