// Built-in models, written in the cfg format so that every preset is also an example cfg.
#include <fstream>
#include <sstream>

#include "base/input_file.h"
#include "nn/model.h"

namespace rg {

namespace {
struct Preset {
  const char* name;
  const char* cfg;                 // the text, or null: made by make
  std::string (*make)() = nullptr;  // a preset too regular to write out (resnet20's blocks)
};

// One basic block of a CIFAR ResNet (He et al. 2016, section 4.2): two 3x3 convs with batch
// norm, the block's input added before the last relu. A block that halves the size and widens
// (stride 2) takes its shortcut through a 1x1 conv of stride 2 with batch norm (the paper's
// option B). `in` is the layer the block reads; its output is the relu named `name`_out.
std::string resnet_block(const std::string& name, const std::string& in, int filters, int stride) {
  const std::string f = std::to_string(filters);
  std::string text = "\n[conv]\nname = " + name + "_conv1\nfilters = " + f + "\nsize = 3\nstride = " +
                     std::to_string(stride) + "\npad = 1\nbias = false\n\n[batchnorm]\n\n[relu]\n" +
                     "\n[conv]\nfilters = " + f + "\nsize = 3\npad = 1\nbias = false\n" +
                     "\n[batchnorm]\nname = " + name + "_bn2\n";
  std::string shortcut = in;
  if (stride != 1) {
    text += "\n[conv]\nname = " + name + "_proj\ninputs = " + in + "\nfilters = " + f +
            "\nsize = 1\nstride = 2\nbias = false\n\n[batchnorm]\nname = " + name + "_proj_bn\n";
    shortcut = name + "_proj_bn";
  }
  return text + "\n[add]\ninputs = " + name + "_bn2, " + shortcut + "\n\n[relu]\nname = " + name + "_out\n";
}

// resnet20: a 3x3 conv of 16, then 3 stages of 3 basic blocks of 16, 32 and 64 channels (28x28,
// 14x14, 7x7 here), global average pooling and a dense layer of 10: 19 convs and the dense.
std::string resnet20_cfg() {
  std::string text =
      "# resnet20: He et al. 2016's CIFAR ResNet for 28x28x1 (3 stages x 3 basic blocks, 16/32/64 channels)\n"
      "[net]\ninput = 28x28x1\nloss = softmax_cross_entropy\n"
      "\n[conv]\nfilters = 16\nsize = 3\npad = 1\nbias = false\n\n[batchnorm]\n\n[relu]\nname = stem\n";
  std::string in = "stem";
  const int filters[3] = {16, 32, 64};
  for (int stage = 0; stage < 3; ++stage) {
    for (int block = 0; block < 3; ++block) {
      const std::string name = "s" + std::to_string(stage + 1) + "b" + std::to_string(block + 1);
      text += resnet_block(name, in, filters[stage], stage > 0 && block == 0 ? 2 : 1);
      in = name + "_out";
    }
  }
  return text + "\n[global_avgpool]\n\n[dense]\nunits = 10\ninit = glorot\n";
}

// A [train] section gives the settings the preset was tuned with; command-line options win.
const Preset kPresets[] = {
    {"mlp",
     "# mlp: 784-256-128-10 with ReLU, the Fashion-MNIST baseline\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = softmax_cross_entropy\n"
     "\n[dense]\nunits = 256\ninit = he\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 128\ninit = he\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 10\ninit = glorot\n"},
    {"lenet",
     "# lenet: LeNet-5 with ReLU and max pooling; the first conv pads 28x28 to keep 28x28\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = softmax_cross_entropy\n"
     "\n[conv]\nfilters = 6\nsize = 5\npad = 2\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[conv]\nfilters = 16\nsize = 5\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[dense]\nunits = 120\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 84\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 10\ninit = glorot\n"},
    {"cnn",
     "# cnn: two 3x3 conv blocks of 32 and 64 filters with batch norm, pooling and dropout\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = softmax_cross_entropy\n"
     "\n[conv]\nfilters = 32\nsize = 3\npad = 1\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 32\nsize = 3\npad = 1\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[dropout]\nrate = 0.25\n"
     "\n[conv]\nfilters = 64\nsize = 3\npad = 1\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 64\nsize = 3\npad = 1\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[dropout]\nrate = 0.25\n"
     "\n[dense]\nunits = 256\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[dropout]\nrate = 0.5\n"
     "\n[dense]\nunits = 10\ninit = glorot\n"},
    {"catdog",
     "# catdog: the cat-vs-dog CNN of the seed slides that ran out of memory on a 2 GB GPU: 15 3x3 convs in\n"
     "# six blocks (32, 64, 128, 256, 256, 256 filters), each ending in a 2x2 max pool, then dense\n"
     "# 4096-3840-128-2, 21.1 M parameters, on 256x256x3 images (its [32, 128, 64, 64] activations at batch\n"
     "# 32 are the third block's). 88 MiB of activations and gradients a sample in training: batch 32 needs\n"
     "# ~3 GB, which --mem-budget splits into micro-batches. For memory and speed studies (--data synthetic)\n"
     "[net]\n"
     "input = 256x256x3\n"
     "loss = softmax_cross_entropy\n"
     "\n[conv]\nfilters = 32\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 32\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[conv]\nfilters = 64\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 64\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[conv]\nfilters = 128\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 128\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 128\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[conv]\nfilters = 256\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 256\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 256\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[conv]\nfilters = 256\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 256\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 256\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[conv]\nfilters = 256\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 256\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[dense]\nunits = 3840\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 128\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 2\ninit = glorot\n"},
    {"rcnn",
     "# rcnn: a recurrent convolutional network (Liang and Hu, 2015): a conv, then two recurrent conv\n"
     "# layers of 3 steps each (4 states, the paper's depth-4 unrolled subnetwork) with pooling\n"
     "# between, global average pooling and a dense classifier. SGD at lr 0.05 with a cosine schedule:\n"
     "# 0.913 test accuracy after 3 epochs (0.899 at lr 0.01, 0.876 at a constant 0.01)\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = softmax_cross_entropy\n"
     "\n[conv]\nfilters = 32\nsize = 3\npad = 1\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[rcl]\nfilters = 32\nsize = 3\nsteps = 3\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[rcl]\nfilters = 64\nsize = 3\nsteps = 3\n"
     "\n[maxpool]\nsize = 2\n"
     "\n[global_avgpool]\n"
     "\n[dense]\nunits = 10\ninit = glorot\n"
     "\n[train]\noptimizer = sgd\nlr = 0.05\nmomentum = 0.9\nschedule = cosine\n"},
    {"autoencoder",
     "# autoencoder: dense 784-256-64-256-784, sigmoid output, trained to reproduce its input\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = mse\n"
     "target = input\n"
     "\n[dense]\nunits = 256\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 64\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 256\n"
     "\n[relu]\n"
     "\n[dense]\nunits = 784\ninit = glorot\n"
     "\n[sigmoid]\n"
     "\n[train]\noptimizer = adam\nlr = 0.001\n"},
    {"conv-autoencoder",
     "# conv-autoencoder: strided convs down to a 7x7x32 code, transposed convs back to 28x28x1\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = mse\n"
     "target = input\n"
     "\n[conv]\nfilters = 16\nsize = 3\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 32\nsize = 3\nstride = 2\npad = 1\n"
     "\n[relu]\n"
     "\n[conv]\nfilters = 32\nsize = 3\nstride = 2\npad = 1\n"
     "\n[relu]\n"
     "\n[conv_transpose]\nfilters = 16\nsize = 3\nstride = 2\npad = 1\noutput_pad = 1\n"
     "\n[relu]\n"
     "\n[conv_transpose]\nfilters = 1\nsize = 3\nstride = 2\npad = 1\noutput_pad = 1\ninit = glorot\n"
     "\n[sigmoid]\n"
     "\n[train]\noptimizer = adam\nlr = 0.001\n"},
    {"dcgan",
     "# dcgan: DCGAN (Radford et al. 2016) for 28x28x1 images; train it with `retrograd train --model dcgan`\n"
     "[gan]\n"
     "generator = dcgan-generator\n"
     "discriminator = dcgan-discriminator\n"
     "\n[train]\noptimizer = adam\nlr = 0.0002\nbeta1 = 0.5\n"},
    {"dcgan-generator",
     "# dcgan-generator: noise 64 -> 7x7x128 -> 14x14x64 -> 28x28x1 in [-1, 1]; trained inside dcgan\n"
     "[net]\n"
     "input = 64\n"
     "loss = none\n"
     "\n[dense]\nunits = 6272\ninit = dcgan\nbias = false\n"
     "\n[reshape]\nshape = 7x7x128\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[conv_transpose]\nfilters = 64\nsize = 4\nstride = 2\npad = 1\ninit = dcgan\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[relu]\n"
     "\n[conv_transpose]\nfilters = 1\nsize = 4\nstride = 2\npad = 1\ninit = dcgan\n"
     "\n[tanh]\n"},
    {"dcgan-discriminator",
     "# dcgan-discriminator: 28x28x1 -> 14x14x64 -> 7x7x128 -> one logit (real or generated); trained inside dcgan\n"
     "[net]\n"
     "input = 28x28x1\n"
     "loss = bce_with_logits\n"
     "\n[conv]\nfilters = 64\nsize = 4\nstride = 2\npad = 1\ninit = dcgan\n"
     "\n[leaky_relu]\nslope = 0.2\n"
     "\n[conv]\nfilters = 128\nsize = 4\nstride = 2\npad = 1\ninit = dcgan\nbias = false\n"
     "\n[batchnorm]\n"
     "\n[leaky_relu]\nslope = 0.2\n"
     "\n[dense]\nunits = 1\ninit = dcgan\n"},
    {"resnet20", nullptr, resnet20_cfg},
};
}  // namespace

std::string preset_cfg(const std::string& name) {
  for (const auto& preset : kPresets)
    if (name == preset.name) return preset.cfg != nullptr ? preset.cfg : preset.make();
  return "";
}

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const auto& preset : kPresets) names.push_back(preset.name);
  return names;
}

Result<CfgDocument> load_model_cfg(const std::string& name_or_path) {
  const std::string text = preset_cfg(name_or_path);
  if (!text.empty()) return parse_cfg(text, "preset:" + name_or_path);
  // A word with no separator or dot that names nothing on disk was meant as a preset.
  const bool path_like = name_or_path.find_first_of("/\\.") != std::string::npos || path_exists(name_or_path);
  if (!path_like) {
    std::string known;
    for (const auto& name : preset_names()) known += (known.empty() ? "" : ", ") + name;
    return Status::error("'" + name_or_path + "' is neither a preset (" + known + ") nor a cfg file path");
  }
  return load_cfg_file(name_or_path);
}

}  // namespace rg
