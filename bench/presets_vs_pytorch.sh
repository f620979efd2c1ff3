#!/usr/bin/env bash
# retrograd vs PyTorch on the presets lenet, cnn, autoencoder and conv-autoencoder,
# Fashion-MNIST, batch 64, each preset's own optimizer (lenet, cnn: SGD lr 0.01
# momentum 0.9; autoencoders: Adam lr 0.001).
#
# usage: bench/presets_vs_pytorch.sh [--markdown]
#   env PRESETS  presets to measure (default "lenet cnn autoencoder conv-autoencoder";
#                with ACCURACY=1: "lenet cnn autoencoder")
#   env EPOCHS   epochs per run (default 1; with ACCURACY=1: lenet 5, cnn 3,
#                autoencoder 5, conv-autoencoder 5)
#   env THREADS  thread counts to measure (default "1 2"; with ACCURACY=1: "2")
#   env REPS     repetitions per side, preset and thread count (default 3; ACCURACY=1: 1)
#   env SEED     seed for both sides (default 1)
#   env LIMIT    train on the first N training samples only (default: all 60000;
#                for quick tests of this script; the test set is always all 10000)
#   env ACCURACY 1: accuracy mode: each preset once per side to the issue's epoch
#                counts at 2 threads, checked against the floors (lenet test accuracy
#                >= 0.87, cnn >= 0.90, autoencoder test MSE <= 0.015)
#   env BUILD    1: run `ninja -C build` first (default 0: use build/retrograd as it is)
#
# For each preset and thread count, runs `build/retrograd train --model P` and
# its PyTorch peer (bench/pytorch_presets.py, Debian python3-torch via
# /usr/bin/python3: same layers, inits, optimizer, batch, data in memory)
# alternately, REPS times each, and prints a table of training throughput
# (samples/s of the training loop only: median and min-max), the ratio of the
# medians, test accuracy (classifiers) or test MSE per pixel (autoencoders), peak
# RSS, and both sides' parameter counts. --markdown also prints rows for
# bench/RESULTS.md.
#
# PyTorch runs with torch.set_num_threads(T) and OMP/OPENBLAS/MKL_NUM_THREADS=T;
# its convolutions go through oneDNN (MKL-DNN), its dense layers through the
# libblas.so.3 alternative (OpenBLAS once tools/setup.sh --bench ran).
#
# Fails (non-zero exit, message on stderr) if either side's run or the torch
# import fails, if a run's JSON is missing or incomplete, or if the parameter
# counts differ: no number is ever reported for work that was not done.
set -euo pipefail

die() { echo "presets_vs_pytorch.sh: FAILED: $*" >&2; exit 1; }

MARKDOWN=0
for arg in "$@"; do
  case "$arg" in
    --markdown) MARKDOWN=1 ;;
    -h|--help) sed -n '2,37p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $arg" ;;
  esac
done

ACCURACY=${ACCURACY:-0}
[[ "$ACCURACY" == 0 || "$ACCURACY" == 1 ]] || die "ACCURACY must be 0 or 1 (got '$ACCURACY')"
if [[ "$ACCURACY" == 1 ]]; then
  PRESETS=${PRESETS:-"lenet cnn autoencoder"}
  THREADS=${THREADS:-"2"}
  REPS=${REPS:-1}
  EPOCHS_SET=${EPOCHS:-}          # empty: each preset's own count
else
  PRESETS=${PRESETS:-"lenet cnn autoencoder conv-autoencoder"}
  THREADS=${THREADS:-"1 2"}
  REPS=${REPS:-3}
  EPOCHS_SET=${EPOCHS:-1}
fi
SEED=${SEED:-1}
LIMIT=${LIMIT:-0}
BUILD=${BUILD:-0}
BATCH=64
DATA=/usr/share/datasets/fashion-mnist
PY=/usr/bin/python3   # Debian's python3-torch; not a pyenv python3 on PATH

