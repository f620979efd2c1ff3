#!/usr/bin/python3
"""PyTorch twins of retrograd's presets, for bench/presets_vs_pytorch.sh (mlp, lenet, cnn, rcnn,
autoencoder, conv-autoencoder, dcgan), bench/mlp_vs_pytorch.sh and bench/memory_budget.sh (mlp),
bench/resnet20_accuracy.sh (resnet20), bench/pytorch_cuda.py and bench/pytorch_int8.py.

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
  rcnn              conv 3x3x32 pad 1 no bias, BN, relu, rcl 32, maxpool 2, rcl 64, maxpool 2,
                    global average pool, dense 10; CrossEntropyLoss, SGD lr 0.05 momentum 0.9,
                    cosine schedule to 0 over the run's epochs. An rcl of F filters with 3 steps
                    is src/nn/recurrent_conv.h's: z_0 = ff(u), z_t = ff(u) + rec(x_{t-1}),
                    x_t = relu(BN_t(z_t)) for t = 0..3 and x_3 its output, ff a conv 3x3xF pad 1
                    and rec a conv 3x3xF pad 1 (no biases) shared by the steps, a BN per step.
                    Like ours it computes ff(u) once and adds it at every step (1 ff and 3 rec
                    convs a forward: 108.8 MFLOP a sample, 326.0 MFLOP a training step); an RCL
                    that recomputes ff(u) at each step, as a literal reading of Liang and Hu's
                    equation does, costs 174 MFLOP a forward, and one of 2 steps 80 MFLOP.
  autoencoder       dense 256, relu, dense 64, relu, dense 256, relu, dense 784, sigmoid;
                    MSELoss against the input, Adam lr 0.001
  conv-autoencoder  conv 3x3x16 pad 1, relu, conv 3x3x32 s2 p1, relu, conv 3x3x32 s2 p1,
                    relu, convT 3x3x16 s2 p1 op1, relu, convT 3x3x1 s2 p1 op1, sigmoid;
                    MSELoss against the input, Adam lr 0.001
  dcgan             G: noise 64 (standard normal), dense 6272 no bias, reshape 128x7x7, BN,
                    relu, convT 4x4x64 s2 p1 no bias, BN, relu, convT 4x4x1 s2 p1, tanh;
                    D: conv 4x4x64 s2 p1, leaky relu 0.2, conv 4x4x128 s2 p1 no bias, BN,
                    leaky relu 0.2, dense 1 (a logit); both Adam lr 0.0002 beta1 0.5. A step is
                    src/train/gan.h's: G(z) once; D on the real batch (pixels mapped to
                    [-1, 1]) against 1 and backward, D on the fake batch (detached) against 0
                    and backward (gradients added), D's step; then D on the same fake batch
                    again against 1 (BCEWithLogitsLoss, batch means), backward through D into
                    G, G's step. Samples/s counts real images. No test set: the JSON gives the
                    last epoch's losses.
  resnet20          He et al. 2016's CIFAR ResNet for 28x28x1: conv 3x3x16 pad 1 no bias, BN,
                    relu, then 3 stages of 3 basic blocks of 16, 32, 64 filters (28x28,
                    14x14, 7x7): conv 3x3 (stride 2 in a stage's first block but the
                    first stage's) pad 1 no bias, BN, relu, conv 3x3 pad 1 no bias, BN, plus
                    the block's input (where the block strides: through a 1x1 conv of
                    stride 2 no bias and BN, option B), relu; global average pool, dense 10;
                    CrossEntropyLoss, SGD lr 0.01 momentum 0.9 (the preset has no [train]
                    section: `retrograd train`'s defaults; no weight decay, a constant rate)

Inits as retrograd's: He-uniform (kaiming_uniform_, nonlinearity='relu', fan_in)
for every conv/dense weight, Glorot-uniform for the last one (dcgan: normal, sigma 0.02,
for every weight of both networks), zero biases; BN gamma 1, beta 0, momentum 0.1, eps 1e-5. Batch 64, reshuffled every epoch,
last partial batch kept. Fashion-MNIST (or any MNIST-layout folder) from IDX
files, raw or gzipped, pixels / 255 as float32, no augmentation, held in memory
as tensors (NCHW [n, 1, 28, 28]; retrograd is NHWC, which for one channel is the
same memory) on --device: cpu, or cuda (the whole set on the GPU; TF32 off).

Timing as retrograd's train_samples_per_s: each epoch's clock starts after the
epoch's shuffle order is drawn and stops after its last optimizer step; it
covers batch gathers, forward, loss, backward, step and the running loss and
accuracy (dcgan: the mapping to [-1, 1], the noise and the running losses and D's mean
beliefs) (on cuda, the clock stops after torch.cuda.synchronize()).
train_samples_per_s = samples trained / sum of epoch seconds. After each epoch the
test set is scored (batch --batch, eval mode, no_grad; untimed): each epoch's test
accuracy (or MSE) is in the history, the last one is the run's.

--lr, --momentum, --beta1, --weight-decay, --schedule (constant, step, cosine: set every step
as retrograd's src/train/schedule.h), --step-epochs, --gamma and --lr-min are retrograd train's
options of the same names, with its defaults where the preset has none: a recipe other than the
preset's on both sides. --limit trains on the first N samples only (a fraction of an epoch).

train_flops_per_sample (in the JSON and on stderr, beside retrograd --json's field of that name)
is counted from the twin's own modules running one training step (count_product_flops in
pytorch_common.py): the products of its dense, conv and transposed conv layers, 2 flops a
multiply-add, in the forward, the weights' gradients and the input gradients autograd computes;
tools/check_twin_flops.py checks that it equals retrograd's for every preset. --flops-only prints
that count as JSON and trains nothing.

Prints the parameter count and one line per epoch on stderr, and one JSON line on
stdout.

On the CPU, run it with the Debian interpreter (/usr/bin/python3, python3-torch
1.13), not a pyenv python3 that may be first on PATH.
"""
import argparse
import collections
import json
import math
import sys
import time

