#!/bin/bash
# Issue 10's check of the advisor: for each seed network, `retrograd advise` predicts the steps/s
# of the setting it recommends (from a study's measurements); then a run that follows the advice
# (its exact options, --epochs EPOCHS --limit LIMIT so it takes a few seconds) measures its steps/s
# (the median epoch, as the study does), REPEATS times. Prints a Markdown table: predicted,
# measured median, their ratio, within 25% or not. Target: every ratio in [0.75, 1.25].
#
#   bash bench/advise_check.sh                # a fresh quick study first, into $OUT/study
#   STUDY=retrograd-study/study.json bash bench/advise_check.sh   # advice from an existing study
#   MEM_BUDGET=96M bash bench/advise_check.sh # the advice under a memory budget
# env: BIN (build/retrograd)  MODELS (mlp autoencoder lenet rcnn dcgan)  EPOCHS (3)  SECONDS_PER_RUN (3)
#      REPEATS (3)  STUDY (a study.json; default: run one)  MEM_BUDGET  OUT (temp folder)  DATA
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
BIN=${BIN:-build/retrograd}
MODELS=${MODELS:-mlp autoencoder lenet rcnn dcgan}
EPOCHS=${EPOCHS:-3}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-3}
REPEATS=${REPEATS:-3}
OUT=${OUT:-$(mktemp -d /tmp/advise-check.XXXXXX)}
DATA_ARGS=()
[ -n "${DATA:-}" ] && DATA_ARGS=(--data "$DATA")
mkdir -p "$OUT"
if [ -z "${STUDY:-}" ]; then
  nets=$(echo "$MODELS" | tr ' ' ',')
  echo "a quick study of $nets into $OUT/study (speeds, batch sizes, threads; no sweeps)" >&2
  "$BIN" study --quick --networks "$nets" --parts devices,batch-speed,threads --isa-ladder none \
    "${DATA_ARGS[@]}" --out "$OUT/study" > "$OUT/study.log" 2>&1 || { tail -5 "$OUT/study.log"; exit 1; }
  STUDY=$OUT/study/study.json
fi
echo "| network | advice | predicted steps/s | measured steps/s (median of $REPEATS) | measured / predicted | within 25% |"
echo "|---|---|---:|---:|---:|---|"
failures=0
for model in $MODELS; do
  budget=()
  [ -n "${MEM_BUDGET:-}" ] && budget=(--mem-budget "$MEM_BUDGET")
  if ! "$BIN" advise --model "$model" --study "$STUDY" "${budget[@]}" --json "$OUT/advice-$model.json" \
      > "$OUT/advice-$model.log" 2>&1; then
    echo "| $model | advise failed: $(tail -1 "$OUT/advice-$model.log") | | | | no |"
    failures=$((failures + 1))
    continue
  fi
  # The advice's options, and a sample count per epoch sized from its predicted speed.
  read -r predicted options limit < <(python3 - "$OUT/advice-$model.json" "$SECONDS_PER_RUN" "$EPOCHS" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
seconds, epochs = float(sys.argv[2]), int(sys.argv[3])
per_epoch = max(3 * a["batch"], int(a["predicted_samples_per_s"] * seconds / epochs) // a["batch"] * a["batch"])
print(a["predicted_steps_per_s"], " ".join(a["command"]).replace(" ", "\x1f"), per_epoch)
PY
)
  IFS=$'\x1f' read -r -a advice_args <<< "$options"
  rates=()
  for r in $(seq 1 "$REPEATS"); do
    json=$OUT/run-$model-$r.json
    extra=()
    [ "$model" = dcgan ] && extra=(--score-samples 0 --out "$OUT/gan-$model-$r")
    if ! "$BIN" train "${advice_args[@]}" "${DATA_ARGS[@]}" --epochs "$EPOCHS" --limit "$limit" "${extra[@]}" \
        --json "$json" > "$OUT/run-$model-$r.log" 2>&1; then
      rates+=("failed")
      continue
    fi
    rates+=("$(python3 -c "
import json, statistics, sys
d = json.load(open(sys.argv[1]))
print(statistics.median(e['samples_per_s'] for e in d['history']) / d['batch'])" "$json")")
  done
  python3 - "$model" "$predicted" "${advice_args[*]}" "${rates[@]}" <<'PY'
import statistics, sys
model, predicted, advice, rates = sys.argv[1], float(sys.argv[2]), sys.argv[3], sys.argv[4:]
ok = [float(r) for r in rates if r != "failed"]
if not ok:
    print(f"| {model} | `{advice}` | {predicted:.1f} | every run failed | | no |")
    sys.exit(1)
measured = statistics.median(ok)
ratio = measured / predicted
print(f"| {model} | `{advice}` | {predicted:.1f} | {measured:.1f} ({', '.join(f'{r:.1f}' for r in ok)}) | {ratio:.2f} | {'yes' if 0.75 <= ratio <= 1.25 else 'no'} |")
sys.exit(0 if 0.75 <= ratio <= 1.25 else 1)
PY
  [ $? -eq 0 ] || failures=$((failures + 1))
done
echo
echo "$failures of $(echo "$MODELS" | wc -w) networks outside 25% (logs in $OUT)"
[ "$failures" -eq 0 ]
