#!/usr/bin/python3
"""PyTorch peers of retrograd's conv/autoencoder presets, for bench/presets_vs_pytorch.sh.

`--model P` builds the same architecture as `retrograd train --model P` (cfg text
in src/nn/presets.cpp) and trains it with the preset's recipe:

  lenet             conv 5x5x6 pad 2, relu, maxpool 2, conv 5x5x16, relu, maxpool 2,
                    dense 120, relu, dense 84, relu, dense 10;
                    CrossEntropyLoss, SGD lr 0.01 momentum 0.9
  cnn               (conv 3x3x32 pad 1 no bias, BN, relu) x2, maxpool 2, dropout 0.25,
                    (conv 3x3x64 pad 1 no bias, BN, relu) x2, maxpool 2, dropout 0.25,
                    dense 256 no bias, BN, relu, dropout 0.5, dense 10;
                    CrossEntropyLoss, SGD lr 0.01 momentum 0.9
  autoencoder       dense 256, relu, dense 64, relu, dense 256, relu, dense 784, sigmoid;
                    MSELoss against the input, Adam lr 0.001
  conv-autoencoder  conv 3x3x16 pad 1, relu, conv 3x3x32 s2 p1, relu, conv 3x3x32 s2 p1,
                    relu, convT 3x3x16 s2 p1 op1, relu, convT 3x3x1 s2 p1 op1, sigmoid;
                    MSELoss against the input, Adam lr 0.001

Inits as retrograd's: He-uniform (kaiming_uniform_, nonlinearity='relu', fan_in)
for every conv/dense weight, Glorot-uniform for the last one, zero biases; BN
gamma 1, beta 0, momentum 0.1, eps 1e-5. Batch 64, reshuffled every epoch,
last partial batch kept. Fashion-MNIST from gzipped IDX files, pixels / 255 as
float32, held in memory as tensors (NCHW [n, 1, 28, 28]; retrograd is NHWC,
which for one channel is the same memory).

Timing as retrograd's train_samples_per_s: each epoch's clock starts after the
epoch's shuffle order is drawn and stops after its last optimizer step; it
covers batch gathers, forward, loss, backward, step and the running loss and
accuracy. train_samples_per_s = samples trained / sum of epoch seconds. The test
pass (batch --batch, eval mode, no_grad) is untimed.

Prints the parameter count on stderr and one JSON line on stdout.

Run it with the Debian interpreter (/usr/bin/python3, python3-torch 1.13),
not a pyenv python3 that may be first on PATH.
"""
import argparse
import json
import os
import sys
import time

import numpy as np

from pytorch_common import blas_library, import_torch, peak_rss_bytes, read_idx

torch = None  # imported in main(), after the thread variables are set
nn = None

PRESETS = {
    # name: (kind, optimizer, lr)
    "lenet": ("classifier", "sgd", 0.01),
    "cnn": ("classifier", "sgd", 0.01),
    "autoencoder": ("autoencoder", "adam", 0.001),
    "conv-autoencoder": ("autoencoder", "adam", 0.001),
}


