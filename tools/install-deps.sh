#!/usr/bin/env bash
# Installs what Tilewave needs on Debian 12 (bookworm): the build, the
# libraries, and the independent references the tests compare against
# (scipy, scikit-image, OpenCV, tifffile, OpenSlide, vips, ITK 5 for the Canny
# oracle), and clang-14 with libFuzzer for the fuzz targets (docs/FUZZING.md).
# Safe to re-run.
set -euo pipefail
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends \
  cmake g++ make ninja-build pkg-config ca-certificates \
  libtiff-dev libtbb-dev libopenslide-dev libgtest-dev \
  libjpeg62-turbo-dev zlib1g-dev libzstd-dev libdeflate-dev nlohmann-json3-dev \
  python3 python3-numpy python3-scipy python3-skimage python3-tifffile python3-openslide \
  openslide-tools libvips-tools time libinsighttoolkit5-dev python3-opencv \
  clang-14 libfuzzer-14-dev libclang-rt-14-dev clang-format-14 python3-pil \
  libopenmpi-dev openmpi-bin \
  libxml2-dev libxml2-utils \
  pybind11-dev python3-dev python3-pytest libdlpack-dev \
  python3-zarr python3-numcodecs \
  libcpp-httplib-dev libpng-dev chromium busybox \
  libzip-dev \
  >/dev/null
# tilewave serve's viewer page: OpenSeadragon from the npm registry, pinned by
# tools/viewer/package-lock.json (Debian's nodejs/npm where none is installed).
if ! command -v npm >/dev/null; then $sudo apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; fi
(cd "$(dirname "$0")/viewer" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error >/dev/null)
echo "tilewave: dependencies installed"
