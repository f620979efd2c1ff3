// Resolving --data: which loader a folder needs, judged by the files it holds.
#include "app/data_source.h"

#include <cstdlib>

#include "base/files.h"
#include "base/memory.h"
#include "base/serial.h"
#include "data/generated_images.h"
#include "data/image_data.h"

namespace rg {

namespace {

const char* const kLookedFor =
    "looked for train-images-idx3-ubyte[.gz] (MNIST layout), data_batch_1.bin (CIFAR-10 binary, also in "
    "cifar-10-batches-bin/), or class folders of .png/.jpg/.jpeg/.bmp images (DIR/<class>/ or DIR/train/<class>/ "
    "and DIR/test/<class>/)";

bool is_mnist_folder(const std::string& dir) {
  for (const char* name : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                           "t10k-labels-idx1-ubyte"}) {
    const std::string path = join_path(dir, name);
    if (path_exists(path) || path_exists(path + ".gz")) return true;  // a FIFO there is refused by name, later
  }
  return false;
}

// Whether dir holds a folder (hidden ones aside). A folder that cannot be listed (no read
// permission) is an error saying so, not "not a dataset folder".
Result<bool> has_subfolder(const std::string& dir) {
  RG_ASSIGN(const std::vector<std::string> names, list_folder(dir));
  for (const std::string& name : names) {
    if (name[0] != '.' && is_directory(join_path(dir, name))) return true;
  }
  return false;
}

// The model's input [h, w, c] as image-folder options.
Result<ImageFolderOptions> image_folder_options(const std::string& dir, uint64_t seed, const DataSourceOptions& o) {
  const Shape& in = o.model_input;
  if (in.rank() != 3 || (in[2] != 1 && in[2] != 3) || in[0] > kMaxImageSide || in[1] > kMaxImageSide) {
    return Status::error(dir + ": image folders need a model whose input is height x width x channels with 1 "
                         "(grey) or 3 (RGB) channels and sides up to " + std::to_string(kMaxImageSide) +
                         " (input = 32x32x3 in [net]); this model takes " + in.str());
  }
  ImageFolderOptions options;
  options.height = static_cast<int>(in[0]);
  options.width = static_cast<int>(in[1]);
  options.channels = static_cast<int>(in[2]);
  options.fit = o.image_fit.value_or(ImageFit::resize);
  options.test_fraction = o.test_split;
  options.seed = seed;
  options.memory_budget = o.memory_budget;
  return options;
}

}  // namespace

void add_image_data_options(Args& args) {
  args.option("image-fit", "resize|crop",
              "image folders: stretch each image to the model's input, or scale its shorter side and cut out the "
              "centre", "resize");
  args.option("test-split", "F", "image folders without train/ and test/: hold out this fraction of each class",
              "0.2");
  args.option("data-storage", "f32|f16",
              "IDX files of float32 images: keep them in memory in f32, or in f16 at half the bytes (values "
              "rounded to f16; each must be within +-65504); byte images stay u8 either way",
              "f32");
}

Result<DataSourceOptions> data_source_options(const Args& args, const Shape& model_input) {
  DataSourceOptions options;
  options.model_input = model_input;
  if (args.given("image-fit")) {
    auto fit = image_fit_from_name(args.text("image-fit"));
    if (!fit.ok()) return fit.status().with_context("--image-fit: ");
    options.image_fit = fit.value();
  }
  if (args.given("test-split")) {
    RG_ASSIGN(options.test_split, args.number("test-split", 0.01, 0.99));
  }
  const std::string storage = args.text("data-storage");
  if (storage != "f32" && storage != "f16") {
    return Status::error("--data-storage: '" + storage + "' is neither f32 nor f16");
  }
  options.float_storage = storage == "f16" ? DType::f16 : DType::f32;
  if (args.given("mem-budget")) {
    auto budget = parse_bytes(args.text("mem-budget"));
    if (!budget.ok()) return budget.status().with_context("--mem-budget: ");
    options.memory_budget = budget.value();
  }
  return options;
}

std::string data_source_name(const std::string& source) {
  return source.empty() ? default_fashion_mnist_dir() : source;
}

Result<DataSplit> load_data_source(const std::string& source, uint64_t seed, const DataSourceOptions& options) {
  const std::string dir = data_source_name(source);
  const bool image_options = options.image_fit || options.test_split;
  auto refuse_image_options = [&](const std::string& what) {
    return Status::error(std::string(options.image_fit ? "--image-fit" : "--test-split") +
                         " applies to image folders; " + dir + " is " + what);
  };

  if (source == kSyntheticData) {
    if (image_options) return refuse_image_options("generated data");
    // 28x28 grey models get the in-memory set; other inputs images made on the fly at their size.
    if (options.model_input == Shape{28, 28, 1} || options.model_input.rank() != 3) return make_synthetic(6000, 1000, 10, seed);
    RG_TRY(check_generated_shape(options.model_input).with_context("--data synthetic: "));
    return make_generated_split(options.model_input, 2, seed);
  }
  if (source.empty() || is_mnist_folder(dir)) {
    if (image_options) return refuse_image_options("in the MNIST layout");
    auto split = load_mnist_folder(dir, options.streamed, options.float_storage);
    if (!split.ok() && source.empty()) {
      return Status::error(split.status().message() +
                           "\n  (the default data is the Debian package dataset-fashion-mnist: apt-get install "
                           "dataset-fashion-mnist, or pass --data DIR, or --data synthetic)");
    }
    if (split.ok() && last_path_component(dir) == last_path_component(default_fashion_mnist_dir())) {
      split.value().train.class_names = split.value().test.class_names = fashion_mnist_class_names();
    }
    return split;
  }
  if (!is_directory(dir)) {
    const std::string kind = path_kind(dir);
    if (kind.empty()) return Status::error(dir + ": no such folder (" + kLookedFor + ")");
    return Status::error(dir + " is " + kind + ", not a dataset folder (" + kLookedFor + ")");
  }
  for (const std::string& cifar : {dir, join_path(dir, "cifar-10-batches-bin")}) {
    if (path_exists(join_path(cifar, "data_batch_1.bin"))) {
      if (image_options) return refuse_image_options("CIFAR-10 binary");
      return load_cifar10_folder(cifar);
    }
  }
  RG_ASSIGN(const bool has_classes, has_subfolder(dir));
  if (has_classes) {
    RG_ASSIGN(const ImageFolderOptions folder_options, image_folder_options(dir, seed, options));
    return load_image_folders(dir, folder_options);
  }
  return Status::error(dir + ": not a dataset folder (" + kLookedFor + ")");
}

