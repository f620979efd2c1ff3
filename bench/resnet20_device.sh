#!/bin/bash
# Issue 31's resnet20 acceptance runs on a GPU machine of many cores (`device`), all at once: every
# (job, seed) is one bench/resnet20_accuracy.sh call in its own folder, run side by side, the CPU jobs
# sharing the cores evenly and each GPU job on a GPU of its own; then the tables of both scripts.
#
#   JOBS="fp32 int8-train opencl pytorch" BIN=... DATA=... OUT=... bash bench/resnet20_device.sh
#
# Jobs (each for every seed of SEEDS):
#   fp32        CPU: `retrograd precision --precision fp32,int8,int8-qat` (fp32, int8 PTQ and QAT)
#   fp16        CPU: `retrograd train --train-precision fp16`
#   int8-train  CPU: `retrograd train --train-precision int8-train`
#   opencl      `retrograd train --device cl:0:G`, seed i on GPU G = GPU_FIRST + i - 1 (wrapping at GPUS)
#   pytorch     the PyTorch twin on CUDA (bench/pytorch_presets.py), its seeds one after another on
#               the GPU after the last OpenCL one (CUDA_VISIBLE_DEVICES)
# Every retrograd run checkpoints after each epoch into its folder; a job stopped by TIME_LIMIT
# continues from there when OUT is given again (resnet20_accuracy.sh CHECKPOINTS=1).
# env: JOBS (all five)  SEEDS (1 2 3)  BIN (build/retrograd)  DATA (the IDX folder)  OUT (required)
#      GPUS (nvidia-smi's count)  THREADS (each CPU run's threads; empty: the cores not given to a GPU
#      run, shared evenly: set it when two calls of this script share the machine)  TIME_LIMIT (seconds for every job; 0: none)  EPOCHS, LIMIT,
#      TEST_LIMIT (passed on)  PYTHON (python3)
#      TARBALL (empty; a file: OUT packed into it every 15 s and at the end, so that a call of the device
#               tool, which brings back a few files of its $OUT and nothing of a run it stops, returns
#               the checkpoints and logs as they were: OUT=/tmp/r20 TARBALL=$OUT/r20.tgz)
set -uo pipefail
die() { echo "resnet20_device.sh: $*" >&2; exit 2; }  # every die here refuses a setting
cd "$(dirname "$0")/.." || exit 1
JOBS=${JOBS:-fp32 fp16 int8-train opencl pytorch}
SEEDS=${SEEDS:-1 2 3}
BIN=${BIN:-build/retrograd}
OUT=${OUT:-}
[[ -n "$OUT" ]] || die "OUT= the folder for the runs is needed (given again, it continues them)"
GPUS=${GPUS:-$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')}
TIME_LIMIT=${TIME_LIMIT:-0}
[[ "$TIME_LIMIT" =~ ^[0-9]+$ ]] || die "TIME_LIMIT must be whole seconds (got '$TIME_LIMIT')"
for job in $JOBS; do
  [[ " fp32 fp16 int8-train opencl pytorch " == *" $job "* ]] || die "JOBS: unknown job '$job'"
done
mkdir -p "$OUT" || die "cannot make OUT=$OUT"

cpu_jobs=0 gpu_jobs=0 seeds=0
for s in $SEEDS; do seeds=$((seeds + 1)); done
for job in $JOBS; do
  case $job in opencl) gpu_jobs=$((gpu_jobs + seeds)) ;; pytorch) gpu_jobs=$((gpu_jobs + 1)) ;;
    *) cpu_jobs=$((cpu_jobs + seeds)) ;; esac
