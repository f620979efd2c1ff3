#!/bin/bash
# Test accuracy of every precision against fp32, over several seeds, beside a noise floor
# (issue 6's accuracy targets on Fashion-MNIST: int8 PTQ within 0.5 points of fp32, QAT within
# 0.3, int8 training within 1.5, fp16 mixed-precision training within 0.3).
#
# For each model and seed it runs
#   retrograd precision --model M --epochs E --seed S --threads T \
#       --precision fp32,fp16,int8,int8-qat,int8-train --json ...
# and reads each row's test_accuracy. fp16, int8-qat and int8-train train the model again from
# the same seed, and a network trained again along a slightly different path ends somewhere
# else: one seed's change mixes what the precision costs with that chaos. As a noise floor it
# trains the same fp32 recipe once more with RETROGRAD_ISA=sse2 (`retrograd train`, same model,
# epochs, seed and threads): the sse2 kernels compute the same sums without FMA, so only the
# last bits of float rounding differ, and the change of that run against the default-ISA fp32
# run is how far two runs of one recipe drift apart from rounding alone.
#
# Output: a Markdown table per model (seed | fp32 | each precision and its change in points |
# fp32 with sse2 rounding and its change), the mean change over seeds, its standard deviation,
# the largest |change|, then one pass/fail line per target, judged on the mean change over
# seeds, with each single seed's verdict beside it.
#
# Usage: bash bench/precision_accuracy.sh [--markdown] [--report-only]
#   --markdown     only the tables on stdout (progress goes to stderr)
#   --report-only  run nothing: print the tables from the JSON files already in OUT
# env: MODELS  (default "mlp lenet cnn")      SEEDS (default "1 2 3")
#      EPOCHS  (all models) or EPOCHS_<model> (default mlp 5, lenet 5, cnn 3, others 5)
#      THREADS (default 2)   BIN (default build/retrograd, relative to the repository root)
#      OUT     the results folder: every run's JSON and log (default: a new temp folder,
#              printed at the end). A run whose JSON is already there, for the same model,
#              seed and epochs, is not run again, so an interrupted run continues.
#      EXTRA   more options passed to both commands (e.g. "--limit 2000" for a quick test)
#      PRECISIONS  the rows (default fp32,fp16,int8,int8-qat,int8-train; fp32 first); issue 34's
#              fixed-point rows, e.g. fp32,w16a16g16-sr,w16a16g16-rn,w16a16g16-sr-fl14-sw,
#              w16a16g16-rn-fl14-sw (use a fresh OUT for another list: finished runs are reused)
# If stopped (Ctrl-C, kill), it prints the tables for the runs that finished.
set -uo pipefail
caller_dir=$PWD
cd "$(dirname "$0")/.." || exit 1

MODELS=${MODELS:-mlp lenet cnn}
SEEDS=${SEEDS:-1 2 3}
THREADS=${THREADS:-2}
BIN=${BIN:-build/retrograd}
EXTRA=${EXTRA:-}
PRECISIONS=${PRECISIONS:-fp32,fp16,int8,int8-qat,int8-train}
markdown=0
report_only=0
for arg in "$@"; do
  case $arg in
    --markdown) markdown=1 ;;
    --report-only) report_only=1 ;;
    *) echo "usage: bash bench/precision_accuracy.sh [--markdown] [--report-only]" >&2; exit 2 ;;
  esac
