#!/usr/bin/env bash
# Sets everything up, then runs the main example on the default device.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
build/zyntax run examples/transformer_block.zynml
