// The options of `train` and `precision` (app/train_options.h): declared, and read into
// TrainOptions from the command line or a model cfg's [train] section.
#include "app/train_options.h"

#include "app/data_source.h"
#include "app/device_option.h"
#include "app/layer_profile_option.h"
#include "app/mpi_job.h"
#include "app/precision_report.h"
#include "app/precision_sweep.h"
#include "app/train_gan.h"
#include "base/memory.h"
#include "nn/model.h"
#include "train/schedule.h"

namespace rg {

void declare_train_options(Args& args, const TrainCommand& command) {
  std::string presets;
  for (const std::string& name : preset_names()) presets += (presets.empty() ? "" : ", ") + name;
  args.option("model", "NAME|FILE", "a preset (" + presets + ") or a model cfg file", "mlp");
  args.option("data", "DIR|synthetic",
              "a folder: IDX files (MNIST layout), CIFAR-10 binary batches or image class folders; or generated data",
              "/usr/share/datasets/fashion-mnist");
  add_image_data_options(args);
  args.option("epochs", "N", "epochs to train (in all, when resuming)", "5");
  args.option("batch", "N", "mini-batch size", "64");
  args.option("mem-budget", "SIZE",
              "host memory for tensors and data (64M, 1.5G): the batch is split into micro-batches and the data "
              "streamed from disk as needed to stay within it", "none");
  args.option("stream", "auto|yes|no", "read samples from disk batch by batch (IDX files) instead of into memory; "
              "auto: when --mem-budget needs it", "auto");
  args.option("train-precision", "fp32|fp16|bf16|int8-qat|w<B>a<A>-qat|int8-train|[wB][aB][gB][eB][-sr|-rn][-p2|-flN][-sw]",
              "fp16: mixed precision (f16 activations and gradients, f32 math and master weights, loss scaling; on "
              "the CPU or an OpenCL --device); bf16: the same with bf16 storage, no loss scaling (CPU); int8-qat: "
              "through fake int8 from the start (exported with the ranges learned; w4a8-qat: 4-bit weights, w4a4-qat: 4-bit activations too); int8-train: conv and dense GEMMs int8 forward and backward, f32 master weights (both on the "
              "CPU); a fixed-point shorthand: the bits (2-16) of weights, activations, weight gradients and errors "
              "(g sets e too), per-tensor dynamic scales, weights and activations rounded to nearest and gradients "
              "stochastically (-sr: all stochastic, -rn: all nearest; -p2: power-of-two scales, -flN: a static step "
              "2^-N; -sw: the weights stored in their format, no f32 master); int8-train is w8a8e8; up to 8 bits "
              "on the int8 tiles, up to 16 on the int16 tiles (pmaddwd), exact; a role left out stays f32 and its "
              "products run fake quantized (docs/quantization.md)",
              "fp32");
  args.option("layer-precision", "LAYER=P,...",
              "a precision of their own for the named layers' products (conv, dense, conv_transpose, rcl), over "
              "--train-precision's: fp32 or a fixed-point shorthand (conv1=w8a8e8,dense3=fp32); the same as a "
              "`precision = P` key in the layer's cfg section, and kept with the model in checkpoints",
              "");
  args.option("optimizer", "sgd|adam", "the update rule", "sgd");
  args.option("lr", "RATE", "learning rate", "0.01 for sgd, 0.001 for adam");
  args.option("momentum", "M", "sgd momentum", "0.9");
  args.flag("nesterov", "sgd with Nesterov momentum");
  args.option("weight-decay", "W", "L2 weight decay", "0");
  args.option("beta1", "B", "adam beta1", "0.9");
  args.option("beta2", "B", "adam beta2", "0.999");
  args.option("schedule", "constant|step|cosine", "learning-rate schedule", "constant");
  args.option("step-epochs", "N", "step schedule: decay every N epochs", "10");
  args.option("gamma", "G", "step schedule: decay factor", "0.1");
  args.option("lr-min", "RATE", "cosine schedule: final rate", "0");
  args.option("val-split", "F", "hold out this fraction of the training data for validation", "0");
  args.option("limit", "N", "train on the first N samples only (quick runs)", "all");
  args.option("test-limit", "N", "score on the first N test samples only (quick runs)", "all");
  args.option("stop-after", "N", "stop after epoch N (the schedule still spans --epochs); continue with --resume");
  args.option("checkpoint", "FILE",
              "write a checkpoint after each epoch, atomically (a link: at its target); an existing file only with "
              "--overwrite; a second run writing it is refused");
  args.flag("overwrite", "let --checkpoint (a GAN: the --out folder's networks) replace an earlier run's file");
  args.option("resume", "FILE",
              "continue a run from its checkpoint, on the data it read (--limit and the other data options come "
              "from it; other values or other samples are refused)");
  args.option("json", "FILE", "write every figure of the run as JSON");
  args.option("samples", "FILE.png", "autoencoders: write test inputs beside their reconstructions as a PNG grid");
  args.option("csv", "FILE", "--precision: write the precision table as CSV");
  declare_precision_options(args, *command.precisions != '\0' ? command.precisions : "none: no table");
  if (std::string(command.name) == "precision") declare_sweep_options(args);
  add_gan_options(args);
  add_device_options(args);
  add_profile_option(args);
  add_mpi_options(args);
  add_common_options(args);
  add_denormals_option(args);
}

Result<std::pair<int64_t, StreamChoice>> memory_options(const Args& args) {
  int64_t budget = 0;
  if (args.given("mem-budget")) {
    auto parsed = parse_bytes(args.text("mem-budget"));
    if (!parsed.ok()) return parsed.status().with_context("--mem-budget: ");
    budget = parsed.value();
    if (budget <= 0) return Status::error("--mem-budget: a budget must be above 0 bytes");
  }
  auto stream = stream_choice_from_name(args.text("stream"));
  if (!stream.ok()) return stream.status().with_context("--stream: ");
  return std::make_pair(budget, stream.value());
}

Status options_from_args(const Args& args, TrainOptions* options) {
  RG_ASSIGN(options->epochs, args.integer("epochs", 1, 1000000));
  RG_ASSIGN(options->batch, args.integer("batch", 1, 1 << 20));
  RG_ASSIGN(options->seed, seed_option(args));
  RG_TRY(set_precision(args.text("train-precision"), options).with_context("--train-precision: "));
  auto kind = optimizer_from_name(args.text("optimizer"));
  if (!kind.ok()) return kind.status().with_context("--optimizer: ");
  options->optimizer.kind = kind.value();
  const bool adam = kind.value() == OptimizerKind::adam;
  options->schedule.lr = adam ? 0.001 : 0.01;
  if (args.given("lr")) {
    RG_ASSIGN(options->schedule.lr, args.number("lr", 0.0, 1e3));
  }
  RG_ASSIGN(options->optimizer.momentum, args.number("momentum", 0.0, 0.9999));
  options->optimizer.nesterov = args.given("nesterov");
  if (options->optimizer.nesterov && (adam || options->optimizer.momentum == 0)) {
    return Status::error("--nesterov needs --optimizer sgd with a momentum above 0");
  }
  RG_ASSIGN(options->optimizer.weight_decay, args.number("weight-decay", 0.0, 1.0));
  RG_ASSIGN(options->optimizer.beta1, args.number("beta1", 0.0, 0.9999999));
  RG_ASSIGN(options->optimizer.beta2, args.number("beta2", 0.0, 0.9999999));
  auto schedule = schedule_from_name(args.text("schedule"));
  if (!schedule.ok()) return schedule.status().with_context("--schedule: ");
  options->schedule.kind = schedule.value();
  RG_ASSIGN(options->schedule.step_epochs, args.integer("step-epochs", 1, 1000000));
  RG_ASSIGN(options->schedule.gamma, args.number("gamma", 0.0, 1.0));
  RG_ASSIGN(options->schedule.lr_min, args.number("lr-min", 0.0, 1e3));
  RG_ASSIGN(options->validation_split, args.number("val-split", 0.0, 0.9));
  return Status();
}

Status apply_train_section(CfgDocument& cfg, Args& args) {
  static const char* const kKnown[] = {"optimizer", "lr",    "momentum", "nesterov", "weight-decay", "beta1",
                                       "beta2",     "batch", "epochs",   "schedule", "step-epochs",  "gamma", "lr-min"};
  int seen = 0;
  for (CfgSection& section : cfg.sections) {
    if (section.kind() != "train") continue;
    if (++seen > 1) return Status::error(section.where() + "[train] may appear only once");
    for (CfgEntry& entry : section.entries()) {
      bool known = false;
      for (const char* name : kKnown) known = known || entry.key == name;
      if (!known) {
        std::string list;
        for (const char* name : kKnown) list += std::string(list.empty() ? "" : ", ") + name;
        return Status::error(section.where(entry.key) + "not a training setting (known: " + list + ")");
      }
      if (entry.key == "nesterov") {
        if (entry.value != "true" && entry.value != "false") {
          return Status::error(section.where(entry.key) + "'" + entry.value + "' is not true or false");
        }
        if (entry.value == "true") args.assume("nesterov", "");
        continue;
      }
      args.assume(entry.key, entry.value);
    }
  }
  return Status();
}

}  // namespace rg
