#!/bin/bash
# Subnormal floats and speed (issue 30): the mlp trained at a small and a large learning rate,
# with --denormals flush (FTZ/DAZ, the default) and keep. On Intel x86, where subnormal
# operands take microcode assists, keep should slow down at the large rate (its softmax
# probabilities and gradients underflow as the logits grow) and flush should not; on AMD Zen
# neither should. Rounds interleave the four cells (flush/keep x the rates), the mode first in
# a round alternating, so a slow minute falls on all of them. Each run's figure: the last
# epoch's samples/s from --json (the first warms caches; by the last the logits have grown).
# Prints a Markdown table: each cell's runs and median, and per mode the ratio of the large
# rate's median to the small one's (1.0: no slowdown).
#   BIN=build/retrograd REPEATS=3 bash bench/denormals.sh
# env: BIN (build/retrograd)  REPEATS (3)  LRS (0.001 0.07)  SEED (1)  EPOCHS (3)
#      THREADS (empty: all logical CPUs)  DATA (empty: train's default, Fashion-MNIST)  OUT (temp folder)
set -uo pipefail
BIN=${BIN:-build/retrograd}
REPEATS=${REPEATS:-3}
LRS=${LRS:-0.001 0.07}
SEED=${SEED:-1}
EPOCHS=${EPOCHS:-3}
THREADS=${THREADS:-}
DATA=${DATA:-}
OUT=${OUT:-$(mktemp -d /tmp/denormals.XXXXXX)}
mkdir -p "$OUT"
[ -x "$BIN" ] || { echo "denormals.sh: BIN=$BIN is not an executable retrograd" >&2; exit 2; }
extra=()
[ -n "$THREADS" ] && extra+=(--threads "$THREADS")
[ -n "$DATA" ] && extra+=(--data "$DATA")

for round in $(seq "$REPEATS"); do
  modes="flush keep"
  [ $((round % 2)) -eq 0 ] && modes="keep flush"
  for mode in $modes; do
    for lr in $LRS; do
      run="$OUT/$mode-$lr-$round"
      "$BIN" train --model mlp --epochs "$EPOCHS" --lr "$lr" --val-split 0.1 --seed "$SEED" --denormals "$mode" \
        "${extra[@]}" --json "$run.json" >"$run.log" 2>&1 ||
        echo "$mode lr $lr round $round failed: $(tail -1 "$run.log")"
    done
  done
done

python3 - "$OUT" "$REPEATS" "$LRS" <<'PY'
import json, statistics, sys
out, repeats, lrs = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()


def run(mode, lr, r):
    """(last epoch's samples/s, test accuracy, the mode the report records), or None."""
    try:
        report = json.load(open(f"{out}/{mode}-{lr}-{r}.json"))
        return report["history"][-1]["samples_per_s"], report["test_accuracy"], report["denormals"]
    except (OSError, KeyError, IndexError, ValueError):
        return None


print(f"runs in {out}; samples/s of the last epoch, {repeats} interleaved rounds")
print()
print("| denormals | lr | samples/s (each round) | median samples/s | median test accuracy |")
print("|---|---|---|---|---|")
medians = {}
for mode in ("flush", "keep"):
    for lr in lrs:
        ok = [x for x in (run(mode, lr, r) for r in range(1, repeats + 1)) if x is not None]
        wrong = [x[2] for x in ok if x[2] != mode]
        if wrong:
            sys.exit(f"denormals.sh: a {mode} run's report says denormals {wrong[0]}: is BIN older than --denormals?")
        if not ok:
            print(f"| {mode} | {lr} | not measured (see {out}) | | |")
            continue
        medians[mode, lr] = statistics.median(x[0] for x in ok)
        each = " ".join(f"{x[0]:.0f}" for x in ok)
        print(f"| {mode} | {lr} | {each} | {medians[mode, lr]:.0f} | {statistics.median(x[1] for x in ok):.4f} |")
print()
low, high = lrs[0], lrs[-1]
for mode in ("flush", "keep"):
    if (mode, low) in medians and (mode, high) in medians:
        print(f"{mode}: lr {high} / lr {low} = {medians[mode, high] / medians[mode, low]:.3f}")
PY