import numpy as np

from pytorch_common import blas_library, count_product_flops, fp32_only, import_torch, peak_rss_bytes, read_split

torch = None  # imported in main(), after the thread variables are set
nn = None

# A preset's [train] section, or retrograd train's defaults where it has none.
Recipe = collections.namedtuple("Recipe", "kind optimizer lr schedule beta1")
PRESETS = {
    "mlp": Recipe("classifier", "sgd", 0.01, "constant", 0.9),
    "lenet": Recipe("classifier", "sgd", 0.01, "constant", 0.9),
    "cnn": Recipe("classifier", "sgd", 0.01, "constant", 0.9),
    "rcnn": Recipe("classifier", "sgd", 0.05, "cosine", 0.9),
    "autoencoder": Recipe("autoencoder", "adam", 0.001, "constant", 0.9),
    "conv-autoencoder": Recipe("autoencoder", "adam", 0.001, "constant", 0.9),
    "dcgan": Recipe("gan", "adam", 0.0002, "constant", 0.5),
    "resnet20": Recipe("classifier", "sgd", 0.01, "constant", 0.9),
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


def rcnn():
    """src/nn/presets.cpp's rcnn, its rcl layers as src/nn/recurrent_conv.h computes them (the
    docstring at the top says how). The layer class is made here, as resnet20's block is."""

    class Rcl(nn.Module):
        def __init__(self, cin, cout, steps=3):
            super().__init__()
            self.ff = nn.Conv2d(cin, cout, 3, padding=1, bias=False)
            self.rec = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.norms = nn.ModuleList(nn.BatchNorm2d(cout, eps=1e-5, momentum=0.1) for _ in range(steps + 1))

        def forward(self, u):
            ff = self.ff(u)  # once: every step adds it
            x = torch.relu(self.norms[0](ff))
            for bn in self.norms[1:]:
                x = torch.relu(bn(ff + self.rec(x)))
            return x

    return [nn.Conv2d(1, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32, eps=1e-5, momentum=0.1), nn.ReLU(),
            Rcl(32, 32), nn.MaxPool2d(2), Rcl(32, 64), nn.MaxPool2d(2),
            nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(64, 10)]


def dcgan():
    """(generator, discriminator): src/nn/presets.cpp's dcgan-generator and dcgan-discriminator,
    every weight drawn as retrograd's init = dcgan (normal, sigma 0.02)."""
    g = nn.Sequential(nn.Linear(64, 128 * 7 * 7, bias=False), nn.Unflatten(1, (128, 7, 7)),
                      nn.BatchNorm2d(128, eps=1e-5, momentum=0.1), nn.ReLU(),
                      nn.ConvTranspose2d(128, 64, 4, stride=2, padding=1, bias=False),
                      nn.BatchNorm2d(64, eps=1e-5, momentum=0.1), nn.ReLU(),
                      nn.ConvTranspose2d(64, 1, 4, stride=2, padding=1), nn.Tanh())
    d = nn.Sequential(nn.Conv2d(1, 64, 4, stride=2, padding=1), nn.LeakyReLU(0.2),
                      nn.Conv2d(64, 128, 4, stride=2, padding=1, bias=False),
                      nn.BatchNorm2d(128, eps=1e-5, momentum=0.1), nn.LeakyReLU(0.2),
                      nn.Flatten(), nn.Linear(128 * 7 * 7, 1))
    for net in (g, d):
        initialise(net, lambda m, last: nn.init.normal_(m.weight, 0.0, 0.02))
    return g, d


def initialise(model, weight_init):
    """Draws every conv, transposed conv and dense weight with weight_init(module, is_last) in the
    order the layers were made, which is the cfg's; zero biases, BN gamma 1 and beta 0."""
    weighted = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.ConvTranspose2d, nn.Linear))]
    with torch.no_grad():
        for i, m in enumerate(weighted):
            weight_init(m, i == len(weighted) - 1)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        for m in model.modules():
            if isinstance(m, (nn.BatchNorm1d, nn.BatchNorm2d)):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)


