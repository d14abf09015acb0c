#!/bin/sh
# bench/cpu.sh CSV [BUILD_DIR] - convfind vs oneDNN vs ONNX Runtime on one problem set,
# layer by layer, in one run, at the same thread count (CONVFIND_BENCH_THREADS, default 2).
# BUILD_DIR (default: build) must contain bench/bench_cpu, built when libdnnl-dev is found.
# CONVFIND_BENCH_EXCLUDE=algo1,algo2 leaves those convfind algorithms out of the timing.
# The last line of the output is exactly:
#   <suite> total_ms convfind=<x> onednn=<y> onnxruntime=<z>
set -eu
if [ $# -lt 1 ]; then
    echo "usage: bench/cpu.sh CSV [BUILD_DIR]" >&2
    exit 2
fi
csv=$1
build=${2:-build}
threads=${CONVFIND_BENCH_THREADS:-2}
here=$(dirname "$0")
bin="$build/bench/bench_cpu"
if [ ! -x "$bin" ]; then
    echo "bench/cpu.sh: $bin not found (configure with libdnnl-dev installed)" >&2
    exit 1
fi
ort_times=$(mktemp)
onednn_times=$(mktemp)
trap 'rm -f "$ort_times" "$onednn_times"' EXIT
# Each contender in its own process, one after the other: ONNX Runtime, oneDNN, then
# convfind (which prints the table).  oneDNN's OpenMP runtime reads its thread count at
# start-up, and its workers spin between calls (active wait, its fastest setting): in
# convfind's process they would take the cores convfind's pool needs.
python3 "$here/bench_ort.py" "$csv" "$threads" > "$ort_times"
OMP_NUM_THREADS=$threads OMP_PROC_BIND=false OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-active} \
    "$bin" "$csv" --threads "$threads" --onednn-only > "$onednn_times"
"$bin" "$csv" --threads "$threads" --ort "$ort_times" --onednn "$onednn_times" \
    ${CONVFIND_BENCH_EXCLUDE:+--exclude "$CONVFIND_BENCH_EXCLUDE"}
