#!/bin/sh
# bench/cpu.sh [OPTIONS] SUITE... | all - convfind against oneDNN 2.x, oneDNN 3.x and
# ONNX Runtime on benchmark suites, contenders interleaved layer by layer in one run
# (bench/cpu_driver.py; docs/benchmarks.md says how each contender is run).
#
# SUITE is a suite file (data/suites/resnet50_n1.csv, data/resnet50_convs.csv) or the
# name of one in data/suites (resnet50_n1); `all` is every suite in data/suites.  With
# more than one suite (or thread count, or ISA level) a summary table closes the output.
# OPTIONS go to cpu_driver.py; the main ones:
#   --build DIR         build directory with bench/bench_worker_* (default: build;
#                       a bare directory argument says the same)
#   --threads 2,1       thread counts (default 2)
#   --isa native,avx2   avx2: CONVFIND_ISA=avx2 with ONEDNN_MAX_CPU_ISA=AVX2
#   --rounds R          interleaved rounds (default 5); --min-ms, --min-reps per request
#   --contenders L      subset of convfind,onednn2,onednn3,onnxruntime
#   --layout nhwc       convfind's X and Y channels last (default nchw)
#   --baseline DIR      also time the convfind of another build (another commit):
#                       not a peer; each suite reports convfind's ratio to it
#   --baseline-layout L the baseline's layout (default --layout's); with --baseline
#                       build, the two layouts of one build interleaved
#   --regret            re-time every convfind algorithm per layer: Find's regret
# Full suites take long and disturb everything else on the machine.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
suites_dir="$here/../data/suites"
opts=""
files=""
expect_value=0
for a in "$@"; do
    if [ "$expect_value" = 1 ]; then
        opts="$opts $a"
        expect_value=0
        continue
    fi
    # A directory is the build directory, as the older "bench/cpu.sh CSV BUILD_DIR" said.
    if [ -d "$a" ]; then
        opts="$opts --build $a"
        continue
    fi
    case "$a" in
    --regret) opts="$opts $a" ;;
    --*=*) opts="$opts $a" ;;
    --*) opts="$opts $a"; expect_value=1 ;;
    all) files="$files $(ls "$suites_dir"/*.csv | tr '\n' ' ')" ;;
    *.csv) files="$files $a" ;;
    *)
        if [ ! -f "$suites_dir/$a.csv" ]; then
            echo "bench/cpu.sh: no suite $a (see $suites_dir)" >&2
            exit 2
        fi
        files="$files $suites_dir/$a.csv" ;;
    esac
done
if [ -z "$files" ]; then
    sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
# shellcheck disable=SC2086 # word splitting of the collected lists is intended
exec python3 "$here/cpu_driver.py" $opts $files