def he_then_glorot(m, last):
    """retrograd's default init (he: bound sqrt(6 / fan_in)) and the presets' glorot last layer
    (bound sqrt(6 / (fan_in + fan_out)); PyTorch's fans for ConvTranspose2d are those retrograd
    uses, fan_in = k*k*filters)."""
    if last:
        nn.init.xavier_uniform_(m.weight)
    else:
        nn.init.kaiming_uniform_(m.weight, a=0, mode="fan_in", nonlinearity="relu")


def build(name):
    """The preset's model (not dcgan's pair: dcgan()), initialised as retrograd initialises it."""
    if name == "mlp":
        layers = [
            nn.Flatten(),
            nn.Linear(784, 256), nn.ReLU(),
            nn.Linear(256, 128), nn.ReLU(),
            nn.Linear(128, 10),
        ]
    elif name == "resnet20":
        layers = resnet20()
    elif name == "rcnn":
        layers = rcnn()
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
    initialise(model, he_then_glorot)
    return model


def objective(name):
    """(loss function, target(x, y)): cross entropy against the labels for a classifier; for an
    autoencoder MSE against its input (flattened for the dense one). Both are batch means."""
    if PRESETS[name].kind == "classifier":
        return nn.CrossEntropyLoss(), lambda x, y: y
    if name == "autoencoder":
        return nn.MSELoss(), lambda x, y: x.flatten(1)
    return nn.MSELoss(), lambda x, y: x


def make_optimizer(kind, parameters, lr, momentum=0.9, weight_decay=0.0, beta1=0.9):
    """retrograd's update rules (src/nn/optimizer.h): SGD with momentum or Adam, L2 weight decay
    added to every parameter's gradient (PyTorch's weight_decay, not AdamW's)."""
    if kind == "sgd":
        return torch.optim.SGD(parameters, lr=lr, momentum=momentum, weight_decay=weight_decay)
    return torch.optim.Adam(parameters, lr=lr, betas=(beta1, 0.999), eps=1e-8, weight_decay=weight_decay)


