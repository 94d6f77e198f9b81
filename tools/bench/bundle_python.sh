#!/usr/bin/env bash
# Carries what it takes to build the `tilewave` Python extension on a host
# whose Python is not this machine's (the lent GPU machines run Python 3.12
# with CuPy and PyTorch; Debian 12's is 3.11, and an extension is built for
# one Python): the engine's static library as built here, the headers the
# binding sources include, and the shared libraries the module loads.
#   tools/bench/bundle_python.sh BUILD_DIR OUT.tar.xz
# On the target, in a checkout of the same commit:
#   mkdir -p /tmp/twpy && tar -C /tmp/twpy -xJf OUT.tar.xz && /tmp/twpy/build.sh
#   export PYTHONPATH=/tmp/twpy/site LD_LIBRARY_PATH=/tmp/twpy/lib
# build.sh compiles the binding sources named in tools/python/CMakeLists.txt
# with the target's python3, its pybind11 and its C++ compiler, and links
# them to the carried library.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 BUILD_DIR OUT.tar.xz" >&2; exit 2; }
build=$1 out=$2
module=$(ls "$build"/python/tilewave/_tilewave*.so)
stage=$(mktemp -d); trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/lib" "$stage/include"
cp "$build/libtilewave.a" "$stage/"
for d in tbb oneapi nlohmann dlpack openslide; do cp -r "/usr/include/$d" "$stage/include/"; done
# Every library the module loads, but glibc's, the C++ runtime and CUDA's
# runtime: the target's own serve (its cudart is linked statically there).
ldd "$module" | awk '/=> \//{print $3}' |
  grep -vE '/(libc|libm|libdl|libpthread|librt|libutil|libstdc\+\+|libgcc_s|libcudart|ld-linux[^/]*)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/lib/"; done
cat >"$stage/build.sh" <<'SH'
#!/usr/bin/env bash
# Builds the extension into <here>/site/tilewave from the checkout in the
# current folder (see tools/bench/bundle_python.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
pkg=$here/site/tilewave; mkdir -p "$pkg" "$here/obj"
suffix=$(python3 -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
sources=$(sed -n '/pybind11_add_module(_tilewave/,/^)/p' tools/python/CMakeLists.txt | grep -o '[^ ]*\.cpp' |
          sed 's|${PROJECT_SOURCE_DIR}/||; t; s|^|tools/python/|')
cuda=$(dirname "$(dirname "$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)")")
export TW_FLAGS="-O2 -std=c++17 -fPIC -fvisibility=hidden -ffp-contract=off -fno-math-errno -DNDEBUG \
-DTW_HAVE_CUDA=1 -I. -isystem $here/include -isystem $here/include/openslide -isystem $cuda/include \
$(python3 -m pybind11 --includes)" TW_OBJ=$here/obj
printf '%s\n' $sources |
  xargs -P "$(nproc)" -I{} bash -c 'c++ $TW_FLAGS -c "$1" -o "$TW_OBJ/$(echo "$1" | tr / _).o"' _ {}
c++ -shared -o "$pkg/_tilewave$suffix" "$here"/obj/*.o "$here/libtilewave.a" "$here"/lib/*.so* \
    -L"$cuda/lib64" -lcudart_static -lrt -lpthread -ldl -Wl,--disable-new-dtags,-rpath,"$here/lib"
cp tools/python/tilewave/*.py tools/python/tilewave/*.pyi tools/python/tilewave/py.typed "$pkg/"
python3 tools/python/make_ops_stub.py "$pkg"
echo "built $pkg/_tilewave$suffix"
SH
chmod +x "$stage/build.sh"
mkdir -p "$(dirname "$out")"
tar -C "$stage" -cf - . | xz -6 -T0 >"$out"
echo "$out: $(du -h "$out" | cut -f1)"
