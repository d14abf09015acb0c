#!/bin/sh
# run.sh - the GPU benchmark of issue 6: convfind vs PyTorch (cudnn.benchmark) vs
# cuDNN's legacy Find on a network's convolutions, at N=32 and N=1, in fp32 (strict),
# tf32 and fp16.  Usage: run.sh <dir of bench_convfind and legacy_find, e.g.
# build/bench/gpu> [layers.csv] [suite name] [log dir].  BENCH_N, BENCH_PRECISIONS and
# BENCH_FIND_S (Find budget per problem, seconds) narrow or change the run.
# Prints, last per configuration:
#   <suite> <precision> n=<N> total_ms convfind=<x> pytorch=<y> legacy_find=<z>
set -eu
bin=$1
csv=${2:-$(dirname "$0")/../../data/resnet50_convs.csv}
suite=${3:-resnet50}
logs=${4:-.}
result() { sed -n "s/^RESULT $1 .* total_ms=\([0-9.]*\).*/\1/p" "$2" | tail -n 1; }
for n in ${BENCH_N:-32 1}; do
  for prec in ${BENCH_PRECISIONS:-fp32 tf32 fp16}; do
    base=$logs/$suite-$prec-n$n
    "$bin/bench_convfind" "$csv" "$prec" "$n" ${BENCH_FIND_S:-} > "$base-convfind.log" 2>&1 || true
    python3 "$(dirname "$0")/bench_pytorch.py" "$csv" "$prec" "$n" > "$base-pytorch.log" 2>&1 || true
    "$bin/legacy_find" "$csv" "$prec" "$n" > "$base-legacy.log" 2>&1 || true
    echo "$suite $prec n=$n total_ms convfind=$(result convfind "$base-convfind.log")" \
         "pytorch=$(result pytorch "$base-pytorch.log")" \
         "legacy_find=$(result legacy_find "$base-legacy.log")"
  done
done
