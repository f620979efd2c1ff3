#!/bin/bash
# Int8 against fp32 inference speed (issue 6's target: int8 >= 2.5x fp32 for lenet and cnn at
# batch 256 on avx2, >= 1.5x with RETROGRAD_ISA=sse2). For each model and ISA it runs
# `retrograd precision` REPS times (a short f32 training on --limit samples, then the test
# split through fp32 and through int8 at batch 256), and prints the median samples/s of each
# and their ratio per run. Speed only: the accuracy of a model trained this briefly means nothing.
# With PYTORCH=1 (the default) PyTorch's eager static int8 (bench/pytorch_int8.py) runs beside
# each run: its engine PT_ENGINE (default: fbgemm, x86, onednn, qnnpack, the first it has); hold
# oneDNN to the instructions our kernels use with ONEDNN_MAX_CPU_ISA (AVX512_CORE_VNNI: a Xeon
# with AMX), which the environment passes on.
# Usage: bash bench/int8_inference.sh [--markdown]
#   (env: MODELS, ISAS, REPS, THREADS, LIMIT, BIN, PYTORCH, PYTHON, PT_ENGINE)
set -euo pipefail
cd "$(dirname "$0")/.."
MODELS=${MODELS:-lenet cnn}
ISAS=${ISAS:-avx2 sse2}
REPS=${REPS:-3}
THREADS=${THREADS:-1}
LIMIT=${LIMIT:-2000}
PYTORCH=${PYTORCH:-1}
BIN=${BIN:-build/retrograd}
[ -x "$BIN" ] || bash tools/build.sh >/dev/null
PYTHON=${PYTHON:-/usr/bin/python3}
PT_ENGINE=${PT_ENGINE:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

median() { sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

if [ "$PYTORCH" = 1 ]; then
  echo "| model | ISA | fp32 infer samples/s | int8 infer samples/s | int8 / fp32 (median of per-run ratios) | PyTorch fp32 samples/s | PyTorch int8 samples/s | PyTorch int8 / fp32 | runs |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
else
  echo "| model | ISA | fp32 infer samples/s | int8 infer samples/s | int8 / fp32 (median of per-run ratios) | runs |"
  echo "|---|---|---:|---:|---:|---:|"
fi
engine=""
for model in $MODELS; do
  for isa in $ISAS; do
    : > "$tmp/fp32"; : > "$tmp/int8"; : > "$tmp/ratio"; : > "$tmp/pt_fp32"; : > "$tmp/pt_int8"; : > "$tmp/pt_ratio"
    for rep in $(seq "$REPS"); do
      RETROGRAD_ISA=$isa "$BIN" precision --model "$model" --epochs 1 --limit "$LIMIT" --threads "$THREADS" \
        --infer-batch 256 --json "$tmp/run.json" > "$tmp/log" 2>&1 || { cat "$tmp/log"; exit 1; }
      python3 - "$tmp/run.json" >> "$tmp/pairs" <<'PY'
import json, sys
rows = {r["precision"]: r for r in json.load(open(sys.argv[1]))["precisions"]}
f, i = rows["fp32"]["infer_samples_per_s"], rows["int8"]["infer_samples_per_s"]
print(f, i, i / f)
PY
      read -r f i r < <(tail -1 "$tmp/pairs")
      echo "$f" >> "$tmp/fp32"; echo "$i" >> "$tmp/int8"; echo "$r" >> "$tmp/ratio"
      if [ "$PYTORCH" = 1 ]; then
        (cd bench && "$PYTHON" pytorch_int8.py --model "$model" --limit "$LIMIT" --threads "$THREADS" --batch 256 \
          --reps 1 ${PT_ENGINE:+--engine "$PT_ENGINE"}) > "$tmp/pt.json" 2> "$tmp/pt.log" || { cat "$tmp/pt.log"; exit 1; }
        read -r pf pi pr engine < <("$PYTHON" -c 'import json, sys; d = json.load(open(sys.argv[1]))
print(d["fp32_samples_per_s"], d["int8_samples_per_s"], d["ratio"], d["engine"])' "$tmp/pt.json")
        echo "$pf" >> "$tmp/pt_fp32"; echo "$pi" >> "$tmp/pt_int8"; echo "$pr" >> "$tmp/pt_ratio"
      fi
    done
    if [ "$PYTORCH" = 1 ]; then
      printf "| %s | %s | %.0f | %.0f | %.2fx | %.0f | %.0f | %.2fx | %s |\n" "$model" "$isa" "$(median < "$tmp/fp32")" \
        "$(median < "$tmp/int8")" "$(median < "$tmp/ratio")" "$(median < "$tmp/pt_fp32")" "$(median < "$tmp/pt_int8")" \
        "$(median < "$tmp/pt_ratio")" "$REPS"
    else
      printf "| %s | %s | %.0f | %.0f | %.2fx | %s |\n" "$model" "$isa" "$(median < "$tmp/fp32")" \
        "$(median < "$tmp/int8")" "$(median < "$tmp/ratio")" "$REPS"
    fi
  done
done
echo
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, threads $THREADS; $(date -u '+%Y-%m-%d %H:%M UTC')"
if [ "$PYTORCH" = 1 ]; then
  echo "PyTorch: $("$PYTHON" -c 'import torch; print(torch.__version__)') eager static PTQ, quantized engine $engine${ONEDNN_MAX_CPU_ISA:+, ONEDNN_MAX_CPU_ISA=$ONEDNN_MAX_CPU_ISA}"
fi
