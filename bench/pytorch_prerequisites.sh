# Sourced by the PyTorch comparison benchmarks, from the repository root, after they define
# die(), PY and DATA. Installs the bench packages (unless SETUP=0: a machine where PY's torch is
# what there is, or a user who is not root) and sets TORCH_VERSION and TORCH_BACKENDS
# (the BLAS library torch loaded and whether oneDNN is there: they set PyTorch's speed).
# Debian's torch reaches its BLAS through the libblas.so.3 alternative (netlib reference
# BLAS unless OpenBLAS/BLIS is installed), so the library that actually loads is named.
if [[ "${SETUP:-1}" != 0 ]]; then
  bash tools/setup.sh --bench >&2 || die "tools/setup.sh --bench failed"
fi
[[ -x "$PY" ]] || die "$PY not found"
TORCH_VERSION=$("$PY" -c 'import torch; print(torch.__version__)' 2>&1) \
  || die "torch is missing for $PY (apt-get install python3-torch): $TORCH_VERSION"
TORCH_BACKENDS=$("$PY" -c '
import os, torch
seen = []
for line in open("/proc/self/maps"):
    f = line.split()
    p = f[-1] if len(f) >= 6 else ""
    n = os.path.basename(p)
    if ("blas" in n or "blis" in n or "mkl_rt" in n) and os.path.realpath(p) not in seen:
        seen.append(os.path.realpath(p))
print("BLAS %s; oneDNN %s" % (" ".join(seen) or "none found",
      "available" if torch.backends.mkldnn.is_available() else "NOT available"))' 2>&1) \
  || die "could not inspect torch's backends: $TORCH_BACKENDS"
# Debian's netlib reference BLAS (the alternative's default, in .../blas/): PyTorch's dense layers
# and its CPU transposed convolutions go through it, many times slower than through OpenBLAS.
if [[ "$TORCH_BACKENDS" == *"/blas/libblas.so"* ]]; then
  echo "warning: torch loaded the netlib reference BLAS ($TORCH_BACKENDS): its dense layers and" \
       "transposed convolutions run far below this machine's speed; tools/setup.sh --bench (as root)" \
       "installs OpenBLAS, which Debian's alternatives then give torch" >&2
fi
for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte t10k-labels-idx1-ubyte; do
  [[ -f "$DATA/$f.gz" || -f "$DATA/$f" ]] || die "dataset file $DATA/$f.gz (or $f) is missing"
done
