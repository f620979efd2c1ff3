#!/usr/bin/python3
"""PyTorch peers of retrograd's presets, for bench/presets_vs_pytorch.sh (lenet, cnn,
autoencoder, conv-autoencoder), bench/resnet20_accuracy.sh (resnet20) and bench/pytorch_cuda.py.

`--model P` builds the same architecture as `retrograd train --model P` (cfg text
in src/nn/presets.cpp) and trains it with the preset's recipe:

  mlp               dense 256, relu, dense 128, relu, dense 10;
                    CrossEntropyLoss, SGD lr 0.01 momentum 0.9
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
  resnet20          He et al. 2016's CIFAR ResNet for 28x28x1: conv 3x3x16 pad 1 no bias, BN,
                    relu, then 3 stages of 3 basic blocks of 16, 32, 64 filters (28x28,
                    14x14, 7x7): conv 3x3 (stride 2 in a stage's first block but the
                    first stage's) pad 1 no bias, BN, relu, conv 3x3 pad 1 no bias, BN, plus
                    the block's input (where the block strides: through a 1x1 conv of
                    stride 2 no bias and BN, option B), relu; global average pool, dense 10;
                    CrossEntropyLoss, SGD lr 0.01 momentum 0.9 (the preset has no [train]
                    section: `retrograd train`'s defaults; no weight decay, a constant rate)

Inits as retrograd's: He-uniform (kaiming_uniform_, nonlinearity='relu', fan_in)
for every conv/dense weight, Glorot-uniform for the last one, zero biases; BN
gamma 1, beta 0, momentum 0.1, eps 1e-5. Batch 64, reshuffled every epoch,
last partial batch kept. Fashion-MNIST (or any MNIST-layout folder) from IDX
files, raw or gzipped, pixels / 255 as float32, no augmentation, held in memory
as tensors (NCHW [n, 1, 28, 28]; retrograd is NHWC, which for one channel is the
same memory) on --device: cpu, or cuda (the whole set on the GPU; TF32 off).

Timing as retrograd's train_samples_per_s: each epoch's clock starts after the
epoch's shuffle order is drawn and stops after its last optimizer step; it
covers batch gathers, forward, loss, backward, step and the running loss and
accuracy (on cuda, the clock stops after torch.cuda.synchronize()).
train_samples_per_s = samples trained / sum of epoch seconds. After each epoch the
test set is scored (batch --batch, eval mode, no_grad; untimed): each epoch's test
accuracy (or MSE) is in the history, the last one is the run's.

--lr, --momentum, --weight-decay, --schedule (constant, step, cosine: set every step as
retrograd's src/train/schedule.h), --step-epochs, --gamma and --lr-min are retrograd train's
options of the same names, with its defaults: a recipe other than the preset's on both sides.

Prints the parameter count and one line per epoch on stderr, and one JSON line on
stdout.

On the CPU, run it with the Debian interpreter (/usr/bin/python3, python3-torch
1.13), not a pyenv python3 that may be first on PATH.
"""
import argparse
import json
import math
import sys
import time

import numpy as np

from pytorch_common import blas_library, fp32_only, import_torch, peak_rss_bytes, read_split

torch = None  # imported in main(), after the thread variables are set
nn = None

PRESETS = {
    # name: (kind, optimizer, lr)
    "mlp": ("classifier", "sgd", 0.01),
    "lenet": ("classifier", "sgd", 0.01),
    "cnn": ("classifier", "sgd", 0.01),
    "autoencoder": ("autoencoder", "adam", 0.001),
    "conv-autoencoder": ("autoencoder", "adam", 0.001),
    "resnet20": ("classifier", "sgd", 0.01),
}


def load_split(data_dir, prefix, limit=0):
    images, labels = read_split(data_dir, prefix, limit)
    n, h, w = images.shape
    x = torch.from_numpy(images.reshape(n, 1, h, w).astype(np.float32) / 255.0)
    y = torch.from_numpy(labels.astype(np.int64))
    return x, y