[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS must be a positive integer (got '$REPS')"
[[ -z "$EPOCHS_SET" || "$EPOCHS_SET" =~ ^[1-9][0-9]*$ ]] || die "EPOCHS must be a positive integer (got '$EPOCHS_SET')"
[[ "$LIMIT" =~ ^[0-9]+$ ]] || die "LIMIT must be a non-negative integer (got '$LIMIT')"
[[ "$SEED" =~ ^[0-9]+$ ]] || die "SEED must be a non-negative integer (got '$SEED')"
for t in $THREADS; do [[ "$t" =~ ^[1-9][0-9]*$ ]] || die "THREADS must be positive integers (got '$t')"; done
[[ -n "${THREADS// /}" ]] || die "THREADS is empty"
[[ -n "${PRESETS// /}" ]] || die "PRESETS is empty"
for p in $PRESETS; do
  case "$p" in lenet|cnn|autoencoder|conv-autoencoder) ;; *) die "unknown preset '$p' (lenet, cnn, autoencoder, conv-autoencoder)" ;; esac
done

# The issue's epoch counts for ACCURACY=1 (conv-autoencoder: no floor; 5 as the autoencoder).
issue_epochs() { case "$1" in lenet) echo 5 ;; cnn) echo 3 ;; *) echo 5 ;; esac; }
epochs_for() { if [[ -n "$EPOCHS_SET" ]]; then echo "$EPOCHS_SET"; else issue_epochs "$1"; fi; }

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# --- prerequisites -----------------------------------------------------------
source bench/pytorch_prerequisites.sh

# --- retrograd binary ----------------------------------------------------------
if [[ "$BUILD" == 1 ]]; then
  [[ -d build ]] || meson setup build --buildtype=release >&2 || die "meson setup failed"
  ninja -C build >&2 || die "ninja -C build failed"
