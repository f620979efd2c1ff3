#!/bin/bash
# Issue 9's GPU benchmark, in one go on the GPU machine: retrograd's OpenCL SGEMM beside CLBlast
# (bench/opencl_gemm_vs_clblast.sh) and cuBLAS FP32 with TF32 off (bench/pytorch_cuda.py sgemm);
# training steps/s of lenet, cnn, rcnn, dcgan and resnet20 at batch 64 and 256 on the OpenCL device
# (`retrograd train --device`, end to end: the host gathers and uploads each batch; the second of two
# epochs of STEPS steps, so kernel builds are not counted) beside PyTorch
# CUDA FP32 (pytorch_cuda.py train: pinned host batches copied each step), and where a step's time
# goes: a second run with --profile-device gives the device seconds of kernels and copies per step,
# shown as shares of the unprofiled step (the rest: the device idle between launches or waiting for
# the host). Writes Markdown tables.
#
# On the GPU machine (DESIGN.md: NVIDIA's OpenCL is found with OCL_ICD_FILENAMES):
#   OCL_ICD_FILENAMES=libnvidia-opencl.so.1 BIN=bin/retrograd GEMM_BIN=bin/opencl_gemm_bench \
#   (GEMM_BIN: built by bench/opencl_gemm_vs_clblast.sh here, carried; empty: that script builds it) \
#   RETROGRAD_CLBLAST_LIBRARY=clblast/usr/lib/x86_64-linux-gnu/libclblast.so.1 DATA=fashion-mnist \
#   bash bench/gpu_bench.sh
# Then (budget) each model trained within --device-mem of BUDGETS (issue 33: a student's 2 GB and
# 512 MB cards) at BUDGET_BATCH, its steps/s, micro-batch and device peak beside the unbudgeted run's.
# Last, fp16 storage (issue 9: halves the activations' device bytes, accuracy within 0.3 points):
# FP16_MODELS trained FP16_EPOCHS epochs in fp32 and in fp16 on the device from each of FP16_SEEDS;
# the change is the mean over the seeds of fp16 - fp32 from the same seed (one seed's change
# after a few epochs is mostly noise: cnn seed 1, 2 epochs, on the CPU: -0.27 points).
# env: PARTS (sgemm train budget fp16)  DEVICE (cl:0:0)  MODELS (lenet cnn rcnn dcgan resnet20)
#      BATCHES (64 256)  BUDGETS (2G 512M)  BUDGET_BATCH (256)
#      STEPS (200 a run)  SIZES (1024,2048,4096,8192)  REPS (10)  PYTHON (python3 with CUDA torch)
#      OUT (temp folder)  FP16_MODELS (mlp lenet cnn)  FP16_EPOCHS (5)  FP16_SEEDS (1 2 3)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
PARTS=${PARTS:-sgemm train budget fp16}
BUDGETS=${BUDGETS:-2G 512M}
BUDGET_BATCH=${BUDGET_BATCH:-256}
DEVICE=${DEVICE:-cl:0:0}
MODELS=${MODELS:-lenet cnn rcnn dcgan resnet20}
BATCHES=${BATCHES:-64 256}
STEPS=${STEPS:-200}
SIZES=${SIZES:-1024,2048,4096,8192}
FP16_MODELS=${FP16_MODELS:-mlp lenet cnn}
FP16_EPOCHS=${FP16_EPOCHS:-5}
FP16_SEEDS=${FP16_SEEDS:-1 2 3}
REPS=${REPS:-10}
PYTHON=${PYTHON:-python3}
BIN=${BIN:-build/retrograd}
DATA=${DATA:-/usr/share/datasets/fashion-mnist}
OUT=${OUT:-$(mktemp -d /tmp/gpu-bench.XXXXXX)}
mkdir -p "$OUT"
# dcgan's networks, samples and checkpoints (megabytes a run, not results): kept out of OUT.
GAN_SCRATCH=$(mktemp -d /tmp/gpu-bench-gan.XXXXXX)
trap 'rm -rf "$GAN_SCRATCH"' EXIT

part() { [[ " $PARTS " == *" $1 "* ]]; }

if part sgemm; then
echo "## SGEMM (square, f32): retrograd OpenCL beside CLBlast"
BIN=${GEMM_BIN:-} SIZES=$SIZES REPS=$REPS DEVICE=$DEVICE bash bench/opencl_gemm_vs_clblast.sh 2>"$OUT/gemm.err" | tee "$OUT/gemm.md"
echo
echo "## cuBLAS FP32 (TF32 off) through PyTorch"
if "$PYTHON" bench/pytorch_cuda.py sgemm --sizes "$SIZES" --reps "$REPS" >"$OUT/cublas.jsonl" 2>"$OUT/cublas.err"; then
  "$PYTHON" - "$OUT/cublas.jsonl" <<'PY'