done
[[ " $JOBS " != *" opencl "* && " $JOBS " != *" pytorch "* ]] || [[ "$GPUS" -gt 0 ]] || die "no GPU (GPUS=$GPUS)"
threads=${THREADS:-$(( (($(nproc) - gpu_jobs) / (cpu_jobs > 0 ? cpu_jobs : 1)) ))}
[[ "$threads" =~ ^[0-9]{1,4}$ && $((10#$threads)) -ge 1 ]] || die "THREADS must be a whole number from 1 to 9999 (got '$threads')"
[[ $threads -ge 1 ]] || threads=1
echo "resnet20_device.sh: $(nproc) cores, $GPUS GPUs: $cpu_jobs CPU runs of $threads threads, $gpu_jobs GPU runs" >&2

limit=()
[[ "$TIME_LIMIT" -gt 0 ]] && limit=(timeout "$TIME_LIMIT")
TARBALL=${TARBALL:-}
# The pack is written beside it and renamed over it: only a regular file (or none) may be there,
# never a device, link or folder that the rename would replace.
if [[ -n "$TARBALL" ]]; then
  [[ ! -e "$TARBALL" && ! -L "$TARBALL" ]] || [[ -f "$TARBALL" && ! -L "$TARBALL" ]] ||
    die "TARBALL=$TARBALL: there is something other than a regular file there (a device, link or folder)"
  [[ -d "$(dirname "$TARBALL")" && -w "$(dirname "$TARBALL")" ]] || die "TARBALL=$TARBALL: its folder is not writable"
fi
pack() { tar czf "$TARBALL.part" -C "$(dirname "$OUT")" "$(basename "$OUT")" 2>/dev/null && mv "$TARBALL.part" "$TARBALL"; }
if [[ -n "$TARBALL" ]]; then
  (while sleep 15; do pack; done) &
  packer=$!
fi
run() {  # run FOLDER ENV...: one resnet20_accuracy.sh call, its output in FOLDER.out
  local dir=$1; shift
  env OUT="$dir" BIN="$BIN" CHECKPOINTS=1 "$@" "${limit[@]}" bash bench/resnet20_accuracy.sh >"$dir.out" 2>&1 &
}
gpu=0
for job in $JOBS; do
  for s in $SEEDS; do
    dir="$OUT/$job-seed$s"
    case $job in
      fp32) run "$dir" SEEDS="$s" SIDES=retrograd THREADS="$threads" PRECISIONS=fp32,int8,int8-qat ;;
      fp16 | int8-train) run "$dir" SEEDS="$s" SIDES=retrograd THREADS="$threads" TRAIN_PRECISION="$job" ;;
      opencl) run "$dir" SEEDS="$s" SIDES=retrograd THREADS=1 DEVICE="cl:0:$((gpu % GPUS))"; gpu=$((gpu + 1)) ;;
    esac
  done
  if [[ $job == pytorch ]]; then
    run "$OUT/pytorch" SEEDS="$SEEDS" SIDES=pytorch THREADS=2 TORCH_DEVICE=cuda CUDA_VISIBLE_DEVICES="$((gpu % GPUS))"
  fi
done
wait $(jobs -p | grep -vx "${packer:-none}")
for f in "$OUT"/*.out; do echo "== $(basename "$f" .out): $(tail -1 "$f")"; done

# The tables of what has finished, whichever call ran it.
done_dirs() { for d in "$OUT"/$1-seed*; do [[ -f $d/rg-seed${d##*seed}.json ]] && echo "$d"; done; }
mapfile -t pytorch < <([[ -f "$OUT/pytorch/data.txt" ]] && echo "$OUT/pytorch")
for side in fp32 opencl; do
  mapfile -t dirs < <(done_dirs "$side")
  [[ ${#dirs[@]} -gt 0 ]] && bash bench/resnet20_accuracy.sh --table "${dirs[@]}" "${pytorch[@]}"
done
mapfile -t fp32 < <(done_dirs fp32)
if [[ ${#fp32[@]} -gt 0 ]]; then
  others=()
  for job in fp16 int8-train opencl; do
    mapfile -t dirs < <(done_dirs "$job")
    [[ ${#dirs[@]} -gt 0 ]] && others+=("--$job" "${dirs[@]}")
  done
  python3 bench/resnet20_precisions.py --fp32 "${fp32[@]}" "${others[@]}"
fi
if [[ -n "$TARBALL" ]]; then
  kill "$packer" 2>/dev/null
  pack
fi
