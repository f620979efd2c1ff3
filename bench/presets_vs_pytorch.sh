#!/usr/bin/env bash
# retrograd vs PyTorch on the presets mlp, autoencoder, lenet, cnn, rcnn, conv-autoencoder and
# dcgan, Fashion-MNIST, batch 64, each preset's own recipe (mlp, lenet, cnn: SGD lr 0.01
# momentum 0.9; rcnn: SGD lr 0.05 momentum 0.9, cosine; autoencoders: Adam lr 0.001; dcgan: Adam
# lr 0.0002 beta1 0.5 for both networks).
#
# usage: bench/presets_vs_pytorch.sh [--markdown]
#   env PRESETS  presets to measure (default "mlp autoencoder lenet cnn rcnn conv-autoencoder dcgan";
#                with ACCURACY=1: "lenet cnn autoencoder")
#   env EPOCHS   epochs per run (default 1; with ACCURACY=1: lenet 5, cnn 3,
#                autoencoder 5, conv-autoencoder 5, mlp, rcnn and dcgan 3)
#   env THREADS  thread counts to measure, each given to both sides (default "1 2"; the
#                Xeon's acceptance: "1 4 16"; with ACCURACY=1: "2")
#   env REPS     rounds (default 3; ACCURACY=1: 1)
#   env SEED     seed for both sides (default 1)
#   env LIMIT    train on the first N training samples only (default: all 60000;
#                a fraction of an epoch, for quick tests of this script; the test set is
#                always all 10000 unless TEST_LIMIT)
#   env TEST_LIMIT  test on the first N test samples only (default: all 10000; speed runs where
#                the test pass would be a large part of a short run)
#   env ACCURACY 1: accuracy mode: each preset once per side to the issue's epoch
#                counts at 2 threads, checked against the floors (lenet test accuracy
#                >= 0.87, cnn >= 0.90, autoencoder test MSE <= 0.015)
#   env BUILD    1: run `ninja -C build` first (default 0: use BIN as it is)
#   env BIN      the retrograd binary (default build/retrograd)
#   env PYTHON   the Python with torch (default /usr/bin/python3: Debian's python3-torch,
#                not a pyenv python3 on PATH)
#   env DATA     the Fashion-MNIST IDX folder (default /usr/share/datasets/fashion-mnist)
#   env SPEED    all: each side's samples/s over every epoch run (default); last: over the last
#                epoch only (needs EPOCHS >= 2): the first epoch carries each side's set-up
#                (PyTorch's oneDNN primitives and allocator, our buffers' first touch), which in a
#                short run (LIMIT=3200: 50 steps) is most of PyTorch's time on the small networks
#   env SETUP    0: do not install the bench packages (tools/setup.sh --bench, as root); use
#                the torch and BLAS that PYTHON finds, which the header names (default 1)
#
# The runs go in rounds: each round runs every preset at every thread count on both sides,
# one after the other (retrograd first in odd rounds, PyTorch first in even ones), so that a
# change in the machine's load falls on both sides and on every preset alike. Each run is
# `BIN train --model P` or its PyTorch twin (bench/pytorch_presets.py: same layers, inits,
# recipe, batch, data in memory, the same timing rule). The table gives the training
# throughput of each side (samples/s of the training loop only: the median over the rounds and
# min-max), the ratio of the medians, each side's training flops per sample (retrograd's
# train_flops_per_sample, the twin's counted from its modules: equal when the twin does the
# preset's work, tools/check_twin_flops.py) and the ratio of the GFLOP/s (the speed ratio per
# flop, which differs from the ratio only where the flops do), test accuracy (classifiers),
# test MSE per pixel (autoencoders) or the last epoch's G loss (dcgan), peak RSS, and both
# sides' parameter counts. --markdown also prints rows for bench/RESULTS.md.
#
# A dcgan sample is one real image of a GAN step (D on it and on a generated one, then G):
# both sides count them so. retrograd's dcgan run scores no samples (--score-samples 0) and
# writes its networks to a scratch folder.
#
# PyTorch runs with torch.set_num_threads(T) and OMP/OPENBLAS/MKL_NUM_THREADS=T;
# its convolutions go through oneDNN (MKL-DNN), its dense layers through the
# libblas.so.3 alternative (OpenBLAS once tools/setup.sh --bench ran) or the BLAS its build has.
#
# A bad setting (an unknown argument, a value out of its range) exits 2 before anything runs.
# Fails (non-zero exit, message on stderr) if either side's run or the torch
# import fails, if a run's JSON is missing or incomplete, or if the parameter
# counts differ: no number is ever reported for work that was not done.
set -euo pipefail

