// retrograd study: measures how each network trains on this machine (every CPU ISA level,
// every OpenCL device, every precision), sweeps batch size and learning rate, sets the speeds
// against the hardware's peaks, estimates the other machines of the table, advises, and
// writes the report (study/study_report.h). Every measurement is a child `retrograd train`.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <map>

#include "app/args.h"
#include "app/commands.h"
#include "app/json_report.h"
#include "app/mpi_job.h"
#include "base/files.h"
#include "base/input_file.h"
#include "base/memory.h"
#include "nn/model.h"
#include "report/clock.h"
#include "report/sysinfo.h"
#include "study/advisor.h"
#include "study/child_process.h"
#include "study/estimates.h"
#include "study/network_costs.h"
#include "study/report_doc.h"
#include "study/study_devices.h"
#include "study/study_ranks.h"
#include "study/study_report.h"
#include "study/study_runner.h"
#include "study/study_session.h"
#include "train/trainer.h"

namespace rg {

namespace {

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t comma = text.find(',', start);
    const std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) items.push_back(item);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return items;
}

Status config_from_args(const Args& args, StudyConfig* config) {
  if (args.given("networks")) {
    config->networks = split_list(args.text("networks"));
    for (const std::string& name : config->networks) {
      if (preset_cfg(name).empty()) return Status::error("--networks: '" + name + "' is not a preset");
    }

  }
  if (args.given("precisions")) {
    config->precisions = split_list(args.text("precisions"));
    for (const std::string& name : config->precisions) {
      TrainOptions probe;
      RG_TRY(set_precision(name, &probe).with_context("--precisions: "));
    }
    if (config->precisions.empty() || config->precisions.front() != "fp32") {
      return Status::error("--precisions: the list starts with fp32 (the others are set against it)");
    }
  }
  if (args.given("parts")) {
    config->parts = split_list(args.text("parts"));
    for (const std::string& part : config->parts) {
      if (part != "devices" && part != "batch-speed" && part != "batch" && part != "lr" && part != "threads" &&
          part != "quality") {
        return Status::error("--parts: '" + part + "' is not a part (devices, batch-speed, batch, lr, threads, quality)");
      }
    }
  }
  if (args.given("sweep-network")) {
    config->sweep_network = args.text("sweep-network");
    if (preset_cfg(config->sweep_network).empty()) return Status::error("--sweep-network: not a preset");
  }
  if (args.given("seconds")) {
    RG_ASSIGN(config->seconds_per_run, args.number("seconds", 0.05, 3600));
  }
  if (args.given("target")) {
    RG_ASSIGN(config->target_accuracy, args.number("target", 0.0, 1.0));
  }
  if (args.given("isa-ladder")) config->isa_ladder_networks = args.text("isa-ladder");
  if (args.given("rounds")) {
    RG_ASSIGN(const int64_t rounds, args.integer("rounds", 1, 50));
    config->rounds = static_cast<int>(rounds);
  }
  if (args.given("quality-samples")) {
    RG_ASSIGN(config->quality_samples, args.integer("quality-samples", 64, 1000000000));
  }
  return Status();
}

std::string utc_now() {
  const std::time_t now = std::time(nullptr);
  char text[32];
  std::strftime(text, sizeof text, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  return text;
}

StudyMachine describe_machine(const SystemInfo& info) {
  StudyMachine m;
  m.cpu = info.cpu.brand.empty() ? "unknown CPU" : info.cpu.brand;
  m.features = features_string(info.cpu.features);
  for (const CacheLevel& c : info.caches) {
    m.caches += (m.caches.empty() ? "" : ", ") + std::string("L") + std::to_string(c.level) +
                (c.type == "data" ? "d" : c.type == "instruction" ? "i" : "") + " " + format_bytes(c.size_bytes);
  }
  m.os = info.os;
  m.logical_cpus = std::max(1, info.logical_cpus);
  m.cores = info.physical_cores > 0 ? info.physical_cores : m.logical_cpus;
  m.cpu_mhz = info.cpu_mhz;
  m.memory_bytes = info.mem_total_bytes;
  m.virtual_machine = info.hypervisor;
  return m;
}

// GANs are scored by a classifier trained once, before the runs: lenet for one epoch, in
// runs/NAME.ckpt (a rank's own name: ranks may share the folder).
std::string train_judge(const RunContext& context, const StudyConfig& config, const std::string& name) {
  const std::string path = join_path(context.runs_dir, name + ".ckpt");
  ChildSpec spec;
  spec.argv = {context.program, "train", "--model", "lenet", "--epochs", "1", "--checkpoint", path, "--overwrite"};
  if (!context.data.empty()) spec.argv.insert(spec.argv.end(), {"--data", context.data});
  if (config.quick) spec.argv.insert(spec.argv.end(), {"--limit", "20000", "--test-limit", "2000"});
  spec.output_path = join_path(context.runs_dir, name + ".log");
  auto child = run_child(spec);
  if (!child.ok() || !child.value().ok()) {
    std::printf("the GAN judge (lenet) did not train (%s): GAN runs are not scored\n",
                child.ok() ? (child.value().describe() + ", see " + spec.output_path).c_str()
                           : child.status().message().c_str());
    return "";
  }
  return path;
}

// --resume: the stopped study's runs into `result` and `session`, when its settings are this one's.
Status resume_study(const std::string& json_path, StudyResult& result, StudySession& session, double* earlier_seconds) {
  auto read = read_study_file(json_path);
  if (!read.ok()) return read.status().with_context("--resume: ");
  const StudyResult& earlier = read.value();
  if (study_config_json(earlier.config) != study_config_json(result.config) || earlier.quick != result.quick) {
    const std::string quick = earlier.quick != result.quick ? std::string(earlier.quick ? "" : "no ") + "--quick; " : "";
    return Status::error("--resume: " + json_path + " was made with other settings (" + quick +
                         config_differences(study_config_json(earlier.config), study_config_json(result.config)) +
                         "); give the same options, or leave --resume out to start again (its runs are then replaced)");
  }
  if (earlier.devices.size() != result.devices.size()) {
    return Status::error("--resume: " + json_path + " studied " + std::to_string(earlier.devices.size()) +
                         " devices, this machine has " + std::to_string(result.devices.size()) + " to study");
  }
  session.resume_from(earlier);
  result.runs = earlier.runs;
  result.commands = earlier.commands;
  result.round_loads = earlier.round_loads;
  *earlier_seconds = earlier.seconds;
  std::printf("resuming %s: %zu runs kept\n", json_path.c_str(), earlier.runs.size());
  return Status();
}

}  // namespace

