#!/usr/bin/env bash
# Installs what building and testing need (Debian packages), then configures
# and builds into build/. Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build git
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev
  llvm-19-dev clang-19 libclang-rt-19-dev
  lld-19 llvm-19 rocm-device-libs libopenmpi-dev openmpi-bin
  python3 python3-numpy python3-yaml pkg-config zlib1g-dev nlohmann-json3-dev
  libshaderc-dev glslang-dev spirv-tools libvulkan-dev libvulkan-volk-dev
  mesa-vulkan-drivers vulkan-validationlayers
  libegl1 libegl-mesa0 libgles2 libgl1-mesa-dri chromium
  pybind11-dev libdlpack-dev python3-dev python3-pytest python3-torch ipython3
  python3-venv python3-pip python3-setuptools python3-wheel python3-build
)
# node and npm for the WebGPU runtime (js/) and its tests, where the machine
# has none of its own.
command -v node >/dev/null && command -v npm >/dev/null || PACKAGES+=(nodejs npm)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "setup: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
    SUDO=sudo
  fi
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# The WebGPU runtime's test dependencies: Dawn for node (npm's webgpu) and
# puppeteer-core (drives Chromium for examples/web), as locked in
# js/package-lock.json.
if [ ! -d js/node_modules/webgpu ] || [ ! -d js/node_modules/puppeteer-core ]; then
  (cd js && npm ci --no-audit --no-fund --loglevel=error) || echo "setup: npm could not install js/'s packages: the WebGPU tests will be skipped" >&2
fi

JOBS=$(nproc)
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$JOBS"

# `import zyntax`: the package installed as any user installs it (pip,
# pyproject.toml and setup.py; nothing compiled again) into .venv, a virtual
# environment that also sees Debian's NumPy and PyTorch: .venv/bin/python.
if [ ! -x .venv/bin/python ]; then
  /usr/bin/python3 -m venv --system-site-packages .venv
fi
PIP_NO_INDEX=1 PIP_DISABLE_PIP_VERSION_CHECK=1 .venv/bin/python -m pip install -q --no-build-isolation . \
  || echo "setup: pip could not install the Python package into .venv (PYTHONPATH=$PWD/build/python works)" >&2
# An earlier setup's path file in the system's site-packages, if any.
SITE=$(/usr/bin/python3 -c 'import site; print(site.getsitepackages()[0])')
if [ -f "$SITE/zyntax.pth" ] && grep -qx "$PWD/build/python" "$SITE/zyntax.pth"; then
  rm -f "$SITE/zyntax.pth" 2>/dev/null || true
fi