die() { echo "presets_vs_pytorch.sh: FAILED: $*" >&2; exit 1; }
bad_setting() { echo "presets_vs_pytorch.sh: $*" >&2; exit 2; }  # before any run

MARKDOWN=0
for arg in "$@"; do
  case "$arg" in
    --markdown) MARKDOWN=1 ;;
    -h|--help) sed -n '2,/^set -euo/{/^#/p}' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) bad_setting "unknown argument: $arg" ;;
  esac
done

ACCURACY=${ACCURACY:-0}
[[ "$ACCURACY" == 0 || "$ACCURACY" == 1 ]] || bad_setting "ACCURACY must be 0 or 1 (got '$ACCURACY')"
if [[ "$ACCURACY" == 1 ]]; then
  PRESETS=${PRESETS:-"lenet cnn autoencoder"}
  THREADS=${THREADS:-"2"}
  REPS=${REPS:-1}
  EPOCHS_SET=${EPOCHS:-}          # empty: each preset's own count
else
  PRESETS=${PRESETS:-"mlp autoencoder lenet cnn rcnn conv-autoencoder dcgan"}
  THREADS=${THREADS:-"1 2"}
  REPS=${REPS:-3}
  EPOCHS_SET=${EPOCHS:-1}
fi
SEED=${SEED:-1}
LIMIT=${LIMIT:-0}
TEST_LIMIT=${TEST_LIMIT:-0}
BUILD=${BUILD:-0}
BATCH=64
BIN=${BIN:-build/retrograd}
DATA=${DATA:-/usr/share/datasets/fashion-mnist}
PY=${PYTHON:-/usr/bin/python3}   # Debian's python3-torch; not a pyenv python3 on PATH
SETUP=${SETUP:-1}
[[ "$SETUP" == 0 || "$SETUP" == 1 ]] || bad_setting "SETUP must be 0 or 1 (got '$SETUP')"

SPEED=${SPEED:-all}
[[ "$SPEED" == all || "$SPEED" == last ]] || bad_setting "SPEED must be all or last (got '$SPEED')"
[[ -z "$EPOCHS_SET" || "$EPOCHS_SET" =~ ^[1-9][0-9]{0,5}$ ]] || bad_setting "EPOCHS must be a positive integer below 10^6 (got '$EPOCHS_SET')"
[[ "$SPEED" == all || ( -n "$EPOCHS_SET" && "$EPOCHS_SET" -ge 2 ) ]] || bad_setting "SPEED=last needs EPOCHS=2 or more"
[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || bad_setting "REPS must be a positive integer (got '$REPS')"
[[ "$LIMIT" =~ ^[0-9]{1,9}$ ]] || bad_setting "LIMIT must be a non-negative integer below 10^9 (got '$LIMIT')"
[[ "$TEST_LIMIT" =~ ^[0-9]{1,9}$ ]] || bad_setting "TEST_LIMIT must be a non-negative integer below 10^9 (got '$TEST_LIMIT')"
[[ "$SEED" =~ ^[0-9]+$ ]] || bad_setting "SEED must be a non-negative integer (got '$SEED')"
for t in $THREADS; do [[ "$t" =~ ^[1-9][0-9]*$ ]] || bad_setting "THREADS must be positive integers (got '$t')"; done
[[ -n "${THREADS// /}" ]] || bad_setting "THREADS is empty"
[[ -n "${PRESETS// /}" ]] || bad_setting "PRESETS is empty"
for p in $PRESETS; do
  case "$p" in mlp|autoencoder|lenet|cnn|rcnn|conv-autoencoder|dcgan) ;;
    *) bad_setting "unknown preset '$p' (mlp, autoencoder, lenet, cnn, rcnn, conv-autoencoder, dcgan)" ;; esac
