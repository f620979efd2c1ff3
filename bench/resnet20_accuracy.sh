#!/bin/bash
# Issue 31's side-by-side: resnet20 trained by retrograd and by its PyTorch twin
# (bench/pytorch_presets.py --model resnet20: the same layers, inits and recipe) from seeds 1-3,
# the two interleaved (retrograd seed 1, PyTorch seed 1, retrograd seed 2, ...), the same epochs
# and data. Writes a Markdown table to $OUT/resnet20_accuracy.md (and stdout): each seed's fp32
# test accuracy on both sides, their means, the difference in points (acceptance: within 0.5), and
# seconds per epoch on both sides.
#
#   bash bench/resnet20_accuracy.sh                          # CPU: retrograd --threads THREADS
#   DEVICE=cl:0:0 OCL_ICD_FILENAMES=libnvidia-opencl.so.1 BIN=bin/retrograd DATA=fashion-mnist \
#     bash bench/resnet20_accuracy.sh                        # GPU: retrograd --device, PyTorch cuda
#   bash bench/resnet20_accuracy.sh --table DIR...           # the table of runs already made (each
#                                                            # DIR an OUT of an earlier call)
# Graph models run on the OpenCL device in f32 (docs/layers.md), so DEVICE=cl:0:0 trains resnet20
# there; THREADS=16 TORCH_DEVICE=cuda trains retrograd on the GPU machine's CPU and the twin on the
# GPU instead. A full run there is about 186 MFLOP a sample
# (retrograd's train_flops_per_sample) x 60,000 x 5 epochs per seed on retrograd's side: one seed
# per call (SEEDS=1, then 2, then 3), then --table over the three OUT folders.
# The recipe is the preset's: resnet20 has no [train] section, so `retrograd train`'s defaults
# (SGD lr 0.01 momentum 0.9, no weight decay, constant rate, batch 64, 5 epochs); the script
# passes only --epochs and the seed, and the table refuses runs whose recipes differ (retrograd's
# from its JSON and its "training:" line, PyTorch's from pytorch_presets.py's PRESETS row).
# env: EPOCHS (5: the preset's)  SEEDS (1 2 3)  THREADS (all cores; both sides' CPU threads)
#      DEVICE (empty: the CPU; cl:P:D: retrograd on that OpenCL device)
#      TORCH_DEVICE (cpu, or cuda when DEVICE is set)  BIN (build/retrograd)
#      PYTHON (python3; one with torch: on the VM /usr/bin/python3 with python3-torch)
#      DATA (empty: /usr/share/datasets/fashion-mnist where it is there, else a folder generated
#            by `retrograd make-data` under $OUT, which the table says)
#      LIMIT / TEST_LIMIT (0: all; the first N training / test samples, for quick checks)
#      SIDES (retrograd pytorch)  OUT (a temp folder)
#      TRAIN_PRECISION (fp32: retrograd's --train-precision; fp16 or int8-train trains the same recipe in
#                       that precision: the table then compares that precision with PyTorch's fp32)
#      PRECISIONS (empty: `retrograd train`; else `retrograd precision --precision PRECISIONS`, e.g.
#                  fp32,int8,int8-qat: the fp32 run the table reads, and its int8 rows in the same JSON)
#      CHECKPOINTS (0; 1: retrograd writes $OUT/rg-seedS.ckpt after each epoch and, when that file is
#                   there from an earlier call, resumes from it: a run cut short continues)
#      STOP_AFTER (empty; N: retrograd stops after epoch N, its checkpoint kept for a later call: with
#                  CHECKPOINTS=1, a precision run split so that no call ends inside its int8-qat epochs,
#                  which rerun the fp32 run's last epochs from a state kept in memory only)
#      RECIPE (empty: the preset's; else options given to both sides, the same names on both:
#              --lr --momentum --weight-decay --schedule --step-epochs --gamma --lr-min --batch,
#              e.g. RECIPE="--schedule cosine"; the table says the settings are not the preset's)
# Exits 2 when a setting or folder is refused (nothing run), 1 when a run or the table fails.
set -uo pipefail
die() { echo "resnet20_accuracy.sh: $*" >&2; exit 1; }
refuse() { echo "resnet20_accuracy.sh: $*" >&2; exit 2; }  # a setting refused: nothing ran
cd "$(dirname "$0")/.." || exit 1
EPOCHS=${EPOCHS:-5}
SEEDS=${SEEDS:-1 2 3}
THREADS=${THREADS:-$(nproc)}
DEVICE=${DEVICE:-}
TORCH_DEVICE=${TORCH_DEVICE:-$([ -n "$DEVICE" ] && echo cuda || echo cpu)}
BIN=${BIN:-build/retrograd}
PYTHON=${PYTHON:-python3}
DATA=${DATA:-}
LIMIT=${LIMIT:-0}
TEST_LIMIT=${TEST_LIMIT:-0}
SIDES=${SIDES:-retrograd pytorch}
RECIPE=${RECIPE:-}
TRAIN_PRECISION=${TRAIN_PRECISION:-fp32}
PRECISIONS=${PRECISIONS:-}
CHECKPOINTS=${CHECKPOINTS:-0}
STOP_AFTER=${STOP_AFTER:-}
FASHION=/usr/share/datasets/fashion-mnist
IDX_FILES="train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte"