def resnet20():
    """src/nn/presets.cpp's resnet20 (its resnet_block, layer for layer). The block class is made
    here, not at the top, because torch is imported only in main() (after the thread caps)."""

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1)
            self.proj = None  # the preset's shortcut: the input itself, unless the block strides
            if stride != 1:
                self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                          nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1))

        def forward(self, x):
            y = self.bn2(self.conv2(torch.relu(self.bn1(self.conv1(x)))))
            return torch.relu(y + (x if self.proj is None else self.proj(x)))

    layers = [nn.Conv2d(1, 16, 3, padding=1, bias=False), nn.BatchNorm2d(16, eps=1e-5, momentum=0.1), nn.ReLU()]
    cin = 16
    for stage, filters in enumerate((16, 32, 64)):
        for block in range(3):
            layers.append(BasicBlock(cin, filters, 2 if stage > 0 and block == 0 else 1))
            cin = filters
    return layers + [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]


def build(name):
    """The preset's model, initialised as retrograd initialises it."""
    if name == "mlp":
        layers = [
            nn.Flatten(),
            nn.Linear(784, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 10),
        ]
    elif name == "resnet20":
        layers = resnet20()
    elif name == "lenet":
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
    # in the order the layers were made, which is the cfg's: the dense layer last
    weighted = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear))]
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
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)
    return model


def objective(name):
    """(loss function, target(x, y)): cross entropy against the labels for a classifier; for an
    autoencoder MSE against its input (flattened for the dense one). Both are batch means."""
    if PRESETS[name][0] == "classifier":
        return nn.CrossEntropyLoss(), lambda x, y: y
    if name == "autoencoder":
        return nn.MSELoss(), lambda x, y: x.flatten(1)
    return nn.MSELoss(), lambda x, y: x


def make_optimizer(kind, parameters, lr, momentum=0.9, weight_decay=0.0):
    """retrograd's update rules (src/nn/optimizer.h): SGD with momentum or Adam, L2 weight decay
    added to every parameter's gradient (PyTorch's weight_decay, not AdamW's)."""
    if kind == "sgd":
        return torch.optim.SGD(parameters, lr=lr, momentum=momentum, weight_decay=weight_decay)
    return torch.optim.Adam(parameters, lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=weight_decay)