done
if [ -n "${OUT:-}" ]; then
  case $OUT in /*) ;; *) OUT=$caller_dir/$OUT ;; esac
else
  OUT=$(mktemp -d /tmp/precision_accuracy.XXXXXX)
fi
mkdir -p "$OUT"

say() { if [ "$markdown" = 1 ]; then echo "$@" >&2; else echo "$@"; fi; }

epochs_for() {
  local m=$1 var
  if [ -n "${EPOCHS:-}" ]; then echo "$EPOCHS"; return; fi
  var=EPOCHS_${m//[^A-Za-z0-9_]/_}
  if [ -n "${!var:-}" ]; then echo "${!var}"; return; fi
  case $m in cnn) echo 3 ;; *) echo 5 ;; esac
}

# A JSON from an earlier run counts only if it is for the same model, seed and epochs.
json_ok() {  # file model seed epochs
  [ -s "$1" ] && python3 - "$@" <<'PY'
import json, sys
f, model, seed, epochs = sys.argv[1:5]
try:
    d = json.load(open(f))
except Exception:
    sys.exit(1)
ok = d.get("model") == model and str(d.get("seed")) == seed and str(d.get("epochs")) == epochs
sys.exit(0 if ok and "test_accuracy" in d else 1)
PY
}

report() {
  # The run plan goes to the reporter as "model epochs" lines; it reads whatever JSON exists.
  local plan=""
  for m in $MODELS; do plan+="$m $(epochs_for "$m")"$'\n'; done
  PLAN=$plan SEEDS=$SEEDS PRECISIONS=$PRECISIONS python3 - "$OUT" <<'PY'
import json, math, os, sys
out = sys.argv[1]
seeds = os.environ["SEEDS"].split()
plan = [l.split() for l in os.environ["PLAN"].splitlines() if l.strip()]
names = {"int8": "int8 PTQ"}
cols = [(p, names.get(p, p)) for p in os.environ["PRECISIONS"].split(",") if p != "fp32"]
cols.append(("sse2", "fp32 with sse2 rounding"))
# Issue 6's targets, and issue 34's: 16-bit fixed point with stochastic rounding within 0.3 points.
known_targets = [("int8", "int8 PTQ", 0.5), ("int8-qat", "int8-qat (QAT)", 0.3),
                 ("int8-train", "int8-train", 1.5), ("fp16", "fp16 mixed precision", 0.3),
                 ("w16a16g16-sr", "w16a16g16-sr (16-bit fixed point, stochastic)", 0.3),
                 ("w16a16g16-sr-fl14-sw", "w16a16g16-sr-fl14-sw (static 16-bit, stored weights)", 0.3)]
targets = [t for t in known_targets if any(t[0] == k for k, _ in cols)]

def load(path):
    try:
        return json.load(open(path))
    except Exception:
        return None

def fmt_change(c):
    return "%+.2f" % c

for model, epochs in plan:
    acc = {}      # seed -> {column: accuracy}
    notes = []
    for s in seeds:
        row = {}
        p = load(os.path.join(out, "%s-seed%s-precision.json" % (model, s)))
        if p:
            for r in p.get("precisions", []):
                if "test_accuracy" in r:
                    row[r["precision"]] = r["test_accuracy"]
                if r["precision"] == "fp16":   # its loss scale at the end and steps skipped
                    notes.append("seed %s: %s" % (s, r.get("what_ran", "").split("; ", 1)[-1]))
        t = load(os.path.join(out, "%s-seed%s-fp32-sse2.json" % (model, s)))
        if t and "test_accuracy" in t:
            row["sse2"] = t["test_accuracy"]
        if row:
            acc[s] = row
    print("### %s, %s epochs" % (model, epochs))
    print()
    if not acc:
        print("(no run finished)")
        print()
        continue
    print("| seed | fp32 | " + " | ".join("%s (change)" % name for _, name in cols) + " |")
    print("|---:|---:|" + "---:|" * len(cols))
    changes = {k: [] for k, _ in cols}   # (seed, change) per column
    for s in seeds:
        if s not in acc:
            continue
        row = acc[s]
        f = row.get("fp32")
        cells = ["%s" % s, "%.4f" % f if f is not None else "-"]
        for k, _ in cols:
            a = row.get(k)
            if a is None:
                cells.append("-")
            elif f is None:
                cells.append("%.4f" % a)
            else:
                c = (a - f) * 100.0
                changes[k].append((s, c))
                cells.append("%.4f (%s)" % (a, fmt_change(c)))
        print("| " + " | ".join(cells) + " |")
    def stat_row(label, fn):
        cells = []
        for k, _ in cols:
            v = [c for _, c in changes[k]]
            cells.append(fn(v) if v else "-")
        print("| %s | | " % label + " | ".join(cells) + " |")
    stat_row("mean change over seeds", lambda v: fmt_change(sum(v) / len(v)))
    stat_row("sd of change over seeds", lambda v: "%.2f" % math.sqrt(
        sum((x - sum(v) / len(v)) ** 2 for x in v) / (len(v) - 1)) if len(v) > 1 else "-")
    stat_row("max \\|change\\|", lambda v: "%.2f" % max(abs(x) for x in v))
    print()
    floor = [c for _, c in changes["sse2"]]
    floor_txt = ("noise floor (sse2 rounding): mean %s, max |change| %.2f over %d seed(s)"
                 % (fmt_change(sum(floor) / len(floor)), max(abs(x) for x in floor), len(floor))
                 if floor else "noise floor (sse2 rounding): not measured")
    for k, name, lim in targets:
        v = changes[k]
        if not v:
            print("- %s: no runs" % name)
            continue
        mean = sum(c for _, c in v) / len(v)
        verdict = "PASS" if abs(mean) <= lim else "FAIL"
        singles = ", ".join("seed %s %s %s" % (s, fmt_change(c), "within" if abs(c) <= lim else "OUTSIDE")
                            for s, c in v)
        print("- %s, target |mean change| <= %.1f: mean %s over %d seed(s): **%s**; single seeds: %s"
              % (name, lim, fmt_change(mean), len(v), verdict, singles))
    print("- " + floor_txt)
    f32 = [acc[s]["fp32"] for s in seeds if s in acc and "fp32" in acc[s]]
    if len(f32) > 1:
        print("- fp32 from seed to seed: mean %.4f, %.4f to %.4f (a spread of %.2f points)"
              % (sum(f32) / len(f32), min(f32), max(f32), (max(f32) - min(f32)) * 100.0))
    if notes:
        print("- fp16 runs: " + "; ".join(notes))
    missing = [s for s in seeds if s not in acc or len(acc[s]) < len(cols) + 1]
    if missing:
        print("- incomplete seeds (a run did not finish or failed): " + " ".join(missing))
    print()
PY
}

finish() {
  say ""
  say "results folder (JSON and logs of every run): $OUT"
}

if [ "$report_only" = 1 ]; then
  report
  finish
  exit 0
fi

[ -x "$BIN" ] || { echo "no binary at $BIN (set BIN, or build first)" >&2; exit 1; }
start=$(date +%s)
isa_line=$("$BIN" probe 2>&1 | grep -m1 '^isa' || true)
sse2_line=$(RETROGRAD_ISA=sse2 "$BIN" probe 2>&1 | grep -m1 '^isa' || true)
"$BIN" probe > "$OUT/probe.txt" 2>&1 || true
say "binary $BIN; default $isa_line; with RETROGRAD_ISA=sse2: $sse2_line"
case $isa_line in
  *"chosen avx2"*) ;;
  *) say "note: this CPU's default ISA is not avx2 ($isa_line): the fp32 column runs at that level" ;;
esac
say "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) CPUs, threads $THREADS; $(date -u '+%Y-%m-%d %H:%M UTC')"

trap 'say ""; say "stopped: the tables below hold the runs that finished"; report; finish; exit 130' INT TERM

failures=0
for model in $MODELS; do
  epochs=$(epochs_for "$model")
  for seed in $SEEDS; do
    base=$OUT/$model-seed$seed
    if json_ok "$base-precision.json" "$model" "$seed" "$epochs"; then
      say "$model seed $seed: precision run already in $OUT, kept"
    else
      say "$(date -u +%H:%M:%S) $model seed $seed: retrograd precision ($epochs epochs)"
      t0=$(date +%s)
      # shellcheck disable=SC2086  # EXTRA is a list of options
      "$BIN" precision --model "$model" --epochs "$epochs" --seed "$seed" --threads "$THREADS" \
        --precision "$PRECISIONS" --json "$base-precision.json" $EXTRA > "$base-precision.log" 2>&1
      rc=$?
      if [ "$rc" != 0 ]; then
        say "  FAILED (exit $rc): see $base-precision.log"; failures=$((failures + 1))
      else
        say "  done in $(( $(date +%s) - t0 )) s"
      fi
    fi
    if json_ok "$base-fp32-sse2.json" "$model" "$seed" "$epochs"; then
      say "$model seed $seed: sse2 fp32 run already in $OUT, kept"
    else
      say "$(date -u +%H:%M:%S) $model seed $seed: RETROGRAD_ISA=sse2 retrograd train ($epochs epochs)"
      t0=$(date +%s)
      # shellcheck disable=SC2086
      RETROGRAD_ISA=sse2 "$BIN" train --model "$model" --epochs "$epochs" --seed "$seed" \
        --threads "$THREADS" --json "$base-fp32-sse2.json" $EXTRA > "$base-fp32-sse2.log" 2>&1
      rc=$?
      if [ "$rc" != 0 ]; then
        say "  FAILED (exit $rc): see $base-fp32-sse2.log"; failures=$((failures + 1))
      else
        say "  done in $(( $(date +%s) - t0 )) s"
      fi
    fi
  done
done
trap - INT TERM

say ""
say "wall time $(( $(date +%s) - start )) s; ${failures} failed run(s)"
say ""
report
finish
[ "$failures" = 0 ]
