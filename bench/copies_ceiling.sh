#!/bin/bash
# The machine's own ceiling on a training step's parallel efficiency, measured with the step
# itself: K independent 1-thread training runs of one preset at once, each pinned to its own CPU,
# against one run alone on the first of those CPUs. The copies share nothing but the machine (its
# caches, its memory, the host's other tenants), so their summed samples/s over K times the lone
# run's is what any program's K threads could reach on that work there; a threaded run's
# efficiency below it is ours to win, at it the machine's (issue 32's 4-thread point).
# Rounds alternate lone-first and copies-first; samples/s of the second epoch (from --json).
#   BIN=build/retrograd MODEL=lenet CPUS="3 4 5 6" ROUNDS=3 bash bench/copies_ceiling.sh
# env: BIN (build/retrograd)  MODEL (lenet)  CPUS (the copies' CPUs, default "0 1")  ROUNDS (3)
#      LIMIT (samples an epoch: 3840, cnn 640, rcnn 320; others 3840)  DATA (synthetic)
# The runs' JSON and logs go to a new temp folder (its path printed). A bad setting, or a run that
# fails (its last line shown), ends the script with exit 2.
set -uo pipefail
BIN=${BIN:-build/retrograd}
MODEL=${MODEL:-lenet}
read -r -a CPU_LIST <<<"${CPUS:-0 1}"
ROUNDS=${ROUNDS:-3}
DATA=${DATA:-synthetic}
case "$MODEL" in cnn) default_limit=640 ;; rcnn) default_limit=320 ;; *) default_limit=3840 ;; esac
LIMIT=${LIMIT:-$default_limit}
fail() { echo "copies_ceiling.sh: $*" >&2; exit 2; }
[[ -x "$BIN" && -f "$BIN" ]] || fail "BIN '$BIN' is not an executable file"
[[ "$ROUNDS" =~ ^[1-9][0-9]{0,2}$ ]] || fail "ROUNDS '$ROUNDS': a whole number from 1 to 999"
[[ "$LIMIT" =~ ^[1-9][0-9]{0,8}$ ]] || fail "LIMIT '$LIMIT': a whole number of samples from 1"
(( ${#CPU_LIST[@]} >= 2 )) || fail "CPUS '${CPUS:-}': two CPUs or more"
for cpu in "${CPU_LIST[@]}"; do
  [[ "$cpu" =~ ^[0-9]{1,4}$ ]] && taskset -c "$cpu" true 2>/dev/null || fail "CPUS: '$cpu' is not a CPU this process may run on"
done
[[ $(printf '%s\n' "${CPU_LIST[@]}" | sort -u | wc -l) == "${#CPU_LIST[@]}" ]] || fail "CPUS '${CPUS:-}': a CPU twice"
OUT=$(mktemp -d /tmp/copies-ceiling.XXXXXX) || fail "no temp folder"
echo "runs in $OUT"

run_one() {  # $1 CPU, $2 the JSON file; a failed run ends the script
  taskset -c "$1" "$BIN" train --model "$MODEL" --data "$DATA" --epochs 2 --limit "$LIMIT" --test-limit 64 \
    --threads 1 --json "$2" >"$2.log" 2>&1 && [[ -s "$2" ]] || fail "a run of $MODEL failed: $(tail -1 "$2.log")"
}
lone() { run_one "${CPU_LIST[0]}" "$OUT/lone-$1.json"; }
copies() {
  local i pids=()
  for i in "${!CPU_LIST[@]}"; do
    run_one "${CPU_LIST[$i]}" "$OUT/copies-$1-$i.json" &
    pids+=($!)
  done
  for i in "${pids[@]}"; do wait "$i" || exit 2; done
}

for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2)); then lone "$r"; copies "$r"; else copies "$r"; lone "$r"; fi
done

python3 - "$OUT" "$ROUNDS" "${#CPU_LIST[@]}" "$MODEL" <<'EOF'
import glob, json, statistics, sys
out, rounds, k, model = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
def speed(path):
    return json.load(open(path))["history"][1]["samples_per_s"]
print(f"{model}, {k} copies of a 1-thread run against one alone, samples/s of the second epoch")
print("| round | alone | each copy | copies' sum | efficiency (sum / k alone) |")
print("|---:|---:|---|---:|---:|")
effs = []
for r in range(1, rounds + 1):
    alone = speed(f"{out}/lone-{r}.json")
    each = [speed(p) for p in sorted(glob.glob(f"{out}/copies-{r}-*.json"))]
    eff = sum(each) / (k * alone)
    effs.append(eff)
    print(f"| {r} | {alone:.0f} | {', '.join(f'{s:.0f}' for s in each)} | {sum(each):.0f} | {eff:.2f} |")
print(f"median efficiency {statistics.median(effs):.2f} (range {min(effs):.2f}-{max(effs):.2f})")
EOF