done
for t in $THREADS; do
  [[ "$t" -le "$(nproc)" ]] || echo "presets_vs_pytorch.sh: warning: THREADS $t is more than the $(nproc) CPUs here" >&2
done

# The issue's epoch counts for ACCURACY=1 (conv-autoencoder: no floor; 5 as the autoencoder;
# mlp, rcnn and dcgan: no floor, 3 as rcnn's preset comment).
issue_epochs() { case "$1" in lenet|autoencoder|conv-autoencoder) echo 5 ;; *) echo 3 ;; esac; }
epochs_for() { if [[ -n "$EPOCHS_SET" ]]; then echo "$EPOCHS_SET"; else issue_epochs "$1"; fi; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# --- prerequisites -----------------------------------------------------------
source bench/pytorch_prerequisites.sh

# --- retrograd binary ----------------------------------------------------------
BUILD_DIR=$(dirname "$BIN")
if [[ "$BUILD" == 1 ]]; then
  [[ -d "$BUILD_DIR" ]] || meson setup "$BUILD_DIR" --buildtype=release >&2 || die "meson setup failed"
  ninja -C "$BUILD_DIR" >&2 || die "ninja -C $BUILD_DIR failed"
fi
[[ -x "$BIN" ]] || die "$BIN is missing (meson setup build --buildtype=release && ninja -C build, or BUILD=1, or BIN=...)"
BUILD_DIR=$(cd "$BUILD_DIR" && pwd)
BIN=$BUILD_DIR/$(basename "$BIN")
BUILDTYPE=$("$PY" - "$BUILD_DIR/meson-info/intro-buildoptions.json" 2>/dev/null <<'EOF' || echo unknown
import json, sys
o = {x["name"]: x["value"] for x in json.load(open(sys.argv[1]))}
print("%s, -O%s" % (o.get("buildtype"), o.get("optimization")))
EOF
)
# Dry run only (-n): says whether the binary is older than the sources; builds nothing.
if ninja -C "$BUILD_DIR" -n 2>/dev/null | grep -q 'no work to do'; then
  BUILDSTATE="up to date with the sources"
else
  BUILDSTATE="NOT known to be up to date with the sources (ninja -C $BUILD_DIR -n has work to do or fails; BUILD=1 builds first)"
  echo "presets_vs_pytorch.sh: warning: $BIN is $BUILDSTATE" >&2
fi

# --- provenance --------------------------------------------------------------
CPU=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*:[[:space:]]*//')
NPROC=$(nproc)
DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
if COMMIT=$(git rev-parse --short HEAD 2>/dev/null); then
  if [[ -n "$(git status --porcelain 2>/dev/null)" ]]; then
    COMMIT="$COMMIT (plus uncommitted changes)"
  fi
else
  COMMIT=uncommitted
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/presets_vs_pytorch.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

LIMIT_ARG=()
[[ "$LIMIT" -gt 0 ]] && LIMIT_ARG=(--limit "$LIMIT")
[[ "$TEST_LIMIT" -gt 0 ]] && LIMIT_ARG+=(--test-limit "$TEST_LIMIT")
EXPECT_SAMPLES=60000
[[ "$LIMIT" -gt 0 && "$LIMIT" -lt 60000 ]] && EXPECT_SAMPLES=$LIMIT
EXPECT_TEST=10000
[[ "$TEST_LIMIT" -gt 0 && "$TEST_LIMIT" -lt 10000 ]] && EXPECT_TEST=$TEST_LIMIT
EP_DESC=${EPOCHS_SET:-"per preset (lenet, autoencoder, conv-autoencoder 5; cnn, mlp, rcnn, dcgan 3)"}
LIMIT_TXT=${LIMIT_ARG[*]:+" ${LIMIT_ARG[*]}"}

echo "machine: $CPU, nproc $NPROC, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "date:    $DATE"
echo "commit:  $COMMIT"
echo "build:   $BIN ($BUILDTYPE), $BUILDSTATE"
echo "torch:   $TORCH_VERSION ($PY); $TORCH_BACKENDS"
echo "mode:    $([[ "$ACCURACY" == 1 ]] && echo "accuracy (ACCURACY=1)" || echo speed); samples/s over $([[ "$SPEED" == last ]] && echo "the last epoch (SPEED=last)" || echo "every epoch")"
echo "runs:    PRESETS=\"$PRESETS\" EPOCHS=$EP_DESC THREADS=\"$THREADS\" REPS=$REPS rounds SEED=$SEED batch $BATCH$([[ "$LIMIT" -gt 0 ]] && echo " LIMIT=$LIMIT")$([[ "$TEST_LIMIT" -gt 0 ]] && echo " TEST_LIMIT=$TEST_LIMIT"), interleaved"
echo "data:    $DATA"
echo "commands:"
echo "  $BIN train --model P --data $DATA --epochs E --batch $BATCH --seed $SEED --threads T$LIMIT_TXT --json FILE"
echo "    (dcgan: and --score-samples 0 --out DIR)"
echo "  OMP_NUM_THREADS=T OPENBLAS_NUM_THREADS=T MKL_NUM_THREADS=T $PY bench/pytorch_presets.py --model P --data $DATA --epochs E --batch $BATCH --seed $SEED --threads T$LIMIT_TXT"
echo

# Checks one run's JSON and prints "samples_per_s metric peak_rss_bytes parameters flops":
# metric the test accuracy (classifiers), the test MSE per pixel (autoencoders) or the last
# epoch's G loss (dcgan); parameters "N", or the GAN's "N+M" (retrograd's from its log: its GAN
# JSON has none); flops the training flops per sample.
check_json() {  # file side preset threads epochs log
  "$PY" - "$1" "$2" "$3" "$4" "$5" "$EXPECT_SAMPLES" "$6" "$SPEED" "$EXPECT_TEST" <<'EOF'
import json, math, re, sys
path, side, preset = sys.argv[1:4]
threads, epochs, samples = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
log, speed, test_samples = sys.argv[7], sys.argv[8], int(sys.argv[9])
gan = preset == "dcgan"
try:
    with open(path) as f:
        txt = f.read().strip()
    d = json.loads(txt.splitlines()[-1] if side == "pytorch" else txt)
except Exception as e:
    sys.exit("%s: unreadable JSON in %s: %s" % (side, path, e))
if gan:
    history = d.get("history") or [{}]
    d.setdefault("loss_g", history[-1].get("loss_g"))
    metric = "loss_g"
else:
    metric = "test_mse" if preset.endswith("autoencoder") else "test_accuracy"
for k in ("train_samples_per_s", metric, "peak_rss_bytes", "train_seconds", "train_flops_per_sample"):
    v = d.get(k)
    if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        sys.exit("%s: field %s missing or not positive: %r" % (side, k, v))
if side == "retrograd" and gan:
    if d.get("model") != "gan" or d.get("generator") != "preset:dcgan-generator":
        sys.exit("%s: ran %r with generator %r, asked for dcgan" % (side, d.get("model"), d.get("generator")))
    m = re.search(r"generator \S+ \((\d+) parameters\), discriminator \S+ \((\d+) parameters\)", open(log).read())
    if not m:
        sys.exit("%s: no 'generator ... (N parameters), discriminator ... (M parameters)' line in %s" % (side, log))
    params = "%s+%s" % m.groups()
else:
    if d.get("model") != preset:
        sys.exit("%s: ran model %r, asked for %s" % (side, d.get("model"), preset))
    if gan:
        params = "%d+%d" % (d["generator_parameters"], d["discriminator_parameters"])
    else:
        params = str(d.get("parameters"))
if side == "retrograd" and not gan:
    # the summary line's count must be the JSON's
    m = re.search(r"total parameters: (\d+)", open(log).read())
    if not m or m.group(1) != params:
        sys.exit("%s: 'total parameters: %s' in the summary, %s in the JSON" % (side, m and m.group(1), params))
if d.get("threads") != threads:
    sys.exit("%s: ran with threads=%r, asked for %d" % (side, d.get("threads"), threads))
if d.get("batch") != 64:
    sys.exit("%s: ran with batch=%r, asked for 64" % (side, d.get("batch")))
ran = d.get("epochs_run", len(d.get("history", [])))
if ran != epochs:
    sys.exit("%s: ran %r epochs, asked for %d" % (side, ran, epochs))
if d.get("train_samples") != samples:
    sys.exit("%s: trained on %r samples, expected %d" % (side, d.get("train_samples"), samples))
if not gan and d.get("test_samples") != test_samples:
    sys.exit("%s: tested on %r samples, expected %d" % (side, d.get("test_samples"), test_samples))
rate = d["train_samples_per_s"]
if speed == "last":  # the last epoch's own rate (both sides keep one per epoch in "history")
    rate = (d.get("history") or [{}])[-1].get("samples_per_s")
    if not isinstance(rate, (int, float)) or not math.isfinite(rate) or rate <= 0:
        sys.exit("%s: SPEED=last: the last epoch's samples_per_s missing or not positive: %r" % (side, rate))
print(repr(float(rate)), repr(float(d[metric])), d["peak_rss_bytes"], params,
      round(d["train_flops_per_sample"]))
EOF
}

run_retrograd() {  # preset threads epochs tag
  local P=$1 t=$2 E=$3 tag=$4 extra=()
  [[ "$P" == dcgan ]] && extra=(--score-samples 0 --out "$WORK/gan-$tag")
  "$BIN" train --model "$P" --data "$DATA" --epochs "$E" --batch "$BATCH" --seed "$SEED" \
      --threads "$t" "${LIMIT_ARG[@]}" "${extra[@]}" --json "$WORK/rg-$tag.json" > "$WORK/rg-$tag.log" 2>&1 \
    || { tail -n 20 "$WORK/rg-$tag.log" >&2; die "retrograd run failed ($tag)"; }
  rm -rf "$WORK/gan-$tag"
}

run_pytorch() {  # preset threads epochs tag
  local P=$1 t=$2 E=$3 tag=$4
  OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t MKL_NUM_THREADS=$t \
    "$PY" bench/pytorch_presets.py --model "$P" --data "$DATA" --epochs "$E" --batch "$BATCH" --seed "$SEED" \
      --threads "$t" "${LIMIT_ARG[@]}" > "$WORK/pt-$tag.json" 2> "$WORK/pt-$tag.log" \
    || { tail -n 20 "$WORK/pt-$tag.log" >&2; die "pytorch run failed ($tag)"; }
}

run_side() {  # side preset threads epochs round
  local side=$1 P=$2 t=$3 E=$4 r=$5 tag="$2-t$3-r$5" short vals
  short=$([[ "$side" == retrograd ]] && echo rg || echo pt)
  echo "[round $r/$REPS: $P, $E epoch(s), threads $t] $side ..." >&2
  "run_$side" "$P" "$t" "$E" "$tag"
  vals=$(check_json "$WORK/$short-$tag.json" "$side" "$P" "$t" "$E" "$WORK/$short-$tag.log") \
    || die "$side output rejected ($tag)"
  echo "$side $P $t $E $r $vals" >> "$RESULTS"
  printf '  %-10s %s  (samples/s metric peak_rss params flops/sample)\n' "$side:" "$vals" >&2
}

RESULTS="$WORK/results.tsv"   # side preset threads epochs round samples_per_s metric peak_rss params flops
: > "$RESULTS"
for ((r = 1; r <= REPS; r++)); do
  sides=(retrograd pytorch)
  (( r % 2 == 0 )) && sides=(pytorch retrograd)   # who goes first alternates by round
  for P in $PRESETS; do
    E=$(epochs_for "$P")
    for t in $THREADS; do
      for side in "${sides[@]}"; do run_side "$side" "$P" "$t" "$E" "$r"; done
    done
  done
done
for P in $PRESETS; do
  rgp=$(awk -v p="$P" '$1 == "retrograd" && $2 == p {print $9}' "$RESULTS" | sort -u)
  ptp=$(awk -v p="$P" '$1 == "pytorch" && $2 == p {print $9}' "$RESULTS" | sort -u)
  [[ "$rgp" == "$ptp" ]] || die "$P: parameter counts differ: retrograd $rgp, pytorch $ptp"
done

# --- summary -----------------------------------------------------------------
FULL=1   # the issue's settings: whole training and test sets, the issue's epoch counts
[[ "$EXPECT_SAMPLES" == 60000 && "$EXPECT_TEST" == 10000 && -z "$EPOCHS_SET" ]] || FULL=0
"$PY" - "$RESULTS" "$MARKDOWN" "$ACCURACY" "$FULL" "$REPS" "$PRESETS" <<'EOF'
import statistics, sys
path, markdown, accuracy, full, reps = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4] == "1", sys.argv[5]
order = sys.argv[6].split()
runs, params, flops, epochs = {}, {}, {}, {}
for line in open(path):
    side, p, t, e, r, sps, metric, rss, npar, f = line.split()
    key = (p, int(t))
    runs.setdefault((key, side), []).append((float(sps), float(metric), int(rss)))
    params.setdefault(p, {})[side] = npar
    flops.setdefault(p, {}).setdefault(side, set()).add(int(f))
    epochs[p] = int(e)