namespace {

void declare_study_options(Args& args) {
  args.flag("quick", "a smaller study: shorter runs, the sweeps on the mlp (a few minutes on 2 cores)");
  args.option("out", "DIR", "the report's folder (made if missing; each run's log and JSON under DIR/runs)",
              "retrograd-study");
  args.option("data", "DIR", "the data every run trains on (train's --data)", "Fashion-MNIST");
  args.option("networks", "LIST", "the networks of the devices part", "mlp,autoencoder,lenet,rcnn,dcgan (full: + cnn)");
  args.option("precisions", "LIST", "training precisions, fp32 first", "fp32,fp16,int8-train (full: + int8-qat)");
  args.option("parts", "LIST", "devices,batch-speed,batch,lr,threads,quality", "all six");
  args.option("sweep-network", "NAME", "the network of the batch and learning-rate sweeps", "mlp (full: lenet)");
  args.option("seconds", "S", "devices part: about how long each run trains", "1.0 (full: 4)");
  args.option("target", "ACC", "lr part: the validation accuracy whose time to reach is measured", "0.83 (full: 0.88)");
  args.option("isa-ladder", "all|LIST", "the networks measured at the ISA levels below the best", "all");
  args.option("rounds", "N", "how many times every figure is measured, in interleaved rounds (under 3, nothing can be "
              "claimed)", "3 (full: 5)");
  args.option("quality-samples", "N", "quality part: the training samples of each run", "4000 (full: 30000)");
  args.flag("resume", "go on with the study in --out that was stopped: its runs are kept, the rest are made");
  args.flag("no-opencl", "study the CPU only");
}

// --out (its runs folder made, both writable, a study there for --resume) and what every run is given.
Status prepare_study_output(const Args& args, const StudyConfig& config, const char* argv0, RunContext* context) {
  const std::string out_dir = args.text("out");
  if (args.given("resume") && !path_exists(join_path(out_dir, "study.json"))) {
    return Status::error("--resume: " + join_path(out_dir, "study.json") + ": no study there to go on with (leave "
                         "--resume out to start one)");
  }
  context->program = self_executable_path(argv0);
  context->runs_dir = join_path(out_dir, "runs");
  RG_TRY(make_directories(context->runs_dir).with_context("--out: "));
  for (const std::string& dir : {out_dir, context->runs_dir}) {  // the report's files go to both
    RG_TRY(check_writable_path(join_path(dir, "study.json"), "out"));
  }
  context->data = args.given("data") ? args.text("data") : "";
  context->score_samples = config.quick ? 1000 : 10000;
  context->target_accuracy = config.target_accuracy;
  return Status();
}

// The machine measured (clock, memory bandwidth) and its devices found, then printed; no threads
// part on one logical CPU.
void measure_machine(bool opencl, Communicator* comm, StudyConfig* config, RunContext* context, StudyResult* result) {
  SystemInfo info = read_system_info();
  result->machine = describe_machine(info);
  StudyMachine& machine = result->machine;
  machine.cpu_mhz_measured = measure_cpu_mhz(machine.cores);
  if (machine.cpu_mhz_measured > 0) info.cpu_mhz = machine.cpu_mhz_measured;  // the peaks' clock
  context->logical_cpus = machine.logical_cpus;
  if (machine.logical_cpus < 2) {
    config->parts.erase(std::remove(config->parts.begin(), config->parts.end(), "threads"), config->parts.end());
  }
  machine.memory_bandwidth_gbs = measure_memory_bandwidth_gbs(machine.logical_cpus);
  FoundDevices found = find_study_devices(info, opencl);
  result->devices = found.devices;
  machine.opencl_note = found.opencl_note;
  std::printf("retrograd study%s: %s, %d cores at %.0f MHz, %.1f GB/s (both measured); devices:",
              config->quick ? " --quick" : "", machine.cpu.c_str(), machine.cores, machine.cpu_mhz_measured,
              machine.memory_bandwidth_gbs);
  for (const StudyDevice& d : result->devices) std::printf(" %s", d.label.c_str());
  std::printf("%s%s\n", found.opencl_note.empty() ? "" : "; ", found.opencl_note.c_str());
  if (comm != nullptr && comm->size() > 1) {
    std::printf("spread over %d ranks (%s): each measures its share of the runs on its own PC; the report is "
                "this PC's%s\n", comm->size(), comm->library_version().c_str(),
                comm->ranks_on_this_host() > 1 ? "; several ranks share this host, so their runs slow each other" : "");
  }
  std::fflush(stdout);
}

// `study` as this process's part of `comm`'s job (null: alone): its share of the runs.
int study_in_job(int argc, char** argv, Communicator* comm) {
  Args args("study", "[options]",
            "Measures how fast each network trains on this machine: every CPU ISA level and OpenCL device, every\n"
            "precision; batch-size and learning-rate sweeps; efficiency against the hardware's published peak;\n"
            "estimates for the other machines of the hardware table; advice. Writes report.html, report.md,\n"
            "runs.csv, estimates.csv and study.json to --out.");
  declare_study_options(args);
  if (Status s = args.parse(argc, argv, 2); !s.ok()) return fail(s.message());
  if (args.help_requested()) {
    std::fputs(args.help().c_str(), stdout);
    return 0;
  }
  const bool in_job = comm != nullptr && comm->size() > 1;
  if (in_job) hide_launcher_from_children();  // the runs are plain processes, not ranks
  const auto start = std::chrono::steady_clock::now();
  double earlier_seconds = 0;  // --resume: the stopped study's time
  StudyConfig config = default_study_config(args.given("quick"));
  if (Status s = config_from_args(args, &config); !s.ok()) return fail(s.message());
  const std::string out_dir = args.text("out");
  RunContext context;
  if (Status s = prepare_study_output(args, config, argv[0], &context); !s.ok()) return fail(s.message());
  StudyResult result;
  result.date = utc_now();
  result.version = kRetrogradVersion;
  result.quick = config.quick;
  result.config = config;
  measure_machine(!args.given("no-opencl"), comm, &config, &context, &result);

  const std::string json_path = join_path(out_dir, "study.json");
  const StudyPlan plan = plan_study(config, result.devices, result.machine.logical_cpus);
  result.not_run = plan.not_run;
  const std::vector<int> owners = study_run_owners(plan, in_job ? comm->size() : 1);
  const int rank = in_job ? comm->rank() : 0;
  std::vector<bool> owned;
  bool scores_gans = false;  // a GAN run of the devices part is this rank's: it needs the judge
  for (size_t i = 0; i < plan.runs.size(); ++i) {
    owned.push_back(owners[i] == rank);
    scores_gans = scores_gans || (owned[i] && plan.runs[i].network == "dcgan" && plan.runs[i].part == "devices");
  }
  // After every run: a study stopped midway still leaves what it measured (the root's runs,
  // under mpirun: the ranks may share the folder), and --resume goes on from there.
  auto save = [&]() -> Status {
    result.seconds = earlier_seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return rank == 0 ? write_json_report(json_path, study_result_json(result)) : Status();
  };
  StudySession session(plan, owned, context, result, save);
  if (args.given("resume")) {
    if (in_job) return fail("--resume: a study spread over ranks cannot be resumed; run it again");
    if (Status s = resume_study(json_path, result, session, &earlier_seconds); !s.ok()) return fail(s.message());
  }
  std::printf("%zu configurations x %d rounds (interleaved); expected about %s%s\n", plan.runs.size(), config.rounds,
              report::seconds_text(session.estimated_seconds()).c_str(),
              config.extra_rounds > 0 ? ", more if figures are unstable" : "");
  if (scores_gans) context.judge_path = train_judge(context, config, rank == 0 ? "judge" : "judge-rank" + std::to_string(rank));
  if (Status s = session.run_all(); !s.ok()) return fail(s.message());
  if (in_job) {  // every rank's records on the root, which writes the report
    if (Status s = gather_study_runs(*comm, session.run_keys(), &result); !s.ok()) return fail(s.message());
    if (!comm->is_root()) return 0;
  }
  summarise_study(result);
  result.estimates = estimate_other_machines(result);
  result.advice = advise_every_network(result, 0);
  result.finished = true;
  result.seconds = earlier_seconds + std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (Status s = write_study_report(result, out_dir); !s.ok()) return fail(s.message());
  std::printf("\n%s\nstudy done in %.0f s: %s (also report.md, runs.csv, estimates.csv, study.json)\n",
              study_summary_text(result).c_str(), result.seconds, join_path(out_dir, "report.html").c_str());
  return 0;
}
}  // namespace

int run_study(int argc, char** argv) {
  return run_in_job([&](Communicator* comm) { return study_in_job(argc, argv, comm); });
}

}  // namespace rg
