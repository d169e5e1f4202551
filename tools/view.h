// Shared pieces of sentinel-view's subcommands.
#pragma once

#include <fstream>
#include <iostream>
#include <optional>
#include <ostream>
#include <string>

#include "format/format_reader.h"

namespace sentinel::view {

inline constexpr const char* kProg = "sentinel-view";

// Prints "sentinel-view: MESSAGE" and a hint to stderr; the caller returns 2.
int usage_error(const std::string& message);

// Reads a dump; on failure prints exactly one line "sentinel-view: FILE: ..." to stderr and
// returns nullopt (the caller exits 1).
std::optional<fmt::Profile> load_profile(const std::string& path);

// Flushes stdout; returns 1 (after a message) when writing failed, else 0.
int finish_output();

// The -o FILE of report and trace: a file (created or truncated), or stdout for "-".
class OutputFile {
 public:
  // Prints "sentinel-view: PATH: reason" and returns false when the file cannot be created.
  bool open(const std::string& path);
  std::ostream& stream() { return path_ == "-" ? static_cast<std::ostream&>(std::cout) : file_; }
  // Flushes and closes; returns 0, or 1 after printing why writing failed.
  int close();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::ofstream file_;
};

// Subcommands: argv[0] is the subcommand name.
int cmd_summary(int argc, char** argv);
int cmd_heatmap(int argc, char** argv);
int cmd_report(int argc, char** argv);
int cmd_trace(int argc, char** argv);
int cmd_plan(int argc, char** argv);
int cmd_whatif(int argc, char** argv);
int cmd_records(int argc, char** argv);
int cmd_filter(int argc, char** argv);

}  // namespace sentinel::view
