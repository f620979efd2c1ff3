#!/usr/bin/env python3
"""Checks that no instruction above the CPU's level can run outside an ISA kernel.

DESIGN.md section 4: "No inline helper may be shared between an ISA file and baseline
code: the linker can keep the AVX2 copy and the binary dies with SIGILL on a Core 2."
An inline function (or template instantiation) used in two translation units is emitted
in both as a weak COMDAT symbol; the linker keeps one copy, whichever it meets first, and
every caller uses that copy. If src/cpu/isa/avx2_fma.cpp (-mavx2 -mfma) and baseline code
share one, the baseline may end up calling AVX2 code. Two checks:

1. Disassembly (the linked build/retrograd and build/tests/test_gemm): objdump -d -C, split
   into functions; every instruction gets the ISA level it needs, every function the level
   it may use, and a function using more than it may is an offender (printed with a sample
   instruction). Levels: 0 baseline (x86-64 = SSE2), 1 sse3, 2 ssse3, 3 sse4.1, 4 sse4.2 and
   popcnt, 5 avx, 6 avx2 with fma, f16c, bmi1/2, lzcnt, movbe, 7 avx-512. What a function may
   use:
     - its demangled name says its level: "__avx2" (f32_gemm_6x16__avx2_fma), "__avx",
       "__sse4_1", ..., or an xsimd architecture in a template argument: "xsimd::avx2",
       "xsimd::fma3<xsimd::avx2>", "xsimd::avx", "xsimd::sse4_1", ...; lambdas and
       [clone ...] copies inherit the name;
     - or it is defined with a unique (non-COMDAT) symbol in one ISA object,
       build/libretrograd_isa_<level>.a: a static helper in src/cpu/isa/avx2_fma.cpp runs
       only from there. COMDAT (weak) symbols never get this: they are the hazard;
     - or it is one of the C library's own run-time dispatched variants (GLIBC_DISPATCHED
       below; only in a static link): glibc picks them through IFUNC resolvers after its
       own CPUID check, e.g. __memcpy_avx_unaligned_erms, __strlen_evex, __expf_fma,
       __memcpy_ssse3, __strcspn_sse42, _dl_runtime_profile_avx. libstdc++ and libgcc do no
       such dispatch (a static link of both has none): nothing of theirs is excepted.
   Sanity (the check must be able to see what it looks for): every ISA library in the
   build must have functions named __<level> in the binary, and each AVX-level one must
   contain VEX instructions.

2. COMDAT symbols (the build's object files, nm): a weak function symbol defined in an ISA
   object and also defined in, referenced from, or cloned (gcc's .constprop/.isra/.part
   copies) into an object of a lower level (baseline code: src/, the app, the tests, the
   benchmarks) is a hazard even when the linker happened to keep the right copy this time. Sharing with reference.cpp or sse2.cpp
   (level 0, the baseline's own instructions) cannot SIGILL; it is printed as a note,
   since the rule still asks for no shared helpers.

--self-test compiles a two-file program with one inline function shared between a -mavx2
file and a baseline file, and asserts that both checks catch it (the disassembly check
when the linker keeps the AVX2 copy, the COMDAT check either way), that a clean variant
passes, and (with qemu-user) that the leaky binary really dies with SIGILL under
-cpu Conroe.

Usage: check_isa_leaks.py [--build DIR] [--results FILE] [BINARY ...]
       check_isa_leaks.py --self-test [--results FILE]
RESULTS_FILE gets one line a check, "PASS label" or "FAIL label: why", for
tools/count_tests.py. Exits 1 when a check failed.
"""
import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

LEVEL_NAMES = ["baseline", "sse3", "ssse3", "sse4.1", "sse4.2", "avx", "avx2", "avx512"]
BASELINE, SSE3, SSSE3, SSE41, SSE42, AVX, AVX2, AVX512 = range(8)
NOT_A_LEVEL = 99  # FMA4/XOP (AMD only): no retrograd level may use them

# ---------------------------------------------------------------------------------------
# What level a function may use.