for p, sides in flops.items():
    for side, counts in sides.items():
        if len(counts) != 1:
            sys.exit("presets_vs_pytorch.sh: FAILED: %s: %s's runs report different flops a sample: %s" % (p, side, sorted(counts)))
        sides[side] = counts.pop()
keys = sorted({k for k, _ in runs}, key=lambda k: (order.index(k[0]), k[1]))

def is_ae(p):
    return p.endswith("autoencoder")

def what(p):
    return "G loss" if p == "dcgan" else "test MSE" if is_ae(p) else "test acc"

def span(xs, fmt):
    lo, hi = min(xs), max(xs)
    return fmt % lo if fmt % lo == fmt % hi else (fmt + "-" + fmt) % (lo, hi)

def table(hdr, cells):
    w = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(hdr)]
    print("  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)))
    print("  ".join("-" * w[i] for i in range(len(hdr))))
    for c in cells:
        print("  ".join(x.ljust(w[i]) for i, x in enumerate(c)))

def md(hdr, cells):
    print("| " + " | ".join(hdr) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(hdr) - 1)) + "|")
    for c in cells:
        print("| " + " | ".join(c) + " |")

rows = []
for k in keys:
    p, t = k
    rg, pt = runs[(k, "retrograd")], runs[(k, "pytorch")]
    rs, ps = [x[0] for x in rg], [x[0] for x in pt]
    rm, pm = statistics.median(rs), statistics.median(ps)
    rf, pf = flops[p]["retrograd"], flops[p]["pytorch"]
    mfmt = "%.5f" if is_ae(p) else "%.4f"
    rows.append(dict(
        p=p, t=t, e=epochs[p],
        what=what(p),
        rg="%.0f (%.0f-%.0f)" % (rm, min(rs), max(rs)),
        pt="%.0f (%.0f-%.0f)" % (pm, min(ps), max(ps)),
        ratio="%.2fx" % (rm / pm),
        rgf="%.3f" % (rf / 1e6), ptf="%.3f" % (pf / 1e6),
        perflop="%.2fx" % (rm * rf / (pm * pf)),
        rgm=span([x[1] for x in rg], mfmt), ptm=span([x[1] for x in pt], mfmt),
        rgmv=statistics.median([x[1] for x in rg]), ptmv=statistics.median([x[1] for x in pt]),
        rgr=span([x[2] / 2**20 for x in rg], "%.0f"), ptr=span([x[2] / 2**20 for x in pt], "%.0f"),
        rraw=" ".join("%.0f" % x for x in rs), praw=" ".join("%.0f" % x for x in ps)))

