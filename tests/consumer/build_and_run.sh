#!/usr/bin/env bash
# Installs the build tree's Zyntax into a fresh prefix, then builds
# tests/consumer against it twice — with CMake's find_package(Zyntax) and
# with pkg-config — and runs both programs.
#   tests/consumer/build_and_run.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >/dev/null
cmake -S "$here" -B "$work/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"
pc=$(dirname "$(find "$work/prefix" -name zyntax.pc)")
flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs zyntax)
c++ "$here/main.cpp" -o "$work/consumer-pkgconfig" $flags
"$work/consumer-pkgconfig"
