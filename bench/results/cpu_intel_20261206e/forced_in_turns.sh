#!/bin/bash
# forced_in_turns.sh CSV ALGO THREADS ROUNDS BASE_BIN NEW_BIN: each layer alone, the two builds in turns
csv=$1; algo=$2; thr=$3; rounds=$4; base=$5; new=$6
cores=$([ $thr = 1 ] && echo 0 || echo 0,1)
tail -n +2 $csv | cut -d, -f1 | while read name; do
  for r in $(seq $rounds); do
    for b in $( [ $((r%2)) = 1 ] && echo "$base $new" || echo "$new $base"); do
      t=$(taskset -c $cores $b $csv $algo $thr 25 nchw "$name" 2>/dev/null | awk -v n="$name" '$1==n{gsub(/\)/,"",$5); print $5}')
      echo "$name $([ $b = $base ] && echo base || echo new) $r $t"
    done
  done
done