hdr = ("preset", "threads", "retrograd samples/s median (min-max)", "pytorch samples/s median (min-max)",
       "ratio rg/pt", "retrograd MFLOP/sample", "pytorch MFLOP/sample", "ratio per flop",
       "metric", "retrograd", "pytorch", "retrograd peak RSS MiB", "pytorch peak RSS MiB")
cells = [(r["p"], str(r["t"]), r["rg"], r["pt"], r["ratio"], r["rgf"], r["ptf"], r["perflop"],
          r["what"], r["rgm"], r["ptm"], r["rgr"], r["ptr"]) for r in rows]
table(hdr, cells)
print()
print("parameters (retrograd's 'total parameters', a GAN's G+D; PyTorch's sum of parameter numel) and")
print("training flops a sample (retrograd's train_flops_per_sample; the twin's counted from its modules):")
for p in order:
    if p in params:
        d, f = params[p], flops[p]
        print("  %-17s parameters retrograd %-13s pytorch %-13s %-9s flops retrograd %-10d pytorch %-10d %s"
              % (p, d["retrograd"], d["pytorch"], "equal" if d["retrograd"] == d["pytorch"] else "DIFFERENT",
                 f["retrograd"], f["pytorch"], "equal" if f["retrograd"] == f["pytorch"] else "DIFFERENT"))