import json, sys
print("| n | cuBLAS median TFLOP/s | best |\n|---|---|---|")
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(f"| {r['n']} | {r['median_tflops']:.1f} | {r['best_tflops']:.1f} |")
PY
else
  echo "cuBLAS: not measured: $(tail -1 "$OUT/cublas.err")"
fi
echo
fi

if part train; then
echo "## Training steps/s (FP32): retrograd on $DEVICE beside PyTorch CUDA"
"$PYTHON" bench/pytorch_cuda.py train --models "$(echo $MODELS | tr ' ' ,)" --batches "$(echo $BATCHES | tr ' ' ,)" \
  --steps "$STEPS" >"$OUT/torch_train.jsonl" 2>"$OUT/torch_train.err" || echo "PyTorch CUDA: not measured: $(tail -1 "$OUT/torch_train.err")"
for model in $MODELS; do
  for batch in $BATCHES; do
    extra=()
    [ "$model" = dcgan ] && extra=(--score-samples 0 --out "$GAN_SCRATCH/dcgan-$batch" --overwrite)
    # Two epochs of STEPS steps; the second's speed is reported (the first builds the kernels).
    "$BIN" train --model "$model" --epochs 2 --batch "$batch" --limit $((STEPS * batch)) --device "$DEVICE" \
      --data "$DATA" --threads 2 "${extra[@]}" --json "$OUT/$model-$batch.json" >"$OUT/$model-$batch.log" 2>&1 ||
      echo "retrograd $model batch $batch failed: $(tail -1 "$OUT/$model-$batch.log")"
    # The same steps once more with every command timed (--profile-device waits for each): the
    # device seconds of kernels and copies per step, set against the unprofiled run's step time.
    "$BIN" train --model "$model" --epochs 1 --batch "$batch" --limit $((STEPS * batch)) --device "$DEVICE" \
      --data "$DATA" --threads 2 "${extra[@]}" --profile-device >"$OUT/$model-$batch.profile" 2>&1 ||
      echo "retrograd $model batch $batch (profiled) failed: $(tail -1 "$OUT/$model-$batch.profile")"
  done
done
"$PYTHON" - "$OUT" "$STEPS" <<'PY'
import json, os, re, sys
out, steps = sys.argv[1], int(sys.argv[2])


def profile(path):
    """(kernel seconds, copy seconds, launches) over the profiled run, from its kernel table."""
    kernels = copies = launches = 0.0
    try:
        lines = open(path).read().split("device time by kernel\n", 1)[1].splitlines()
    except (OSError, IndexError):
        return None
    for line in lines[1:]:
        m = re.match(r"\s+(.+?)\s+(\d+)\s+([0-9.]+)\s+[0-9.]+%$", line)
        if not m:
            continue
        name, count, seconds = m.group(1), int(m.group(2)), float(m.group(3))
        if name.startswith("("):
            copies += seconds
        else:
            kernels += seconds
            launches += count
    return kernels, copies, launches
torch = {}
try:
    for line in open(os.path.join(out, "torch_train.jsonl")):
        r = json.loads(line); torch[(r["model"], r["batch"])] = r["steps_per_s"]
except OSError:
    pass
print("| model | batch | retrograd steps/s | PyTorch CUDA steps/s | ratio | step ms | kernels | copies | device idle (launch gaps, host) | launches a step |")
print("|---|---|---|---|---|---|---|---|---|---|")
for name in sorted(f for f in os.listdir(out) if f.endswith(".json")):
    model, batch = name[:-5].rsplit("-", 1)
    r = json.load(open(os.path.join(out, name)))
    ours = r["history"][-1]["samples_per_s"] / int(batch)  # the second epoch; a GAN step: one real batch
    peer = torch.get((model, int(batch)))
    ratio = f"{ours / peer:.2f}x" if peer else "-"
    step = 1.0 / ours
    prof = profile(os.path.join(out, f"{model}-{batch}.profile"))
    shares = "| - | - | - | -"
    if prof:
        k, c, n = (v / steps for v in prof)
        shares = f"| {100 * k / step:.0f}% | {100 * c / step:.0f}% | {max(0.0, 100 * (1 - (k + c) / step)):.0f}% | {n:.0f}"
    peer_text = f"{peer:.1f}" if peer else "-"
    print(f"| {model} | {batch} | {ours:.1f} | {peer_text} | {ratio} | {1000 * step:.2f} {shares} |")
PY
echo
fi

if part budget; then
echo "## Training within a device-memory budget on $DEVICE: steps/s at batch $BUDGET_BATCH beside the unbudgeted run"
for model in $MODELS; do
  for budget in none $BUDGETS; do
    extra=()
    [ "$model" = dcgan ] && extra=(--score-samples 0 --out "$GAN_SCRATCH/dcgan-budget-$budget" --overwrite)
    [ "$budget" != none ] && extra+=(--device-mem "$budget")
    "$BIN" train --model "$model" --epochs 2 --batch "$BUDGET_BATCH" --limit $((STEPS * BUDGET_BATCH)) \
      --device "$DEVICE" --data "$DATA" --threads 2 "${extra[@]}" --json "$OUT/$model-$budget.budgetjson" \
      >"$OUT/$model-$budget.budgetlog" 2>&1 ||
      echo "retrograd $model within $budget failed: $(tail -1 "$OUT/$model-$budget.budgetlog")"
  done
