// retrograd advise --model M [--mem-budget X]: how to train M here, from a study's
// measurements (study/advisor.h). With no study of M at hand it measures M first: a
// `retrograd study --quick` of that network alone (devices, batch sizes, threads).
#include <cstdio>
#include <fstream>

#include "app/args.h"
#include "app/commands.h"
#include "app/json_report.h"
#include "base/files.h"
#include "nn/model.h"
#include "study/advisor.h"
#include "study/child_process.h"
#include "study/study_claims.h"

namespace rg {

namespace {

bool studied(const StudyResult& study, const std::string& network) {
  for (const RunRecord& r : study.figures) {
    if (r.ok && r.run.part == "devices" && r.run.network == network) return true;
  }
  return false;
}

// A quick study of one network into `dir`; its output goes to our stdout.
Status measure_network(const char* argv0, const std::string& network, const std::string& dir, bool no_opencl) {
  ChildSpec spec;
  spec.argv = {self_executable_path(argv0), "study", "--quick", "--networks", network, "--parts",
               "devices,batch-speed,threads", "--out", dir, "--isa-ladder", "none"};
  if (no_opencl) spec.argv.push_back("--no-opencl");
  std::fflush(stdout);
  RG_ASSIGN(const ChildResult child, run_child(spec));
  if (!child.ok()) return Status::error("measuring " + network + " failed (" + child.describe() + ")");
  return Status();
}

}  // namespace

int run_advise(int argc, char** argv) {
  Args args("advise", "--model NAME [options]",
            "How to train a network on this machine: device, precision, batch and micro-batch, threads, each with its\n"
            "reason, and the steps/s predicted from what was measured here. Reads a study's study.json; with none\n"
            "for the network, measures it first (a quick study of that network, about a minute).");
  args.option("model", "NAME", "the network (a preset)", "");
  args.option("mem-budget", "SIZE", "host memory the run may use (64M, 1.5G): the batch is split to fit", "none");
  args.option("study", "FILE", "a study's study.json", "retrograd-study/study.json");
  args.option("json", "FILE", "write the advice as JSON");
  args.flag("no-opencl", "when measuring: the CPU only");
  if (Status s = args.parse(argc, argv, 2); !s.ok()) return fail(s.message());
  if (args.help_requested()) {
    std::fputs(args.help().c_str(), stdout);
    return 0;
  }
  const std::string network = args.text("model");
  if (network.empty()) return fail("advise needs --model NAME (a preset: mlp, lenet, ...)");
  if (preset_cfg(network).empty()) return fail("--model: '" + network + "' is not a preset");
  int64_t budget = 0;
  if (args.given("mem-budget")) {
    auto parsed = parse_bytes(args.text("mem-budget"));
    if (!parsed.ok()) return fail(parsed.status().with_context("--mem-budget: ").message());
    budget = parsed.value();
  }
  if (args.given("json")) {
    if (Status s = check_writable_path(args.text("json"), "json"); !s.ok()) return fail(s.message());
  }
  std::string path = args.text("study");
  Result<StudyResult> study = Status::error("no study read");
  if (is_regular_file(path)) {
    study = read_study_file(path);
    if (!study.ok()) return fail(study.status().message());
  } else if (args.given("study")) {
    return fail("--study " + path + ": no such file (write one with `retrograd study`)");
  }
  if (!study.ok() || !studied(study.value(), network)) {
    const std::string dir = "retrograd-advise-" + network;
    std::printf("no measurements of %s in %s: measuring it now (retrograd study --quick --networks %s --out %s)\n",
                network.c_str(), path.c_str(), network.c_str(), dir.c_str());
    if (Status s = measure_network(argv[0], network, dir, args.given("no-opencl")); !s.ok()) return fail(s.message());
    path = join_path(dir, "study.json");
    study = read_study_file(path);
    if (!study.ok()) return fail(study.status().message());
  }
  auto advice = advise(study.value(), network, budget);
  if (!advice.ok()) return fail(advice.status().message());
  std::printf("advice from %s (%s, %s):\n%s", path.c_str(), study.value().machine.cpu.c_str(), study.value().date.c_str(),
              advice_text(advice.value()).c_str());
  if (args.given("json")) {
    if (Status s = write_json_report(args.text("json"), advice_json(advice.value())); !s.ok()) {
      return fail(s.with_context("--json ").message());
    }
  }
  return 0;
}

}  // namespace rg
