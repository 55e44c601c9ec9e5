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
# A library built with the sanitizers needs their runtimes in the program
# too, from the compiler that built it.
sanitize=""
cxx=c++
if grep -q "^ZYNTAX_SANITIZE:BOOL=ON" "$build/CMakeCache.txt"; then
  sanitize="-fsanitize=address,undefined"
  cxx=$(sed -n 's/^CMAKE_CXX_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")
fi
cmake -S "$here" -B "$work/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_CXX_COMPILER="$cxx" \
  -DCMAKE_CXX_FLAGS="$sanitize" -DCMAKE_EXE_LINKER_FLAGS="$sanitize" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
"$work/cmake-build/consumer"
pc=$(dirname "$(find "$work/prefix" -name zyntax.pc)")
flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs zyntax)
"$cxx" $sanitize "$here/main.cpp" -o "$work/consumer-pkgconfig" $flags
"$work/consumer-pkgconfig"