class Twin:
    """A preset's networks with their optimizers and loss on `device`; step() trains one batch.
    optimizer, lr and beta1: None for the preset's."""

    def __init__(self, name, device, optimizer=None, lr=None, momentum=0.9, weight_decay=0.0, beta1=None):
        recipe = PRESETS[name]
        self.name, self.kind = name, recipe.kind
        self.optimizer = optimizer or recipe.optimizer
        self.lr = lr if lr is not None else recipe.lr
        self.beta1 = beta1 if beta1 is not None else recipe.beta1

        def optimizer_of(net):
            return make_optimizer(self.optimizer, net.parameters(), self.lr, momentum, weight_decay, self.beta1)

        if self.kind == "gan":
            self.g, self.d = (net.to(device) for net in dcgan())
            self.nets = [self.g, self.d]
            self.noise = self.g[0].in_features  # G's input: the noise vector's size
            self.opt_g, self.opt_d = optimizer_of(self.g), optimizer_of(self.d)
            self.opts = [self.opt_d, self.opt_g]
            self.bce = nn.BCEWithLogitsLoss()
        else:
            self.model = build(name).to(device)
            self.nets = [self.model]
            self.opts = [optimizer_of(self.model)]
            self.loss_fn, self.target = objective(name)

    def parameters(self):
        return [sum(p.numel() for p in net.parameters()) for net in self.nets]

    def set_lr(self, lr):
        for opt in self.opts:
            for group in opt.param_groups:
                group["lr"] = lr

    def step(self, x, y):
        """One step on a batch: y the labels (classifiers, autoencoders: unused) or, for the GAN,
        the noise. Returns (loss, output) or the GAN's (BCE real, BCE fake, BCE for G, and the
        three passes' logits), as tensors."""
        if self.kind == "gan":
            return self.gan_step(x, y)
        opt = self.opts[0]
        opt.zero_grad(set_to_none=True)
        out = self.model(x)
        loss = self.loss_fn(out, self.target(x, y))
        loss.backward()
        opt.step()
        return loss, out

    def gan_step(self, x, z):
        """src/train/gan.cpp's train_step: real and fake in separate D passes, D's update, then G's
        through the updated D on the same fake batch."""
        n = x.shape[0]
        ones, zeros = torch.ones(n, 1, device=x.device), torch.zeros(n, 1, device=x.device)
        fake = self.g(z)
        self.opt_d.zero_grad(set_to_none=True)
        real_logits = self.d(x)
        loss_real = self.bce(real_logits, ones)
        loss_real.backward()
        fake_logits = self.d(fake.detach())
        loss_fake = self.bce(fake_logits, zeros)
        loss_fake.backward()  # added to the real pass's gradients
        self.opt_d.step()
        self.opt_g.zero_grad(set_to_none=True)
        after_logits = self.d(fake)
        loss_g = self.bce(after_logits, ones)
        loss_g.backward()  # D's gradients of this pass are never applied, as retrograd's
        self.opt_g.step()
        return loss_real, loss_fake, loss_g, real_logits, fake_logits, after_logits


def train_flops_per_sample(name):
    """The flops of one training step per sample (count_product_flops) of a fresh twin on the CPU,
    on a batch of 2 (2 rows keep batch norm's statistics defined); the random numbers it draws
    are taken from a fork of torch's generator, so a run's own draws are unchanged."""
    with torch.random.fork_rng(devices=[]):
        twin = Twin(name, "cpu")
        n = 2
        x = torch.rand(n, 1, 28, 28)
        y = torch.randn(n, twin.noise) if twin.kind == "gan" else torch.randint(0, 10, (n,))
        total = count_product_flops(torch, twin.nets, lambda: twin.step(x, y))
    assert total % n == 0, "%s: %d flops for %d samples" % (name, total, n)
    return total // n


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
    classifier = PRESETS[name].kind == "classifier"
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
    ap.add_argument("--flops-only", action="store_true",
                    help="print {model, train_flops_per_sample, parameters} as JSON; no data, no training")
    ap.add_argument("--optimizer", choices=("sgd", "adam"), help="default: the preset's")
    ap.add_argument("--lr", type=float, help="default: the preset's")
    ap.add_argument("--momentum", type=float, default=0.9, help="sgd momentum")
    ap.add_argument("--beta1", type=float, help="adam beta1 (default: the preset's, else 0.9)")
    # the rest as retrograd train's options of the same names, with its defaults
    ap.add_argument("--weight-decay", type=float, default=0.0, help="L2 weight decay")
    ap.add_argument("--schedule", choices=("constant", "step", "cosine"), help="default: the preset's, else constant")
    ap.add_argument("--step-epochs", type=int, default=10, help="step schedule: decay every N epochs")
    ap.add_argument("--gamma", type=float, default=0.1, help="step schedule: decay factor")
    ap.add_argument("--lr-min", type=float, default=0.0, help="cosine schedule: final rate")
    args = ap.parse_args()
    if args.threads < 1:
        ap.error("--threads must be at least 1")
    if args.epochs < 1 or args.batch < 1 or args.step_epochs < 1 or args.limit < 0 or args.test_limit < 0:
        ap.error("--epochs, --batch and --step-epochs must be positive, --limit and --test-limit not negative")
    args.schedule = args.schedule or PRESETS[args.model].schedule
    if PRESETS[args.model].kind == "gan" and args.schedule != "constant":
        ap.error("--schedule: GAN training uses a constant rate (as retrograd's)")
    return args