# Substrings of demangled names, most specific first; a name gets the highest that matches.
NAME_LEVELS = [
    ("__avx512", AVX512), ("xsimd::avx512", AVX512),
    ("__avx2", AVX2), ("xsimd::avx2", AVX2), ("__fma", AVX2), ("xsimd::fma3<", AVX2), ("__f16c", AVX2),
    ("__avx", AVX), ("xsimd::avx", AVX),
    ("__sse4_2", SSE42), ("__sse42", SSE42), ("xsimd::sse4_2", SSE42),
    ("__sse4_1", SSE41), ("__sse41", SSE41), ("xsimd::sse4_1", SSE41),
    ("__ssse3", SSSE3), ("xsimd::ssse3", SSSE3),
    ("__sse3", SSE3), ("xsimd::sse3", SSE3),
]

# glibc's multiarch variants (sysdeps/x86_64/multiarch, and libm's fma/fma4/avx/sse4.1
# variants): plain C names "__<function>_<isa>[_<variant>]", chosen at run time by an
# IFUNC resolver from glibc's own CPUID data, so they never run on a CPU without the
# feature. Present only when glibc is linked statically (retrograd links it dynamically;
# then they live in libc.so.6 and are not in the binary). Examples seen on Debian 12:
# __memcpy_avx_unaligned_erms, __memcmp_evex_movbe, __strlen_avx2_rtm, __strstr_avx512,
# __expf_fma, __ieee754_pow_fma4, __sincos_fma, __memcpy_ssse3, __strcmp_sse42,
# __nearbyintf_sse41. And the dynamic linker's lazy-binding trampolines
# _dl_runtime_resolve_xsave/_xsavec and _dl_runtime_profile_avx/_avx512, picked by
# ld.so from CPUID the same way.
GLIBC_DISPATCHED = [
    re.compile(r"^__[a-z0-9_]+?_(sse2|sse3|ssse3|sse4_1|sse41|sse4_2|sse42|avx|avx2|avx512|"
               r"evex|evex512|fma|fma4)(_[a-z0-9_]+)?$"),
    re.compile(r"^_dl_runtime_(resolve|profile)_(fxsave|xsave|xsavec|avx|avx512)$"),
]


def glibc_dispatched(name):
    return any(p.match(name) for p in GLIBC_DISPATCHED)


def base_name(name):
    """Drops ' [clone .cold]' and similar suffixes and objdump's '@plt'-style versions."""
    name = re.sub(r"( \[clone [^\]]*\])+$", "", name)
    return name


def name_level(name):
    level = BASELINE
    for needle, needle_level in NAME_LEVELS:
        if needle in name:
            level = max(level, needle_level)
    return level


# ---------------------------------------------------------------------------------------
# What level an instruction needs (AT&T syntax as objdump prints it).

PREFIXES = {"rep", "repz", "repnz", "repe", "repne", "lock", "notrack", "bnd", "data16", "addr32",
            "cs", "ds", "es", "ss", "fs", "gs", "xacquire", "xrelease", "{vex}", "{vex3}", "{evex}"}
VMX_SVM = {"verr", "verw", "vmcall", "vmlaunch", "vmresume", "vmxoff", "vmxon", "vmread", "vmwrite",
           "vmptrld", "vmptrst", "vmclear", "vmfunc", "vmrun", "vmload", "vmsave", "vmmcall"}
SSE3_OPS = {"addsubps", "addsubpd", "haddps", "haddpd", "hsubps", "hsubpd", "lddqu", "movddup",
            "movshdup", "movsldup", "monitor", "mwait"}  # and fisttp*
SSSE3_OPS = {"pabsb", "pabsw", "pabsd", "palignr", "phaddw", "phaddd", "phaddsw", "phsubw", "phsubd",
             "phsubsw", "pmaddubsw", "pmulhrsw", "pshufb", "psignb", "psignw", "psignd"}