# The table of the runs in the given folders (rg-seedS.json/.log, pt-seedS.json, data.txt).
table() {
  python3 - "$@" <<'PY'
import json, math, os, re, statistics, sys
dirs = sys.argv[1:]
runs, data, extra = {}, set(), set()
for d in dirs:
    try:
        data.add(open(os.path.join(d, "data.txt")).read().strip())
        extra.add(open(os.path.join(d, "recipe.txt")).read().strip())
    except OSError as e:
        sys.exit("resnet20_accuracy.sh --table: %s: not a folder this script wrote (%s)" % (d, e))
    for name in sorted(os.listdir(d)):
        m = re.fullmatch(r"(rg|pt)-seed(\d+)\.json", name)
        if not m:
            continue
        side, seed = m.group(1), int(m.group(2))
        text = open(os.path.join(d, name)).read().strip()
        try:  # PyTorch's stdout: its JSON is the last line
            r = json.loads(text if side == "rg" else text.splitlines()[-1])
        except (ValueError, IndexError) as e:
            sys.exit("%s/%s: no JSON (%s); see the .log beside it" % (d, name, e))
        if side == "rg":
            log = open(os.path.join(d, "rg-seed%d.log" % seed)).read()
            line = re.search(r"^training: .*$", log, re.M)
            r["training_line"] = line.group(0) if line else ""
        if (side, seed) in runs:
            sys.exit("%s seed %d is in more than one folder" % (side, seed))
        runs[(side, seed)] = r
if not runs:
    sys.exit("resnet20_accuracy.sh --table: no runs in %s" % " ".join(dirs))
if len(data) != 1:
    sys.exit("the folders hold runs on different data: %s" % "; ".join(sorted(data)))
data = data.pop()
if len(extra) != 1:
    sys.exit("the folders hold runs with different RECIPE options: %s" % "; ".join(sorted(extra)))
extra = extra.pop()


def same(key):
    values = {json.dumps(r.get(key)) for r in runs.values()}
    if len(values) != 1:
        sys.exit("the runs differ in %s: %s" % (key, ", ".join(sorted(values))))
    return next(iter(runs.values())).get(key)


epochs, batch, train_n, test_n = same("epochs"), same("batch"), same("train_samples"), same("test_samples")
params = {s: r["parameters"] for (s, _), r in runs.items()}


def recipe(side, r):
    """(optimizer, lr, momentum, weight decay, schedule, its parameters) of one run, in numbers."""
    if side == "pt":
        sched = {"step": (r["gamma"], r["step_epochs"]), "cosine": (r["lr_min"],)}.get(r["schedule"], ())
        return (r["optimizer"], r["lr"], r["momentum"], r["weight_decay"], r["schedule"], sched)
    line = r["training_line"]  # retrograd's "training:" line: the JSON lacks momentum and the rest

    def number(pattern, default=0.0):
        m = re.search(pattern, line)
        return float(m.group(1)) if m else default
    sched = {"step": (number(r"x([0-9.e+-]+) every"), int(number(r"every (\d+) epochs"))),
             "cosine": (number(r"cosine to ([0-9.e+-]+)"),)}.get(r["schedule"], ())
    momentum = number(r"momentum ([0-9.e+-]+)") if r["optimizer"] == "sgd" else 0.0
    return (r["optimizer"], r["lr"], momentum, number(r"weight decay ([0-9.e+-]+)"), r["schedule"], sched)


recipes = {}
for (side, seed), r in runs.items():
    done = r.get("epochs_done", r.get("epochs_run"))  # a resumed run ran only its last epochs itself
    if r.get("model") != "resnet20" or done != epochs:
        sys.exit("%s seed %d: model %r, %r of %r epochs done" % (side, seed, r.get("model"), done, epochs))
    recipes.setdefault(recipe(side, r), []).append("%s seed %d" % ({"rg": "retrograd", "pt": "PyTorch"}[side], seed))
if len(recipes) != 1:
    sys.exit("the runs' recipes differ (optimizer, lr, momentum, weight decay, schedule): " +
             "; ".join("%s: %s" % (", ".join(who), k) for k, who in recipes.items()))
if len(set(params.values())) != 1:
    sys.exit("parameter counts differ: %s" % params)

seeds = sorted({seed for _, seed in runs})
acc = {side: {seed: 100 * runs[(side, seed)]["test_accuracy"] for s, seed in runs if s == side} for side in ("rg", "pt")}
spe = {side: [h["seconds"] for (s, _), r in runs.items() if s == side for h in r["history"]] for side in ("rg", "pt")}
both = [seed for seed in seeds if seed in acc["rg"] and seed in acc["pt"]]


def cell(side, seed):
    return "%.2f" % acc[side][seed] if seed in acc[side] else "-"


def mean(side, which):
    v = [acc[side][s] for s in which if s in acc[side]]
    return statistics.mean(v) if v else None


def seconds(side):
    v = spe[side]
    return "%.1f (%.1f-%.1f)" % (statistics.median(v), min(v), max(v)) if v else "-"


rg_any = next((r for (s, _), r in runs.items() if s == "rg"), None)
pt_any = next((r for (s, _), r in runs.items() if s == "pt"), None)
rg_precisions = {r.get("train_precision") for (s, _), r in runs.items() if s == "rg"}
if len(rg_precisions) > 1:
    sys.exit("retrograd's runs trained in different precisions: %s" % ", ".join(sorted(map(str, rg_precisions))))
rg_precision = rg_precisions.pop() if rg_precisions else "fp32"
print("## resnet20 on %s: retrograd (%s) beside PyTorch (fp32), %d epoch%s, seed%s %s\n"
      % (data, rg_precision, epochs, "s"[:epochs != 1], "s"[:len(seeds) != 1], " ".join(map(str, seeds))))
if rg_any:  # retrograd's own words, up to the seed
    said = "retrograd's %s" % rg_any["training_line"].replace("training:", "").split(", seed")[0].strip()
else:
    said = "PyTorch's %s lr %g momentum %g, batch %d" % (pt_any["optimizer"], pt_any["lr"], pt_any["momentum"], batch)
print("- recipe (%s): %s; %d training and %d test samples; %d parameters"
      % ("RECIPE=" + extra if extra else "the preset's", said, train_n, test_n, next(iter(params.values()))))
if rg_any:
    print("- retrograd: %s, %d threads, %s" % (rg_any["device"], rg_any["threads"], rg_any.get("isa", "")))
if pt_any:
    print("- PyTorch %s: %s, %d threads" % (pt_any["torch_version"], pt_any["device"], pt_any["threads"]))
print()
print("| seed | retrograd test acc % | PyTorch test acc % | retrograd - PyTorch (points) |")
print("|---|---|---|---|")
for seed in seeds:
    d = "%+.2f" % (acc["rg"][seed] - acc["pt"][seed]) if seed in both else "-"
    print("| %d | %s | %s | %s |" % (seed, cell("rg", seed), cell("pt", seed), d))
mr, mp = mean("rg", seeds), mean("pt", seeds)
diff = mean("rg", both) - mean("pt", both) if both else None
print("| mean | %s | %s | %s |" % ("%.2f" % mr if mr is not None else "-", "%.2f" % mp if mp is not None else "-",
                                    "%+.2f" % diff if diff is not None else "-"))
print()
print("| seconds per epoch, median (min-max) of all epochs and seeds | retrograd | PyTorch |")
print("|---|---|---|")
print("| training only (no test pass) | %s | %s |" % (seconds("rg"), seconds("pt")))
print()
unlike = []
if "generated" in data or "fashion" not in data.lower():
    unlike.append("not Fashion-MNIST")
if train_n != 60000 or test_n != 10000:
    unlike.append("%d/%d samples, not 60000/10000" % (train_n, test_n))
if epochs != 5:
    unlike.append("%d epoch%s, not the preset's 5" % (epochs, "s"[:epochs != 1]))
if extra:
    unlike.append("RECIPE=%s, not the preset's recipe" % extra)
if rg_precision != "fp32":
    unlike.append("retrograd trained in %s, not fp32" % rg_precision)
if len(both) < 3:
    unlike.append("%d seed(s) on both sides, not 3" % len(both))
if diff is None:
    print("acceptance (mean difference within 0.5 points): not measured: no seed ran on both sides")
else:
    verdict = "within 0.5 points" if abs(diff) <= 0.5 else "NOT within 0.5 points"
    print("acceptance (mean difference within 0.5 points): %s (%+.2f)%s" % (verdict, diff, (
        "; not the acceptance settings (%s), so this says nothing about issue 31" % ", ".join(unlike)) if unlike else ""))
PY
}

