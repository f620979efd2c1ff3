#!/usr/bin/env bash
# Memory budgets and streaming (issue 7), measured: peak RSS against --mem-budget, accuracy
# against the unbudgeted run, a dataset larger than a budget streamed from disk, the catdog
# CNN under 2 GB, and retrograd's peak RSS on a 1-epoch mlp beside PyTorch's.
#
# usage: bench/memory_budget.sh [--markdown]
#   env REPS    runs per configuration; RSS figures are medians (default 3)
#   env BIG     training images in the generated streaming dataset (default 2551020: 2.0 GB)
#   env PYTORCH 0 skips the PyTorch run (default 1)
#   env BIN     the retrograd binary (default build/retrograd, built if missing)
#
# Every figure comes from a run's --json report (peak_rss_bytes from getrusage, start_rss_bytes
# read before any tensor exists, peak_tensor_bytes from the counted allocator). A failed run
# stops the script with a message: no number is reported for work that was not done.
set -euo pipefail

die() { echo "memory_budget.sh: FAILED: $*" >&2; exit 1; }
MARKDOWN=0
for arg in "$@"; do
  case "$arg" in
    --markdown) MARKDOWN=1 ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $arg" ;;
  esac
done
REPS=${REPS:-3}
BIG=${BIG:-2551020}
PYTORCH=${PYTORCH:-1}
PY=/usr/bin/python3
DATA=/usr/share/datasets/fashion-mnist   # what pytorch_prerequisites.sh checks
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
BIN=${BIN:-build/retrograd}
if [[ "$BIN" == build/retrograd && ! -x "$BIN" ]]; then
  [[ -d build ]] || meson setup build --buildtype=release >&2 || die "meson setup failed"
  ninja -C build >&2 || die "ninja failed"
fi
[[ -x "$BIN" ]] || die "$BIN is not an executable"
[[ "$PYTORCH" == 0 ]] || source bench/pytorch_prerequisites.sh

WORK=$(mktemp -d "${TMPDIR:-/tmp}/memory_budget.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
export RETROGRAD_CACHE="$WORK/cache"   # the inflated Fashion-MNIST copy, made by the first streamed run

# field FILE KEY...: prints the JSON values (dotted keys reach into objects).
field() {
  "$PY" - "$@" <<'PYEOF'
import json, sys
text = open(sys.argv[1]).read().strip()
try:
    d = json.loads(text)                     # retrograd's --json report
except ValueError:
    d = json.loads(text.splitlines()[-1])    # pytorch_presets.py: its last line
out = []
for key in sys.argv[2:]:
    v = d
    for part in key.split("."):
        v = v[part]
    out.append(str(v))
print(" ".join(out))
PYEOF
}
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }

# run_rg NAME ARGS...: REPS runs; sets NAME_rss, NAME_start, NAME_tensors, NAME_acc (medians / last).
run_rg() {
  local name=$1; shift
  local rss=() start=() tensors=() acc="" predicted="" unplanned="" micro="" steps="" streamed=""
  for ((r = 1; r <= REPS; ++r)); do
    "$BIN" train "$@" --json "$WORK/$name.json" > "$WORK/$name.log" 2>&1 || { cat "$WORK/$name.log" >&2; die "$name: retrograd train $*"; }
    read -r a b c d e f g h i < <(field "$WORK/$name.json" peak_rss_bytes start_rss_bytes peak_tensor_bytes test_accuracy \
      memory_plan.predicted_peak_bytes memory_plan.unplanned_peak_bytes memory_plan.micro_batch \
      memory_plan.accumulation_steps memory_plan.streamed)
    rss+=("$a"); start+=("$b"); tensors+=("$c"); acc=$d; predicted=$e; unplanned=$f; micro=$g; steps=$h; streamed=$i
  done
  printf -v "${name}_rss" '%s' "$(median "${rss[@]}")"
  printf -v "${name}_start" '%s' "$(median "${start[@]}")"
  printf -v "${name}_tensors" '%s' "$(median "${tensors[@]}")"
  printf -v "${name}_acc" '%s' "$acc"
  printf -v "${name}_plan" '%s' "micro-batch $micro x $steps, streamed $streamed, predicted $(mib "$predicted") MiB, unplanned $(mib "$unplanned") MiB"
}
line() {  # name label budget_mib
  local n=$1 rss start tensors acc plan
  rss=${n}_rss; start=${n}_start; tensors=${n}_tensors; acc=${n}_acc; plan=${n}_plan
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$2" "$3" "$(mib "${!rss}")" "$(mib "${!start}")" \
    "$(mib $(( ${!rss} - ${!tensors} )))" "$(mib "${!tensors}")" "${!acc}" "${!plan}"
}

