#!/bin/sh
# run.sh - the GPU benchmark (docs/cuda.md): convfind against PyTorch (cudnn.benchmark,
# its calls replayed from a CUDA graph, eager as a second column) and cuDNN's legacy
# Find (what ONNX Runtime's CUDA provider used), on a network's layers with their bias,
# residual and activation, in every precision, at N=32 and N=1.  BENCH_DEADLINE_S (for a
# machine lent for a limited time) starts no further step after that many seconds;
# BENCH_LEGACY=0 leaves the legacy peer out.
#
#   run.sh <bin dir> [layers.csv] [suite name] [log dir]
#
# <bin dir> holds bench_convfind and legacy_find (e.g. build/bench/gpu).  BENCH_N,
# BENCH_PRECISIONS (fp32 split tf32 fp16 bf16; split is convfind's
# CONVFIND_MATH_ALLOW_SPLIT_TF32, compared with the peers' strict fp32) and BENCH_FIND_S
# (Find budget per problem, seconds) narrow or change the run.  PyTorch runs twice per N,
# with cudnn.benchmark on (the timings) and off (first calls only): the difference of
# their first calls is what its benchmark costs, set against convfind's Find time and
# against the first calls of convfind with Find minus those of a process of its own
# without (HEURISTIC policy: mode A's first configuration).  The logs
# go to <log dir>; summarize.py prints the tables from them, and this script prints them
# last.
set -eu
bin=$1
here=$(dirname "$0")
csv=${2:-$here/../../data/resnet50_convs.csv}
suite=${3:-resnet50}
logs=${4:-.}
ns=${BENCH_N:-32 1}
precs=${BENCH_PRECISIONS:-fp32 split tf32 fp16 bf16}
peer_precs=$(echo $precs | tr ' ' '\n' | grep -v '^split$' | paste -sd, -)
start=$(date +%s)
in_time() { [ -z "${BENCH_DEADLINE_S:-}" ] || [ $(( $(date +%s) - start )) -lt "$BENCH_DEADLINE_S" ]; }
# One PyTorch process per N: its cuDNN plan cache would serve the other N's shapes
# without a benchmark (seen with PyTorch 2.11: N=1 first calls of 0.1 ms after N=32).
for n in $ns; do
  in_time || continue
  python3 "$here/bench_pytorch.py" "$csv" "$peer_precs" "$n" --benchmark on \
    > "$logs/$suite-pytorch-on-n$n.log" 2>&1 || true
  python3 "$here/bench_pytorch.py" "$csv" "$peer_precs" "$n" --benchmark off --first-only \
    > "$logs/$suite-pytorch-off-n$n.log" 2>&1 || true
done
for n in $ns; do
  for prec in $precs; do
    in_time || continue
    base=$logs/$suite-$prec-n$n
    "$bin/bench_convfind" "$csv" "$prec" "$n" ${BENCH_FIND_S:-} > "$base-convfind.log" 2>&1 || true
    BENCH_POLICY=heuristic BENCH_FIRST_ONLY=1 "$bin/bench_convfind" "$csv" "$prec" "$n" \
      > "$base-convfind-heuristic.log" 2>&1 || true
    if [ "$prec" != split ] && [ "${BENCH_LEGACY:-1}" != 0 ]; then
      for layout in nchw nhwc; do
        "$bin/legacy_find" "$csv" "$prec" "$n" $layout > "$base-legacy-$layout.log" 2>&1 || true
      done
    fi
  done
done
python3 "$here/summarize.py" "$logs" "$suite" "${BENCH_FIND_S:-0.3}"
