#!/bin/bash
# Two builds of retrograd side by side (or one: BIN_B empty): `train` of each model at each batch,
# the builds run alternately for ROUNDS rounds, A first in odd rounds and B first in even ones (so
# a noisy machine's drift and a warming device fall on both), the second of two epochs' samples/s
# (the first builds kernels and warms caches) from --json. Prints a Markdown table: each run, the
# medians, B / A, and with PYTORCH_CUDA PyTorch CUDA's figure of the same model and batch, run
# once before the rounds and once after (or after each round) (bench/pytorch_cuda.py train), and
# B / PyTorch (A / PyTorch with one build). For a change's cost: A the commit before it, B the
# commit with it.
#   BIN_A=old/retrograd BIN_B=new/retrograd DEVICE=cl:0:0 DATA=fashion-mnist bash bench/ab_train.sh
#   (the GPU machine: OCL_ICD_FILENAMES=libnvidia-opencl.so.1 SEPARATE_CACHES=1 BATCHES="256 64"
#    MODELS="rcnn resnet20 dcgan" PYTORCH_CUDA=/opt/torch/.venv/bin/python3 TIME_LIMIT=500 ...)
# env: MODELS (mlp lenet)  BATCHES (BATCH, 64)  STEPS (200 a epoch)  ROUNDS (5)  DEVICE (empty: the CPU)
#      DATA (synthetic)  THREADS (2)  OUT (temp folder)  SEPARATE_CACHES (1: each build its own
#      RETROGRAD_CACHE, a temp folder removed at the end, so neither reads the other's tuning)  TIME_LIMIT (seconds: runs
#      that would start later are skipped, named in the output)  PYTORCH_CUDA (a python3 with CUDA torch)
#      PYTORCH_EACH_ROUND (1: PyTorch after each round instead of before and after, so its median is
#      of ROUNDS runs interleaved with ours: issue 33's acceptance)
# BIN_B empty: one build only (A), its runs and median beside PyTorch's.
set -uo pipefail
: "${BIN_A:?BIN_A: the retrograd binary of the first build}"
BIN_B=${BIN_B:-}
BUILDS="A B"
[ -n "$BIN_B" ] || BUILDS="A"
PYTORCH_EACH_ROUND=${PYTORCH_EACH_ROUND:-0}
MODELS=${MODELS:-mlp lenet}
BATCHES=${BATCHES:-${BATCH:-64}}
STEPS=${STEPS:-200}
ROUNDS=${ROUNDS:-5}
DEVICE=${DEVICE:-}
DATA=${DATA:-synthetic}
THREADS=${THREADS:-2}
SEPARATE_CACHES=${SEPARATE_CACHES:-0}
TIME_LIMIT=${TIME_LIMIT:-0}
PYTORCH_CUDA=${PYTORCH_CUDA:-}
OUT=${OUT:-$(mktemp -d /tmp/ab-train.XXXXXX)}
mkdir -p "$OUT"
# A GAN's run folders (networks and sample grids, megabytes a run): kept out of OUT.
GAN_SCRATCH=$(mktemp -d /tmp/ab-train-gan.XXXXXX)
CACHES=$(mktemp -d /tmp/ab-train-caches.XXXXXX)  # SEPARATE_CACHES's (tuning files, program binaries)
trap 'rm -rf "$GAN_SCRATCH" "$CACHES"' EXIT
device=()
[ -n "$DEVICE" ] && device=(--device "$DEVICE")
HERE=$(dirname "$0")

pytorch() {  # the PyTorch CUDA figures into OUT/pytorch-$1.jsonl
  [ -n "$PYTORCH_CUDA" ] || return 0
  "$PYTORCH_CUDA" "$HERE/pytorch_cuda.py" train --models "${MODELS// /,}" --batches "${BATCHES// /,}" --steps "$STEPS" \
    >"$OUT/pytorch-$1.jsonl" 2>"$OUT/pytorch-$1.err" || echo "PyTorch CUDA ($1) failed: $(tail -1 "$OUT/pytorch-$1.err")"
}

