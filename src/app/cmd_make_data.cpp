// retrograd make-data: writes generated grey images as an MNIST-layout folder of IDX files, of
// any size (a dataset larger than memory, for streaming studies), a chunk at a time.
#include <cstdio>

#include "app/args.h"
#include "app/commands.h"
#include "base/files.h"
#include "base/output_file.h"
#include "data/generated_images.h"

namespace rg {

namespace {

// Before generating anything: each file make-data writes can be written, and none replaces a
// file already there unless `overwrite`.
Status check_idx_outputs(const std::string& dir, const char* const (&names)[2][2], bool overwrite) {
  for (const auto& pair : names) {
    for (const char* name : pair) {
      const std::string path = join_path(dir, name);
      if (!overwrite && (is_regular_file(path) || is_directory(path))) {
        return Status::error("--out " + dir + ": " + path + " is there already; pass --overwrite to replace it");
      }
      RG_TRY(check_output_writable(path).with_context("--out " + dir + ": "));
    }
  }
  return Status();
}

}  // namespace

int run_make_data(int argc, char** argv) {
  Args args("make-data", "--out DIR [options]",
            "Writes generated 28x28 grey images in 10 classes (ellipses with jitter and noise) as the four IDX files "
            "of an MNIST-layout folder, which train --data DIR reads (and --stream yes streams).");
  args.option("out", "DIR", "the folder to write (made if missing)");
  args.option("samples", "N", "training images (784 bytes each: 2,551,020 make 2.0 GB)", "60000");
  args.option("test-samples", "N", "test images", "10000");
  args.option("seed", "N", "what the images are generated from", "1");
  args.flag("overwrite", "replace IDX files of these names already in --out (refused otherwise)");
  if (Status s = args.parse(argc, argv, 2); !s.ok()) return fail(s.message());
  if (args.help_requested()) {
    std::fputs(args.help().c_str(), stdout);
    return 0;
  }
  if (!args.given("out")) return fail("make-data needs --out DIR");
  // IDX data of at most 2^31 - 1 bytes (load_idx_pair's limit): 2,739,137 images of 784 bytes.
  auto train = args.integer("samples", 1, 2739137);
  auto test = args.integer("test-samples", 1, 2739137);
  auto seed = seed_option(args);
  for (const Status& s : {train.status(), test.status(), seed.status()}) {
    if (!s.ok()) return fail(s.message());
  }
  const std::string dir = args.text("out");
  if (Status s = make_directories(dir); !s.ok()) return fail(s.message());
  const char* names[2][2] = {{"train-images-idx3-ubyte", "train-labels-idx1-ubyte"},
                             {"t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"}};
  if (Status s = check_idx_outputs(dir, names, args.given("overwrite")); !s.ok()) return fail(s.message());
  const Shape shape{28, 28, 1};
  const Dataset parts[2] = {generated_images("train", shape, train.value(), 10, seed.value(), 1),
                            generated_images("test", shape, test.value(), 10, seed.value(), 2)};
  for (int i = 0; i < 2; ++i) {
    Status s = write_idx_pair(parts[i], join_path(dir, names[i][0]), join_path(dir, names[i][1]));
    if (!s.ok()) return fail(s.message());
  }
  std::printf("make-data: %s: %lld training and %lld test images of 28x28 (%.2f GB of training images)\n",
              dir.c_str(), static_cast<long long>(train.value()), static_cast<long long>(test.value()),
              static_cast<double>(train.value()) * 784.0 / 1e9);
  return 0;
}

}  // namespace rg
