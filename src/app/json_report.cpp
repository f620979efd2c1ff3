// Output files: checks before work, the checkpoint claim, JSON and text reports.
#include "app/json_report.h"

#include "base/output_file.h"
#include "base/serial.h"

namespace rg {

Status check_writable_path(const std::string& path, const std::string& option) {
  if (path.empty()) return Status::error("--" + option + " needs a file name");
  return check_output_writable(path).with_context("--" + option + " ");
}

Result<std::unique_ptr<OutputLock>> claim_checkpoint(const std::string& path, const std::string& option,
                                                     bool overwrite, const std::string& resume_path,
                                                     const std::string& resume_with) {
  RG_TRY(check_writable_path(path, option));
  RG_ASSIGN(const OutputTarget target, resolve_output(path));
  const bool resumes_it = !resume_path.empty() && same_file(path, resume_path);
  if (target.kind == OutputKind::regular_file && !overwrite && !resumes_it) {
    return Status::error("--" + option + " " + path + ": a file is there already (an earlier run's checkpoint?); "
                         "pass --overwrite to replace it, or --resume " + resume_with + " to continue that run");
  }
  auto lock = OutputLock::acquire(path);
  if (!lock.ok()) return lock.status().with_context("--" + option + " ");
  return lock;
}

Status write_json_report(const std::string& path, const nlohmann::json& report) {
  return write_text_report(path, report.dump(2) + "\n");
}

Status write_text_report(const std::string& path, const std::string& text) {
  return write_file_atomic(path, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace rg
