#!/usr/bin/env bash
# retrograd vs PyTorch on the 784-256-128-10 ReLU MLP, Fashion-MNIST,
# SGD lr 0.01 momentum 0.9, at batch 64 and 16.
#
# usage: bench/mlp_vs_pytorch.sh [--markdown]
#   env REPS    repetitions per side and thread count (default 3)
#   env EPOCHS  epochs per run (default 1)
#   env THREADS thread counts to measure (default "1 2")
#   env BATCHES batch sizes to measure (default "64 16")
#   env SEED    seed for both sides (default 1)
#
# Builds retrograd if needed, then for each thread count runs retrograd and
# PyTorch (bench/pytorch_presets.py --model mlp, Debian python3-torch via /usr/bin/python3)
# alternately, REPS times each, and prints a table of training throughput
# (samples/s: median and min-max), the ratio of the medians and both test
# accuracies. --markdown also prints rows for bench/RESULTS.md.
#
# PyTorch's speed here is mostly its BLAS: Debian's torch uses whatever the
# libblas.so.3 alternative is. The script runs tools/setup.sh --bench, which
# installs torch and OpenBLAS (libopenblas0-pthread becomes the alternative, so
# torch runs on a fast BLAS, not the netlib reference BLAS); the header names
# the library torch loaded. pytorch_presets.py caps OpenBLAS's threads at --threads.
#
# Fails (non-zero exit, message on stderr) if the build, either side's run, or
# the torch import fails, or if a run's JSON is missing or incomplete: no
# number is ever reported for work that was not done.
set -euo pipefail

die() { echo "mlp_vs_pytorch.sh: FAILED: $*" >&2; exit 1; }

MARKDOWN=0
for arg in "$@"; do
  case "$arg" in
    --markdown) MARKDOWN=1 ;;
    -h|--help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $arg" ;;
  esac
done

REPS=${REPS:-3}
EPOCHS=${EPOCHS:-1}
THREADS=${THREADS:-"1 2"}
SEED=${SEED:-1}
BATCHES=${BATCHES:-"64 16"}
DATA=/usr/share/datasets/fashion-mnist
PY=/usr/bin/python3   # Debian's python3-torch; not a pyenv python3 on PATH

[[ "$REPS" =~ ^[1-9][0-9]*$ ]]   || die "REPS must be a positive integer (got '$REPS')"
[[ "$EPOCHS" =~ ^[1-9][0-9]*$ ]] || die "EPOCHS must be a positive integer (got '$EPOCHS')"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# --- prerequisites -----------------------------------------------------------
source bench/pytorch_prerequisites.sh

# --- build -------------------------------------------------------------------
if [[ ! -d build ]]; then
  meson setup build --buildtype=release >&2 || die "meson setup failed"
