#!/usr/bin/env bash
# The README's main example: an ML workflow on real data. Two classifiers run
# inside a streaming query over 2,000 labelled Fashion-MNIST images (a garment-
# group model keeps the tops, a 10-class model names them), then 5-second
# tumbling windows count the predicted labels and measure accuracy against the
# true labels. Models and data are checked in (examples/fashion); ONNX Runtime
# comes from scripts/setup.sh. The relational example is
# `bin/tierflow run examples/streaming/query.sql`.
set -euo pipefail
cd "$(dirname "$0")/.."
bin/tierflow run --catalog examples/fashion/catalog.yaml examples/fashion/cascade.sql
