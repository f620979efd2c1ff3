#!/bin/bash
# Runs a small set of checks on emulated old CPUs with qemu-user (DESIGN.md section 6.5):
#   -cpu Opteron_G1,-pni  Athlon 64 / Opteron (K8) without SSE3: must choose sse2
#   -cpu Opteron_G2       Athlon 64 X2 (K8 with SSE3):            must choose sse3
#   -cpu Conroe           Core 2 (Merom/Conroe):                  must choose ssse3
#   -cpu Penryn           Core 2 (Penryn/Wolfdale):               must choose sse4.1
# For each CPU: `retrograd probe` must report exactly that level (best and chosen) and an
# ISA kernel with no AVX; the per-level cases (a GoogleTest name ending /LEVEL or /LEVEL_...)
# of the levels the CPU is the oldest to have (the Athlon 64 reference and sse2, the others
# their own level: a level's cases run the same instructions on every CPU that has it, so a
# newer CPU adds only its own table row), with test_gemm's micro-tile and thread-count tests
# among them, must run and pass, and the rest of test_kernels, test_qs8, test_int8_winograd,
# test_winograd and the f32 conv-layer tests (at the CPU's own dispatch) whole; a 1000-sample
# mlp epoch and a 256-sample lenet epoch must finish with a test accuracy line;
# RETROGRAD_ISA=avx2 must exit 2 with a message, not crash; tests/startup_demands_avx2 (the
# start-up check of a program built for AVX2) must stop with exit 2 before main, and start
# under -cpu Haswell-noTSX. qemu 7.2 raises SIGILL when an instruction needs a CPUID bit
# the model lacks: any SIGILL fails loudly. Always with -cpu: without it qemu emulates a
# CPU with AVX2. Emulated SIMD runs ~30-60x slower, hence the short test filter. The four CPUs
# run two at a time: about 6 minutes on a 2-core machine (362 s on 2026-12-02; 792 s when every CPU
# ran every level up to its own).
#
# Usage: bash tools/qemu_old_cpus.sh [RESULTS_FILE]   (after tools/build.sh)
# Writes one line a check to RESULTS_FILE (default build/qemu-results.txt): "PASS label" or
# "FAIL label: why", and test_gemm's GoogleTest XML to build/test-results-qemu/; both are
# counted by tools/count_tests.py (tools/test.sh does it). Exits 1 when a check failed.
set -uo pipefail
cd "$(dirname "$0")/.."
results=${1:-build/qemu-results.txt}
xml_dir=build/test-results-qemu
log_dir=build/qemu-logs
retrograd=build/retrograd
test_gemm=build/tests/test_gemm
test_kernels=build/tests/test_kernels
test_winograd=build/tests/test_winograd
test_qs8=build/tests/test_qs8
test_int8_winograd=build/tests/test_int8_winograd
test_fixed_point=build/tests/test_fixed_point
test_conv_layers=build/tests/test_conv_layers
startup_demo=build/tests/startup_demands_avx2  # tests/startup_demands_avx2.cpp
unset RETROGRAD_ISA GTEST_FILTER GTEST_OUTPUT
ulimit -c 0  # qemu writes a core file into the working directory on SIGILL

mkdir -p "$(dirname "$results")"
: > "$results"
rm -rf "$xml_dir" "$log_dir"
mkdir -p "$xml_dir" "$log_dir"

failures=0
pass() { echo "PASS $1" >> "$results"; echo "  ok    $1"; }
fail() {
  failures=$((failures + 1))
  echo "FAIL $1: $2" >> "$results"
  echo "  FAIL  $1: $2"
}
# Exit status 132 is 128 + SIGILL (4): qemu re-raises the guest's signal on itself.
sigill() {  # $1 label, $2 exit status, $3 log file
  if [ "$2" -eq 132 ] || grep -q "uncaught target signal 4" "$3" 2>/dev/null; then
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    echo "!!! SIGILL: $1"
    echo "!!! An instruction this CPU lacks ran (a kernel above its level, or an AVX copy of a"
    echo "!!! shared inline function: DESIGN.md section 4; tools/check_isa_leaks.py). Log: $3"
    echo "!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!!"
    return 0
  fi
  return 1
}
describe_status() {  # $1 exit status
  case "$1" in
    124) echo "timed out" ;;
    132) echo "SIGILL (illegal instruction)" ;;
    134) echo "SIGABRT" ;;
    136) echo "SIGFPE" ;;
    139) echo "SIGSEGV" ;;
    *) echo "exit status $1" ;;
  esac
}

