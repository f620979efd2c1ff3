// Where training and evaluation data come from: "synthetic" (generated, no files), or a
// folder recognised by what it holds: the MNIST IDX layout (the Debian Fashion-MNIST package
// by default), CIFAR-10 binary batches, or image folders (one subfolder per class).
#pragma once

#include <map>
#include <optional>
#include <string>

#include "app/args.h"
#include "data/dataset.h"
#include "data/image_io.h"

namespace rg {

constexpr const char* kSyntheticData = "synthetic";

struct DataSourceOptions {
  Shape model_input;                 // the model's per-sample input; image folders are decoded to it ([h, w, c])
  std::optional<ImageFit> image_fit; // --image-fit; unset: resize
  std::optional<double> test_split;  // --test-split; unset: 0.2 (DIR/<class>/ image folders only)
  bool streamed = false;             // leave the samples on disk where the source allows (IDX files)
  DType float_storage = DType::f32;  // --data-storage: float32 IDX images kept in f32 or f16
  int64_t memory_budget = 0;         // --mem-budget where the command has it; image decoding stays within it
};

// --image-fit, --test-split and --data-storage, which train and eval share.
void add_image_data_options(Args& args);
Result<DataSourceOptions> data_source_options(const Args& args, const Shape& model_input);

// `source` is a folder, "synthetic", or empty for the Fashion-MNIST package's folder. The
// image options are an error for a source that is not image folders.
Result<DataSplit> load_data_source(const std::string& source, uint64_t seed, const DataSourceOptions& options = {});
// What `train` trains on: the source loaded for the model's input (--image-fit, --test-split),
// its training split cut to the first N samples when --limit N is given; `streamed`: see
// DataSourceOptions.
Result<DataSplit> load_training_data(const Args& args, const std::string& source, uint64_t seed,
                                     const Shape& model_input, bool streamed = false);
// The name a source is recorded under in checkpoints and reports.
std::string data_source_name(const std::string& source);
// `failed`, a load of the source named in the checkpoint `checkpoint` (no --data given), saying
// where the name came from when the message is about it.
Status note_source_from_checkpoint(const Status& failed, const std::string& source, const std::string& checkpoint);

// The options besides --data, --seed and --val-split that decide which samples a run trains and
// scores on, and in what order: --limit, --test-limit, --image-fit, --test-split, --data-storage.
// Recorded in a run's checkpoint settings ("data option NAME": the value given, "" for none).
void record_data_options(const Args& args, std::map<std::string, std::string>* settings);
// A resumed run: each data option not given is taken from the checkpoint's `settings` (read from
// `path`); one given with another value than the checkpoint's run had is refused, naming the
// option and both values. Checkpoints from before these were recorded are taken as they are.
Status resume_data_options(const std::map<std::string, std::string>& settings, const std::string& path, Args& args);

// A cheap identity of the data a run trains and scores on: each split's sample count and shape
// and an FNV-1a hash of its labels ("train 60000 x [28x28x1] labels 3f2a...; test ...").
std::string data_identity(const DataSplit& split);
// The key a checkpoint's settings keep it under.
constexpr const char* kDataIdentitySetting = "data identity";
// A resumed run's data against the checkpoint's: refused when the samples differ, naming --data
// (or the source, when it is the checkpoint's) and both identities. `source` is the data the
// run reads now, `stored_source` the checkpoint's.
Status check_resumed_data(const std::map<std::string, std::string>& settings, const std::string& path,
                          const std::string& source, const std::string& stored_source, const DataSplit& split);

}  // namespace rg
