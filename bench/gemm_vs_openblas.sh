#!/usr/bin/env bash
# retrograd's f32 GEMM (every ISA level this CPU runs) vs OpenBLAS cblas_sgemm, and the
# thread pool's fork-join cost / where a 2-way GEMM split pays.
#
# usage: bench/gemm_vs_openblas.sh [--markdown] [--quick]
#   env THREADS   thread counts for the comparison (default "1 2"; empty: no comparison)
#   env REPS      repetitions per case and side (default 5); the median is reported
#   env MIN_TIME  seconds each repetition runs at least (default 0.3)
#   env SIZES     square sizes (default "128,256,512,1024,2048")
#   env ISAS      ISA levels (default: all; sse3/ssse3/sse4.1 run the sse2 tile, so they
#                 re-measure it and show the noise)
#   env REF_MAX   largest square size for the reference level (default 512; it is slow)
#   env FORKJOIN  0 skips the fork-join / small-GEMM probe (default 1); the probe
#                 times small GEMMs at avx2 and sse2 whatever ISAS says
#   env QUIET_MAX seconds to wait, before each repetition, for a moment when other
#                 processes use < 0.1 cores; a repetition during which they used > 0.15
#                 cores is measured again, up to 3 times (default 0: no waiting, no redo).
#                 The machine is shared: the tables give the other processes' mean load
#                 (cores) over the kept repetitions, and how many were redone.
#   --quick       REPS=3 MIN_TIME=0.1, square sizes up to 512 (a smoke run, not a result)
#
# Builds the library (ninja -C build) and bench/gemm_bench.cpp with a direct g++ line
# against build/libretrograd_core.a and OpenBLAS (Debian libopenblas-dev, pthread
# variant; apt-get installed if missing, which this script says when it does). One
# process per thread count, with OPENBLAS_NUM_THREADS set to it; within a process, each
# repetition runs OpenBLAS then ours at each ISA level, so the two sides alternate.
# GFLOP/s = 2mnk / seconds per call. Every timed result is checked against OpenBLAS's
# (max |diff| / max |C| <= 1e-4): a mismatch fails the script (exit 1). The verdict
# lines at the end compare with the goals (avx2 >= 0.9x OpenBLAS at >= 1024 at 1 and 2
# threads; sse2 >= 3.5x reference); they report, they do not fail the script.
set -euo pipefail

die() { echo "gemm_vs_openblas.sh: FAILED: $*" >&2; exit 1; }

MARKDOWN=0
QUICK=0
for arg in "$@"; do
  case "$arg" in
    --markdown) MARKDOWN=1 ;;
    --quick) QUICK=1 ;;
    -h|--help) sed -n '2,30p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument: $arg" ;;
  esac
done

THREADS=${THREADS-"1 2"}
if [[ $QUICK == 1 ]]; then
  REPS=${REPS:-3}; MIN_TIME=${MIN_TIME:-0.1}; SIZES=${SIZES:-"128,256,512"}
fi
REPS=${REPS:-5}
MIN_TIME=${MIN_TIME:-0.3}
SIZES=${SIZES:-"128,256,512,1024,2048"}
ISAS=${ISAS:-"reference,sse2,sse3,ssse3,sse4.1,avx,avx2"}
REF_MAX=${REF_MAX:-512}
FORKJOIN=${FORKJOIN:-1}
QUIET_MAX=${QUIET_MAX:-0}
PY=/usr/bin/python3

[[ "$REPS" =~ ^[1-9][0-9]*$ ]] || die "REPS must be a positive integer (got '$REPS')"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# --- prerequisites -----------------------------------------------------------
OB_INC=/usr/include/x86_64-linux-gnu/openblas-pthread
OB_LIB=/usr/lib/x86_64-linux-gnu/openblas-pthread
if [[ ! -f $OB_INC/cblas.h || ! -e $OB_LIB/libopenblas.so ]]; then
  echo "gemm_vs_openblas.sh: OpenBLAS is missing: installing libopenblas-dev with apt-get" \
       "(note: this makes OpenBLAS the libblas.so.3 alternative, which other programs, e.g." \
       "Debian's PyTorch, then load)" >&2
  if [[ $(id -u) == 0 ]]; then SUDO=""; else SUDO="sudo"; fi
  $SUDO apt-get install -y libopenblas-dev >&2 || die "apt-get install libopenblas-dev failed"
  [[ -f $OB_INC/cblas.h && -e $OB_LIB/libopenblas.so ]] || die "libopenblas-dev installed but $OB_INC/cblas.h or $OB_LIB/libopenblas.so is missing"