fi
ninja -C build >&2 || die "ninja -C build failed"
[[ -x build/retrograd ]] || die "build/retrograd was not built"
BUILDTYPE=$("$PY" -c '
import json
o = {x["name"]: x["value"] for x in json.load(open("build/meson-info/intro-buildoptions.json"))}
print("%s, -O%s" % (o.get("buildtype"), o.get("optimization")))' 2>/dev/null || echo unknown)

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

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mlp_vs_pytorch.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

RG_CMD='build/retrograd train --model mlp --epochs '"$EPOCHS"' --batch B --threads T --seed '"$SEED"' --json FILE'
PT_CMD="$PY bench/pytorch_presets.py --model mlp --epochs $EPOCHS --batch B --threads T --seed $SEED"

echo "machine: $CPU, nproc $NPROC"
echo "date:    $DATE"
echo "commit:  $COMMIT"
echo "build:   build/ ($BUILDTYPE)"
echo "torch:   $TORCH_VERSION ($PY)"
echo "backends: $TORCH_BACKENDS (loaded by torch)"
echo "runs:    REPS=$REPS EPOCHS=$EPOCHS THREADS=\"$THREADS\" BATCHES=\"$BATCHES\", retrograd and pytorch alternately"
echo "commands:"
echo "  $RG_CMD"
echo "  $PT_CMD"
echo

# Checks one run's JSON and prints "samples_per_s test_accuracy peak_rss_bytes".
check_json() {  # file side threads
  "$PY" - "$1" "$2" "$3" "$EPOCHS" <<'EOF'
import json, math, sys
path, side, threads, epochs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
try:
    with open(path) as f:
        txt = f.read().strip()
    d = json.loads(txt.splitlines()[-1] if side == "pytorch" else txt)
except Exception as e:
    sys.exit("%s: unreadable JSON in %s: %s" % (side, path, e))
for k in ("train_samples_per_s", "test_accuracy", "peak_rss_bytes", "train_seconds"):
    v = d.get(k)
    if not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
        sys.exit("%s: field %s missing or not positive: %r" % (side, k, v))
if d.get("threads") != threads:
    sys.exit("%s: ran with threads=%r, asked for %d" % (side, d.get("threads"), threads))
ran = d.get("epochs_run", d.get("epochs"))
if ran != epochs:
    sys.exit("%s: ran %r epochs, asked for %d" % (side, ran, epochs))
if d.get("train_samples") != 60000:
    sys.exit("%s: trained on %r samples, expected 60000" % (side, d.get("train_samples")))
print(d["train_samples_per_s"], d["test_accuracy"], d["peak_rss_bytes"])
EOF
}

RESULTS="$WORK/results.tsv"   # side batch threads rep samples_per_s test_acc peak_rss
: > "$RESULTS"
for BATCH in $BATCHES; do
for t in $THREADS; do
  for ((r = 1; r <= REPS; r++)); do
    # retrograd
    rj="$WORK/rg-b$BATCH-t$t-r$r.json"
    echo "[batch $BATCH, threads $t, rep $r/$REPS] retrograd ..." >&2
    build/retrograd train --model mlp --epochs "$EPOCHS" --batch "$BATCH" \
        --threads "$t" --seed "$SEED" --json "$rj" > "$WORK/rg-b$BATCH-t$t-r$r.log" 2>&1 \
      || { tail -n 20 "$WORK/rg-b$BATCH-t$t-r$r.log" >&2; die "retrograd run failed (threads $t, rep $r)"; }
    vals=$(check_json "$rj" retrograd "$t") || die "retrograd output rejected (threads $t, rep $r)"
    echo "retrograd $BATCH $t $r $vals" >> "$RESULTS"
    echo "  retrograd: $vals  (samples/s test_acc peak_rss)" >&2

    # pytorch
    pj="$WORK/pt-b$BATCH-t$t-r$r.json"
    echo "[batch $BATCH, threads $t, rep $r/$REPS] pytorch ..." >&2
    "$PY" bench/pytorch_presets.py --model mlp --epochs "$EPOCHS" --batch "$BATCH" \
        --threads "$t" --seed "$SEED" > "$pj" 2> "$WORK/pt-b$BATCH-t$t-r$r.log" \
      || { tail -n 20 "$WORK/pt-b$BATCH-t$t-r$r.log" >&2; die "pytorch run failed (threads $t, rep $r)"; }
    vals=$(check_json "$pj" pytorch "$t") || die "pytorch output rejected (threads $t, rep $r)"
    echo "pytorch $BATCH $t $r $vals" >> "$RESULTS"
    echo "  pytorch:   $vals  (samples/s test_acc peak_rss)" >&2
  done
done
done

# --- summary -----------------------------------------------------------------
"$PY" - "$RESULTS" "$MARKDOWN" "$CPU" "$NPROC" "$DATE" "$COMMIT" "$REPS" "$EPOCHS" <<'EOF'
import statistics, sys
path, markdown = sys.argv[1], sys.argv[2] == "1"
cpu, nproc, date, commit, reps, epochs = sys.argv[3:9]
runs = {}
for line in open(path):
    side, b, t, r, sps, acc, rss = line.split()
    runs.setdefault(((int(b), int(t)), side), []).append((float(sps), float(acc), int(rss)))
threads = sorted({t for t, _ in runs}, key=lambda bt: (-bt[0], bt[1]))  # (batch, threads)

def span(xs, fmt):
    lo, hi = min(xs), max(xs)
    return fmt % lo if fmt % lo == fmt % hi else (fmt + "-" + fmt) % (lo, hi)

rows = []
for t in threads:
    rg, pt = runs[(t, "retrograd")], runs[(t, "pytorch")]
    rs, ps = [x[0] for x in rg], [x[0] for x in pt]
    rm, pm = statistics.median(rs), statistics.median(ps)
    rows.append(dict(
        t="%d, %d" % t,
        rg="%.0f (%.0f-%.0f)" % (rm, min(rs), max(rs)),
        pt="%.0f (%.0f-%.0f)" % (pm, min(ps), max(ps)),
        ratio="%.2fx" % (rm / pm),
        rga=span([x[1] for x in rg], "%.4f"),
        pta=span([x[1] for x in pt], "%.4f"),
        rgm=span([x[2] / 2**20 for x in rg], "%.0f"),
        ptm=span([x[2] / 2**20 for x in pt], "%.0f"),
        rraw=" ".join("%.0f" % x for x in rs),
        praw=" ".join("%.0f" % x for x in ps)))

hdr = ("batch, threads", "retrograd samples/s median (min-max)", "pytorch samples/s median (min-max)",
       "ratio rg/pt", "retrograd test acc", "pytorch test acc")
cells = [(r["t"], r["rg"], r["pt"], r["ratio"], r["rga"], r["pta"]) for r in rows]
w = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(hdr)]
print("  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)))
print("  ".join("-" * w[i] for i in range(len(hdr))))
for c in cells:
    print("  ".join(x.ljust(w[i]) for i, x in enumerate(c)))
print()
print("each run, in order (samples/s):")
for r in rows:
    print("  batch, threads %s  retrograd: %s   pytorch: %s" % (r["t"], r["rraw"], r["praw"]))
print("peak RSS (MiB):")
for r in rows:
    print("  batch, threads %s  retrograd: %s   pytorch: %s" % (r["t"], r["rgm"], r["ptm"]))
print("%s runs of %s epoch(s) per side and thread count; ratio = retrograd median / pytorch median"
      % (reps, epochs))

if markdown:
    print()
    print("markdown rows for bench/RESULTS.md:")
    print()
    print("| " + " | ".join(hdr) + " |")
    print("|" + "|".join(["---:"] * len(hdr)) + "|")
    for c in cells:
        print("| " + " | ".join(c) + " |")
EOF
