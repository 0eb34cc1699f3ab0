#!/bin/sh
# Installs, with apt-get, only the Debian packages that are missing.
# The build itself needs cmake and a C compiler; oneDNN, zlib and the
# Fashion-MNIST data are used when present (the tests pass without them).
set -e
PKGS="cmake gcc make zlib1g-dev libdnnl-dev dataset-fashion-mnist"
# `install-deps.sh fuzz`: also clang and its sanitizer/fuzzer runtime.
[ "${1:-}" = fuzz ] && PKGS="$PKGS clang libclang-rt-14-dev"
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
