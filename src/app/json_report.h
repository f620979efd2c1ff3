// The commands' output files: checked before any work (and a checkpoint claimed for the run's
// life), and machine-readable reports (--json FILE) written atomically, so a failed run never
// leaves half a file where the last good report was.
#pragma once

#include <nlohmann/json.hpp>
#include <memory>
#include <string>

#include "base/output_file.h"
#include "base/status.h"

namespace rg {

// Fails early (before any work) when the file cannot be written (check_output_writable), the
// message naming --option and the path.
Status check_writable_path(const std::string& path, const std::string& option);
// A checkpoint the run writes after each epoch: checked writable, refused when a file is at the
// path already unless `overwrite`, or it is the file the run resumes (`resume_path`; "" when not
// resuming), then locked for the run's life (OutputLock: a second run writing it is refused).
// `option` names it in errors ("checkpoint"); `resume_with`: what --resume takes to continue
// the run that wrote it (the path, or a GAN's folder).
Result<std::unique_ptr<OutputLock>> claim_checkpoint(const std::string& path, const std::string& option,
                                                     bool overwrite, const std::string& resume_path,
                                                     const std::string& resume_with);
Status write_json_report(const std::string& path, const nlohmann::json& report);
// Any text report (CSV), written atomically.
Status write_text_report(const std::string& path, const std::string& text);

}  // namespace rg
