#!/usr/bin/env bash
# What grma's call sites cost nvcc: compiles tests/compile/call_sites.cu (a
# rank program with 100 grma call sites) for one architecture on one core
# and prints the seconds and the PTX size.
#   scripts/compile-cost.sh [ARCH]    (default sm_90)
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-sm_90}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-std=c++20 -O3 -arch="$arch" -Iinclude)
start=$(date +%s.%N)
nvcc "${flags[@]}" -c tests/compile/call_sites.cu -o "$work/call_sites.o"
end=$(date +%s.%N)
nvcc "${flags[@]}" -ptx tests/compile/call_sites.cu -o "$work/call_sites.ptx"
printf 'call_sites.cu (%s): nvcc %.1f s, PTX %d bytes, %d lines\n' "$arch" "$(echo "$end - $start" | bc)" \
  "$(stat -c %s "$work/call_sites.ptx")" "$(wc -l < "$work/call_sites.ptx")"
