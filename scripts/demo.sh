#!/usr/bin/env bash
# The README's main example. It grows with the engine: today it formats the example
# queries; later it runs a real workflow on the embedded default.
set -euo pipefail
cd "$(dirname "$0")/.."
bin/tierflow fmt examples/design/shelves.sql
