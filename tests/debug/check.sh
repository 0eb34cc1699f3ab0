#!/bin/sh
# A Debug build with a user's own C flags compiles, warnings as errors: the
# library configured from scratch in a temporary directory with
# CMAKE_BUILD_TYPE=Debug (-O0: nothing is inlined, so warnings that an
# optimized build never sees, such as GCC's -Wpsabi on a vector passed by
# value, show up) and the sanitizer flags a user would pass in
# CMAKE_C_FLAGS. Builds the static and the shared library only (the suite
# itself runs in the other builds). Usage: check.sh SOURCE_DIR CC
set -u
src=$1 cc=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
flags="-fsanitize=address,undefined -fno-omit-frame-pointer"
if ! cmake -S "$src" -B "$tmp" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_COMPILER="$cc" "-DCMAKE_C_FLAGS=$flags" \
        -DLT_WERROR=ON -DLT_PYTHON=OFF > "$tmp/configure.log" 2>&1; then
    cat "$tmp/configure.log"; echo "debug_build: configuring a Debug build failed"; exit 1
fi
if ! cmake --build "$tmp" -j 2 --target lazytensor lazytensor_static > "$tmp/build.log" 2>&1; then
    grep -E 'error|warning' "$tmp/build.log" | head -40
    echo "debug_build: the Debug build (CMAKE_C_FLAGS=\"$flags\") failed"; exit 1
fi
echo "debug_build: the library builds in Debug with $cc and CMAKE_C_FLAGS=\"$flags\", no warnings"