def rate(args, lr, step, steps_per_epoch):
    """retrograd's Schedule::rate (src/train/schedule.h) at optimizer step `step` (0 first)."""
    if args.schedule == "step":
        return lr * args.gamma ** ((step // steps_per_epoch) // args.step_epochs)
    if args.schedule == "cosine":
        progress = min(1.0, step / float(steps_per_epoch * args.epochs))
        return args.lr_min + (lr - args.lr_min) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return lr


def evaluate(model, name, x_test, y_test, batch):
    """(test accuracy, test MSE per pixel) in eval mode; the one that does not apply is 0."""
    classifier = PRESETS[name][0] == "classifier"
    _, target = objective(name)
    model.eval()
    correct = 0
    squared = 0.0
    with torch.no_grad():
        for i in range(0, x_test.shape[0], batch):
            xb, yb = x_test[i:i + batch], y_test[i:i + batch]
            out = model(xb)
            if classifier:
                correct += int((out.argmax(1) == yb).sum())
            else:
                d = (out - target(xb, yb)).double()
                squared += float((d * d).sum())
    model.train()
    n = int(x_test.shape[0])
    return (correct / n, 0.0) if classifier else (0.0, squared / x_test.numel())


def parse_args():
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
    ap.add_argument("--test-limit", type=int, default=0,
                    help="score on the first N test samples only (0: all)")
    ap.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    ap.add_argument("--optimizer", choices=("sgd", "adam"), help="default: the preset's")
    ap.add_argument("--lr", type=float, help="default: the preset's")
    ap.add_argument("--momentum", type=float, default=0.9, help="sgd momentum")
    # the rest as retrograd train's options of the same names, with its defaults
    ap.add_argument("--weight-decay", type=float, default=0.0, help="L2 weight decay")
    ap.add_argument("--schedule", choices=("constant", "step", "cosine"), default="constant")
    ap.add_argument("--step-epochs", type=int, default=10, help="step schedule: decay every N epochs")
    ap.add_argument("--gamma", type=float, default=0.1, help="step schedule: decay factor")
    ap.add_argument("--lr-min", type=float, default=0.0, help="cosine schedule: final rate")
    args = ap.parse_args()
    if args.threads < 1:
        ap.error("--threads must be at least 1")
    if args.epochs < 1 or args.batch < 1 or args.step_epochs < 1 or args.limit < 0 or args.test_limit < 0:
        ap.error("--epochs, --batch and --step-epochs must be positive, --limit and --test-limit not negative")
    return args


def main():
    args = parse_args()
    kind, optimizer, lr = PRESETS[args.model]
    optimizer = args.optimizer or optimizer
    lr = args.lr if args.lr is not None else lr

    global torch, nn
    torch, nn = import_torch(args.threads, "pytorch_presets.py")
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    cuda = args.device == "cuda"
    if cuda:
        if not torch.cuda.is_available():
            sys.exit("pytorch_presets.py: --device cuda: torch %s sees no CUDA device" % torch.__version__)
        fp32_only(torch)
    torch.manual_seed(args.seed)

    x_train, y_train = (t.to(args.device) for t in load_split(args.data, "train", args.limit))
    x_test, y_test = (t.to(args.device) for t in load_split(args.data, "t10k", args.test_limit))
    n = x_train.shape[0]

    model = build(args.model).to(args.device)
    parameters = sum(p.numel() for p in model.parameters())
    print("pytorch %s: total parameters: %d" % (args.model, parameters), file=sys.stderr)
    loss_fn, target = objective(args.model)
    opt = make_optimizer(optimizer, model.parameters(), lr, args.momentum, args.weight_decay)
    gen = torch.Generator().manual_seed(args.seed)
    steps_per_epoch = (n + args.batch - 1) // args.batch
    step = 0

    history = []
    train_seconds = 0.0
    model.train()
    for epoch in range(args.epochs):
        perm = torch.randperm(n, generator=gen).to(args.device)  # drawn before the clock, as retrograd
        te = time.perf_counter()
        loss_sum = 0.0
        correct = 0
        for i in range(0, n, args.batch):  # drop_last=False: keep the tail
            idx = perm[i:i + args.batch]
            xb, yb = x_train[idx], y_train[idx]
            opt.zero_grad(set_to_none=True)
            out = model(xb)
            loss = loss_fn(out, target(xb, yb))
            loss.backward()
            for group in opt.param_groups:
                group["lr"] = rate(args, lr, step, steps_per_epoch)
            opt.step()
            step += 1
            # running loss/accuracy, as retrograd's progress line reports
            loss_sum += loss.item() * xb.shape[0]
            if kind == "classifier":
                correct += int((out.argmax(1) == yb).sum())
        if cuda:
            torch.cuda.synchronize()
        es = time.perf_counter() - te
        train_seconds += es
        test_accuracy, test_mse = evaluate(model, args.model, x_test, y_test, args.batch)
        history.append({"epoch": epoch + 1, "loss": loss_sum / n,
                        "accuracy": correct / n if kind == "classifier" else 0.0,
                        "seconds": es, "samples_per_s": n / es,
                        "test_accuracy": test_accuracy, "test_mse": test_mse})
        print("pytorch %s: epoch %d/%d: loss %.4f, train accuracy %.4f, test %s %.4f, %.2f s"
              % (args.model, epoch + 1, args.epochs, loss_sum / n, history[-1]["accuracy"],
                 *(("accuracy", test_accuracy) if kind == "classifier" else ("mse", test_mse)), es),
              file=sys.stderr, flush=True)

    print(json.dumps({
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "model": args.model,
        "parameters": parameters,
        "optimizer": optimizer,
        "lr": lr,
        "momentum": args.momentum if optimizer == "sgd" else 0.0,
        "weight_decay": args.weight_decay,
        "schedule": args.schedule,
        "step_epochs": args.step_epochs,
        "gamma": args.gamma,
        "lr_min": args.lr_min,
        "epochs": args.epochs,
        "epochs_run": args.epochs,
        "batch": args.batch,
        "threads": args.threads,
        "interop_threads": torch.get_num_interop_threads(),
        "device": torch.cuda.get_device_name() if cuda else "cpu",
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "blas": blas_library(),
        "seed": args.seed,
        "train_samples": n,
        "train_seconds": train_seconds,
        "train_samples_per_s": n * args.epochs / train_seconds,
        "test_accuracy": test_accuracy,
        "test_mse": test_mse,
        "test_samples": int(x_test.shape[0]),
        "peak_rss_bytes": peak_rss_bytes(),
        "history": history,
    }))


if __name__ == "__main__":
    main()