def train_epoch(twin, args, x_train, y_train, perm, first_step):
    """One epoch of a classifier or autoencoder in the order `perm`, the rate set every step;
    returns (summed loss, correct predictions)."""
    n = x_train.shape[0]
    steps_per_epoch = (n + args.batch - 1) // args.batch
    loss_sum = 0.0
    correct = 0
    for step, i in enumerate(range(0, n, args.batch), first_step):  # drop_last=False: keep the tail
        idx = perm[i:i + args.batch]
        xb, yb = x_train[idx], y_train[idx]
        twin.set_lr(rate(args, twin.lr, step, steps_per_epoch))
        loss, out = twin.step(xb, yb)
        # running loss/accuracy, as retrograd's progress line reports
        loss_sum += loss.item() * xb.shape[0]
        if twin.kind == "classifier":
            correct += int((out.argmax(1) == yb).sum())
    return loss_sum, correct


def gan_epoch(twin, args, x_train, perm, noise_gen):
    """One GAN epoch in the order `perm`: the epoch record's sums over real samples (losses, and
    D's mean beliefs: sigmoid of its logits), as src/train/gan.cpp's train_epoch keeps them."""
    n = x_train.shape[0]
    sums = dict.fromkeys(("loss_d", "loss_g", "d_real", "d_fake", "d_fake_after"), 0.0)
    for i in range(0, n, args.batch):
        xb = x_train[perm[i:i + args.batch]] * 2 - 1  # G ends in tanh: real pixels to [-1, 1]
        w = xb.shape[0]
        z = torch.randn(w, twin.noise, generator=noise_gen).to(xb.device)
        real, fake, g, real_logits, fake_logits, after_logits = twin.step(xb, z)
        sums["loss_d"] += (real.item() + fake.item()) * w
        sums["loss_g"] += g.item() * w
        for key, logits in (("d_real", real_logits), ("d_fake", fake_logits), ("d_fake_after", after_logits)):
            sums[key] += torch.sigmoid(logits.detach()).sum().item()
    return {k: v / n for k, v in sums.items()}


