#!/bin/sh
# `make install`, checked without touching /usr/local: install into a
# temporary prefix, then build a program outside the tree with
#   cc prog.c $(pkg-config --cflags --libs lazytensor)
# and with find_package(lazytensor), run both, and import the installed
# Python package. Usage: check.sh BUILD_DIR CC PROG.c
set -eu
build=$1 cc=$2 prog=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
root=$tmp/prefix
cmake --install "$build" --prefix "$root" > "$tmp/install.log"
lib=$(dirname "$(find "$root" -name liblazytensor.so | head -1)")

echo "== soname"
readelf -d "$lib/liblazytensor.so" | grep -q 'SONAME.*liblazytensor\.so\.0' || { echo "no soname"; exit 1; }

echo "== pkg-config"
export PKG_CONFIG_PATH="$lib/pkgconfig"
mkdir "$tmp/outside" && cp "$prog" "$tmp/outside/prog.c"
(cd "$tmp/outside" && $cc prog.c $(pkg-config --cflags --libs lazytensor) -o prog)
LD_LIBRARY_PATH="$lib" "$tmp/outside/prog" > "$tmp/out.txt"
cat "$tmp/out.txt"
grep -q '^ok' "$tmp/out.txt" || { echo "the program did not report ok"; exit 1; }

echo "== find_package(lazytensor)"
mkdir "$tmp/cm" && cp "$prog" "$tmp/cm/prog.c"
cat > "$tmp/cm/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(outside C)
find_package(lazytensor 0.1 REQUIRED)
add_executable(prog prog.c)
target_link_libraries(prog PRIVATE lazytensor::lazytensor)
CM
cmake -S "$tmp/cm" -B "$tmp/cm/b" -DCMAKE_PREFIX_PATH="$root" -DCMAKE_C_COMPILER="$cc" > "$tmp/cm.log"
cmake --build "$tmp/cm/b" > "$tmp/cm-build.log"
LD_LIBRARY_PATH="$lib" "$tmp/cm/b/prog" | grep -q '^ok'

if [ -n "${LT_PYTHON:-}" ] && [ -d "$root/lib/python3/dist-packages/lazytensor" ]; then
    echo "== python"
    LD_LIBRARY_PATH="$lib" PYTHONPATH="$root/lib/python3/dist-packages" "$LT_PYTHON" -c \
        'import lazytensor as lt; assert (lt.ones(2) * 3).tolist() == [3.0, 3.0]; print("python ok", lt.__file__)'
fi
echo "install check passed"
