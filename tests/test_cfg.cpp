// Tests of the model cfg format (nn/cfg.h) and of building models from it (nn/model.h):
// a valid document parses to the expected sections, and every error names the file and
// the line first ("file:line: "), and the key where there is one.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#if !defined(_WIN32)
#include <sys/stat.h>
#endif

#include "base/memory.h"
#include "nn/cfg.h"
#include "nn/model.h"

namespace rg {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Parses and builds a model; the error message, or "" when both succeed.
std::string build_error(const std::string& text, const std::string& file) {
  auto doc = parse_cfg(text, file);
  if (!doc.ok()) return doc.status().message();
  auto model = Model::from_cfg(doc.value());
  if (!model.ok()) return model.status().message();
  return "";
}

// The error must start with "bad.cfg:<line>: ", quote `key` when given and contain `fragment`.
void expect_error(const std::string& text, int line, const std::string& key, const std::string& fragment = "") {
  const std::string message = build_error(text, "bad.cfg");
  ASSERT_FALSE(message.empty()) << "accepted:\n" << text;
  const std::string where = "bad.cfg:" + std::to_string(line) + ": ";
  EXPECT_EQ(message.compare(0, where.size(), where), 0) << "expected to start with '" << where << "': " << message;
  if (!key.empty()) {
    EXPECT_TRUE(contains(message, "'" + key + "'")) << "key " << key << " not named: " << message;
  }
  if (!fragment.empty()) {
    EXPECT_TRUE(contains(message, fragment)) << "'" << fragment << "' missing: " << message;
  }
}

std::unique_ptr<Model> build(const std::string& text, const std::string& file = "good.cfg") {
  auto doc = parse_cfg(text, file);
  EXPECT_TRUE(doc.ok()) << doc.status().message();
  if (!doc.ok()) return nullptr;
  auto model = Model::from_cfg(doc.value());
  EXPECT_TRUE(model.ok()) << model.status().message();
  if (!model.ok()) return nullptr;
  return model.take();
}

const char* const kValid =
    "# an autoencoder-ish test model\n"  // 1
    "; semicolon comment\n"             // 2
    "\n"                                // 3
    "[net]\n"                           // 4
    "input = 28x28x1   # inline comment\n"  // 5
    "  loss=mse ; another\n"            // 6
    "\n"                                // 7
    "[dense]\n"                         // 8
    "units = 16\n"                      // 9
    "init = glorot\n"                   // 10
    "\tbias = false\n"                  // 11
    "[ relu ]\n"                        // 12
    "[dense]\n"                         // 13
    "units = 10\n"                      // 14
    "name = head\n";                    // 15

TEST(Cfg, ParsesValidDocument) {
  auto doc = parse_cfg(kValid, "valid.cfg");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  const CfgDocument& d = doc.value();
  EXPECT_EQ(d.file, "valid.cfg");
  EXPECT_EQ(d.text, kValid);
  ASSERT_EQ(d.sections.size(), 4u);
  EXPECT_EQ(d.sections[0].kind(), "net");
  EXPECT_EQ(d.sections[0].line(), 4);
  EXPECT_EQ(d.sections[1].kind(), "dense");
  EXPECT_EQ(d.sections[1].line(), 8);
  EXPECT_EQ(d.sections[2].kind(), "relu");
  EXPECT_EQ(d.sections[2].line(), 12);
  EXPECT_EQ(d.sections[3].line(), 13);

  CfgDocument copy = d;
  auto& net = copy.sections[0].entries();
  ASSERT_EQ(net.size(), 2u);
  EXPECT_EQ(net[0].key, "input");
  EXPECT_EQ(net[0].value, "28x28x1");  // trimmed, comment cut
  EXPECT_EQ(net[0].line, 5);
  EXPECT_EQ(net[1].key, "loss");
  EXPECT_EQ(net[1].value, "mse");
  EXPECT_EQ(net[1].line, 6);
  ASSERT_EQ(copy.sections[1].entries().size(), 3u);
  EXPECT_EQ(copy.sections[1].entries()[2].key, "bias");
  EXPECT_EQ(copy.sections[1].entries()[2].value, "false");
  EXPECT_TRUE(copy.sections[2].entries().empty());

  // Typed getters.
  const CfgSection& dense = d.sections[1];
  EXPECT_TRUE(dense.has("units"));
  EXPECT_FALSE(dense.has("slope"));
  EXPECT_EQ(dense.get_int("units", 1, 100).value(), 16);
  EXPECT_EQ(dense.get_int_or("missing", 7, 1, 100).value(), 7);
  EXPECT_EQ(dense.get_bool_or("bias", true).value(), false);
  EXPECT_EQ(dense.get_string_or("init", "he").value(), "glorot");
  EXPECT_EQ(dense.get_float_or("missing", 0.5, 0, 1).value(), 0.5);
  EXPECT_EQ(d.sections[0].get_shape("input").value(), (Shape{28, 28, 1}));  // h x w x c
  auto range = dense.get_int("units", 20, 30);
  ASSERT_FALSE(range.ok());
  EXPECT_TRUE(contains(range.status().message(), "valid.cfg:9: [dense] key 'units'")) << range.status().message();
  EXPECT_TRUE(dense.check_all_used().ok());  // every key was read above
  EXPECT_FALSE(d.sections[3].check_all_used().ok());  // nothing read there yet

  auto model = build(kValid);
  ASSERT_NE(model, nullptr);
  ASSERT_TRUE(model->init(1).ok());
  EXPECT_EQ(model->input_shape(), (Shape{28, 28, 1}));
  EXPECT_EQ(model->output_shape(), Shape{10});
  EXPECT_EQ(model->loss(), LossKind::mse);
  EXPECT_EQ(model->param_count(), 784 * 16 + 16 * 10 + 10);  // the first dense has no bias
  ASSERT_EQ(model->layers().size(), 3u);
  EXPECT_EQ(model->layers()[0]->name(), "dense1");
  EXPECT_EQ(model->layers()[1]->name(), "relu1");
  EXPECT_EQ(model->layers()[2]->name(), "head");
  EXPECT_EQ(model->layers()[1]->kind(), "relu");
}

TEST(Cfg, CrlfLineEndingsAccepted) {
  std::string crlf;
  for (char c : std::string(kValid)) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  auto unix_doc = parse_cfg(kValid, "a.cfg");
  auto dos_doc = parse_cfg(crlf, "a.cfg");
  ASSERT_TRUE(dos_doc.ok()) << dos_doc.status().message();
  ASSERT_EQ(dos_doc.value().sections.size(), unix_doc.value().sections.size());
  for (size_t i = 0; i < unix_doc.value().sections.size(); ++i) {
    CfgSection a = unix_doc.value().sections[i], b = dos_doc.value().sections[i];
    EXPECT_EQ(a.kind(), b.kind());
    EXPECT_EQ(a.line(), b.line());
    ASSERT_EQ(a.entries().size(), b.entries().size());
    for (size_t j = 0; j < a.entries().size(); ++j) {
      EXPECT_EQ(a.entries()[j].key, b.entries()[j].key);
      EXPECT_EQ(a.entries()[j].value, b.entries()[j].value);  // no '\r' left in values
      EXPECT_EQ(a.entries()[j].line, b.entries()[j].line);
    }
  }
  auto model = build(crlf);
  ASSERT_NE(model, nullptr);
  ASSERT_TRUE(model->init(1).ok());
  EXPECT_EQ(model->param_count(), 784 * 16 + 16 * 10 + 10);
  // Errors in a CRLF file still give the right line.
  expect_error("[net]\r\ninput = 4\r\n\r\n[dense]\r\nunits = 0\r\n", 5, "units");
}

TEST(Cfg, CommentsAndBlankLinesIgnored) {
  const std::string text =
      "\n\n   \n# [dense]\n; units = 3\n[net] # the net\ninput = 4 ; four\n\t\n[dense] ; a layer\nunits = 2 # two\n";
  auto doc = parse_cfg(text, "c.cfg");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  ASSERT_EQ(doc.value().sections.size(), 2u);
  EXPECT_EQ(doc.value().sections[0].line(), 6);
  CfgDocument d = doc.take();
  ASSERT_EQ(d.sections[1].entries().size(), 1u);
  EXPECT_EQ(d.sections[1].entries()[0].value, "2");
  EXPECT_EQ(d.sections[1].entries()[0].line, 10);
  auto model = Model::from_cfg(d);
  ASSERT_TRUE(model.ok()) << model.status().message();
  ASSERT_TRUE(model.value()->init(1).ok());
  EXPECT_EQ(model.value()->param_count(), 4 * 2 + 2);
}

TEST(Cfg, DenseKeyErrors) {
  {
    SCOPED_TRACE("unknown key in [dense]");
    expect_error("[net]\ninput = 4\n[dense]\nunits = 3\nfoo = 1\n", 5, "foo", "[dense]");
  }
  {
    SCOPED_TRACE("missing units");
    expect_error("[net]\ninput = 4\n\n[dense]\ninit = he\n", 4, "units", "[dense]");
  }
  {
    SCOPED_TRACE("units = 0");
    expect_error("[net]\ninput = 4\n[dense]\n\nunits = 0\n", 5, "units", "0");
  }
  {
    SCOPED_TRACE("units = abc");
    expect_error("[net]\ninput = 4\n[dense]\nunits = abc\n", 4, "units", "abc");
  }
  {
    SCOPED_TRACE("units = -3");
    expect_error("[net]\ninput = 4\n[dense]\nunits = -3\n", 4, "units", "-3");
  }
  {
    SCOPED_TRACE("units = 3.5");
    expect_error("[net]\ninput = 4\n[dense]\nunits = 3.5\n", 4, "units", "3.5");
  }
  {
    SCOPED_TRACE("units = (empty)");
    expect_error("[net]\ninput = 4\n[dense]\nunits =\n", 4, "units");
  }
  {
    SCOPED_TRACE("bad init");
    expect_error("[net]\ninput = 4\n[dense]\nunits = 2\ninit = lecun\n", 5, "init", "lecun");
  }
  {
    SCOPED_TRACE("bad bias");
    expect_error("[net]\ninput = 4\n[dense]\nunits = 2\nbias = maybe\n", 5, "bias", "maybe");
  }
  {
    SCOPED_TRACE("unknown key in an activation");
    expect_error("[net]\ninput = 4\n[dense]\nunits = 2\n[relu]\nslope = 0.1\n", 6, "slope", "[relu]");
  }
  {
    SCOPED_TRACE("leaky_relu slope out of range");
    expect_error("[net]\ninput = 4\n[dense]\nunits = 2\n[leaky_relu]\nslope = 2\n", 6, "slope");
  }
}

TEST(Cfg, SyntaxErrors) {
  {
    SCOPED_TRACE("unknown layer type");
    expect_error("[net]\ninput = 4\n[dense]\nunits = 3\n[conv9]\nfilters = 3\n", 5, "", "conv9");
  }
  {
    SCOPED_TRACE("key before any section");
    expect_error("# header\nunits = 3\n[net]\ninput = 4\n", 2, "units");
  }
  {
    SCOPED_TRACE("a binary file: a NUL byte would cut the quoted line short");
    const char binary[] = "[net]\ninput = 4\n[dense]\nunits\0 = 3\n";
    expect_error(std::string(binary, sizeof binary - 1), 4, "", "byte 0x00 at column 6: a cfg file is text");
  }
  {
    SCOPED_TRACE("line without '='");
    expect_error("[net]\ninput 4\n[dense]\nunits = 3\n", 2, "", "input 4");
  }
  {
    SCOPED_TRACE("unclosed '['");
    expect_error("[net]\ninput = 4\n[dense\nunits = 3\n", 3, "", "[dense");
  }
  {
    SCOPED_TRACE("empty section name");
    expect_error("[net]\ninput = 4\n[]\nunits = 3\n", 3, "");
  }
  {
    SCOPED_TRACE("duplicate key");
    expect_error("[net]\ninput = 4\n[dense]\nunits = 3\nunits = 4\n", 5, "units", "4");
  }
  {
    SCOPED_TRACE("bad key");
    expect_error("[net]\ninput = 4\n[dense]\nun its = 3\n", 4, "un its");
  }
}

TEST(Cfg, NetSectionErrors) {
  {
    SCOPED_TRACE("[net] missing");
    expect_error("[dense]\nunits = 3\n[relu]\n", 1, "", "[net]");
  }
  {
    SCOPED_TRACE("[net] not first");
    expect_error("\n[dense]\nunits = 3\n[net]\ninput = 4\n", 2, "", "[net]");
  }
  {
    SCOPED_TRACE("second [net]");
    expect_error("[net]\ninput = 4\n[dense]\nunits = 3\n[net]\ninput = 3\n", 5, "", "[net]");
  }
  {
    SCOPED_TRACE("missing input");
    expect_error("[net]\nloss = mse\n[dense]\nunits = 3\n", 1, "input");
  }
  {
    SCOPED_TRACE("unknown key in [net]");
    expect_error("[net]\ninput = 4\nbatch = 3\n[dense]\nunits = 3\n", 3, "batch");
  }
  for (const char* shape : {"28x28", "0x3x3", "a", "x4", "2x2x2x2", "-4", "3x0x3"}) {
    SCOPED_TRACE(std::string("bad input shape ") + shape);
    expect_error(std::string("[net]\n\ninput = ") + shape + "\n[dense]\nunits = 3\n", 3, "input", shape);
  }
  {
    SCOPED_TRACE("unknown loss");
    expect_error("[net]\ninput = 4\nloss = hinge\n[dense]\nunits = 3\n", 3, "loss", "hinge");
  }
  {
    SCOPED_TRACE("unknown target");
    expect_error("[net]\ninput = 4\nloss = mse\ntarget = nothing\n[dense]\nunits = 3\n", 4, "target", "nothing");
  }
  {
    SCOPED_TRACE("target = input with a mismatched output size");
    expect_error("[net]\ninput = 4\nloss = mse\ntarget = input\n[dense]\nunits = 3\n", 4, "target", "[3]");
  }
  {
    SCOPED_TRACE("softmax_cross_entropy with 1 output");
    expect_error("[net]\ninput = 4\nloss = softmax_cross_entropy\n[dense]\nunits = 1\n", 3, "loss");
  }
  {
    SCOPED_TRACE("softmax_cross_entropy against the input");
    expect_error("[net]\ninput = 4\nloss = softmax_cross_entropy\ntarget = input\n[dense]\nunits = 4\n", 4, "target");
  }
}

// "4x" is no shape: std::getline drops the empty field after a trailing 'x', so a parser
// built on it must check for the separator at the end itself.
TEST(Cfg, ShapeWithTrailingXRefused) {
  for (const char* shape : {"4x", "28x28x1x"}) {
    SCOPED_TRACE(std::string("input = ") + shape);
    expect_error(std::string("[net]\ninput = ") + shape + "\n[dense]\nunits = 3\n", 2, "input", shape);
  }
}

// A document with [net] and nothing after it: the error must still say where (file:line),
// per the cfg rule that every error names file and line.
TEST(Cfg, NoLayersNamesFileAndLine) {
  expect_error("[net]\ninput = 4\nloss = mse\n", 1, "", "no layers");
}

TEST(Cfg, TargetsChosen) {
  auto labels = build("[net]\ninput = 4\n[dense]\nunits = 3\n");
  ASSERT_NE(labels, nullptr);
  EXPECT_EQ(labels->loss(), LossKind::softmax_cross_entropy);  // the default
  EXPECT_EQ(labels->target(), TargetKind::labels);
  auto autoencoder = build("[net]\ninput = 6\nloss = mse\n[dense]\nunits = 2\n[dense]\nunits = 6\n");
  ASSERT_NE(autoencoder, nullptr);
  EXPECT_EQ(autoencoder->target(), TargetKind::input);
  auto onehot = build("[net]\ninput = 6\nloss = bce_with_logits\n[dense]\nunits = 3\n");
  ASSERT_NE(onehot, nullptr);
  EXPECT_EQ(onehot->target(), TargetKind::onehot);
  auto explicit_input = build("[net]\ninput = 2x2x1\nloss = mse\ntarget = input\n[dense]\nunits = 4\n");
  ASSERT_NE(explicit_input, nullptr);
  EXPECT_EQ(explicit_input->target(), TargetKind::input);
}

TEST(Cfg, PresetMlp) {
  const std::string text = preset_cfg("mlp");
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(preset_cfg("no_such_preset"), "");
  bool listed = false;
  for (const auto& name : preset_names()) listed = listed || name == "mlp";
  EXPECT_TRUE(listed);
  auto doc = load_model_cfg("mlp");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(doc.value().file, "preset:mlp");
  EXPECT_EQ(doc.value().text, text);
  auto model = Model::from_cfg(doc.value());
  ASSERT_TRUE(model.ok()) << model.status().message();
  ASSERT_TRUE(model.value()->init(1).ok());
  EXPECT_EQ(model.value()->param_count(), 235146);  // 784*256+256 + 256*128+128 + 128*10+10
  EXPECT_EQ(model.value()->output_shape(), Shape{10});
  EXPECT_EQ(model.value()->input_shape(), (Shape{28, 28, 1}));
  EXPECT_EQ(model.value()->target(), TargetKind::labels);
  std::vector<Param*> params = model.value()->params();
  ASSERT_EQ(params.size(), 6u);
  EXPECT_EQ(params[0]->value.shape(), (Shape{784, 256}));  // [in, out]
  EXPECT_EQ(params[5]->value.shape(), Shape{10});
  EXPECT_EQ(params[0]->name, "dense1.weight");
}

// The count is known once the model is built (every shape is checked in from_cfg); before
// init() the parameter tensors are empty and each counts as one element.
TEST(Cfg, ParamCountBeforeInit) {
  auto doc = load_model_cfg("mlp");
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  auto model = Model::from_cfg(doc.value());
  ASSERT_TRUE(model.ok()) << model.status().message();
  EXPECT_EQ(model.value()->param_count(), 235146);
}

// Multiply-adds counted by hand, 2 flops each. Training: forward + the weights' gradient + dx,
// but the first layer's dx.
TEST(Cfg, FlopsPerSampleOfPresetsAndLayers) {
  auto flops = [](const std::string& text) {
    auto doc = parse_cfg(text, "flops.cfg");
    EXPECT_TRUE(doc.ok()) << doc.status().message();
    auto model = Model::from_cfg(doc.value());
    EXPECT_TRUE(model.ok()) << model.status().message();
    return std::make_pair(model.value()->forward_flops_per_sample(), model.value()->train_flops_per_sample());
  };
  const int64_t mlp_first = 784 * 256, mlp = mlp_first + 256 * 128 + 128 * 10;
  EXPECT_EQ(flops(preset_cfg("mlp")), std::make_pair(2 * mlp, 2 * (3 * mlp - mlp_first)));
  // lenet: 5x5x1x6 over 28x28, 5x5x6x16 over 10x10, dense 400-120-84-10
  const int64_t lenet_first = 150 * 784, lenet = lenet_first + 2400 * 100 + 400 * 120 + 120 * 84 + 84 * 10;
  EXPECT_EQ(flops(preset_cfg("lenet")), std::make_pair(2 * lenet, 2 * (3 * lenet - lenet_first)));
  // A transposed conv: each of 7x7 input pixels' 128 channels meets a 4x4x64 kernel.
  const auto transposed = flops(
      "[net]\ninput = 7x7x128\nloss = mse\n\n[conv_transpose]\nfilters = 64\nsize = 4\nstride = 2\npad = 1\n");
  EXPECT_EQ(transposed.first, 2 * 49 * 128 * 16 * 64);
  // A recurrent conv layer: its feed-forward conv 3x3x4x8 over 8x8, then 2 steps of 3x3x8x8.
  const auto rcl = flops("[net]\ninput = 8x8x4\nloss = mse\n\n[rcl]\nfilters = 8\nsize = 3\nsteps = 2\n");
  EXPECT_EQ(rcl.first, 2 * (288 * 64 + 2 * 576 * 64));
  EXPECT_EQ(rcl.second, 2 * 2 * (288 * 64 + 2 * 576 * 64));  // the first layer: no dx
  // Layers without products count nothing.
  EXPECT_EQ(flops("[net]\ninput = 4x4x2\nloss = mse\n\n[relu]\n\n[maxpool]\nsize = 2\n").first, 0);
}

TEST(Cfg, LoadModelCfgErrors) {
  auto unknown = load_model_cfg("nonexistent");
  ASSERT_FALSE(unknown.ok());
  EXPECT_TRUE(contains(unknown.status().message(), "nonexistent")) << unknown.status().message();
  EXPECT_TRUE(contains(unknown.status().message(), "mlp")) << "presets not listed: " << unknown.status().message();

  auto missing = load_model_cfg("/missing/x.cfg");
  ASSERT_FALSE(missing.ok());
  EXPECT_TRUE(contains(missing.status().message(), "/missing/x.cfg")) << missing.status().message();
}

TEST(Cfg, LoadFromFileNamesThePath) {
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / ("rg_test_cfg_" + std::to_string(std::random_device{}()));
  ASSERT_TRUE(fs::create_directories(dir));
  const std::string good = (dir / "good.cfg").generic_string(), bad = (dir / "bad.cfg").generic_string();
  std::ofstream(good) << "[net]\ninput = 3\n[dense]\nunits = 2\n";
  std::ofstream(bad) << "[net]\ninput = 3\n[dense]\nunits = 2\nfilters = 8\n";
  auto doc = load_model_cfg(good);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  EXPECT_EQ(doc.value().file, good);
  EXPECT_TRUE(Model::from_cfg(doc.value()).ok());
  auto bad_doc = load_model_cfg(bad);
  ASSERT_TRUE(bad_doc.ok()) << bad_doc.status().message();
  auto model = Model::from_cfg(bad_doc.value());
  ASSERT_FALSE(model.ok());
  EXPECT_EQ(model.status().message().rfind(bad + ":5: ", 0), 0u) << model.status().message();
  EXPECT_TRUE(contains(model.status().message(), "'filters'")) << model.status().message();
  std::error_code ignored;
  fs::remove_all(dir, ignored);
}

// Issue 29, section 1: class indices (target = labels) are an index into the output row, which
// only softmax_cross_entropy reads; the elementwise losses are refused them in the cfg, not
// stopped by an internal check at the first step.
TEST(Cfg, LabelTargetsAreForSoftmaxOnly) {
  for (const char* loss : {"mse", "bce_with_logits"}) {
    SCOPED_TRACE(loss);
    expect_error(std::string("[net]\ninput = 4\nloss = ") + loss + "\ntarget = labels\n[dense]\nunits = 3\n", 4,
                 "target", "target = onehot");
  }
  auto onehot = build("[net]\ninput = 4\nloss = mse\ntarget = onehot\n[dense]\nunits = 3\n");
  ASSERT_NE(onehot, nullptr);
  EXPECT_EQ(onehot->target(), TargetKind::onehot);
}

// Issue 29, section 2: a cfg file is refused for what it is (not a regular file, too large,
// binary, too many sections, a model past any memory) before it is read whole or allocated.
class CfgFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("rg_test_cfg_" + std::to_string(std::random_device{}()));
    ASSERT_TRUE(std::filesystem::create_directories(dir_));
  }
  void TearDown() override {
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  std::string write(const std::string& name, const std::string& bytes) {
    const std::string path = (dir_ / name).generic_string();
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  static std::string load_error(const std::string& path) {
    auto doc = load_cfg_file(path);
    return doc.ok() ? "" : doc.status().message();
  }
  std::filesystem::path dir_;
};

TEST_F(CfgFiles, NonFilesAreRefusedByWhatTheyAre) {
  EXPECT_EQ(load_error(dir_.generic_string()), dir_.generic_string() + " is a folder, not a cfg file");
#if !defined(_WIN32)
  for (const char* device : {"/dev/zero", "/dev/urandom"}) {  // endless: read whole, they fill memory
    if (std::filesystem::exists(device)) {
      EXPECT_EQ(load_error(device), std::string(device) + " is a character device, not a cfg file");
    }
  }
  const std::string fifo = (dir_ / "model.cfg").generic_string();
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(load_error(fifo), fifo + " is a FIFO (named pipe), not a cfg file");  // no writer: would block
#endif
}

TEST_F(CfgFiles, AFileOverTheSizeLimitIsRefusedOnItsSize) {
  const std::string good = "[net]\ninput = 3\n[dense]\nunits = 2\n";
  const std::string at_limit = write("at.cfg", good + std::string(static_cast<size_t>(kMaxCfgBytes) - good.size(), '\n'));
  EXPECT_EQ(load_error(at_limit), "");
  const std::string over = write("over.cfg", good + std::string(2 << 20, '#'));
  EXPECT_EQ(load_error(over), over + ": 2.0 MiB, more than the 1.0 MiB a cfg file may hold (a model description is a "
                                      "few KiB: is this the right file?)");
  // The same limit for text from elsewhere (a checkpoint's copy, a preset).
  EXPECT_TRUE(contains(build_error(good + std::string(2 << 20, '#'), "x.cfg"), "x.cfg: 2.0 MiB, more than the 1.0 MiB"));
}

TEST_F(CfgFiles, BinaryIsRefusedOnItsFirstBytes) {
  std::string bytes(512 * 1024, 'a');
  bytes[100] = '\0';
  const std::string path = write("binary.cfg", bytes);
  EXPECT_EQ(load_error(path), path + ":1: byte 0x00 at column 101: a cfg file is text (is this a binary file?)");
  // A control byte on a later line is found too, with its line.
  EXPECT_EQ(build_error("[net]\ninput = 3\n\x01\n", "b.cfg"),
            "b.cfg:3: byte 0x01 at column 1: a cfg file is text (is this a binary file?)");
  const std::string utf16 = write("utf16.cfg", std::string("\xFF\xFE[\0n\0e\0t\0]\0", 12));
  EXPECT_TRUE(contains(load_error(utf16), utf16 + ":1: UTF-16 text")) << load_error(utf16);
}

TEST_F(CfgFiles, AUtf8ByteOrderMarkIsSkipped) {
  const std::string text = "[net]\ninput = 3\n[dense]\nunits = 2\n";
  const std::string path = write("bom.cfg", "\xEF\xBB\xBF" + text);
  auto doc = load_cfg_file(path);
  ASSERT_TRUE(doc.ok()) << doc.status().message();
  ASSERT_EQ(doc.value().sections.size(), 2u);
  EXPECT_EQ(doc.value().sections[0].kind(), "net");
  EXPECT_TRUE(Model::from_cfg(doc.value()).ok());
  // Lines still count from the mark's line: the bad line is line 6.
  EXPECT_EQ(build_error("\xEF\xBB\xBF" + text + "[dense]\nunits 3\n", "b.cfg").rfind("b.cfg:6: ", 0), 0u);
}

TEST_F(CfgFiles, TooManySectionsAreRefusedAtTheFirstOneTooMany) {
  std::string text = "[net]\ninput = 3\n";
  for (size_t i = 1; i < kMaxCfgSections; ++i) text += "[relu]\n";
  EXPECT_TRUE(parse_cfg(text, "many.cfg").ok());
  const int line = static_cast<int>(kMaxCfgSections) + 2;  // [net] spans two lines
  expect_error(text + "[relu]\n", line, "", "a cfg holds at most 10000 sections");
  const std::string path = write("relu.cfg", text + "[relu]\n");  // 70 KB: under the size limit
  EXPECT_TRUE(contains(load_error(path), path + ":" + std::to_string(line) + ": section 10001")) << load_error(path);
}

// Sizes past any memory are refused while the model is described, before anything is allocated;
// sizes the machine cannot hold now, by init() and reserve() before they allocate.
TEST(CfgMemory, ShapesAndParametersPastAnyMemoryAreRefusedAtTheirSection) {
  const int64_t before = host_memory().current_bytes();
  expect_error("[net]\ninput = 16777216x16777216x16777216\n[dense]\nunits = 2\n", 2, "input", "values (2^32)");
  expect_error("[net]\ninput = 4096x4096x3\n[dense]\nunits = 16777216\n", 3, "", "parameters (2^32) at dense1");
  expect_error("[net]\ninput = 65536x65536x1\n[upsample]\nscale = 2\n[dense]\nunits = 2\n", 3, "",
               "values per sample in the layers' outputs (2^32) at upsample1");
  EXPECT_EQ(host_memory().current_bytes(), before);
}

struct ScopedBudget {
  explicit ScopedBudget(int64_t bytes) : old(host_memory().budget_bytes()) { host_memory().set_budget(bytes); }
  ~ScopedBudget() { host_memory().set_budget(old); }
  int64_t old;
};

TEST(CfgMemory, InitAndReserveCheckTheirBytesBeforeAllocating) {
  auto doc = parse_cfg("[net]\ninput = 1024\n[dense]\nunits = 1024\n[relu]\n[dense]\nunits = 10\n", "big.cfg");
  ASSERT_TRUE(doc.ok());
  auto model = Model::from_cfg(doc.value());
  ASSERT_TRUE(model.ok()) << model.status().message();
  const int64_t before = host_memory().current_bytes();
  host_memory().reset_peak();
  {
    const ScopedBudget budget(before + (int64_t{4} << 20));  // the parameters and gradients need 8 MiB
    const Status init = model.value()->init(1);
    ASSERT_FALSE(init.ok());
    EXPECT_TRUE(contains(init.message(), "big.cfg: the parameters and their gradients (1059850 values each): 8.1 MiB "
                                         "needed, more than the 4.0 MiB left of the ")) << init.message();
    EXPECT_EQ(host_memory().peak_bytes(), before) << "allocated before the check";
  }
  ASSERT_TRUE(model.value()->init(1).ok());
  const int64_t initialised = host_memory().current_bytes();
  host_memory().reset_peak();
  // Without a budget, against the machine: a batch whose activations no machine holds.
  if (available_host_memory().bytes == 0) GTEST_SKIP() << "this system says nothing of its available memory";
  const Status reserve = model.value()->reserve(int64_t{1} << 40);
  ASSERT_FALSE(reserve.ok());
  EXPECT_TRUE(contains(reserve.message(), "big.cfg: the activations and gradients of a batch of 1099511627776 through 3 "
                                          "layers: ")) << reserve.message();
  EXPECT_TRUE(contains(reserve.message(), " needed, more than the ")) << reserve.message();
  EXPECT_EQ(host_memory().peak_bytes(), initialised) << "allocated before the check";
  EXPECT_TRUE(model.value()->reserve(8).ok());
}

}  // namespace
}  // namespace rg