for tool in qemu-x86_64 python3; do
  if ! command -v "$tool" >/dev/null; then
    fail "qemu setup" "$tool is not installed (bash tools/setup.sh --tests installs qemu-user)"
    exit 1
  fi
done
for binary in "$retrograd" "$test_gemm" "$test_kernels" "$test_qs8" "$test_int8_winograd" "$test_winograd" "$test_conv_layers" \
  "$test_fixed_point"; do
  if [ ! -x "$binary" ]; then
    fail "qemu setup" "$binary is missing: build first (bash tools/build.sh)"
    exit 1
  fi
done
echo "qemu: $(qemu-x86_64 --version | head -1)"
cpu_models=$(qemu-x86_64 -cpu help)

# CPU model (with feature changes) | level it must choose | the levels whose per-level cases
# run on it (those no older CPU of the list has: a level's cases run the same instructions on
# every CPU that has it, so a newer CPU adds its own level's table row) | what it stands for
cpus=(
  "Opteron_G1,-pni|sse2|reference sse2|Athlon 64 / Opteron (K8) without SSE3"
  "Opteron_G2|sse3|sse3|Athlon 64 X2 (K8 with SSE3)"
  "Conroe|ssse3|ssse3|Core 2 (Conroe)"
  "Penryn|sse4.1|sse4.1|Core 2 (Penryn)"
)
levels=(reference sse2 sse3 ssse3 sse4.1)  # in order; GoogleTest names spell sse4.1 "sse4_1"

