#!/usr/bin/python3
"""PyTorch peer of `retrograd train --model mlp`, for bench/mlp_vs_pytorch.sh.

Trains the same model on the same data with the same recipe:
  784-256 ReLU 256-128 ReLU 128-10, CrossEntropyLoss,
  SGD lr 0.01 momentum 0.9, batch 64, reshuffled every epoch, last
  partial batch kept (drop_last=False), Fashion-MNIST from gzipped IDX
  files, pixels / 255 as float32.

Prints one JSON line: train_samples_per_s, test_accuracy, peak_rss_bytes,
train_seconds and the settings.

Run it with the Debian interpreter (/usr/bin/python3, python3-torch 1.13),
not a pyenv python3 that may be first on PATH.
"""
import argparse
import json
import time

import numpy as np

from pytorch_common import blas_library, import_torch, peak_rss_bytes, read_split

torch = None  # imported in main(), after the thread variables are set
nn = None


def load_split(data_dir, prefix):
    images, labels = read_split(data_dir, prefix)
    x = torch.from_numpy(images.reshape(images.shape[0], -1).astype(np.float32) / 255.0)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--momentum", type=float, default=0.9)
    args = ap.parse_args()
    if args.threads < 1:
        ap.error("--threads must be at least 1")

    global torch, nn
    torch, nn = import_torch(args.threads, "pytorch_mlp.py")
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    torch.manual_seed(args.seed)

    x_train, y_train = load_split(args.data, "train")
    x_test, y_test = load_split(args.data, "t10k")
    n = x_train.shape[0]

    model = nn.Sequential(
        nn.Linear(784, 256), nn.ReLU(),
        nn.Linear(256, 128), nn.ReLU(),
        nn.Linear(128, 10),
    )
    loss_fn = nn.CrossEntropyLoss()
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    gen = torch.Generator().manual_seed(args.seed)

    # Timing covers only the training loop. The whole data set is already in
    # memory as tensors (loaded and converted above, untimed), as in retrograd,
    # which also holds the data in memory: no DataLoader, no file I/O, no
    # worker processes inside the timed region. The per-epoch shuffle and the
    # batch gathers are inside it, as in retrograd.
    history = []
    model.train()
    t0 = time.perf_counter()
    for epoch in range(args.epochs):
        te = time.perf_counter()
        perm = torch.randperm(n, generator=gen)
        loss_sum = 0.0
        correct = 0
        for i in range(0, n, args.batch):  # drop_last=False: keep the tail
            idx = perm[i:i + args.batch]
            xb = x_train[idx]
            yb = y_train[idx]
            opt.zero_grad(set_to_none=True)
            out = model(xb)
            loss = loss_fn(out, yb)
            loss.backward()
            opt.step()
            # running loss/accuracy, as retrograd's progress line reports
            loss_sum += loss.item() * yb.shape[0]
            correct += int((out.argmax(1) == yb).sum())
        es = time.perf_counter() - te
        history.append({"epoch": epoch + 1, "loss": loss_sum / n,
                        "accuracy": correct / n, "seconds": es,
                        "samples_per_s": n / es})
    train_seconds = time.perf_counter() - t0

    model.eval()
    with torch.no_grad():
        pred = model(x_test).argmax(1)
        test_accuracy = float((pred == y_test).float().mean())

    print(json.dumps({
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "model": "mlp-784-256-128-10",
        "epochs": args.epochs,
        "batch": args.batch,
        "threads": args.threads,
        "interop_threads": torch.get_num_interop_threads(),
        "blas": blas_library(),
        "seed": args.seed,
        "train_samples": n,
        "train_seconds": train_seconds,
        "train_samples_per_s": n * args.epochs / train_seconds,
        "test_accuracy": test_accuracy,
        "test_samples": int(y_test.shape[0]),
        "peak_rss_bytes": peak_rss_bytes(),
        "history": history,
    }))


if __name__ == "__main__":
    main()
