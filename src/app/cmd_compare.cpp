// retrograd compare A B: two studies of this machine side by side (study/study_compare.h): which
// figures differ beyond the noise each measured, and whether the load measured explains it.
#include <cstdio>

#include "app/args.h"
#include "app/commands.h"
#include "app/json_report.h"
#include "base/output_file.h"
#include "base/files.h"
#include "study/study_claims.h"
#include "study/study_compare.h"
#include "study/study_result.h"

namespace rg {

namespace {

// A study's folder (its study.json) or the file itself.
std::string study_json_of(const std::string& path) {
  return is_directory(path) ? join_path(path, "study.json") : path;
}

}  // namespace

int run_compare(int argc, char** argv) {
  Args args("compare", "A B [options]",
            "Two studies of this machine (their folders or study.json files) side by side: every figure both measured,\n"
            "B against A by the study's own rule, with the load each run measured, so a busy hour is told from noise.");
  args.option("out", "FILE", "write the comparison as Markdown too");
  int first_option = 2;
  while (first_option < argc && first_option < 4 && argv[first_option][0] != '-') ++first_option;
  if (Status s = args.parse(argc, argv, first_option); !s.ok()) return fail(s.message());
  if (args.help_requested()) {
    std::fputs(args.help().c_str(), stdout);
    return 0;
  }
  if (first_option != 4) return fail("compare needs two studies: retrograd compare A B (folders or study.json files)");
  if (args.given("out")) {
    if (Status s = check_writable_path(args.text("out"), "out"); !s.ok()) return fail(s.message());
  }
  const std::string a_path = study_json_of(argv[2]), b_path = study_json_of(argv[3]);
  Result<StudyResult> a = read_study_file(a_path);
  if (!a.ok()) return fail(a.status().message());
  Result<StudyResult> b = read_study_file(b_path);
  if (!b.ok()) return fail(b.status().message());
  auto comparison = compare_studies(a.value(), b.value(), a_path, b_path);
  if (!comparison.ok()) return fail(comparison.status().message());
  const std::string markdown = comparison_markdown(comparison.value());
  std::fputs(markdown.c_str(), stdout);
  if (args.given("out")) {
    const Status s = write_file_atomic(args.text("out"), std::vector<uint8_t>(markdown.begin(), markdown.end()));
    if (!s.ok()) return fail(s.with_context("--out ").message());
  }
  return 0;
}

}  // namespace rg