done
"$PYTHON" - "$OUT" "$MODELS" "$BUDGETS" "$BUDGET_BATCH" <<'PY'
import json, os, re, sys
out, models, budgets, batch = sys.argv[1], sys.argv[2].split(), sys.argv[3].split(), int(sys.argv[4])


def read(model, budget):
    """(steps/s of the second epoch, micro-batch, device peak) of one run, None where it failed."""
    try:
        r = json.load(open(os.path.join(out, f"{model}-{budget}.budgetjson")))
        log = open(os.path.join(out, f"{model}-{budget}.budgetlog")).read()
    except (OSError, ValueError):
        return None
    micro = re.search(r"micro-batches of (\d+)", log)  # none: the whole batch at once
    peak = re.search(r"device memory peak ([0-9.]+ [KMG]?i?B)", log)
    return (r["history"][-1]["samples_per_s"] / batch, micro.group(1) if micro else "whole", peak and peak.group(1))


print("| model | batch | unbudgeted steps/s (peak) | " + " | ".join(f"--device-mem {b}: steps/s, micro-batch, peak, / unbudgeted" for b in budgets) + " |")
print("|---|---|---|" + "---|" * len(budgets))
for m in models:
    base = read(m, "none")
    cells = []
    for b in budgets:
        r = read(m, b)
        if not r:
            cells.append("failed")
            continue
        ratio = f"{r[0] / base[0]:.2f}x" if base else "-"
        cells.append(f"{r[0]:.1f}, {r[1]}, {r[2]}, {ratio}")
    base_text = f"{base[0]:.1f} ({base[2]})" if base else "failed"
    print(f"| {m} | {batch} | {base_text} | " + " | ".join(cells) + " |")
PY
echo
fi

if part fp16; then
echo "## fp16 storage on $DEVICE: activation bytes and accuracy against fp32 ($FP16_EPOCHS epochs, seeds $FP16_SEEDS)"
for model in $FP16_MODELS; do
  for seed in $FP16_SEEDS; do
    for precision in fp32 fp16; do
      log="$OUT/$model-$precision-$seed.fp16log"
      "$BIN" train --model "$model" --epochs "$FP16_EPOCHS" --seed "$seed" --train-precision "$precision" \
        --device "$DEVICE" --data "$DATA" --threads 2 >"$log" 2>&1 ||
        echo "retrograd $model $precision seed $seed failed: $(tail -1 "$log")"
    done
  done
done
"$PYTHON" - "$OUT" "$FP16_MODELS" "$FP16_SEEDS" <<'PY'
import os, re, statistics, sys
out, models, seeds = sys.argv[1], sys.argv[2].split(), sys.argv[3].split()


def read(path):
    """(activation bytes, final test accuracy, device peak) of one run's log, None where missing."""
    try:
        text = open(path).read()
    except OSError:
        return None
    acts = re.search(r"buffers for micro-batches of \d+: activations ([0-9.]+ [KMG]?i?B)", text)
    accs = re.findall(r"test accuracy\s+([0-9.]+)", text)
    peak = re.search(r"device memory peak ([0-9.]+ [KMG]?i?B)", text)
    if not accs:
        return None
    return (acts and acts.group(1), float(accs[-1]), peak and peak.group(1))


print("| model | activations fp32 | activations fp16 | device peak fp32 / fp16 | test acc fp32 by seed | fp16 by seed "
      "| fp16 - fp32 by seed | mean change |")
print("|---|---|---|---|---|---|---|---|")
for m in models:
    runs = [(read(os.path.join(out, f"{m}-fp32-{s}.fp16log")), read(os.path.join(out, f"{m}-fp16-{s}.fp16log")))
            for s in seeds]
    runs = [(a, b) for a, b in runs if a and b]
    if not runs:
        print(f"| {m} | - | - | - | - | - | - | not measured |")
        continue
    a0, b0 = runs[0]
    changes = [100 * (b[1] - a[1]) for a, b in runs]
    print(f"| {m} | {a0[0]} | {b0[0]} | {a0[2]} / {b0[2]} | {', '.join(f'{a[1]:.4f}' for a, _ in runs)} "
          f"| {', '.join(f'{b[1]:.4f}' for _, b in runs)} | {', '.join(f'{c:+.2f}' for c in changes)} "
          f"| {statistics.mean(changes):+.2f} pts ({len(runs)} seeds) |")
PY
fi
echo
echo "results in $OUT"