if [[ "${1:-}" == "--table" ]]; then
  shift
  [[ $# -gt 0 ]] || refuse "--table needs the folders of earlier runs"
  table "$@"
  exit
fi
[[ $# -eq 0 ]] || refuse "unknown argument '$1' (usage: see the top of $0)"

# --- settings and data -------------------------------------------------------------------------
for v in EPOCHS THREADS; do [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || refuse "$v must be a positive integer (got '${!v}')"; done
for v in LIMIT TEST_LIMIT; do [[ "${!v}" =~ ^[0-9]+$ ]] || refuse "$v must be a whole number (got '${!v}')"; done
for s in $SEEDS; do [[ "$s" =~ ^[0-9]+$ ]] || refuse "SEEDS must be whole numbers (got '$s')"; done
[[ -n "${SEEDS// /}" ]] || refuse "SEEDS is empty"
for s in $SIDES; do [[ "$s" == retrograd || "$s" == pytorch ]] || refuse "SIDES: '$s' is neither retrograd nor pytorch"; done
[[ "$TORCH_DEVICE" == cpu || "$TORCH_DEVICE" == cuda ]] || refuse "TORCH_DEVICE must be cpu or cuda (got '$TORCH_DEVICE')"
[[ -x "$BIN" ]] || refuse "$BIN is not an executable retrograd (BIN=...; meson setup build --buildtype=release && ninja -C build)"
if [[ " $SIDES " == *" pytorch "* ]]; then
  version=$("$PYTHON" -c 'import torch; print(torch.__version__)' 2>&1) ||
    refuse "$PYTHON cannot import torch (PYTHON=...; on the VM /usr/bin/python3 with python3-torch): $(tail -1 <<<"$version")"
fi
OUT=${OUT:-$(mktemp -d /tmp/resnet20-accuracy.XXXXXX)}
mkdir -p "$OUT" || refuse "cannot make OUT=$OUT"

has_idx() { for f in $IDX_FILES; do [[ -f "$1/$f" || -f "$1/$f.gz" ]] || return 1; done; }
if [[ -n "$DATA" ]]; then
  has_idx "$DATA" || refuse "DATA=$DATA: not an MNIST-layout folder (needs $IDX_FILES, raw or .gz)"
  desc="$DATA"
  [[ "$DATA" == *fashion* ]] && desc="Fashion-MNIST ($DATA)"
elif has_idx "$FASHION"; then
  DATA=$FASHION desc="Fashion-MNIST ($FASHION)"
else
  DATA="$OUT/generated"
  train_n=60000 test_n=10000
  [[ "$LIMIT" -gt 0 ]] && train_n=$LIMIT
  [[ "$TEST_LIMIT" -gt 0 ]] && test_n=$TEST_LIMIT
  echo "resnet20_accuracy.sh: no Fashion-MNIST in $FASHION: generating $train_n + $test_n images in $DATA" >&2
  "$BIN" make-data --out "$DATA" --samples "$train_n" --test-samples "$test_n" --seed 1 >"$OUT/make-data.log" 2>&1 ||
    die "retrograd make-data failed: $(tail -1 "$OUT/make-data.log")"
  desc="generated data (retrograd make-data, ellipses in 10 classes; not Fashion-MNIST)"
fi
echo "$desc" >"$OUT/data.txt"
echo "$RECIPE" >"$OUT/recipe.txt"

limits=()
[[ "$LIMIT" -gt 0 ]] && limits+=(--limit "$LIMIT")
[[ "$TEST_LIMIT" -gt 0 ]] && limits+=(--test-limit "$TEST_LIMIT")
device=()
[[ -n "$DEVICE" ]] && device=(--device "$DEVICE")
read -ra recipe <<<"$RECIPE"  # options, one word each
[[ -z "$PRECISIONS" || "$TRAIN_PRECISION" == fp32 ]] ||
  refuse "PRECISIONS runs 'retrograd precision', which trains in fp32: drop TRAIN_PRECISION"
[[ "$CHECKPOINTS" == 0 || "$CHECKPOINTS" == 1 ]] || refuse "CHECKPOINTS must be 0 or 1 (got '$CHECKPOINTS')"
[[ -z "$STOP_AFTER" || "$STOP_AFTER" =~ ^[1-9][0-9]{0,5}$ ]] || refuse "STOP_AFTER must be an epoch number (got '$STOP_AFTER')"
[[ -z "$STOP_AFTER" ]] && stop=() || stop=(--stop-after "$STOP_AFTER")
# retrograd's command line for seed $1 past --data, --epochs, --threads and the rest, one word a line:
# the command, then what starts the run or, from its checkpoint, continues it (a resumed run takes
# the model, seed, precision and recipe from the checkpoint and may not be given them again).
retrograd_run() {
  local ckpt="$OUT/rg-seed$1.ckpt"
  if [[ -n "$PRECISIONS" ]]; then printf '%s\n' precision --precision "$PRECISIONS"; else echo train; fi
  if [[ "$CHECKPOINTS" == 1 && -f "$ckpt" ]]; then
    printf '%s\n' --resume "$ckpt" --checkpoint "$ckpt" --overwrite
    return
  fi
  printf '%s\n' --model resnet20 --seed "$1" "${recipe[@]}"
  [[ -z "$PRECISIONS" ]] && printf '%s\n' --train-precision "$TRAIN_PRECISION"
  [[ "$CHECKPOINTS" == 1 ]] && printf '%s\n' --checkpoint "$ckpt"
  return 0
}

# --- the runs, interleaved ---------------------------------------------------------------------
for seed in $SEEDS; do
  if [[ " $SIDES " == *" retrograd "* ]]; then
    mapfile -t run < <(retrograd_run "$seed")
    echo "[seed $seed] retrograd ${run[*]} --epochs $EPOCHS ${device[*]:+${device[*]} }--threads $THREADS" >&2
    "$BIN" "${run[@]}" --data "$DATA" --epochs "$EPOCHS" --threads "$THREADS" \
      "${device[@]}" "${limits[@]}" "${stop[@]}" --json "$OUT/rg-seed$seed.json" >"$OUT/rg-seed$seed.log" 2>&1 ||
      die "retrograd seed $seed failed: $(tail -3 "$OUT/rg-seed$seed.log")"
  fi
  if [[ " $SIDES " == *" pytorch "* ]]; then
    echo "[seed $seed] pytorch_presets.py --model resnet20 --epochs $EPOCHS --device $TORCH_DEVICE --threads $THREADS $RECIPE" >&2
    "$PYTHON" bench/pytorch_presets.py --model resnet20 --data "$DATA" --epochs "$EPOCHS" --seed "$seed" \
      --threads "$THREADS" --device "$TORCH_DEVICE" "${limits[@]}" "${recipe[@]}" >"$OUT/pt-seed$seed.json" 2>"$OUT/pt-seed$seed.log" ||
      die "PyTorch seed $seed failed: $(tail -3 "$OUT/pt-seed$seed.log")"
    grep 'epoch' "$OUT/pt-seed$seed.log" >&2
  fi
done

table "$OUT" | tee "$OUT/resnet20_accuracy.md"
status=${PIPESTATUS[0]}
echo "runs and table in $OUT" >&2
exit "$status"
