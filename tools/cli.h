// The command line of sentinel-view's subcommands: one walk over the arguments that collects the
// DUMP operands, and the options several subcommands share, with the same forms and messages.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace sentinel::view {

// A decimal number of at most 9 digits (no sign, no spaces).
bool parse_count(const std::string& s, size_t& out);

class SubcommandArgs {
 public:
  // `command` prefixes every message: "sentinel-view: COMMAND: ...".
  SubcommandArgs(const char* command, int argc, char** argv)
      : command_(command), argc_(argc), argv_(argv) {}

  // Moves to the next option, collecting operands on the way: anything not starting with '-', "-"
  // itself, and everything after "--". False when the arguments are exhausted.
  bool next_option();
  const std::string& arg() const { return arg_; }

  bool is_help() const { return arg_ == "-h" || arg_ == "--help"; }
  // The option is NAME or NAME=VALUE.
  bool is(const std::string& name) const { return arg_ == name || arg_.rfind(name + "=", 0) == 0; }
  // The value of NAME (the next argument) or NAME=VALUE; false when NAME is the last argument.
  bool value(const std::string& name, std::string& v);
  // --no-symbols or --debuginfod, stored into the flags; false for any other option.
  bool symbol_option(bool& symbols, bool& debuginfod) const;
  // -o FILE, -oFILE, --output FILE or --output=FILE: stores FILE, or prints a usage error and
  // sets `rc` (to 2). False for any other option.
  bool output_option(std::string& out, int& rc);
  // --phase N or --phase=N (N: a decimal phase number): stores N, or prints a usage error and sets
  // `rc` (to 2). False for any other option.
  bool phase_option(int64_t& phase, int& rc);

  // Prints "sentinel-view: COMMAND: MESSAGE" (usage_error) and returns 2.
  int error(const std::string& message) const;
  int unknown_option() const { return error("unknown option '" + arg_ + "'"); }

  const std::vector<std::string>& operands() const { return operands_; }
  // The one DUMP operand: 0, or 2 after a usage error when there is none or more than one.
  int dump(std::string& path) const;
  // The default output DUMP+SUFFIX when `out` is empty: 0, or 2 after a usage error when the dump
  // is read from standard input.
  int default_output(const std::string& path, std::string& out, const char* suffix) const;

 private:
  const char* command_;
  int argc_;
  char** argv_;
  int i_ = 0;
  bool operands_only_ = false;
  std::string arg_;
  std::vector<std::string> operands_;
};

}  // namespace sentinel::view
