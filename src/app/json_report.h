// Machine-readable reports (--json FILE): written atomically, so a failed run never
// leaves half a file where the last good report was.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

#include "base/status.h"

namespace rg {

// Fails early (before any work) when the file's folder does not exist.
Status check_writable_path(const std::string& path, const std::string& option);
Status write_json_report(const std::string& path, const nlohmann::json& report);
// Any text report (CSV), written atomically.
Status write_text_report(const std::string& path, const std::string& text);

}  // namespace rg
