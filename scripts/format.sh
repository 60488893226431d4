#!/usr/bin/env bash
# Formats the Swift sources with the committed .swift-format; `--lint` only checks (for CI).
set -euo pipefail
cd "$(dirname "$0")/.."
if [[ "${1:-}" == "--lint" ]]; then
    swift format lint --strict --recursive --parallel Package.swift Sources Tests fuzz/Package.swift fuzz/Sources
else
    swift format format --in-place --recursive --parallel Package.swift Sources Tests fuzz/Package.swift fuzz/Sources
fi