fi
OB_VERSION=$(dpkg-query -W -f='${Version}' libopenblas0-pthread 2>/dev/null || echo unknown)
[[ -x $PY ]] || die "$PY not found"

# --- build -------------------------------------------------------------------
if [[ ! -d build ]]; then
  meson setup build --buildtype=release >&2 || die "meson setup failed"
fi
ninja -C build >&2 || die "ninja -C build failed"
[[ -f build/libretrograd_core.a ]] || die "build/libretrograd_core.a was not built"
BUILDTYPE=$("$PY" -c '
import json
o = {x["name"]: x["value"] for x in json.load(open("build/meson-info/intro-buildoptions.json"))}
print("%s, -O%s" % (o.get("buildtype"), o.get("optimization")))' 2>/dev/null || echo unknown)

WORK=$(mktemp -d "${TMPDIR:-/tmp}/gemm_vs_openblas.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
BIN=$WORK/gemm_bench
CXX_CMD=(g++ -std=c++17 -O2 -Wall -Wextra -Isrc -I"$OB_INC" bench/gemm_bench.cpp -o "$BIN"
         build/libretrograd_core.a -L"$OB_LIB" -Wl,-rpath,"$OB_LIB" -lopenblas -lz -pthread)
"${CXX_CMD[@]}" >&2 || die "compiling bench/gemm_bench.cpp failed"

# --- provenance --------------------------------------------------------------
CPU=$(grep -m1 '^model name' /proc/cpuinfo | sed 's/^model name[[:space:]]*:[[:space:]]*//')
NPROC=$(nproc)
DATE=$(date -u '+%Y-%m-%d %H:%M UTC')
if COMMIT=$(git rev-parse --short HEAD 2>/dev/null); then
  if [[ -n "$(git status --porcelain -- src 2>/dev/null)" ]]; then
    SRC_DIFF=$( (git diff HEAD -- src; git ls-files --others --exclude-standard -z -- src | xargs -0 -r cat) | sha256sum | cut -c1-12)
    COMMIT="$COMMIT plus uncommitted changes in src/ (diff+untracked sha256 $SRC_DIFF)"
  fi
else
  COMMIT=uncommitted
fi

echo "machine:  $CPU, nproc $NPROC"
echo "date:     $DATE"
echo "commit:   $COMMIT"
echo "build:    build/ ($BUILDTYPE); bench: ${CXX_CMD[*]}"
echo "openblas: Debian libopenblas0-pthread $OB_VERSION ($OB_LIB/libopenblas.so)"
echo "load:     $(cat /proc/loadavg) (before)"
echo "runs:     THREADS=\"$THREADS\" REPS=$REPS MIN_TIME=$MIN_TIME SIZES=$SIZES REF_MAX=$REF_MAX ISAS=$ISAS QUIET_MAX=$QUIET_MAX FORKJOIN=$FORKJOIN"
echo

OUT=$WORK/out.tsv
: > "$OUT"
if [[ $FORKJOIN == 1 ]]; then
  # The trivial fork-join probe runs first and again at the end: it drifts with the machine.
  echo "=== forkjoin (trivial body, start): OPENBLAS_NUM_THREADS=1 gemm_bench forkjoin --part trivial ..." >&2
  OPENBLAS_NUM_THREADS=1 "$BIN" forkjoin --part trivial --reps "$((REPS < 9 ? 9 : REPS))" --min-time "$MIN_TIME" --quiet-max "$QUIET_MAX" \
    | sed 's/^\(FJ[LP]\{0,1\}\)\t/\1\tstart\t/' | tee -a "$OUT" | grep -v -E '^(FJ|FJP|FJL|INFO)' >&2 \
    || die "gemm_bench forkjoin --part trivial failed"
fi
for t in $THREADS; do
  echo "=== compare, $t thread(s): OPENBLAS_NUM_THREADS=$t gemm_bench compare --threads $t ..." >&2
  OPENBLAS_NUM_THREADS=$t "$BIN" compare --threads "$t" --isas "$ISAS" --sizes "$SIZES" --ref-max "$REF_MAX" \
      --reps "$REPS" --min-time "$MIN_TIME" --quiet-max "$QUIET_MAX" | tee -a "$OUT" | grep -v -E '^(CMP|INFO)' >&2 \
    || die "gemm_bench compare --threads $t failed"
done
if [[ $FORKJOIN == 1 ]]; then
  echo "=== forkjoin: OPENBLAS_NUM_THREADS=1 gemm_bench forkjoin ..." >&2
  OPENBLAS_NUM_THREADS=1 "$BIN" forkjoin --reps "$((REPS < 9 ? 9 : REPS))" --min-time "$MIN_TIME" --quiet-max "$QUIET_MAX" \
    | sed 's/^\(FJ[LP]\{0,1\}\)\t/\1\tend\t/' | tee -a "$OUT" | grep -v -E '^(SPLIT|FJ|FJP|FJL|INFO)' >&2 \
    || die "gemm_bench forkjoin failed"
fi
echo "load:     $(cat /proc/loadavg) (after)"
echo

# --- summary -----------------------------------------------------------------
"$PY" - "$OUT" "$MARKDOWN" <<'EOF'
import sys
path, markdown = sys.argv[1], sys.argv[2] == "1"
cmp, fj, fjp, fjl, split, info = [], [], [], [], [], []
for line in open(path):
    f = line.rstrip("\n").split("\t")
    if f[0] == "CMP": cmp.append(f[1:])
    elif f[0] == "FJ": fj.append(f[1:])
    elif f[0] == "FJP": fjp.append(f[1:])
    elif f[0] == "FJL": fjl.append(f[1:])
    elif f[0] == "SPLIT": split.append(f[1:])
    elif f[0] == "INFO": info.append(f[1:])

def table(hdr, rows, right=None):
    right = right or [True] * len(hdr)
    if markdown:
        print("| " + " | ".join(hdr) + " |")
        print("|" + "|".join("---:" if r else "---" for r in right) + "|")
        for r in rows: print("| " + " | ".join(r) + " |")
    else:
        w = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(hdr)]
        print("  ".join(h.ljust(w[i]) for i, h in enumerate(hdr)))
        print("  ".join("-" * x for x in w))
        for r in rows: print("  ".join(x.ljust(w[i]) for i, x in enumerate(r)))
    print()

seen = set()
for f in info:
    if f[0] in ("cpu", "openblas") and f[0] not in seen:
        seen.add(f[0]); print("%s: %s" % (f[0], "  ".join(f[1:])))
print()

# CMP: threads case shape isa kernel om omin omax bm bmin bmax ratio err ok
res = {}
cases, isas, threads = [], [], []
for f in cmp:
    t, case, shape, isa, kernel = int(f[0]), f[1], f[2], f[3], f[4]
    om, omin, omax, bm, bmin, bmax, ratio, err = map(float, f[5:13])
    res[(t, case, isa)] = dict(shape=shape, kernel=kernel, om=om, omin=omin, omax=omax, bm=bm, bmin=bmin,
                               bmax=bmax, ratio=ratio, err=err, ok=f[13], other=float(f[14]), redone=int(f[15]))
    if case not in cases: cases.append(case)
    if isa not in isas: isas.append(isa)
    if t not in threads: threads.append(t)

if cmp:
    print("GFLOP/s, median of the repetitions (min-max in the per-run log); ratio = ours / OpenBLAS (medians)")
    print()
    hdr = ["case", "shape (m x n x k, op)", "ISA"]
    for t in threads: hdr += ["%dT ours" % t, "%dT OpenBLAS" % t, "%dT ratio" % t]
    hdr += ["max rel err", "other procs, cores (reps redone)"]
    rows = []
    for case in cases:
        for isa in isas:
            cells = [r for r in (res.get((t, case, isa)) for t in threads) if r]
            if not cells: continue
            row = [case, cells[0]["shape"], isa]
            errs, others = [], []
            for t in threads:
                r = res.get((t, case, isa))
                if r:
                    row += ["%.1f (%.1f-%.1f)" % (r["om"], r["omin"], r["omax"]),
                            "%.1f (%.1f-%.1f)" % (r["bm"], r["bmin"], r["bmax"]), "%.2fx" % r["ratio"]]
                    errs.append(r["err"]); others.append("%.2f (%d)" % (r["other"], r["redone"]))
                else:
                    row += ["-", "-", "-"]
            row.append("%.1e" % max(errs))
            row.append(" / ".join(others))
            rows.append(row)
    table(hdr, rows, [False, False, False] + [True] * (len(hdr) - 3))

    # sse2 vs reference (and the other levels vs reference), per thread count
    if "reference" in isas:
        print("speed-up over the reference level (medians)")
        print()
        hdr = ["case"] + ["%dT %s/ref" % (t, i) for t in threads for i in isas if i != "reference"]
        rows = []
        for case in cases:
            row, any_ = [case], False
            for t in threads:
                ref = res.get((t, case, "reference"))
                for i in isas:
                    if i == "reference": continue
                    r = res.get((t, case, i))
                    if ref and r: row.append("%.2fx" % (r["om"] / ref["om"])); any_ = True
                    else: row.append("-")
            if any_: rows.append(row)
        table(hdr, rows)

    print("verdict against the goals (medians; a noisy shared VM):")
    for t in threads:
        for case in cases:
            if not case.isdigit() or int(case) < 1024: continue
            r = res.get((t, case, "avx2"))
            if r:
                print("  avx2 >= 0.9x OpenBLAS, %s, %d thread(s): %.2fx  %s" %
                      (case, t, r["ratio"], "MET" if r["ratio"] >= 0.9 else "NOT MET"))
    for t in threads:
        for case in cases:
            ref, s2 = res.get((t, case, "reference")), res.get((t, case, "sse2"))
            if ref and s2:
                x = s2["om"] / ref["om"]
                print("  sse2 >= 3.5x reference, %s, %d thread(s): %.2fx  %s" % (case, t, x, "MET" if x >= 3.5 else "NOT MET"))
    print()

if fj:
    load = {f[0]: "%s (steal %s)" % (f[1], f[2]) for f in fjl}
    print("fork-join cost, trivial body (microseconds per call; median of batch means, min-max);")
    print("probe run at the start and at the end; other processes' cores during it: " +
          ", ".join("%s %s" % kv for kv in load.items()))
    print()
    table(["when", "what", "us/call median", "min", "max"],
          [[f[0], f[1], "%.3f" % float(f[2]), "%.3f" % float(f[3]), "%.3f" % float(f[4])] for f in fj],
          [False, False, True, True, True])
if fjp:
    print("single parallel_for calls at 2 threads, each timed (microseconds)")
    print()
    table(["when", "what", "p10", "p50", "p90", "p99"], [[f[0], f[1]] + ["%.1f" % float(x) for x in f[2:6]] for f in fjp],
          [False, False, True, True, True, True])
if split:
    print("small GEMMs: 1 thread vs forced 2-way split vs f32_gemm with a 2-thread pool (us/call, medians)")
    print("speed-up = 1-thread / forced split; 'library does' = what f32_gemm does at 2 threads (threshold 2^21 flops);")
    print("back to back = calls in a timing loop; after 10 / 200 us = single calls, each that much busy work on the")
    print("caller after an untimed call of the same kind (median of 41-301 calls per side, 1 thread and split alternately)")
    print()
    hdr = ["ISA", "case", "shape", "MFLOP", "back to back: 1 thread us (min-max)", "forced split us (min-max)", "speed-up", "f32_gemm 2T pool us", "library does", "after 10 us: 1T / split us", "speed-up", "after 200 us: 1T / split us", "speed-up", "split result", "other procs, cores (reps redone)"]
    rows = []
    for f in split:
        isa, case, shape, mflop = f[0], f[1], f[2], float(f[3])
        t1, t1n, t1x, t2, t2n, t2x, t3, sp = map(float, f[4:12])
        rows.append([isa, case, shape, "%.2f" % mflop, "%.1f (%.1f-%.1f)" % (t1, t1n, t1x), "%.1f (%.1f-%.1f)" % (t2, t2n, t2x),
                     "%.2fx" % sp, "%.1f" % t3, f[12]]
                    + ["%.1f / %.1f" % (float(f[17]), float(f[18])), "%.2fx" % (float(f[17]) / float(f[18])),
                       "%.1f / %.1f" % (float(f[19]), float(f[20])), "%.2fx" % (float(f[19]) / float(f[20]))]
                    + ["bitwise same" if f[13] == "same" else "DIFFERENT", "%.2f (%s)" % (float(f[15]), f[16])])
    table(hdr, rows, [False, False, False, True, True, True, True, True, False, True, True, True, True, False, True])
EOF