SSE41_OPS = {"blendpd", "blendps", "blendvpd", "blendvps", "dppd", "dpps", "extractps", "insertps",
             "movntdqa", "mpsadbw", "packusdw", "pblendvb", "pblendw", "pcmpeqq", "pextrb", "pextrd",
             "pextrq", "phminposuw", "pinsrb", "pinsrd", "pinsrq", "pmaxsb", "pmaxsd", "pmaxud", "pmaxuw",
             "pminsb", "pminsd", "pminud", "pminuw", "pmuldq", "pmulld", "ptest", "roundps", "roundpd",
             "roundss", "roundsd"}  # and pmovsx*, pmovzx*
SSE42_OPS = {"pcmpestri", "pcmpestrm", "pcmpistri", "pcmpistrm", "pcmpgtq", "popcnt"}  # and crc32*
# GPR instructions of Haswell's generation (VEX-encoded or new). Not tzcnt: it is "rep bsf",
# which gcc emits for baseline code on purpose since older CPUs run it as bsf.
HASWELL_GPR_OPS = {"andn", "bextr", "blsi", "blsmsk", "blsr", "bzhi", "mulx", "pdep", "pext", "rorx",
                   "sarx", "shlx", "shrx", "lzcnt", "movbe"}
AVX2_ONLY_VOPS = re.compile(
    r"^v(pbroadcast[bwdq]|broadcasti128|inserti128|extracti128|perm2i128|permd|permps|permq|permpd|"
    r"pblendd|pmaskmov[dq]|psllv[dq]|psrlv[dq]|psrav[dq]|p?gather[dq][dq]?[ps]?[sd]?|cvtph2ps|cvtps2ph)$")
FMA3_OPS = re.compile(r"^vf(n?m(add|sub)|maddsub|msubadd)(132|213|231)[ps][sd]$")
FMA4_OPS = re.compile(r"^vf(n?m(add|sub)|maddsub|msubadd)[ps][sd]$")
AVX512_VOPS = re.compile(r"^v(movdq[au](8|16|32|64)|pternlog[dq]|perm[it]2\w+|\w+(32x[248]|64x[24])|"
                         r"p(and|andn|or|xor)[dq]|pro[lr]v?[dq]|pcmpu?[bwdq]|scalef\w+|rndscale\w+|"
                         r"getexp\w+|getmant\w+|fixupimm\w+|range\w+|reduce\w+|compress\w+|expand\w+)$")
MASK_OPS = re.compile(r"^k(add|and|andn|mov|not|or|ortest|shiftl|shiftr|test|unpck|xnor|xor)[bwdq]?")
YMM = re.compile(r"%ymm\d+")
EVEX_REGS = re.compile(r"%zmm\d+|%[xy]mm(1[6-9]|2\d|3[01])\b|%k[0-7]\b|\{1to\d+\}")


def split_instruction(text):
    """'rep stos %rax,(%rdi)' -> ('stos', '%rax,(%rdi)')."""
    words = text.split()
    while words and (words[0] in PREFIXES or words[0].startswith("rex")):
        words.pop(0)
    if not words:
        return "", ""
    return words[0], " ".join(words[1:])


def instruction_level(mnemonic, operands):
    """The level an instruction needs, and whether it is VEX/EVEX-encoded."""
    if not mnemonic:
        return BASELINE, False
    if mnemonic.startswith("v") and mnemonic not in VMX_SVM:
        if EVEX_REGS.search(operands) or AVX512_VOPS.match(mnemonic):
            return AVX512, True
        if FMA3_OPS.match(mnemonic) or AVX2_ONLY_VOPS.match(mnemonic):
            return AVX2, True
        if FMA4_OPS.match(mnemonic):
            return NOT_A_LEVEL, True
        if mnemonic in ("vbroadcastss", "vbroadcastsd") and operands.startswith("%"):
            return AVX2, True  # the register-source form came with AVX2
        if mnemonic.startswith("vp") and YMM.search(operands) and not mnemonic.startswith("vperm"):
            return AVX2, True  # 256-bit integer operations
        return AVX, True
    if MASK_OPS.match(mnemonic) or EVEX_REGS.search(operands):
        return AVX512, True
    if mnemonic in HASWELL_GPR_OPS:
        return AVX2, mnemonic not in ("lzcnt", "movbe")
    if mnemonic in SSE42_OPS or mnemonic.startswith("crc32"):
        return SSE42, False
    if mnemonic in SSE41_OPS or mnemonic.startswith(("pmovsx", "pmovzx")):
        return SSE41, False
    if mnemonic in SSSE3_OPS:
        return SSSE3, False
    if mnemonic in SSE3_OPS or mnemonic.startswith("fisttp"):
        return SSE3, False
    return BASELINE, False


