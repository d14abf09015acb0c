#!/usr/bin/env bash
# check_no_gpu_needed.sh - ctest's "no_gpu_link" test: the core library and the tool
# must load on a machine without CUDA, so none of FILE... may have a CUDA, cudart or
# cuDNN library among its NEEDED entries (readelf -d).  With --module PATH (the CUDA
# backend module, where it is built) it also checks that the module is the one that
# links cuDNN, and that it exports nothing but its entry, cf_module_entry_v1.
#
# usage: check_no_gpu_needed.sh [--module PATH] FILE...
set -euo pipefail

module=
if [ "${1:-}" = --module ]; then
    module=$2
    shift 2
fi
[ $# -gt 0 ] || { echo "usage: $0 [--module PATH] FILE..." >&2; exit 2; }

status=0
for f in "$@"; do
    needed=$(readelf -d "$f" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    gpu=$(grep -Ei 'cuda|cudart|cudnn|cublas|nvrtc' <<<"$needed" || true)
    if [ -n "$gpu" ]; then
        echo "FAIL: $f needs $(tr '\n' ' ' <<<"$gpu")" >&2
        status=1
    else
        echo "ok: $f needs $(tr '\n' ' ' <<<"$needed")"
    fi
done

if [ -n "$module" ]; then
    needed=$(readelf -d "$module" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
    if ! grep -q cudnn <<<"$needed"; then
        echo "FAIL: $module does not link cuDNN (needs: $(tr '\n' ' ' <<<"$needed"))" >&2
        status=1
    fi
    exported=$(nm -D --defined-only "$module" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' | sort)
    if [ "$exported" != cf_module_entry_v1 ]; then
        echo "FAIL: $module must export only cf_module_entry_v1; it exports:" >&2
        echo "$exported" >&2
        status=1
    else
        echo "ok: $module links cuDNN and exports only cf_module_entry_v1"
    fi
fi
exit $status