fi
[[ -x build/retrograd ]] || die "build/retrograd is missing (meson setup build --buildtype=release && ninja -C build, or BUILD=1)"
BUILDTYPE=$("$PY" -c '
import json
o = {x["name"]: x["value"] for x in json.load(open("build/meson-info/intro-buildoptions.json"))}
print("%s, -O%s" % (o.get("buildtype"), o.get("optimization")))' 2>/dev/null || echo unknown)
# Dry run only (-n): says whether the binary is older than the sources; builds nothing.
if ninja -C build -n 2>/dev/null | grep -q 'no work to do'; then
  BUILDSTATE="up to date with the sources"
else
  BUILDSTATE="NOT up to date with the sources (ninja -C build -n has work to do; BUILD=1 builds first)"
  echo "presets_vs_pytorch.sh: warning: build/retrograd is $BUILDSTATE" >&2
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
EXPECT_SAMPLES=60000
[[ "$LIMIT" -gt 0 && "$LIMIT" -lt 60000 ]] && EXPECT_SAMPLES=$LIMIT
EP_DESC=${EPOCHS_SET:-"per preset (lenet 5, cnn 3, autoencoder 5, conv-autoencoder 5)"}
LIMIT_TXT=${LIMIT_ARG[*]:+" ${LIMIT_ARG[*]}"}

echo "machine: $CPU, nproc $NPROC, load average $(cut -d' ' -f1-3 /proc/loadavg) at start"
echo "date:    $DATE"
echo "commit:  $COMMIT"
echo "build:   build/retrograd ($BUILDTYPE), $BUILDSTATE"
echo "torch:   $TORCH_VERSION ($PY); $TORCH_BACKENDS"
echo "mode:    $([[ "$ACCURACY" == 1 ]] && echo "accuracy (ACCURACY=1)" || echo speed)"
echo "runs:    PRESETS=\"$PRESETS\" EPOCHS=$EP_DESC THREADS=\"$THREADS\" REPS=$REPS SEED=$SEED batch $BATCH$([[ "$LIMIT" -gt 0 ]] && echo " LIMIT=$LIMIT"), retrograd and pytorch alternately"
echo "commands:"
echo "  build/retrograd train --model P --epochs E --batch $BATCH --seed $SEED --threads T$LIMIT_TXT --json FILE"
echo "  OMP_NUM_THREADS=T OPENBLAS_NUM_THREADS=T MKL_NUM_THREADS=T $PY bench/pytorch_presets.py --model P --epochs E --batch $BATCH --seed $SEED --threads T$LIMIT_TXT"
echo

# Checks one run's JSON and prints "samples_per_s metric peak_rss_bytes parameters",
# metric being the test accuracy (classifiers) or the test MSE per pixel (autoencoders).
check_json() {  # file side preset threads epochs
  "$PY" - "$1" "$2" "$3" "$4" "$5" "$EXPECT_SAMPLES" <<'EOF'
import json, math, sys
path, side, preset = sys.argv[1:4]
threads, epochs, samples = int(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
try:
    with open(path) as f:
        txt = f.read().strip()
    d = json.loads(txt.splitlines()[-1] if side == "pytorch" else txt)
except Exception as e:
    sys.exit("%s: unreadable JSON in %s: %s" % (side, path, e))
metric = "test_mse" if preset.endswith("autoencoder") else "test_accuracy"
for k in ("train_samples_per_s", metric, "peak_rss_bytes", "train_seconds", "parameters"):
    v = d.get(k)
    if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        sys.exit("%s: field %s missing or not positive: %r" % (side, k, v))
if d.get("model") != preset:
    sys.exit("%s: ran model %r, asked for %s" % (side, d.get("model"), preset))
if d.get("threads") != threads:
    sys.exit("%s: ran with threads=%r, asked for %d" % (side, d.get("threads"), threads))
if d.get("batch") != 64:
    sys.exit("%s: ran with batch=%r, asked for 64" % (side, d.get("batch")))
ran = d.get("epochs_run", d.get("epochs"))
if ran != epochs:
    sys.exit("%s: ran %r epochs, asked for %d" % (side, ran, epochs))
if d.get("train_samples") != samples:
    sys.exit("%s: trained on %r samples, expected %d" % (side, d.get("train_samples"), samples))
if d.get("test_samples") != 10000:
    sys.exit("%s: tested on %r samples, expected 10000" % (side, d.get("test_samples")))
print(repr(float(d["train_samples_per_s"])), repr(float(d[metric])), d["peak_rss_bytes"], d["parameters"])
EOF
}

RESULTS="$WORK/results.tsv"   # side preset threads epochs rep samples_per_s metric peak_rss params
: > "$RESULTS"
for P in $PRESETS; do
  E=$(epochs_for "$P")
  for t in $THREADS; do
    for ((r = 1; r <= REPS; r++)); do
      tag="$P-t$t-r$r"
      # retrograd
      rj="$WORK/rg-$tag.json"
      echo "[$P, $E epoch(s), threads $t, rep $r/$REPS] retrograd ..." >&2
      build/retrograd train --model "$P" --epochs "$E" --batch "$BATCH" --seed "$SEED" \
          --threads "$t" "${LIMIT_ARG[@]}" --json "$rj" > "$WORK/rg-$tag.log" 2>&1 \
        || { tail -n 20 "$WORK/rg-$tag.log" >&2; die "retrograd run failed ($P, threads $t, rep $r)"; }
      vals=$(check_json "$rj" retrograd "$P" "$t" "$E") || die "retrograd output rejected ($P, threads $t, rep $r)"
      # the summary line's count must be the JSON's
      logp=$(sed -n 's/^.*total parameters: \([0-9][0-9]*\).*$/\1/p' "$WORK/rg-$tag.log" | head -n 1)
      [[ -n "$logp" && "$logp" == "${vals##* }" ]] \
        || die "retrograd $P: 'total parameters: $logp' in the summary, ${vals##* } in the JSON"
      echo "retrograd $P $t $E $r $vals" >> "$RESULTS"
      echo "  retrograd: $vals  (samples/s test_acc|mse peak_rss params)" >&2

      # pytorch
      pj="$WORK/pt-$tag.json"
      echo "[$P, $E epoch(s), threads $t, rep $r/$REPS] pytorch ..." >&2
      OMP_NUM_THREADS=$t OPENBLAS_NUM_THREADS=$t MKL_NUM_THREADS=$t \
        "$PY" bench/pytorch_presets.py --model "$P" --epochs "$E" --batch "$BATCH" --seed "$SEED" \
          --threads "$t" "${LIMIT_ARG[@]}" > "$pj" 2> "$WORK/pt-$tag.log" \
        || { tail -n 20 "$WORK/pt-$tag.log" >&2; die "pytorch run failed ($P, threads $t, rep $r)"; }
      vals=$(check_json "$pj" pytorch "$P" "$t" "$E") || die "pytorch output rejected ($P, threads $t, rep $r)"
      echo "pytorch $P $t $E $r $vals" >> "$RESULTS"
      echo "  pytorch:   $vals  (samples/s test_acc|mse peak_rss params)" >&2
    done
  done
  rgp=$(awk -v p="$P" '$1 == "retrograd" && $2 == p {print $NF}' "$RESULTS" | sort -u)
  ptp=$(awk -v p="$P" '$1 == "pytorch" && $2 == p {print $NF}' "$RESULTS" | sort -u)
  [[ "$rgp" == "$ptp" ]] || die "$P: parameter counts differ: retrograd $rgp, pytorch $ptp"
done

# --- summary -----------------------------------------------------------------
FULL=1   # the issue's settings: whole training set, the issue's epoch counts
[[ "$EXPECT_SAMPLES" == 60000 && -z "$EPOCHS_SET" ]] || FULL=0
"$PY" - "$RESULTS" "$MARKDOWN" "$ACCURACY" "$FULL" "$REPS" "$PRESETS" <<'EOF'
import statistics, sys
path, markdown, accuracy, full, reps = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1", sys.argv[4] == "1", sys.argv[5]
order = sys.argv[6].split()
runs, params, epochs = {}, {}, {}
for line in open(path):
    side, p, t, e, r, sps, metric, rss, npar = line.split()
    key = (p, int(t))
    runs.setdefault((key, side), []).append((float(sps), float(metric), int(rss)))
    params.setdefault(p, {})[side] = int(npar)
    epochs[p] = int(e)
keys = sorted({k for k, _ in runs}, key=lambda k: (order.index(k[0]), k[1]))

def is_ae(p):
    return p.endswith("autoencoder")

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
    mfmt = "%.5f" if is_ae(p) else "%.4f"
    rows.append(dict(
        p=p, t=t, e=epochs[p],
        what="test MSE" if is_ae(p) else "test acc",
        rg="%.0f (%.0f-%.0f)" % (rm, min(rs), max(rs)),
        pt="%.0f (%.0f-%.0f)" % (pm, min(ps), max(ps)),
        ratio="%.2fx" % (rm / pm),
        rgm=span([x[1] for x in rg], mfmt), ptm=span([x[1] for x in pt], mfmt),
        rgmv=statistics.median([x[1] for x in rg]), ptmv=statistics.median([x[1] for x in pt]),
        rgr=span([x[2] / 2**20 for x in rg], "%.0f"), ptr=span([x[2] / 2**20 for x in pt], "%.0f"),
        rraw=" ".join("%.0f" % x for x in rs), praw=" ".join("%.0f" % x for x in ps)))

hdr = ("preset", "threads", "retrograd samples/s median (min-max)", "pytorch samples/s median (min-max)",
       "ratio rg/pt", "metric", "retrograd", "pytorch", "retrograd peak RSS MiB", "pytorch peak RSS MiB")
cells = [(r["p"], str(r["t"]), r["rg"], r["pt"], r["ratio"], r["what"], r["rgm"], r["ptm"], r["rgr"], r["ptr"])
         for r in rows]
table(hdr, cells)
print()
print("parameters (retrograd's 'total parameters', PyTorch's sum of parameter numel):")
for p in order:
    if p in params:
        d = params[p]
        print("  %-17s retrograd %-8d pytorch %-8d %s" % (p, d["retrograd"], d["pytorch"],
              "equal" if d["retrograd"] == d["pytorch"] else "DIFFERENT"))
print("each run, in order (samples/s):")
for r in rows:
    print("  %s, threads %d  retrograd: %s   pytorch: %s" % (r["p"], r["t"], r["rraw"], r["praw"]))
print("%s run(s) per side, preset and thread count; epochs: %s; ratio = retrograd median / pytorch median"
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
