#!/bin/sh
# `make train` on an up-to-date build prints what the training run prints
# and nothing else: no make or cmake lines before or around it (issue 19).
# Usage: make_train_quiet.sh SOURCE_DIR BUILD_DIR
set -u
src=$1 build=$2
# ctest may run under `make test`: a sub-make would announce its directory.
out=$(cd "$src" && env -u MAKELEVEL -u MAKEFLAGS -u MFLAGS make train BUILD="$build" \
      ARGS="--model mlp --data fake --image-size 28 --channels 1 --steps 2 --test-size 0" 2>&1) || {
    printf '%s\n' "$out"; echo "make_train_quiet: make train failed"; exit 1; }
first=$(printf '%s\n' "$out" | head -1)
case "$first" in
training*) ;;
*) printf '%s\n' "$out"; echo "make_train_quiet: the first line is not the run's: '$first'"; exit 1 ;;
esac
if printf '%s\n' "$out" | grep -nE '^make(\[[0-9]+\])?:|Entering directory|Built target|Scanning dependencies|Linking C|-- (Configuring|Build files)'; then
    echo "make_train_quiet: make or cmake printed the lines above"; exit 1
fi
printf '%s\n' "$out" | grep -q '^== summary' || { printf '%s\n' "$out"; echo "make_train_quiet: no summary"; exit 1; }
echo "make_train_quiet: $(printf '%s\n' "$out" | wc -l) lines, all from the run"