Result<DataSplit> load_training_data(const Args& args, const std::string& source, uint64_t seed,
                                     const Shape& model_input, bool streamed) {
  int64_t limit = 0, test_limit = 0;
  if (args.given("limit")) {
    RG_ASSIGN(limit, args.integer("limit", 1, INT32_MAX));
  }
  if (args.given("test-limit")) {
    RG_ASSIGN(test_limit, args.integer("test-limit", 1, INT32_MAX));
  }
  RG_ASSIGN(DataSourceOptions options, data_source_options(args, model_input));
  options.streamed = streamed;
  RG_ASSIGN(DataSplit split, load_data_source(source, seed, options));
  if (limit > 0 && limit < split.train.size()) split.train = split.train.slice(0, limit, split.train.name);
  if (test_limit > 0 && test_limit < split.test.size()) split.test = split.test.slice(0, test_limit, split.test.name);
  return split;
}

namespace {

const char* const kDataOptions[] = {"limit", "test-limit", "image-fit", "test-split", "data-storage"};

std::string data_option_key(const std::string& name) { return "data option " + name; }

// Equal as numbers when both are numbers ("0.2", "0.20"), else as text.
bool same_option_value(const std::string& a, const std::string& b) {
  char* end_a = nullptr;
  char* end_b = nullptr;
  const double x = std::strtod(a.c_str(), &end_a);
  const double y = std::strtod(b.c_str(), &end_b);
  const bool numbers = !a.empty() && !b.empty() && *end_a == '\0' && *end_b == '\0';
  return numbers ? x == y : a == b;
}

std::string split_identity(const char* which, const Dataset& data) {
  const Tensor& labels = data.labels;
  const std::string bytes = labels.defined() ? std::string(static_cast<const char*>(labels.raw_data()), labels.bytes()) : "";
  return std::string(which) + " " + std::to_string(data.size()) + " x " + data.sample_shape.str() + " labels " +
         fnv1a_hex(bytes);
}

}  // namespace

void record_data_options(const Args& args, std::map<std::string, std::string>* settings) {
  for (const char* name : kDataOptions) (*settings)[data_option_key(name)] = args.given(name) ? args.text(name) : "";
}

Status resume_data_options(const std::map<std::string, std::string>& settings, const std::string& path, Args& args) {
  for (const char* name : kDataOptions) {
    const auto stored = settings.find(data_option_key(name));
    if (stored == settings.end()) continue;  // a checkpoint from before these were recorded
    const std::string& was = stored->second;
    if (!args.given(name)) {
      if (!was.empty()) args.assume(name, was);
      continue;
    }
    if (!same_option_value(args.text(name), was)) {
      return Status::error("--" + std::string(name) + " " + args.text(name) + ": the run in " + path + " had " +
                           (was.empty() ? "no --" + std::string(name) : "--" + std::string(name) + " " + was) +
                           ", and a resumed run reads the data as it did; drop --" + name +
                           " to take it from the checkpoint");
    }
  }
  return Status();
}

std::string data_identity(const DataSplit& split) {
  return split_identity("train", split.train) + "; " + split_identity("test", split.test);
}

Status check_resumed_data(const std::map<std::string, std::string>& settings, const std::string& path,
                          const std::string& source, const std::string& stored_source, const DataSplit& split) {
  const auto stored = settings.find(kDataIdentitySetting);
  if (stored == settings.end()) return Status();  // a checkpoint from before the identity was recorded
  const std::string now = data_identity(split);
  if (now == stored->second) return Status();
  const std::string where = data_source_name(source) == data_source_name(stored_source)
                                ? "the data in " + data_source_name(source) + " changed since " + path + " was written"
                                : "--data " + data_source_name(source) + ": not the data the run in " + path +
                                      " trained on (" + data_source_name(stored_source) + ")";
  return Status::error(where + ": it holds " + now + ", the run had " + stored->second +
                       "; a resumed run must read the same samples to continue as the run would have");
}

Status note_source_from_checkpoint(const Status& failed, const std::string& source, const std::string& checkpoint) {
  const std::string name = data_source_name(source);
  if (failed.ok() || failed.message().find(name) == std::string::npos) return failed;
  return Status::error(failed.message() + "\n  (" + name + " is from the checkpoint " + checkpoint +
                       ", the data it was trained on; --data DIR says where that data is now)");
}

}  // namespace rg