# GoogleTest's negative patterns for the per-level cases (names ending /LEVEL or /LEVEL_...) of
# the levels below the first of $1 (the CPU's own levels): they ran on an older CPU.
older_levels_filter() {  # $1 the CPU's own levels
  local first=${1%% *} level name filter=""
  for level in "${levels[@]}"; do
    [ "$level" = "$first" ] && break
    name=${level//./_}
    filter+="${filter:+:}*/${name}:*/${name}_*"
  done
  echo "$filter"
}

# The GoogleTest filter of test_gemm for one CPU: every transpose case of MicroTileEdges (tile
# and tail sizes), every GemmGathered case and two of ThreadCountDoesNotChangeBits (about 2.5 s
# each under qemu; bigger sizes that go through the cache blocking) for each of its own levels,
# plus the ISA-free Gemm.* tests. The reference level's thread test runs natively in the suite.
gemm_filter() {  # $1 the CPU's own levels
  local filter="Gemm.*" level name
  for level in $1; do
    name=${level//./_}
    filter+=":*GemmTrans.MicroTileEdges/${name}_*:*GemmGathered.*/${name}_gathered"
    if [ "$level" != reference ]; then
      filter+=":*GemmTrans.ThreadCountDoesNotChangeBits/${name}_AB:*GemmTrans.ThreadCountDoesNotChangeBits/${name}_AtBt"
    fi
  done
  echo "$filter"
}

# --gtest_filter=POSITIVE less the per-level cases of the levels an older CPU ran. Uses $owned.
but_older_levels() {  # POSITIVE (default *)
  local older
  older=$(older_levels_filter "$owned")
  echo "--gtest_filter=${1:-*}${older:+-$older}"
}

start_all=$SECONDS
# Runs a program under the current ${qemu[@]} with its output in `log`. On SIGILL or a
# non-zero exit it records the failed check `label` and returns 1; 0 when it ran to the end.
ran_to_end() {  # label log program [args...]
  local label=$1 log=$2 status
  shift 2
  "${qemu[@]}" "$@" > "$log" 2>&1
  status=$?
  if sigill "$label" "$status" "$log"; then
    fail "$label" "SIGILL (illegal instruction); see $log"
  elif [ "$status" -ne 0 ]; then
    fail "$label" "$(describe_status $status); see $log"
  else
    return 0
  fi
  return 1
}

# A GoogleTest program into an XML report (its failed cases are counted from the XML),
# and one check: it ran to the end. Uses $cpu, $tag.
run_gtest_under_qemu() {  # name binary xml [gtest args...]
  local name=$1 binary=$2 xml=$3
  shift 3
  if GTEST_OUTPUT=xml:$xml ran_to_end "$cpu: $name runs to the end" "$log_dir/$name-$tag.log" "$binary" "$@"; then
    pass "$cpu: $name runs to the end"
  fi
}

# One CPU model's checks (the entry: model|level|what). Its results go to $results and its
# lines to stdout; run in a subshell of its own (below), so `continue` means return.
check_cpu() {
  local entry=$1 cpu expected owned what model tag start log xml coverage status isa_line kernels_line best chosen accuracy
  local qemu
  IFS='|' read -r cpu expected owned what <<<"$entry"
  model=${cpu%%,*}
  tag=${cpu//,/}  # Opteron_G1-pni: for file names
  echo "== -cpu $cpu: $what, must choose $expected"
  start=$SECONDS
  if ! grep -qE "^x86 +$model( |$)" <<<"$cpu_models"; then
    fail "$cpu: CPU model" "this qemu ($(qemu-x86_64 --version | head -1)) has no CPU model $model (qemu-x86_64 -cpu help)"
    return
  fi
  qemu=(timeout 300 qemu-x86_64 -cpu "$cpu")

  # 1. probe: the ISA choice and the kernel it names.
  log=$log_dir/probe-$tag.log
  if ran_to_end "$cpu: probe" "$log" "$retrograd" probe; then
    isa_line=$(grep -E '^isa ' "$log" | head -1)
    kernels_line=$(grep -E '^kernels ' "$log" | head -1 | sed -E 's/^kernels +//')
    best=$(sed -nE 's/^isa +best ([^,]+), chosen ([^ ]+).*/\1/p' <<<"$isa_line")
    chosen=$(sed -nE 's/^isa +best ([^,]+), chosen ([^ ]+).*/\2/p' <<<"$isa_line")
    if [ "$best" = "$expected" ] && [ "$chosen" = "$expected" ]; then
      pass "$cpu: probe chooses $expected"
    else
      fail "$cpu: probe chooses $expected" "probe says '${isa_line:-no isa line}'"
    fi
    if [ -n "$kernels_line" ] && ! grep -qi avx <<<"$kernels_line"; then
      pass "$cpu: probe names a non-AVX kernel ($kernels_line)"
    else
      fail "$cpu: probe names a non-AVX kernel" "probe says '${kernels_line:-no kernels line}'"
    fi
  fi

  # 2. test_gemm: the kernels of the CPU's own levels.
  xml=$xml_dir/test_gemm@$tag.xml
  run_gtest_under_qemu test_gemm "$test_gemm" "$xml" --gtest_filter="$(gemm_filter "$owned")"
  # The filter must have run cases of each of the CPU's own levels, none skipped: a skip means
  # the CPU detection missed a level, no cases means the test names changed.
  coverage=$(python3 - "$xml" $owned <<'EOF'
import sys, xml.etree.ElementTree as ET
path, levels = sys.argv[1], sys.argv[2:]
try:
    cases = list(ET.parse(path).getroot().iter("testcase"))
except (OSError, ET.ParseError) as e:
    print(f"no readable report {path}: {e}"); sys.exit(1)
problems = []
for level in levels:
    name = level.replace(".", "_")
    mine = [c for c in cases if c.get("name", "").split("/")[-1].startswith(name + "_")]
    ran = [c for c in mine if c.get("result") != "skipped" and c.find("skipped") is None]
    if not ran:
        problems.append(f"{level}: {len(mine)} cases, none ran")
    elif len(ran) < len(mine):
        problems.append(f"{level}: {len(mine) - len(ran)} of {len(mine)} cases skipped")
print("; ".join(problems) if problems else f"{len(cases)} cases")
sys.exit(1 if problems else 0)
EOF
  )
  if [ $? -eq 0 ]; then
    pass "$cpu: test_gemm covers ${owned// /, } ($coverage)"
  else
    fail "$cpu: test_gemm covers ${owned// /, }" "$coverage"
  fi

  # 2b. test_kernels: the elementwise kernels of the CPU's own levels, and at its dispatch (fast).
  run_gtest_under_qemu test_kernels "$test_kernels" "$xml_dir/test_kernels@$tag.xml" "$(but_older_levels)"

  # 2b'. test_qs8: the int8 tiles and requantization of the CPU's own levels (sse2's pmaddwd on
  #      the Athlon 64, ssse3's pmaddubsw on the Conroe), bit-exact against the reference.
  run_gtest_under_qemu test_qs8 "$test_qs8" "$xml_dir/test_qs8@$tag.xml" "$(but_older_levels)"

  # 2b''. test_int8_winograd: the Winograd conv's kernels of the CPU's own levels against the
  #       reference, and its stage against the GEMM stage at its dispatch.
  run_gtest_under_qemu test_int8_winograd "$test_int8_winograd" "$xml_dir/test_int8_winograd@$tag.xml" "$(but_older_levels)"

  # 2b''''. test_fixed_point's products: the int8 and int16 (pmaddwd) tiles of the CPU's own
  #        levels, formats of 2 to 16 bits, bit-exact against the reference (int8's: test_qs8).
  run_gtest_under_qemu test_fixed_point "$test_fixed_point" "$xml_dir/test_fixed_point@$tag.xml" \
    "$(but_older_levels '*FixedPointGemm.Wide*:*FixedPointGemm.Int16*')"

  # 2b'''. test_winograd: the f32 Winograd F(4x4, 3x3) transforms of the CPU's own levels against
  #        the reference; at its dispatch the convolution and its weight gradient against the
  #        direct sums, thread counts, the layer against f64, the measured choice's cache.
  run_gtest_under_qemu test_winograd "$test_winograd" "$xml_dir/test_winograd@$tag.xml" "$(but_older_levels)"

  # 2c. The conv, pooling, batch-norm and dropout layers in f32 on this CPU's kernels, against
  #     f64 (the f64 gradient checks run no ISA code: the native passes cover them).
  run_gtest_under_qemu test_conv_layers "$test_conv_layers" "$xml_dir/test_conv_layers@$tag.xml" \
    "$(but_older_levels '*F32*:Conv.*:Dropout.*:BatchNorm.*')"

  # 3. A short training run at the CPU's own level.
  log=$log_dir/train-$tag.log
  if ! ran_to_end "$cpu: mlp training" "$log" "$retrograd" train --data synthetic --limit 1000 --epochs 1 --threads 1; then
    :  # recorded
  elif ! accuracy=$(grep -E 'test accuracy +[0-9.]+' "$log" | head -1) || [ -z "$accuracy" ]; then
    fail "$cpu: mlp training" "exit 0 but no 'test accuracy' line; see $log"
  else
    pass "$cpu: mlp training ($(echo "$accuracy" | tr -s ' ' | sed 's/^ //'))"
  fi
  log=$log_dir/train-lenet-$tag.log
  if ran_to_end "$cpu: lenet training" "$log" "$retrograd" train --model lenet --data synthetic --limit 256 --epochs 1 --threads 2; then
    if grep -qE 'test accuracy +[0-9.]+' "$log"; then
      pass "$cpu: lenet training ($(grep -m1 -oE 'test accuracy +[0-9.]+' "$log" | tr -s ' '))"
    else
      fail "$cpu: lenet training" "exit 0 but no 'test accuracy' line; see $log"
    fi
  fi

  # 3b. Fixed-point training on the int16 tiles (issue 34: pmaddwd on the Athlon 64): lenet in
  #     w16a16g16-sr here and natively at the same level (RETROGRAD_ISA=$expected): the products are
  #     exact integers and the rest runs the level's own kernels, so the loss and accuracy must agree.
  log=$log_dir/train-w16-$tag.log
  local w16=(train --model lenet --data synthetic --limit 256 --epochs 1 --threads 1 --train-precision w16a16g16-sr)
  if ran_to_end "$cpu: w16a16g16 training" "$log" "$retrograd" "${w16[@]}"; then
    local here native
    here=$(grep -m1 -oE 'test accuracy +[0-9.]+ +\(loss [0-9.]+' "$log" | tr -s ' ')
    native=$(RETROGRAD_ISA=$expected "$retrograd" "${w16[@]}" 2>&1 | grep -m1 -oE 'test accuracy +[0-9.]+ +\(loss [0-9.]+' | tr -s ' ')
    if [ -n "$here" ] && [ "$here" = "$native" ]; then
      pass "$cpu: w16a16g16 training as natively at $expected ($here)"
    else
      fail "$cpu: w16a16g16 training as natively at $expected" "'$here' under qemu, '$native' natively; see $log"
    fi
  fi

  # 4. Asking for more than the CPU has: exit 2 and a message naming the level, no crash.
  log=$log_dir/cap-avx2-$tag.log
  RETROGRAD_ISA=avx2 "${qemu[@]}" "$retrograd" probe > "$log" 2>&1
  status=$?
  if sigill "RETROGRAD_ISA=avx2 retrograd probe under -cpu $cpu" "$status" "$log"; then
    fail "$cpu: RETROGRAD_ISA=avx2 refused" "SIGILL (illegal instruction); see $log"
  elif [ "$status" -eq 2 ] && grep -q "RETROGRAD_ISA=avx2" "$log" && grep -q "$expected" "$log"; then
    pass "$cpu: RETROGRAD_ISA=avx2 refused ($(grep -m1 RETROGRAD_ISA "$log"))"
  else
    fail "$cpu: RETROGRAD_ISA=avx2 refused" "$(describe_status $status), want exit 2 and a message naming RETROGRAD_ISA=avx2 and $expected; see $log"
  fi

  # 5. The start-up check (src/cpu/startup_check.cpp) of a program built as if for AVX2 and
  #    FMA: it must stop with exit 2 and a message before main, not with SIGILL.
  if [ -x "$startup_demo" ]; then
    log=$log_dir/startup_demands_avx2-$tag.log
    "${qemu[@]}" "$startup_demo" > "$log" 2>&1
    status=$?
    if sigill "startup_demands_avx2 under -cpu $cpu" "$status" "$log"; then
      fail "$cpu: start-up check stops an AVX2 build" "SIGILL (illegal instruction); see $log"
    elif [ "$status" -eq 2 ] && grep -q "compiled for instructions this CPU lacks:.*AVX2" "$log" && ! grep -q started "$log"; then
      pass "$cpu: start-up check stops an AVX2 build ($(grep -o 'lacks:.*' "$log" | head -1))"
    else
      fail "$cpu: start-up check stops an AVX2 build" "$(describe_status $status), want exit 2 and a message naming AVX2 before main; see $log"
    fi
  fi
  echo "   ($((SECONDS - start)) s)"
}

# The four CPUs two at a time (each emulated program uses one core; the lenet run two threads):
# each writes its results and lines to files of its own, gathered in order after.
for entry in "${cpus[@]}"; do
  IFS='|' read -r cpu _ <<<"$entry"
  tag=${cpu//,/}
  while [ "$(jobs -rp | wc -l)" -ge 2 ]; do wait -n; done
  (results=$results.$tag check_cpu "$entry" > "$log_dir/lines-$tag.txt" 2>&1) &
done
wait
for entry in "${cpus[@]}"; do
  IFS='|' read -r cpu _ <<<"$entry"
  tag=${cpu//,/}
  cat "$log_dir/lines-$tag.txt"
  cat "$results.$tag" >> "$results" 2>/dev/null
  rm -f "$results.$tag"
done
failures=$(grep -c '^FAIL' "$results")

# The other way: on a CPU with AVX2 and FMA the same program starts.
if [ -x "$startup_demo" ]; then
  cpu=Haswell-noTSX
  echo "== -cpu $cpu: an AVX2 and FMA CPU"
  log=$log_dir/startup_demands_avx2-$cpu.log
  timeout 60 qemu-x86_64 -cpu "$cpu" "$startup_demo" > "$log" 2>&1
  status=$?
  if sigill "startup_demands_avx2 under -cpu $cpu" "$status" "$log"; then
    fail "$cpu: start-up check lets an AVX2 build start" "SIGILL (illegal instruction); see $log"
  elif [ "$status" -eq 0 ] && grep -qx started "$log"; then
    pass "$cpu: start-up check lets an AVX2 build start"
  else
    fail "$cpu: start-up check lets an AVX2 build start" "$(describe_status $status), want exit 0 and 'started'; see $log"
  fi
else
  echo "SKIP startup_demands_avx2: $startup_demo is not built" >> "$results"
  echo "  skip  $startup_demo is not built: the start-up check is not run"
fi

echo "qemu_old_cpus.sh: $(grep -c '^PASS' "$results") checks passed, $failures failed in $((SECONDS - start_all)) s; logs in $log_dir/"
[ "$failures" -eq 0 ]
