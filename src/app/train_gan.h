// `retrograd train` for GANs: a model cfg whose first section is [gan] (the preset `dcgan`),
// or `--resume DIR` with a GAN run's folder. Everything a run makes goes into its folder
// (--out): the sample grid of each epoch, both networks' checkpoints, the judge classifier.
#pragma once

#include "app/args.h"
#include "nn/cfg.h"
#include "train/trainer.h"

namespace rg {

// The options GAN training adds to `train`'s.
void add_gan_options(Args& args);

// gan_cfg: the [gan] document of a new run, or null when resuming (--resume names the folder).
// options: as parsed from the command line and the cfg's [train] section (unused on resume).
int run_gan_train(Args& args, const CfgDocument* gan_cfg, TrainOptions options);

}  // namespace rg
