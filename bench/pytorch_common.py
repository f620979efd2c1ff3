"""What the PyTorch side of the comparison benchmarks shares: importing torch with its
thread pools capped, naming the BLAS it loaded, reading IDX files, FP32-only CUDA, peak RSS,
and the flops of a training step counted as retrograd counts them."""
import gzip
import os
import resource
import struct
import sys

import numpy as np


def import_torch(threads, script):
    """Import torch with every BLAS/OpenMP pool capped at `threads`; returns (torch, torch.nn).

    Debian's torch finds its BLAS through libblas.so.3 (BLAS_INFO=generic), so
    torch.set_num_threads does not reach an OpenBLAS behind it: cap it through
    the environment before the library loads."""
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    try:
        import torch
        import torch.nn as nn
    except ImportError as e:  # fail loudly: no number without the work
        sys.exit("%s: cannot import torch (%s); install python3-torch "
                 "and run with /usr/bin/python3" % (script, e))
    return torch, nn


def blas_library():
    """The BLAS shared objects this process actually loaded (libblas.so.3 is a
    Debian alternative: netlib reference BLAS, OpenBLAS, BLIS, ...)."""
    found = []
    with open("/proc/self/maps") as f:
        for line in f:
            parts = line.split()
            path = parts[-1] if len(parts) >= 6 else ""
            name = os.path.basename(path)
            if ("blas" in name or "blis" in name or "mkl_rt" in name) and path not in found:
                found.append(path)
    return [os.path.realpath(p) for p in found]


def read_idx(path):
    """Read an IDX file of unsigned bytes (MNIST layout) into a numpy array: `path` itself, or
    `path`.gz (Fashion-MNIST's package ships gzipped files, `retrograd make-data` raw ones)."""
    found = [p for p in ([path] if path.endswith(".gz") else [path, path + ".gz"]) if os.path.exists(p)]
    if not found:
        raise FileNotFoundError("%s: missing%s" % (path, "" if path.endswith(".gz") else " (nor is there a .gz)"))
    path = found[0]
    with (gzip.open if path.endswith(".gz") else open)(path, "rb") as f:
        data = f.read()
    zero, dtype_code, ndim = struct.unpack(">HBB", data[:4])
    if zero != 0 or dtype_code != 0x08:
        raise ValueError("%s: not an unsigned-byte IDX file" % path)
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if arr.size != int(np.prod(dims)):
        raise ValueError("%s: size does not match header %s" % (path, dims))
    return arr.reshape(dims)


def read_split(data_dir, prefix, limit=0):
    """A split ("train" or "t10k") of an MNIST-layout folder: (images [n, h, w] uint8, labels [n]),
    the first `limit` samples only when limit > 0 (as retrograd's --limit and --test-limit)."""
    images = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte"))
    labels = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte"))
    if images.shape[0] != labels.shape[0]:
        raise ValueError("%s: %d %s images but %d labels" % (data_dir, images.shape[0], prefix, labels.shape[0]))
    if limit > 0:
        images, labels = images[:limit], labels[:limit]
    return images, labels


def fp32_only(torch):
    """CUDA matmuls and convolutions in true FP32: TF32 off (retrograd computes in FP32)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # ru_maxrss is KiB on Linux


def count_product_flops(torch, nets, run):
    """Runs run() once with a forward hook on every dense, conv and transposed conv layer of the
    modules `nets` and returns the flops of their products, counted as retrograd counts its own
    (Layer::forward_flops_per_sample, Model::train_flops_per_sample, report/roofline.h's GAN step):
    2 a multiply-add, biases and every other layer free; each forward once, again for the
    weight's gradient when the weight is trained, and again for the input's gradient when the
    input needs one. Autograd computes that dx only then: never for the network's input (so not
    for the first layer, as retrograd's backward never does) nor for a detached one (D's pass on
    G's samples before D's update). A conv: each weight meets each output pixel; a transposed
    conv: each input pixel. Assumes that run() backpropagates every forward made with gradients
    on, as a training step does."""
    nn = torch.nn
    total = [0]

    def hook(m, inputs, out):
        x = inputs[0]
        if isinstance(m, nn.Linear):
            products = m.in_features * m.out_features * (x.numel() // m.in_features)
        elif isinstance(m, nn.ConvTranspose2d):
            products = x.numel() * m.out_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
        else:
            products = out.numel() * m.in_channels // m.groups * m.kernel_size[0] * m.kernel_size[1]
        passes = 1
        if torch.is_grad_enabled():
            passes += int(m.weight.requires_grad) + int(x.requires_grad)
        total[0] += 2 * products * passes

    kinds = (nn.Linear, nn.Conv2d, nn.ConvTranspose2d)
    handles = [m.register_forward_hook(hook) for net in nets for m in net.modules() if isinstance(m, kinds)]
    try:
        run()
    finally:
        for h in handles:
            h.remove()
    return total[0]