print("each round, in order (samples/s):")
for r in rows:
    print("  %s, threads %d  retrograd: %s   pytorch: %s" % (r["p"], r["t"], r["rraw"], r["praw"]))
print("%s round(s), interleaved; epochs: %s; ratio = retrograd median / pytorch median; ratio per flop ="
      " the ratio of the medians' GFLOP/s (samples/s x flops a sample)"
      % (reps, ", ".join("%s %d" % (p, epochs[p]) for p in order if p in epochs)))

if accuracy:
    floors = {"lenet": ("test acc", ">=", 0.87), "cnn": ("test acc", ">=", 0.90),
              "autoencoder": ("test MSE", "<=", 0.015)}
    def verdict(p, v):
        if p not in floors:
            return "no floor"
        _, op, f = floors[p]
        ok = v >= f if op == ">=" else v <= f
        if not full:
            return ("would pass" if ok else "would fail") + " (not the issue's settings)"
        return "PASS" if ok else "FAIL"
    print()
    print("accuracy mode: final figures against the floors")
    ahdr = ("preset", "epochs", "threads", "metric", "floor", "retrograd", "verdict", "pytorch", "verdict")
    acells = []
    for r in rows:
        fl = floors.get(r["p"])
        acells.append((r["p"], str(r["e"]), str(r["t"]), r["what"],
                       "%s %g" % (fl[1], fl[2]) if fl else "-",
                       r["rgm"], verdict(r["p"], r["rgmv"]), r["ptm"], verdict(r["p"], r["ptmv"])))
    table(ahdr, acells)
    if not full:
        print("(LIMIT or EPOCHS changed the issue's settings: the floors do not apply to these figures)")

if markdown:
    print()
    print("markdown rows for bench/RESULTS.md:")
    print()
    md(hdr, cells)
    if accuracy:
        print()
        md(ahdr, acells)
EOF