def run_epochs(twin, args, data):
    """Trains --epochs epochs; returns (history, train seconds). data: (x_train, y_train, x_test,
    y_test), the test tensors None for the GAN."""
    x_train, y_train, x_test, y_test = data
    n = x_train.shape[0]
    gen = torch.Generator().manual_seed(args.seed)
    noise_gen = torch.Generator().manual_seed(args.seed + 1)
    history = []
    train_seconds = 0.0
    for net in twin.nets:
        net.train()
    for epoch in range(args.epochs):
        perm = torch.randperm(n, generator=gen).to(args.device)  # drawn before the clock, as retrograd
        te = time.perf_counter()
        if twin.kind == "gan":
            record = gan_epoch(twin, args, x_train, perm, noise_gen)
        else:
            loss_sum, correct = train_epoch(twin, args, x_train, y_train, perm, epoch * ((n + args.batch - 1) // args.batch))
        if args.device == "cuda":
            torch.cuda.synchronize()
        es = time.perf_counter() - te
        train_seconds += es
        if twin.kind == "gan":
            history.append(dict(epoch=epoch + 1, **record, seconds=es, samples_per_s=n / es))
            print("pytorch %s: epoch %d/%d: loss_D %.4f, loss_G %.4f, D(x) %.3f, D(G(z)) %.3f, %.2f s"
                  % (args.model, epoch + 1, args.epochs, record["loss_d"], record["loss_g"], record["d_real"],
                     record["d_fake"], es), file=sys.stderr, flush=True)
            continue
        test_accuracy, test_mse = evaluate(twin.model, args.model, x_test, y_test, args.batch)
        history.append({"epoch": epoch + 1, "loss": loss_sum / n,
                        "accuracy": correct / n if twin.kind == "classifier" else 0.0,
                        "seconds": es, "samples_per_s": n / es,
                        "test_accuracy": test_accuracy, "test_mse": test_mse})
        print("pytorch %s: epoch %d/%d: loss %.4f, train accuracy %.4f, test %s %.4f, %.2f s"
              % (args.model, epoch + 1, args.epochs, loss_sum / n, history[-1]["accuracy"],
                 *(("accuracy", test_accuracy) if twin.kind == "classifier" else ("mse", test_mse)), es),
              file=sys.stderr, flush=True)
    return history, train_seconds


def setup_torch(args):
    global torch, nn
    torch, nn = import_torch(args.threads, "pytorch_presets.py")
    torch.set_num_threads(args.threads)
    torch.set_num_interop_threads(1)
    if args.device == "cuda":
        if not torch.cuda.is_available():
            sys.exit("pytorch_presets.py: --device cuda: torch %s sees no CUDA device" % torch.__version__)
        fp32_only(torch)
    torch.manual_seed(args.seed)


def main():
    args = parse_args()
    setup_torch(args)
    if args.flops_only:
        twin = Twin(args.model, "cpu")
        print(json.dumps({"model": args.model, "train_flops_per_sample": train_flops_per_sample(args.model),
                          "parameters": twin.parameters()}))
        return

    x_train, y_train = (t.to(args.device) for t in load_split(args.data, "train", args.limit))
    x_test = y_test = None
    if PRESETS[args.model].kind != "gan":
        x_test, y_test = (t.to(args.device) for t in load_split(args.data, "t10k", args.test_limit))
    n = x_train.shape[0]

    twin = Twin(args.model, args.device, args.optimizer, args.lr, args.momentum, args.weight_decay, args.beta1)
    parameters = twin.parameters()
    print("pytorch %s: total parameters: %s" % (args.model, " + ".join(str(p) for p in parameters)), file=sys.stderr)
    history, train_seconds = run_epochs(twin, args, (x_train, y_train, x_test, y_test))
    flops = train_flops_per_sample(args.model)  # after training: its step warms nothing up for the clock
    print("pytorch %s: training flops a sample: %d" % (args.model, flops), file=sys.stderr)

    last = history[-1]
    report = {
        "framework": "pytorch",
        "torch_version": torch.__version__,
        "model": args.model,
        "parameters": sum(parameters),
        "optimizer": twin.optimizer,
        "lr": twin.lr,
        "momentum": args.momentum if twin.optimizer == "sgd" else 0.0,
        "beta1": twin.beta1 if twin.optimizer == "adam" else 0.0,
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
        "device": torch.cuda.get_device_name() if args.device == "cuda" else "cpu",
        "mkldnn": bool(torch.backends.mkldnn.is_available()),
        "blas": blas_library(),
        "seed": args.seed,
        "train_samples": n,
        "train_seconds": train_seconds,
        "train_samples_per_s": n * args.epochs / train_seconds,
        "train_flops_per_sample": flops,
        "peak_rss_bytes": peak_rss_bytes(),
        "history": history,
    }
    if twin.kind == "gan":
        report.update(generator_parameters=parameters[0], discriminator_parameters=parameters[1],
                      loss_d=last["loss_d"], loss_g=last["loss_g"], test_samples=0)
    else:
        report.update(test_accuracy=last["test_accuracy"], test_mse=last["test_mse"],
                      test_samples=int(x_test.shape[0]))
    print(json.dumps(report))


if __name__ == "__main__":
    main()
