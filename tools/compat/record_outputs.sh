#!/usr/bin/env bash
# Records what every command writes, as checksums, so a change that must not
# change behaviour (a refactoring) can be checked byte for byte against a
# record made before it:
#
#   tools/compat/record_outputs.sh [--tilewave BIN] [--device cpu|cuda] [--workdir DIR] > before.txt
#   ... change the code, rebuild ...
#   tools/compat/record_outputs.sh > after.txt && diff before.txt after.txt
#
# Each line: the SHA-256 of one output file, then the command that wrote it
# (paths relative to the work folder). Inputs are generated (synthetic slides,
# and TIFFs the tool writes from them), so a record is reproducible anywhere.
# --device cuda on a GPU machine records the CUDA backend's files, which must
# equal the CPU's where the op is exact (pyramids, filters, wavefront, EDT).
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd)
tw=$here/build/tools/tilewave device=cpu work=""
while [ $# -gt 0 ]; do
  case $1 in
    --tilewave) tw=$2; shift 2;;
    --device) device=$2; shift 2;;
    --workdir) work=$2; shift 2;;
    *) echo "unknown argument $1" >&2; exit 2;;
  esac
done
[ -x "$tw" ] || { echo "no tilewave at $tw (build first, or give --tilewave)" >&2; exit 1; }
if [ -z "$work" ]; then work=$(mktemp -d); trap 'rm -rf "$work"' EXIT; fi
mkdir -p "$work"
cd "$work"

# Runs one command (quietly) and prints the checksum of the file it wrote.
rec() {
  local out=$1; shift
  rm -f "$out"
  if ! "$tw" "$@" --device "$device" >/dev/null 2>err.txt; then
    echo "FAILED: tilewave $* ($(cat err.txt))"; return
  fi
  echo "$(sha256sum "$out" | cut -c1-64)  tilewave $*"
}

# Inputs: a JPEG-tiled RGB slide (as scanners write), a gray deflate image,
# a stripped 16-bit image, a binary mask and a marker.
"$tw" pyramid synthetic:1500x1100,seed=3 rgb.tif --quality 90 --min-size 100000 --device cpu >/dev/null
"$tw" pyramid synthetic:1300x900,gray,seed=5 gray.tif --compression deflate --min-size 100000 --device cpu >/dev/null
"$tw" pyramid synthetic:700x500,gray,16bit,seed=7 g16.tif --compression zstd --min-size 100000 --device cpu >/dev/null
"$tw" filter threshold gray.tif mask.tif --value 150 --min-size 100000 --device cpu >/dev/null
"$tw" filter brightness gray.tif marker.tif --add -40 --min-size 100000 --device cpu >/dev/null

for tile in 256 64; do
  rec p-$tile.tif pyramid rgb.tif p-$tile.tif --tile $tile --recompress
  rec pd-$tile.tif pyramid synthetic:2100x1300 pd-$tile.tif --tile $tile --compression deflate
  rec pz-$tile.tif pyramid g16.tif pz-$tile.tif --tile $tile --compression zstd --min-size 16
done
rec pass.tif pyramid rgb.tif pass.tif
rec pl.tif pyramid gray.tif pl.tif --compression lzw --no-predictor
rec pn.tif pyramid synthetic:900x700,gray pn.tif --compression none
rec p444.tif pyramid synthetic:1000x800 p444.tif --subsampling 444 --quality 75
rec pstripe.tif pyramid synthetic:40000x300 pstripe.tif --memory 4M --tile 64
for op in "gaussian --sigma 2" "sobel" "sobel --threshold 60" "canny --low 20 --high 60" \
          "canny --variant itk" "brightness --add 30" "contrast --factor 1.5" "threshold --value 128" \
          "threshold --otsu" "invert" "gray" "hed"; do
  name=f-$(echo "$op" | tr -c 'a-z0-9' '_').tif
  # shellcheck disable=SC2086
  rec "$name" filter $op rgb.tif "$name"
done
rec fg.tif filter gaussian gray.tif fg.tif --sigma 1.5 --tile 64
rec fc.tif filter canny gray.tif fc.tif --low 10 --high 40 --tile 48
rec r8.tif reconstruct marker.tif gray.tif r8.tif
rec r4.tif reconstruct marker.tif gray.tif r4.tif --connectivity 4 --tile 64
rec re.tif reconstruct gray.tif marker.tif re.tif --method erosion --clip
rec fh.tif fill-holes mask.tif fh.tif
rec fh16.tif fill-holes g16.tif fh16.tif --tile 64
rec hd.tif hdome gray.tif hd.tif --h 20
rec hd16.tif hdome g16.tif hd16.tif --h 300 --connectivity 4
rec e.tif edt mask.tif e.tif
rec e2.tif edt synthetic:3000x2500,gray e2.tif --threshold 100 --memory 4M --tile 64
rec erg.tif edt rgb.tif erg.tif --threshold 128
