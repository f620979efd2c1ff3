#!/usr/bin/env bash
# DCGAN on Fashion-MNIST against issue 5's floors: after 5 epochs the judge's score (the
# Inception score's formula with a cnn trained by retrograd on the same data) >= 5 and
# rising every epoch, and no mode collapse (>= 8 classes each hold >= 3% of the samples).
#
# usage: bench/gan_quality.sh
#   env EPOCHS   GAN epochs (default 5)
#   env SEED     seed (default 1)
#   env THREADS  threads (default: all)
#   env OUT      the run's folder (default: a new temporary folder; kept, its path printed)
#   env JUDGE    a judge checkpoint to reuse (default: the run trains the cnn preset, 3 epochs)
#   env BUILD    1: run `ninja -C build` first (default 0: use build/retrograd as it is)
#
# Prints each epoch's losses, D(x), D(G(z)), score, confidence and class shares from the
# run's JSON as a markdown table for bench/RESULTS.md, the judge's score on 10,000 real test
# images, and PASS/FAIL per floor. Look at the grids (OUT/samples-epoch-N.png) too:
# the floors say the samples are varied and recognisable to a classifier, not that they
# look like clothing to a person. Exits non-zero if the run fails or a floor is not met.
set -euo pipefail

die() { echo "gan_quality.sh: FAILED: $*" >&2; exit 1; }
for arg in "$@"; do
  case "$arg" in
    -h|--help) sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $arg" ;;
  esac
done
cd "$(dirname "$0")/.."
[[ "${BUILD:-0}" == 1 ]] && ninja -C build >/dev/null
[[ -x build/retrograd ]] || die "build/retrograd is missing: run tools/build.sh first"
EPOCHS=${EPOCHS:-5}
SEED=${SEED:-1}
OUT=${OUT:-$(mktemp -d /tmp/retrograd-gan-XXXXXX)}
mkdir -p "$OUT"
args=(train --model dcgan --epochs "$EPOCHS" --seed "$SEED" --out "$OUT" --json "$OUT/run.json")
[[ -n "${THREADS:-}" ]] && args+=(--threads "$THREADS")
[[ -n "${JUDGE:-}" ]] && args+=(--judge "$JUDGE")
echo "command: build/retrograd ${args[*]}"
build/retrograd "${args[@]}" > "$OUT/log.txt" 2>&1 || { tail -5 "$OUT/log.txt" >&2; die "the run failed (log: $OUT/log.txt)"; }

python3 - "$OUT/run.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
history = report["history"]
real = report["judge_on_real_test_images"]
print(f"run folder {report['run_folder']}, {report['threads']} threads, seed {report['seed']}, "
      f"{report['train_seconds']:.0f} s of GAN training")
print(f"judge on 10,000 real test images: score {real['score']:.2f} +- {real['score_std']:.2f}, "
      f"confidence {real['confidence']:.3f}")
rows = []
for h in history:
    s = h["score"]
    shares = " ".join(f"{100 * x:.1f}" for x in s["class_shares"])
    rows.append((h["epoch"], h["loss_d"], h["loss_g"], h["d_real"], h["d_fake"], s["score"], s["score_std"],
                 s["confidence"], s["classes_over_3_percent"], shares, h["samples_per_s"]))
header = "| epoch | loss_D | loss_G | D(x) | D(G(z)) | score | confidence | classes >= 3% | shares % (classes 0-9) | samples/s |"
print(header)
print("|" + "---:|" * 8 + "---|---:|")
for r in rows:
    print(f"| {r[0]} | {r[1]:.3f} | {r[2]:.3f} | {r[3]:.3f} | {r[4]:.3f} | {r[5]:.2f} +- {r[6]:.2f} | {r[7]:.3f} | "
          f"{r[8]} | {r[9]} | {r[10]:.0f} |")
scores = [h["score"]["score"] for h in history]
final = history[-1]["score"]
checks = [
    (f"score after the last epoch >= 5 (got {scores[-1]:.2f})", scores[-1] >= 5),
    ("score rising every epoch (" + " -> ".join(f"{x:.2f}" for x in scores) + ")",
     all(b > a for a, b in zip(scores, scores[1:]))),
    (f">= 8 classes hold >= 3% of the samples (got {final['classes_over_3_percent']})",
     final["classes_over_3_percent"] >= 8),
]
failed = 0
for text, ok in checks:
    print(("PASS " if ok else "FAIL ") + text)
    failed += not ok
sys.exit(1 if failed else 0)
PY
