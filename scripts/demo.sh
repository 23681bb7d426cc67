#!/usr/bin/env bash
# The README's main example: a relational streaming query (per-site temperature
# statistics in 10-second tumbling windows, a stream joined with a table) run by
# `tierflow run`. It grows with the engine: the ML workflow replaces it once models
# run inside queries.
set -euo pipefail
cd "$(dirname "$0")/.."
bin/tierflow run examples/streaming/query.sql