def load_split(data_dir, prefix, limit=0):
    images = read_idx(os.path.join(data_dir, prefix + "-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(data_dir, prefix + "-labels-idx1-ubyte.gz"))
    if limit > 0:  # the first N samples, as retrograd's --limit
        images, labels = images[:limit], labels[:limit]
    n, h, w = images.shape
    x = torch.from_numpy(images.reshape(n, 1, h, w).astype(np.float32) / 255.0)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def build(name):
    """The preset's layers; returns (model, list of weight-bearing layers in order)."""
    if name == "lenet":
        layers = [
            nn.Conv2d(1, 6, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(6, 16, 5), nn.ReLU(), nn.MaxPool2d(2),
            nn.Flatten(),
            nn.Linear(16 * 5 * 5, 120), nn.ReLU(),
            nn.Linear(120, 84), nn.ReLU(),
            nn.Linear(84, 10),
        ]
    elif name == "cnn":
        def block(cin, cout):
            return [nn.Conv2d(cin, cout, 3, padding=1, bias=False),
                    nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1), nn.ReLU()]
        layers = (block(1, 32) + block(32, 32) + [nn.MaxPool2d(2), nn.Dropout(0.25)] +
                  block(32, 64) + block(64, 64) + [nn.MaxPool2d(2), nn.Dropout(0.25)] +
                  [nn.Flatten(),
                   nn.Linear(64 * 7 * 7, 256, bias=False),
                   nn.BatchNorm1d(256, eps=1e-5, momentum=0.1), nn.ReLU(), nn.Dropout(0.5),
                   nn.Linear(256, 10)])
    elif name == "autoencoder":
        layers = [
            nn.Flatten(),
            nn.Linear(784, 256), nn.ReLU(),
            nn.Linear(256, 64), nn.ReLU(),
            nn.Linear(64, 256), nn.ReLU(),
            nn.Linear(256, 784), nn.Sigmoid(),
        ]
    elif name == "conv-autoencoder":
        layers = [
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(32, 32, 3, stride=2, padding=1), nn.ReLU(),
            nn.ConvTranspose2d(32, 16, 3, stride=2, padding=1, output_padding=1), nn.ReLU(),
            nn.ConvTranspose2d(16, 1, 3, stride=2, padding=1, output_padding=1), nn.Sigmoid(),
        ]
    else:
        raise ValueError(name)
    model = nn.Sequential(*layers)
    weighted = [m for m in model if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear))]
    with torch.no_grad():
        for i, m in enumerate(weighted):
            if i == len(weighted) - 1:
                # glorot: bound sqrt(6 / (fan_in + fan_out)); PyTorch's fans for
                # ConvTranspose2d are those retrograd uses (fan_in = k*k*filters)
                nn.init.xavier_uniform_(m.weight)
            else:
                # he: bound sqrt(6 / fan_in)
                nn.init.kaiming_uniform_(m.weight, a=0, mode="fan_in", nonlinearity="relu")
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        for m in model:
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, choices=sorted(PRESETS))
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0,
                    help="train on the first N training samples only (0: all)")
    ap.add_argument("--optimizer", choices=("sgd", "adam"), help="default: the preset's")
    ap.add_argument("--lr", type=float, help="default: the preset's")
    ap.add_argument("--momentum", type=float, default=0.9, help="sgd momentum")
    args = ap.parse_args()
    if args.threads < 1:
        ap.error("--threads must be at least 1")
    if args.epochs < 1 or args.batch < 1 or args.limit < 0:
        ap.error("--epochs and --batch must be positive, --limit not negative")

    kind, optimizer, lr = PRESETS[args.model]
    optimizer = args.optimizer or optimizer
    lr = args.lr if args.lr is not None else lr

    global torch, nn
    torch, nn = import_torch(args.threads, "pytorch_presets.py")
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)

    x_train, y_train = load_split(args.data, "train", args.limit)
    x_test, y_test = load_split(args.data, "t10k")
    n = x_train.shape[0]

    model = build(args.model)
    parameters = sum(p.numel() for p in model.parameters())
    print("pytorch %s: total parameters: %d" % (args.model, parameters), file=sys.stderr)
    autoencoder = kind == "autoencoder"
    flat = args.model == "autoencoder"  # dense autoencoder: output [n, 784]
    loss_fn = nn.MSELoss() if autoencoder else nn.CrossEntropyLoss()  # both: mean
    if optimizer == "sgd":
        opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=args.momentum)
    else:
        opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8)
    gen = torch.Generator().manual_seed(args.seed)

    history = []
    train_seconds = 0.0
    model.train()
    for epoch in range(args.epochs):
        perm = torch.randperm(n, generator=gen)  # drawn before the clock, as retrograd
        te = time.perf_counter()
        loss_sum = 0.0
        correct = 0
        for i in range(0, n, args.batch):  # drop_last=False: keep the tail
            idx = perm[i:i + args.batch]
            xb = x_train[idx]
            opt.zero_grad(set_to_none=True)
            out = model(xb)
            if autoencoder:
                loss = loss_fn(out, xb.flatten(1) if flat else xb)
            else:
                yb = y_train[idx]
                loss = loss_fn(out, yb)
            loss.backward()
            opt.step()
            # running loss/accuracy, as retrograd's progress line reports
            loss_sum += loss.item() * xb.shape[0]
            if not autoencoder:
                correct += int((out.argmax(1) == yb).sum())
        es = time.perf_counter() - te
        train_seconds += es
        history.append({"epoch": epoch + 1, "loss": loss_sum / n,
                        "accuracy": correct / n if not autoencoder else 0.0,
                        "seconds": es, "samples_per_s": n / es})

    model.eval()
    correct = 0
    squared = 0.0
    with torch.no_grad():
        for i in range(0, x_test.shape[0], args.batch):
            xb = x_test[i:i + args.batch]
            out = model(xb)
            if autoencoder:
                d = (out.reshape(xb.shape) - xb).double()
                squared += float((d * d).sum())
            else:
                correct += int((out.argmax(1) == y_test[i:i + args.batch]).sum())
    n_test = int(x_test.shape[0])
    test_accuracy = correct / n_test if not autoencoder else 0.0
    test_mse = squared / x_test.numel() if autoencoder else 0.0  # per pixel

    print(json.dumps({
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "model": args.model,
        "parameters": parameters,
        "optimizer": optimizer,
        "lr": lr,
        "epochs": args.epochs,
        "epochs_run": args.epochs,
        "batch": args.batch,
        "threads": args.threads,
        "interop_threads": torch.get_num_interop_threads(),
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "blas": blas_library(),
        "seed": args.seed,
        "train_samples": n,
        "train_seconds": train_seconds,
        "train_samples_per_s": n * args.epochs / train_seconds,
        "test_accuracy": test_accuracy,
        "test_mse": test_mse,
        "test_samples": n_test,
        "peak_rss_bytes": peak_rss_bytes(),
        "history": history,
    }))


if __name__ == "__main__":
    main()