# ---------------------------------------------------------------------------------------
# Disassembly check.

class Function:
    def __init__(self, name):
        self.name = name
        self.level = BASELINE  # what it uses
        self.sample = ""       # its first instruction of that level
        self.vex = 0           # how many VEX/EVEX instructions


def disassemble(binary):
    """Yields a Function for every symbol objdump shows in the executable sections."""
    proc = subprocess.Popen(["objdump", "-d", "-C", "-w", "--no-show-raw-insn", binary],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    header = re.compile(r"^[0-9a-f]+ <(.*)>:$")
    current = None
    for line in proc.stdout:
        m = header.match(line)
        if m:
            if current:
                yield current
            current = Function(m.group(1))
            continue
        if current is None or "\t" not in line:
            continue
        text = line.split("\t", 1)[1].strip()
        text = text.split("#", 1)[0].split("<", 1)[0].strip()  # drop comments and symbol hints
        mnemonic, operands = split_instruction(text)
        level, vex = instruction_level(mnemonic, operands)
        if vex:
            current.vex += 1
        if level > current.level:
            current.level, current.sample = level, text
    if current:
        yield current
    _, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(f"objdump -d {binary} failed: {err.strip()}")


def shown_path(path):
    """Relative to the working folder when inside it (build/retrograd), else as given."""
    rel = os.path.relpath(path)
    return path if rel.startswith("..") else rel


def level_label(level):
    return "fma4/xop (no retrograd level)" if level == NOT_A_LEVEL else LEVEL_NAMES[level]


def check_disassembly(binary, isa_objects, checks, required_isas):
    """isa_objects: [(path, isa, level)]; required_isas: ISA names whose __<isa> functions must be there."""
    unique_in_isa = {}  # demangled name -> level, for non-COMDAT text symbols of ISA objects
    for path, _, level in isa_objects:
        for sym_type, name, _ in nm_symbols(path):
            if sym_type in "Tt":
                demangled = demangle([name])[0]
                unique_in_isa[base_name(demangled)] = max(level, unique_in_isa.get(base_name(demangled), 0))
    label = shown_path(binary)
    try:
        functions = list(disassemble(binary))
    except (OSError, RuntimeError) as e:
        checks.fail(f"{label}: disassembly", str(e))
        return
    if not functions:
        checks.fail(f"{label}: disassembly", "objdump shows no functions (stripped binary?)")
        return
    offenders = []
    vex_functions = 0
    for f in functions:
        if f.vex:
            vex_functions += 1
        if f.level == BASELINE:
            continue
        name = base_name(f.name)
        if glibc_dispatched(name.split("@")[0]):
            continue
        allowed = max(name_level(name), unique_in_isa.get(name, BASELINE))
        if f.level > allowed:
            offenders.append((f, allowed))
    print(f"{label}: {len(functions)} functions, {vex_functions} with VEX/EVEX instructions")
    if offenders:
        for f, allowed in offenders[:40]:
            print(f"  LEAK  {f.name}\n        uses {level_label(f.level)} (e.g. '{f.sample}'),"
                  f" may use {level_label(allowed)}")
        if len(offenders) > 40:
            print(f"  ... and {len(offenders) - 40} more")
        checks.fail(f"{label}: no function outside an ISA kernel uses instructions above its level",
                    f"{len(offenders)} offenders, e.g. {offenders[0][0].name} ('{offenders[0][0].sample}')")
    else:
        checks.ok(f"{label}: no function outside an ISA kernel uses instructions above its level")

    # Sanity: the kernels are there under their names, and the AVX-level ones hold VEX code
    # (counted over the functions that may use the level: the kernels, their xsimd template
    # instantiations and the ISA file's own static helpers).
    for isa in required_isas:
        level = level_of_isa(isa)
        named = re.compile(rf"__{re.escape(isa)}(?![A-Za-z0-9_])")
        mine = [f for f in functions if named.search(f.name)]
        if not mine:
            checks.fail(f"{label}: has __{isa} kernels", f"no function named *__{isa}* (renamed? not linked?)")
            continue
        if level >= AVX:
            at_level = [f for f in functions if named.search(f.name) or
                        max(name_level(base_name(f.name)), unique_in_isa.get(base_name(f.name), BASELINE)) == level]
            vex = sum(f.vex for f in at_level)
            if not vex:
                checks.fail(f"{label}: has __{isa} kernels with VEX code",
                            f"{len(mine)} functions *__{isa}* but no VEX instruction at level {level_label(level)}:"
                            " built without its flags?")
                continue
            checks.ok(f"{label}: has __{isa} kernels with VEX code ({len(mine)} functions, {vex} VEX instructions"
                      f" in {len(at_level)} functions of level {level_label(level)})")
        else:
            checks.ok(f"{label}: has __{isa} kernels ({len(mine)} functions)")


# ---------------------------------------------------------------------------------------
# COMDAT check.

def nm_symbols(path):
    """[(type, mangled name, member)] of an object file or archive."""
    out = subprocess.run(["nm", "-A", path], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError(f"nm {path} failed: {out.stderr.strip()}")
    symbols = []
    for line in out.stdout.splitlines():
        m = re.match(r"^(.*?):\s*(?:[0-9a-f]+)?\s+([A-Za-z?-])\s+(\S+)$", line)
        if m:
            where, sym_type, name = m.groups()
            symbols.append((sym_type, name, short_object_name(where)))
    return symbols


def short_object_name(where):
    """'b/libx.a:b/libx.a.p/y.cpp.o' -> 'libx.a(y.cpp.o)'; 'b/tests/t.p/t.cpp.o' -> 't.p/t.cpp.o'."""
    if ".a:" in where:
        archive, member = where.split(".a:", 1)
        return f"{os.path.basename(archive)}.a({os.path.basename(member)})"
    return os.path.join(os.path.basename(os.path.dirname(where)), os.path.basename(where))


_demangled = {}  # mangled name -> demangled, filled by demangle()


def demangle(names):
    """Demangled forms of `names` (one c++filt call for the ones not seen yet).

    A c++filt that fails or answers with another number of lines stops the check: the
    checks match on demangled names, so guessing would let a leak through."""
    todo = sorted({n for n in names if n not in _demangled})
    if todo:
        out = subprocess.run(["c++filt"], input="\n".join(todo) + "\n", capture_output=True, text=True)
        lines = out.stdout.splitlines()
        if out.returncode != 0 or len(lines) != len(todo):
            sys.exit(f"check_isa_leaks.py: c++filt failed (exit {out.returncode}, {len(lines)} lines for "
                     f"{len(todo)} names): {out.stderr.strip()}")
        _demangled.update(zip(todo, lines))
    return [_demangled[n] for n in names]


def level_of_isa(isa):
    """'avx2_fma' -> AVX2 ... from the file name of src/cpu/isa/<isa>.cpp."""
    # f16c: AVX + F16C, whose instructions the disassembly counts at the avx2 level.
    for prefix, level in [("avx512", AVX512), ("avx2", AVX2), ("fma", AVX2), ("f16c", AVX2), ("avx", AVX),
                          ("sse4_2", SSE42), ("sse42", SSE42), ("sse4_1", SSE41), ("sse41", SSE41),
                          ("ssse3", SSSE3), ("sse3", SSE3), ("sse2", BASELINE), ("reference", BASELINE)]:
        if isa.startswith(prefix):
            return level
    return None


GCC_CLONE = re.compile(r"(\.(constprop|isra|part|cold|lto_priv|localalias)(\.\d+)?)+$")


def check_comdat(objects, checks, label):
    """objects: [(path, level, is_isa)]. A weak function defined at a level above that of another
    object defining or using it is a hazard."""
    definers, users = {}, {}
    for path, level, is_isa in objects:
        for sym_type, name, where in nm_symbols(path):
            if sym_type == "W":
                definers.setdefault(name, []).append((where, level, is_isa))
            elif sym_type == "U":
                users.setdefault(name, []).append((where, level, is_isa))
            elif sym_type == "t" and not is_isa:
                # A baseline object's local clone of the same inline function (gcc's
                # .constprop/.isra/.part copies): the source is shared, and the next change
                # to the call may make it use the weak copy instead.
                base = GCC_CLONE.sub("", name)
                if base != name:
                    users.setdefault(base, []).append((where + f" (its own clone {name[len(base):]})", level, is_isa))
    hazards, notes = [], []
    for name, defs in definers.items():
        isa_defs = [d for d in defs if d[2]]
        if not isa_defs:
            continue
        top = max(d[1] for d in isa_defs)
        others = [d for d in defs + users.get(name, []) if not (d[2] and d[1] == top)]
        lower = [d for d in others if d[1] < top]
        if top > BASELINE and lower:
            hazards.append((name, isa_defs, lower))
        elif top == BASELINE and [d for d in others if not d[2]]:
            notes.append((name, isa_defs, [d for d in others if not d[2]]))
    for kind, items in (("HAZARD", hazards), ("note", notes)):
        for name, isa_defs, lower in items[:40]:
            print(f"  {kind}  {demangle([name])[0]}\n"
                  f"        weak (COMDAT) in {', '.join(sorted({d[0] for d in isa_defs}))}\n"
                  f"        also defined or used in {', '.join(sorted({d[0] for d in lower})[:6])}")
    if notes:
        print(f"  ({len(notes)} weak symbols shared between level-0 ISA files (reference, sse2) and baseline"
              " code: no SIGILL possible, but DESIGN.md section 4 asks for none)")
    name = f"{label}: no weak (COMDAT) function is shared between an ISA file and lower-level code"
    if hazards:
        checks.fail(name, f"{len(hazards)} shared, e.g. {demangle([hazards[0][0]])[0]}")
    else:
        checks.ok(name)


def build_objects(build):
    """[(path, level, is_isa)] of the build's object files, and the ISA ones as (path, isa, level)."""
    objects, isa_objects = [], []
    for archive in sorted(glob.glob(os.path.join(build, "libretrograd_isa_*.a"))):
        isa = os.path.basename(archive)[len("libretrograd_isa_"):-2]
        level = level_of_isa(isa)
        if level is None:
            raise RuntimeError(f"{archive}: unknown ISA level '{isa}': add it to level_of_isa()")
        objects.append((archive, level, True))
        isa_objects.append((archive, isa, level))
    for path in sorted(glob.glob(os.path.join(build, "**", "*.o"), recursive=True)):
        if "libretrograd_isa_" in path:
            continue  # in the archives already
        objects.append((path, BASELINE, False))
    return objects, isa_objects


# ---------------------------------------------------------------------------------------

class Checks:
    def __init__(self, results, inner=False):
        self.results = results
        self.lines = []
        self.failed = 0
        self.words = ("  inner ok    ", "  inner FAIL  ") if inner else ("  ok    ", "  FAIL  ")

    def ok(self, label):
        self.lines.append(f"PASS {label}")
        print(f"{self.words[0]}{label}")

    def fail(self, label, why):
        self.failed += 1
        self.lines.append(f"FAIL {label}: {why}")
        print(f"{self.words[1]}{label}: {why}")

    def write(self):
        if self.results:
            os.makedirs(os.path.dirname(os.path.abspath(self.results)), exist_ok=True)
            with open(self.results, "w") as f:
                f.write("".join(line + "\n" for line in self.lines))


def check_build(build, binaries, checks):
    try:
        objects, isa_objects = build_objects(build)
    except RuntimeError as e:
        checks.fail("ISA objects", str(e))
        return
    if not isa_objects:
        checks.fail("ISA objects", f"no {build}/libretrograd_isa_*.a: build first (bash tools/build.sh)")
        return
    print(f"ISA libraries: {', '.join(f'{isa} (level {level_label(level)})' for _, isa, level in isa_objects)}")
    for binary in binaries:
        if not os.path.exists(binary):
            checks.fail(f"{shown_path(binary)}: disassembly", "missing: build first")
            continue
        check_disassembly(binary, isa_objects, checks, [isa for _, isa, _ in isa_objects])
    print(f"COMDAT symbols of {len(objects)} object files and archives in {build}:")
    check_comdat(objects, checks, shown_path(build))


SELF_TEST_SHARED = """
#pragma once
// The forbidden pattern: an inline function that both an ISA file and baseline code use.
__attribute__((noinline)) inline void scale(float* x, int n, float a) {
  for (int i = 0; i < n; ++i) x[i] *= a;
}
"""
SELF_TEST_ISA_LEAKY = """
#include "shared.h"
void scale_all__avx2(float* x, int n) { scale(x, n, 2.0f); }
"""
SELF_TEST_ISA_CLEAN = """
namespace {
__attribute__((noinline)) void scale_here(float* x, int n, float a) {
  for (int i = 0; i < n; ++i) x[i] *= a;
}
}  // namespace
void scale_all__avx2(float* x, int n) { scale_here(x, n, 2.0f); }
"""
SELF_TEST_MAIN_LEAKY = """
#include "shared.h"
void scale_all__avx2(float* x, int n);
int main(int argc, char**) {
  float x[64];
  for (int i = 0; i < 64; ++i) x[i] = 1.0f;
  scale(x, 64, 3.0f);                  // baseline code: must not run AVX2 instructions
  if (argc > 5) scale_all__avx2(x, 64);  // what a dispatcher would call on an AVX2 CPU
  return x[0] == 3.0f ? 0 : 1;
}
"""
SELF_TEST_MAIN_CLEAN = SELF_TEST_MAIN_LEAKY.replace('#include "shared.h"', '''
__attribute__((noinline)) static void scale(float* x, int n, float a) {
  for (int i = 0; i < n; ++i) x[i] *= a;
}''')


def self_test(checks):
    tmp = tempfile.mkdtemp(prefix="isa-leaks-")
    try:
        def write(name, text):
            with open(os.path.join(tmp, name), "w") as f:
                f.write(text)

        def compile_(source, obj, flags):
            subprocess.run(["g++", "-std=c++17", "-O3", *flags, "-c", source, "-o", obj], cwd=tmp, check=True)

        write("shared.h", SELF_TEST_SHARED)
        for variant, isa_src, main_src in (("leaky", SELF_TEST_ISA_LEAKY, SELF_TEST_MAIN_LEAKY),
                                          ("clean", SELF_TEST_ISA_CLEAN, SELF_TEST_MAIN_CLEAN)):
            write(f"isa_{variant}.cpp", isa_src)
            write(f"main_{variant}.cpp", main_src)
            os.makedirs(os.path.join(tmp, variant), exist_ok=True)
            # The same layout as the real build: the ISA object in libretrograd_isa_avx2.a.
            compile_(f"isa_{variant}.cpp", f"{variant}/isa.o", ["-mavx2", "-mfma"])
            compile_(f"main_{variant}.cpp", f"{variant}/main.o", [])
            subprocess.run(["ar", "rcs", f"{variant}/libretrograd_isa_avx2.a", f"{variant}/isa.o"], cwd=tmp, check=True)
            os.remove(os.path.join(tmp, variant, "isa.o"))
            # GNU ld keeps the first copy of a COMDAT group it meets: the ISA object first
            # makes the AVX2 copy win, main first the baseline copy.
            subprocess.run(["g++", "-o", f"{variant}/isa_first", "-Wl,--whole-archive",
                            f"{variant}/libretrograd_isa_avx2.a", "-Wl,--no-whole-archive", f"{variant}/main.o"],
                           cwd=tmp, check=True)
            subprocess.run(["g++", "-o", f"{variant}/main_first", f"{variant}/main.o", "-Wl,--whole-archive",
                            f"{variant}/libretrograd_isa_avx2.a", "-Wl,--no-whole-archive"], cwd=tmp, check=True)

        def run_quiet(fn):
            """Runs a check into a private Checks; returns (failed, lines)."""
            inner = Checks(None, inner=True)
            fn(inner)
            return inner.failed, inner.lines

        def case(label, fn, want_fail):
            print(f"-- self-test: {label} (must {'fail' if want_fail else 'pass'})")
            failed, lines = run_quiet(fn)
            if bool(failed) == want_fail:
                checks.ok(f"self-test: {label} {'is caught' if want_fail else 'passes'}")
            else:
                checks.fail(f"self-test: {label}", f"{'not caught' if want_fail else 'wrongly flagged'}: {lines}")

        def disasm(variant, binary):
            objects, isa_objects = build_objects(os.path.join(tmp, variant))
            return lambda c: check_disassembly(os.path.join(tmp, variant, binary), isa_objects, c, ["avx2"])

        def comdat(variant):
            objects, _ = build_objects(os.path.join(tmp, variant))
            return lambda c: check_comdat(objects, c, variant)

        case("shared inline function, AVX2 copy linked, disassembly check", disasm("leaky", "isa_first"), True)
        case("shared inline function, COMDAT check", comdat("leaky"), True)
        # Which copy wins with the baseline object first is the linker's business: informative.
        failed, _ = run_quiet(disasm("leaky", "main_first"))
        print(f"   (baseline object linked first: the disassembly check {'also catches it' if failed else 'sees the baseline copy; only the COMDAT check catches it'})")
        case("no shared function, disassembly check", disasm("clean", "isa_first"), False)
        case("no shared function, COMDAT check", comdat("clean"), False)
        # The hazard is real: on a Core 2 the leaky binary dies, the clean one does not.
        if shutil.which("qemu-x86_64"):
            for variant, want in (("leaky", 132), ("clean", 0)):
                rc = subprocess.run(["bash", "-c", f"ulimit -c 0; exec qemu-x86_64 -cpu Conroe {variant}/isa_first"],
                                    cwd=tmp, capture_output=True).returncode
                rc = 128 - rc if rc < 0 else rc
                label = f"self-test: {variant} binary under qemu -cpu Conroe exits {want}{' (SIGILL)' if want == 132 else ''}"
                if rc == want:
                    checks.ok(label)
                else:
                    checks.fail(label, f"exit status {rc}")
        else:
            print("   (qemu-x86_64 not installed: the SIGILL demonstration is left out)")
    except subprocess.CalledProcessError as e:
        checks.fail("self-test: build the two-file program", str(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("binaries", nargs="*", help="linked programs (default: build/retrograd build/tests/test_gemm)")
    parser.add_argument("--build", default=None, help="the Meson build folder (default: build/)")
    parser.add_argument("--results", help="write PASS/FAIL lines here for tools/count_tests.py")
    parser.add_argument("--self-test", action="store_true", help="check the checker on a program made to leak")
    args = parser.parse_args()
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    build = args.build or os.path.join(root, "build")
    for tool in ("objdump", "nm", "c++filt") + (("g++", "ar") if args.self_test else ()):
        if not shutil.which(tool):
            print(f"check_isa_leaks.py: {tool} is missing (binutils; bash tools/setup.sh --tests)", file=sys.stderr)
            checks = Checks(args.results)
            checks.fail("ISA leak check", f"{tool} is not installed")
            checks.write()
            return 1
    checks = Checks(args.results)
    if args.self_test:
        self_test(checks)
    else:
        binaries = args.binaries or [os.path.join(build, "retrograd"), os.path.join(build, "tests", "test_gemm")]
        check_build(build, binaries, checks)
    checks.write()
    print(f"check_isa_leaks.py: {len(checks.lines) - checks.failed} checks passed, {checks.failed} failed")
    return 1 if checks.failed else 0


if __name__ == "__main__":
    sys.exit(main())
