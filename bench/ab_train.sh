#!/bin/bash
# Two builds of retrograd side by side: `train` of each model, the builds run alternately for
# ROUNDS rounds, A first in odd rounds and B first in even ones (so a noisy machine's drift and
# a warming device fall on both), the second of two epochs' samples/s
# (the first builds kernels and warms caches) from --json. Prints a Markdown table: each run,
# the medians, B / A. For a change's cost: A the commit before it, B the commit with it.
#   BIN_A=old/retrograd BIN_B=new/retrograd DEVICE=cl:0:0 DATA=fashion-mnist bash bench/ab_train.sh
# env: MODELS (mlp lenet)  BATCH (64)  STEPS (200 a epoch)  ROUNDS (5)  DEVICE (empty: the CPU)
#      DATA (synthetic)  THREADS (2)  OUT (temp folder)
set -uo pipefail
: "${BIN_A:?BIN_A: the first build's retrograd}" "${BIN_B:?BIN_B: the second build's retrograd}"
MODELS=${MODELS:-mlp lenet}
BATCH=${BATCH:-64}
STEPS=${STEPS:-200}
ROUNDS=${ROUNDS:-5}
DEVICE=${DEVICE:-}
DATA=${DATA:-synthetic}
THREADS=${THREADS:-2}
OUT=${OUT:-$(mktemp -d /tmp/ab-train.XXXXXX)}
mkdir -p "$OUT"
device=()
[ -n "$DEVICE" ] && device=(--device "$DEVICE")

for round in $(seq "$ROUNDS"); do
  order="A B"
  [ $((round % 2)) -eq 0 ] && order="B A"  # whichever runs first in a round, half the time each
  for model in $MODELS; do
    for build in $order; do
      bin=BIN_$build
      "${!bin}" train --model "$model" --data "$DATA" --epochs 2 --batch "$BATCH" --limit $((STEPS * BATCH)) \
        --threads "$THREADS" "${device[@]}" --json "$OUT/$model-$build-$round.json" >"$OUT/$model-$build-$round.log" 2>&1 ||
        echo "$build $model round $round failed: $(tail -1 "$OUT/$model-$build-$round.log")"
    done
  done
done

python3 - "$OUT" "$ROUNDS" "$MODELS" <<'PY'
import json, statistics, sys
out, rounds, models = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()


def speed(model, build, r):
    try:
        return json.load(open(f"{out}/{model}-{build}-{r}.json"))["history"][1]["samples_per_s"]
    except (OSError, KeyError, IndexError, ValueError):
        return None


print("| model | A: samples/s | B: samples/s | median A | median B | B / A |")
print("|---|---|---|---|---|---|")
for model in models:
    runs = {b: [speed(model, b, r) for r in range(1, rounds + 1)] for b in "AB"}
    ok = {b: [v for v in runs[b] if v is not None] for b in "AB"}
    if not ok["A"] or not ok["B"]:
        print(f"| {model} | not measured (see {out}) | | | | |")
        continue
    med = {b: statistics.median(ok[b]) for b in "AB"}
    cells = {b: " ".join(f"{v:.0f}" for v in ok[b]) for b in "AB"}
    print(f"| {model} | {cells['A']} | {cells['B']} | {med['A']:.0f} | {med['B']:.0f} | {med['B'] / med['A']:.3f} |")
PY
