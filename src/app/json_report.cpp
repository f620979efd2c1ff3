// JSON report files.
#include "app/json_report.h"

#include <sys/stat.h>

#include "base/serial.h"

namespace rg {

Status check_writable_path(const std::string& path, const std::string& option) {
  if (path.empty()) return Status::error("--" + option + " needs a file name");
  const size_t slash = path.find_last_of("/\\");
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  struct stat info;
  if (stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    return Status::error("--" + option + " " + path + ": the folder " + dir + " does not exist");
  }
  if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode)) {
    return Status::error("--" + option + " " + path + " is a folder, not a file");
  }
  return Status();
}

Status write_json_report(const std::string& path, const nlohmann::json& report) {
  return write_text_report(path, report.dump(2) + "\n");
}

Status write_text_report(const std::string& path, const std::string& text) {
  return write_file_atomic(path, std::vector<uint8_t>(text.begin(), text.end()));
}

}  // namespace rg
