// Image folders: one subfolder per class, decoded with read_image and fitted to the model's
// input size. Files are listed and split first, so the tensors are allocated once, at their
// final size, before any image is decoded.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <iterator>
#include <string>
#include <vector>

#include "base/files.h"
#include "base/rng.h"
#include "data/image_data.h"

namespace rg {

namespace {

constexpr double kDefaultTestFraction = 0.2;
constexpr uint64_t kImageSplitStream = 0x494D4753504Cull;  // "IMGSPL"

// One image file and its class.
struct LabelledFile {
  std::string path;
  int32_t label;
};

// Hidden entries are skipped: ".ipynb_checkpoints" folders and macOS "._photo.jpg" files
// (resource forks with an image's name) are not data.
bool is_hidden(const std::string& name) { return !name.empty() && name[0] == '.'; }

// Files are chosen by extension only, never by whether they decode: a README.txt or a
// labels.csv beside the images is expected, while a .jpg that fails to decode is a broken
// image the user should hear about rather than a silently smaller dataset.
bool has_image_extension(const std::string& name) {
  const size_t dot = name.find_last_of('.');
  if (dot == std::string::npos) return false;
  std::string ext = name.substr(dot + 1);
  for (char& ch : ext) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  return ext == "png" || ext == "jpg" || ext == "jpeg" || ext == "bmp";
}

const char* const kLayouts =
    "DIR/<class>/<image> or DIR/train/<class>/<image> and DIR/test/<class>/<image>; images are .png, .jpg, .jpeg "
    "or .bmp";

// The class folders of dir, sorted; an error when there are none. Files beside them (a
// README) are left alone; an entry that is neither a folder nor a file (a broken link, a link
// loop, a FIFO) may be a class folder gone wrong, so it is an error naming it, never skipped.
Result<std::vector<std::string>> class_folders(const std::string& dir) {
  RG_ASSIGN(const std::vector<std::string> names, list_folder(dir));
  std::vector<std::string> classes;
  for (const std::string& name : names) {
    if (is_hidden(name)) continue;
    const std::string path = join_path(dir, name);
    if (is_directory(path)) {
      classes.push_back(name);
    } else if (!is_regular_file(path)) {
      return Status::error(path + ": is " + why_not_a_readable_file(path) +
                           "; an image dataset folder holds class folders (and files beside them): fix or remove it");
    }
  }
  if (classes.empty()) return Status::error(dir + ": no class folders (expected " + kLayouts + ")");
  return classes;
}

// The image files directly inside one class folder, sorted; an error when there are none.
// An entry named like an image that is not a readable file (a broken link, a link loop, a
// FIFO, a folder named x.png, a file without read permission) is an error naming it: a
// dataset silently smaller than the folder looks is worse than a refusal.
Result<std::vector<std::string>> image_files(const std::string& class_dir) {
  RG_ASSIGN(const std::vector<std::string> names, list_folder(class_dir));
  std::vector<std::string> files;
  for (const std::string& name : names) {
    if (is_hidden(name) || !has_image_extension(name)) continue;
    const std::string path = join_path(class_dir, name);
    const std::string why_not = why_not_a_readable_file(path);
    if (!why_not.empty()) return Status::error(path + ": named like an image but is " + why_not + "; fix or remove it");
    files.push_back(path);
  }
  if (files.empty()) {
    return Status::error(class_dir + ": an empty class folder (no .png, .jpg, .jpeg or .bmp file in it; every "
                         "class needs at least one image)");
  }
  return files;
}

// Every class folder's files, labelled by the folder's index in `classes`.
Result<std::vector<std::vector<std::string>>> files_per_class(const std::string& dir,
                                                             const std::vector<std::string>& classes) {
  std::vector<std::vector<std::string>> out;
  for (const std::string& name : classes) {
    RG_ASSIGN(std::vector<std::string> files, image_files(join_path(dir, name)));
    out.push_back(std::move(files));
  }
  return out;
}

std::vector<LabelledFile> flatten(const std::vector<std::vector<std::string>>& per_class) {
  std::vector<LabelledFile> out;
  for (size_t c = 0; c < per_class.size(); ++c) {
    for (const std::string& path : per_class[c]) out.push_back({path, static_cast<int32_t>(c)});
  }
  return out;
}

// "a, b, c"
std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

// Names in `a` that `b` lacks.
std::vector<std::string> missing_from(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::vector<std::string> out;
  std::set_difference(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
  return out;
}

// 64-bit FNV-1a: a class's split depends on its name, not on its index among the classes.
uint64_t name_hash(const std::string& name) {
  uint64_t h = 0xCBF29CE484222325ull;
  for (unsigned char ch : name) h = (h ^ ch) * 0x100000001B3ull;
  return h;
}

// Splits each class: round(n * fraction) images to test, at least 1 when n >= 2, at most n - 1.
// Each side keeps the files' sorted order.
void split_per_class(const std::vector<std::string>& classes, const std::vector<std::vector<std::string>>& per_class,
                     double fraction, uint64_t seed, std::vector<std::vector<std::string>>* train,
                     std::vector<std::vector<std::string>>* test) {
  for (size_t c = 0; c < classes.size(); ++c) {
    const std::vector<std::string>& files = per_class[c];
    const auto n = static_cast<int64_t>(files.size());
    const int64_t n_test = std::min(n - 1, std::max<int64_t>(n >= 2 ? 1 : 0, std::llround(static_cast<double>(n) * fraction)));
    Rng rng(seed, kImageSplitStream ^ name_hash(classes[c]));
    std::vector<int32_t> order = shuffled_indices(static_cast<int32_t>(n), rng);
    std::sort(order.begin(), order.begin() + n_test);
    std::sort(order.begin() + n_test, order.end());
    train->emplace_back();
    test->emplace_back();
    for (int64_t i = 0; i < n; ++i) {
      (i < n_test ? test->back() : train->back()).push_back(files[static_cast<size_t>(order[static_cast<size_t>(i)])]);
    }
  }
}

// Decodes and fits every file into samples [n, height, width, channels] u8, labels [n] i32.
Result<Dataset> decode_files(const std::vector<LabelledFile>& files, const std::vector<std::string>& classes,
                             const ImageFolderOptions& options, const std::string& name) {
  const auto n = static_cast<int64_t>(files.size());
  if (n > INT32_MAX) {
    return Status::error(name + ": " + std::to_string(n) + " images; at most " + std::to_string(INT32_MAX) +
                         " are indexed");
  }
  auto origin = std::make_shared<LabelOrigin>();  // each image's label is its folder's
  for (const LabelledFile& file : files) origin->files.push_back(file.path);
  Dataset out;
  out.name = name;
  out.label_origin = origin;
  out.sample_shape = Shape{options.height, options.width, options.channels};
  out.num_classes = static_cast<int32_t>(classes.size());
  out.class_names = classes;
  RG_ASSIGN(out.samples, allocate_samples(out.sample_shape, n, DType::u8, name, name + " (decoded to " +
                                                                               out.sample_shape.str() + ")"));
  RG_ASSIGN(out.labels, Tensor::zeros(Shape{n}, DType::i32, name + " labels"));
  const int64_t row = out.sample_shape.numel();
  uint8_t* samples = out.samples.data<uint8_t>();
  int32_t* labels = out.labels.data<int32_t>();
  for (int64_t i = 0; i < n; ++i) {
    const LabelledFile& file = files[static_cast<size_t>(i)];
    RG_ASSIGN(const Image image, read_image(file.path, options.channels, options.memory_budget));
    RG_TRY(fit_image(image, options.fit, options.height, options.width, samples + i * row)
               .with_context(file.path + ": "));
    labels[i] = file.label;
  }
  return out;
}

Status check_options(const std::string& dir, const ImageFolderOptions& o) {
  if (o.height < 1 || o.width < 1 || o.height > kMaxImageSide || o.width > kMaxImageSide) {
    return Status::error(dir + ": images cannot be fitted to " + std::to_string(o.height) + "x" +
                         std::to_string(o.width) + "; height and width must be 1 to " + std::to_string(kMaxImageSide));
  }
  if (o.channels != 1 && o.channels != 3) {
    return Status::error(dir + ": images are read with 1 (grey) or 3 (RGB) channels, not " +
                         std::to_string(o.channels));
  }
  if (o.test_fraction && !(*o.test_fraction > 0.0 && *o.test_fraction < 1.0)) {
    return Status::error(dir + ": the test fraction " + std::to_string(*o.test_fraction) + " is outside (0, 1)");
  }
  return Status();
}

}  // namespace

Result<DataSplit> load_image_folders(const std::string& dir, const ImageFolderOptions& options) {
  RG_TRY(check_options(dir, options));
  if (!is_directory(dir)) return Status::error(dir + ": no such folder (expected " + kLayouts + ")");
  const std::string train_dir = join_path(dir, "train");
  const std::string test_dir = join_path(dir, "test");
  const bool has_train = is_directory(train_dir);
  const bool has_test = is_directory(test_dir);
  const std::string name = last_path_component(dir);

  std::vector<std::string> classes;
  std::vector<std::vector<std::string>> train_files, test_files;
  if (has_train || has_test) {
    if (!has_train || !has_test) {
      return Status::error(dir + ": has " + (has_train ? "train/ but no test/" : "test/ but no train/") +
                           "; give both, or put the class folders in " + dir + " itself to split by a fraction");
    }
    if (options.test_fraction) {
      return Status::error(dir + ": has train/ and test/ already, so a test fraction (" +
                           std::to_string(*options.test_fraction) + ") does not apply");
    }
    RG_ASSIGN(classes, class_folders(train_dir));
    RG_ASSIGN(const std::vector<std::string> test_classes, class_folders(test_dir));
    if (test_classes != classes) {
      const std::vector<std::string> only_train = missing_from(classes, test_classes);
      const std::vector<std::string> only_test = missing_from(test_classes, classes);
      return Status::error(dir + ": train/ and test/ must hold the same class folders; " +
                           (only_train.empty() ? "" : "only in train/: " + joined(only_train)) +
                           (only_train.empty() || only_test.empty() ? "" : "; ") +
                           (only_test.empty() ? "" : "only in test/: " + joined(only_test)));
    }
    RG_ASSIGN(train_files, files_per_class(train_dir, classes));
    RG_ASSIGN(test_files, files_per_class(test_dir, classes));
  } else {
    RG_ASSIGN(classes, class_folders(dir));
    RG_ASSIGN(const std::vector<std::vector<std::string>> all, files_per_class(dir, classes));
    const double fraction = options.test_fraction.value_or(kDefaultTestFraction);
    split_per_class(classes, all, fraction, options.seed, &train_files, &test_files);
    int64_t test_count = 0;
    for (const auto& files : test_files) test_count += static_cast<int64_t>(files.size());
    if (test_count == 0) {
      return Status::error(dir + ": a test fraction of " + std::to_string(fraction) +
                           " leaves no test images (every class has 1 image); add images or give DIR/train and "
                           "DIR/test");
    }
  }

  DataSplit out;
  RG_ASSIGN(out.train, decode_files(flatten(train_files), classes, options, name + " train"));
  RG_ASSIGN(out.test, decode_files(flatten(test_files), classes, options, name + " test"));
  return out;
}

}  // namespace rg
