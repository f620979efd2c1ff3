#!/bin/bash
# Every preset trained on the CPU and on an OpenCL device from the same seed (issue 8: the device
# reaches the CPU's accuracy within 0.5 points), with each run's speed and the device's memory.
#
#   retrograd train --model M --epochs E --seed S --device cpu --json cpu.json
#   retrograd train --model M --epochs E --seed S --device cl:P:D --json device.json
#
# Classifiers compare test accuracy; autoencoders test MSE and PSNR; dcgan the last epoch's
# losses and D(x), D(G(z)) (--score-samples 0: no judge). The runs of one preset go one after the
# other, CPU first; the device run's samples/s is end to end (uploads and the loss's read-back
# included). Output: a Markdown table, one row per preset, with the change and a pass/fail per row.
#
# Usage: bash bench/opencl_presets.sh
# env: DEVICE (default cl:0:0)  MODELS (default: every preset)  EPOCHS (default 2)  SEED (default 1)
#      THREADS (CPU runs; default: all cores)  BIN (default build/retrograd)  OUT (default: a temp folder)
#      EXTRA (more options for both runs, e.g. "--limit 2000")  CPU_EXTRA, DEVICE_EXTRA (one side only)
#      SIDES (default "cpu device"; one side lets two copies run at once; "none" runs nothing and
#      prints the table of what OUT holds)
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
DEVICE=${DEVICE:-cl:0:0}
MODELS=${MODELS:-mlp lenet cnn autoencoder conv-autoencoder rcnn dcgan}
EPOCHS=${EPOCHS:-2}
SEED=${SEED:-1}
THREADS=${THREADS:-$(nproc)}
BIN=${BIN:-build/retrograd}
OUT=${OUT:-$(mktemp -d /tmp/opencl-presets.XXXXXX)}
EXTRA=${EXTRA:-}
CPU_EXTRA=${CPU_EXTRA:-}
DEVICE_EXTRA=${DEVICE_EXTRA:-}
SIDES=${SIDES:-cpu device}
mkdir -p "$OUT"

for model in $MODELS; do
  gan=()
  [ "$model" = dcgan ] && gan=(--score-samples 0)
  for side in $SIDES; do
    [ "$side" = none ] && continue  # SIDES=none: only the table of what OUT holds
    [ -s "$OUT/$model-$side.json" ] && continue
    if [ "$side" = cpu ]; then where=(--device cpu $CPU_EXTRA); else where=(--device "$DEVICE" $DEVICE_EXTRA); fi
    [ "$model" = dcgan ] && gan=(--score-samples 0 --out "$OUT/$model-$side-run")
    echo "== $model on $side" >&2
    # shellcheck disable=SC2086
    "$BIN" train --model "$model" --epochs "$EPOCHS" --seed "$SEED" --threads "$THREADS" "${where[@]}" "${gan[@]}" \
      $EXTRA --json "$OUT/$model-$side.json" >"$OUT/$model-$side.log" 2>&1 || { echo "   failed: see $OUT/$model-$side.log" >&2; tail -3 "$OUT/$model-$side.log" >&2; }
  done
done

python3 - "$OUT" "$DEVICE" $MODELS <<'PY'
import json, os, sys
out, device, models = sys.argv[1], sys.argv[2], sys.argv[3:]
def load(model, side):
    path = os.path.join(out, f"{model}-{side}.json")
    try:
        with open(path) as f: return json.load(f)
    except (OSError, ValueError): return None
name = None
print(f"| preset | epochs | CPU | device | change | CPU samples/s | device samples/s | device peak | within 0.5 |")
print("|---|---|---|---|---|---|---|---|---|")
for m in models:
    c, d = load(m, "cpu"), load(m, "device")
    if c is None or d is None:
        print(f"| {m} | | {'ok' if c else 'failed'} | {'ok' if d else 'failed'} | | | | | no run |"); continue
    name = name or d.get("device")
    peak = d.get("device_peak_bytes", 0) / 2**20
    if m == "dcgan":
        hc, hd = c["history"][-1], d["history"][-1]
        fig = lambda h: f"D {h['loss_d']:.4f}, G {h['loss_g']:.4f}, D(x) {h['d_real']:.3f}"
        change = max(abs(hc[k] - hd[k]) for k in ("loss_d", "loss_g", "d_real", "d_fake"))
        print(f"| {m} | {len(d['history'])} | {fig(hc)} | {fig(hd)} | max {change:.4f} | {hc['samples_per_s']:.0f} | "
              f"{hd['samples_per_s']:.0f} | {peak:.1f} MiB | {'yes' if change <= 0.05 else 'NO'} (losses within 0.05) |")
        continue
    if c.get("test_accuracy", 0) > 0:
        a, b = 100 * c["test_accuracy"], 100 * d["test_accuracy"]
        cell = lambda v: f"{v:.2f}%"
        ok = abs(a - b) <= 0.5
        change = f"{b - a:+.2f} pts"
    else:
        a, b = c["test_psnr_db"], d["test_psnr_db"]
        cell = lambda v: f"{v:.2f} dB"
        ok = abs(a - b) <= 0.05 * max(1.0, abs(a))
        change = f"{b - a:+.3f} dB (MSE {c['test_mse']:.5f} vs {d['test_mse']:.5f})"
    print(f"| {m} | {d['epochs']} | {cell(a)} | {cell(b)} | {change} | {c['train_samples_per_s']:.0f} | "
          f"{d['train_samples_per_s']:.0f} | {peak:.1f} MiB | {'yes' if ok else 'NO'} |")
print(f"\ndevice {name}; results in {out}")
PY
