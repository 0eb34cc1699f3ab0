#!/bin/sh
# Installs, with apt-get, only the Debian packages that are missing.
# The build itself needs cmake and a C compiler; oneDNN, zlib, MPI, Python,
# the image codecs and the datasets are used when present (the build passes
# without them; the tests that need one say so and are skipped).
#   install-deps.sh          what `make test` needs
#   install-deps.sh fuzz     also clang and its sanitizer/fuzzer runtime
set -e
# core build and the Fashion-MNIST data
PKGS="cmake gcc make pkg-config zlib1g-dev libdnnl-dev dataset-fashion-mnist"
# several processes (src/dist): OpenMPI
PKGS="$PKGS libopenmpi-dev openmpi-bin"
# the Python package (python/): Debian's CPython 3.11, NumPy, pytest; its
# tests exchange tensors with PyTorch and load torchvision's state_dicts
PKGS="$PKGS python3-dev python3-numpy python3-pytest python3-torch python3-torchvision libopenblas0-pthread"
# the PyTorch device (python/_torch/, a C++ extension): libtorch's headers,
# and pybind11's, which they include (python3-torch only recommends it)
PKGS="$PKGS libtorch-dev pybind11-dev g++"
# image folders (src/data): JPEG, PNG, and PIL as the decoding oracle
PKGS="$PKGS libjpeg62-turbo-dev libspng-dev python3-pil"
# the default text corpus (--data text)
PKGS="$PKGS fortunes"
# the CLI test renders the --plot SVG once to PNG (rsvg-convert), to be sure it parses
PKGS="$PKGS librsvg2-bin"
case "${1:-}" in
fuzz) PKGS="$PKGS clang libclang-rt-14-dev" ;;
esac
missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
    echo "install-deps: missing packages:$missing (run as root to install them); continuing" >&2
    exit 0
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 || {
    apt-get update >/dev/null 2>&1 || true
    apt-get install -y --no-install-recommends $missing
}