[ "$PYTORCH_EACH_ROUND" = 1 ] || pytorch before
for round in $(seq "$ROUNDS"); do
  order=$BUILDS
  [ -n "$BIN_B" ] && [ $((round % 2)) -eq 0 ] && order="B A"  # whichever runs first in a round, half the time each
  for batch in $BATCHES; do
    for model in $MODELS; do
      for build in $order; do
        run="$model-$batch-$build-$round"
        if [ "$TIME_LIMIT" -gt 0 ] && [ "$SECONDS" -ge "$TIME_LIMIT" ]; then
          echo "skipped $run: past TIME_LIMIT=$TIME_LIMIT s"
          continue
        fi
        bin=BIN_$build
        extra=()
        [[ "$model" == *gan* ]] && extra=(--score-samples 0 --out "$GAN_SCRATCH/$run")
        cache=()
        [ "$SEPARATE_CACHES" = 1 ] && cache=(env "RETROGRAD_CACHE=$CACHES/$build")
        "${cache[@]}" "${!bin}" train --model "$model" --data "$DATA" --epochs 2 --batch "$batch" \
          --limit $((STEPS * batch)) --threads "$THREADS" "${device[@]}" "${extra[@]}" --json "$OUT/$run.json" \
          >"$OUT/$run.log" 2>&1 || echo "$build $model batch $batch round $round failed: $(tail -1 "$OUT/$run.log")"
      done
    done
  done
  if [ "$PYTORCH_EACH_ROUND" = 1 ]; then
    if [ "$TIME_LIMIT" -gt 0 ] && [ "$SECONDS" -ge "$TIME_LIMIT" ]; then
      echo "skipped PyTorch CUDA of round $round: past TIME_LIMIT=$TIME_LIMIT s"
    else
      pytorch "round-$round"
    fi
  fi
done
[ "$PYTORCH_EACH_ROUND" = 1 ] || pytorch after

python3 - "$OUT" "$ROUNDS" "$MODELS" "$BATCHES" "$BUILDS" <<'PY'
import glob, json, statistics, sys
out, rounds, models, batches, builds = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5].split()
last = builds[-1]  # the build set beside PyTorch (B, or A alone)


def speed(model, batch, build, r):
    try:
        return json.load(open(f"{out}/{model}-{batch}-{build}-{r}.json"))["history"][1]["samples_per_s"]
    except (OSError, KeyError, IndexError, ValueError):
        return None


torch = {}  # (model, batch) -> PyTorch CUDA's samples/s, each run of it
for path in sorted(glob.glob(f"{out}/pytorch-*.jsonl")):
    for line in open(path):
        try:
            r = json.loads(line)
            torch.setdefault((r["model"], str(r["batch"])), []).append(r["samples_per_s"])
        except (ValueError, KeyError):
            pass

head = "".join(f" {b}: samples/s |" for b in builds) + "".join(f" median {b} |" for b in builds)
head += " B / A |" if len(builds) == 2 else ""
print("| model | batch |" + head + (f" PyTorch CUDA (median) | {last} / PyTorch |" if torch else ""))
print("|---|---|" + "---|" * (2 * len(builds) + len(builds) - 1) + ("---|---|" if torch else ""))
for batch in batches:
    for model in models:
        ok = {b: [v for v in (speed(model, batch, b, r) for r in range(1, rounds + 1)) if v is not None] for b in builds}
        peer = torch.get((model, batch), [])
        tail = ""
        if torch:
            tail = (f" {' '.join(f'{v:.0f}' for v in peer)} ({statistics.median(peer):.0f}) |" if peer else " not measured |")
        if not all(ok.values()):
            print(f"| {model} | {batch} | not measured (see {out}) |" + " |" * (3 * len(builds) - 2) + (" |" * 2 if torch else ""))
            continue
        med = {b: statistics.median(ok[b]) for b in builds}
        row = "".join(f" {' '.join(f'{v:.0f}' for v in ok[b])} |" for b in builds)
        row += "".join(f" {med[b]:.0f} |" for b in builds)
        row += f" {med['B'] / med['A']:.3f} |" if len(builds) == 2 else ""
        if torch:
            tail += f" {med[last] / statistics.median(peer):.3f} |" if peer else " |"
        print(f"| {model} | {batch} |" + row + tail)
PY