echo "machine: $(grep -m1 '^model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*:[[:space:]]*//'), nproc $(nproc)"
echo "date:    $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "commit:  $(git rev-parse --short HEAD 2>/dev/null || echo none)$([[ -n "$(git status --porcelain --untracked-files=no 2>/dev/null)" ]] && echo ' (tree has uncommitted changes; the binary may not)')"
echo "binary:  $BIN; REPS=$REPS (RSS: medians)"
echo

LENET="--model lenet --batch 256 --epochs 3 --threads 2 --seed 1"
run_rg lenet_free $LENET
run_rg lenet_24m $LENET --mem-budget 24M

"$BIN" make-data --out "$WORK/big" --samples "$BIG" --test-samples 10000 > "$WORK/make.log" || die "make-data"
BIG_BYTES=$(stat -c %s "$WORK/big/train-images-idx3-ubyte")
REPS_SAVED=$REPS; REPS=1
run_rg big --model mlp --data "$WORK/big" --stream yes --epochs 1 --batch 64 --threads 2
run_rg catdog --model catdog --data synthetic --batch 32 --limit 64 --epochs 1 --threads 2 --mem-budget 2G
REPS=$REPS_SAVED
rm -rf "$WORK/big"

run_rg mlp_rg --model mlp --epochs 1 --batch 64 --threads 1 --seed 1 --stream yes
run_rg mlp_mem --model mlp --epochs 1 --batch 64 --threads 1 --seed 1
if [[ "$PYTORCH" != 0 ]]; then
  pt=()
  for ((r = 1; r <= REPS; ++r)); do
    "$PY" bench/pytorch_presets.py --model mlp --epochs 1 --batch 64 --threads 1 --seed 1 > "$WORK/pt.json" \
      || die "pytorch_presets.py --model mlp"
    pt+=("$(field "$WORK/pt.json" peak_rss_bytes)")
  done
  PT_RSS=$(median "${pt[@]}")
fi

echo "| run | budget | peak RSS MiB | at start MiB | process's own MiB (RSS - tensors) | tensors and data MiB | test accuracy | plan |"
echo "|---|---|---:|---:|---:|---:|---:|---|"
line lenet_free "lenet batch 256, 3 epochs" none
line lenet_24m "lenet batch 256, 3 epochs" "24 MiB"
line big "mlp, 1 epoch over $(awk -v b="$BIG_BYTES" 'BEGIN {printf "%.2f GB", b / 1e9}') of generated images, --stream yes" none
line catdog "catdog batch 32, 64 generated 256x256x3 images" "2 GiB"
line mlp_rg "mlp batch 64, 1 epoch Fashion-MNIST, --stream yes" none
line mlp_mem "mlp batch 64, 1 epoch Fashion-MNIST, in memory" none
if [[ "$PYTORCH" != 0 ]]; then
  echo
  echo "PyTorch mlp (bench/pytorch_presets.py --model mlp, 1 epoch, batch 64, 1 thread): peak RSS $(mib "$PT_RSS") MiB (median of $REPS);" \
       "retrograd / PyTorch = $(awk -v a="$mlp_rg_rss" -v b="$PT_RSS" 'BEGIN {printf "%.3f (1/%.1f)", a / b, b / a}') streamed," \
       "$(awk -v a="$mlp_mem_rss" -v b="$PT_RSS" 'BEGIN {printf "%.3f (1/%.1f)", a / b, b / a}') in memory"
fi
echo
echo "lenet accuracy: unbudgeted $lenet_free_acc, under 24 MiB $lenet_24m_acc" \
     "($(awk -v a="$lenet_24m_acc" -v b="$lenet_free_acc" 'BEGIN {printf "%+.2f points", 100 * (a - b)}'))"
