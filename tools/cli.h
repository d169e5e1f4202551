// The command line of sentinel-view's subcommands: one walk over the arguments that collects the
// DUMP operands, and the options several subcommands share, with the same forms and messages; then
// the preamble every subcommand goes through: the dump read, its steps modeled, its phase chosen.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "format/format_reader.h"
#include "profile_model.h"

namespace sentinel::view {

// A decimal number of at most 9 digits (no sign, no spaces).
bool parse_count(const std::string& s, size_t& out);

class SubcommandArgs {
 public:
  // `command` prefixes every message: "sentinel-view: COMMAND: ...".
  SubcommandArgs(const char* command, int argc, char** argv) : command_(command), argc_(argc), argv_(argv) {}

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
  // NAME N or NAME=N (N: parse_count): stores N, or prints a usage error ("NAME needs NEEDS",
  // "NAME: not a number: 'V'") and sets `rc` (to 2). False for any other option.
  bool count_option(const std::string& name, size_t& n, int& rc, const char* needs = "a number");

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

// The options several subcommands share; a subcommand's own Options derive from it.
struct SharedOptions {
  enum : unsigned { kSymbols = 1, kOutput = 2 };
  // Which of --no-symbols/--debuginfod (kSymbols) and -o FILE (kOutput) the subcommand takes; to
  // one that does not take them they are unknown options. Every subcommand takes --phase N.
  unsigned takes = 0;
  bool symbols = true;
  bool debuginfod = false;
  int64_t phase = -1;  // --phase N (-1: the main phase; for trace, the whole run)
  std::string path;    // DUMP
  std::string out;     // -o FILE
};

// The option loop of a subcommand: --help prints `help` and ends the command; the shared options it
// takes go into `o`; any other option goes to `own`, which returns 0 when it took the option, else
// the status to exit with (args.unknown_option() for one it does not know). nullopt when every
// option is read and the command goes on; else the status the command exits with.
std::optional<int> read_options(SubcommandArgs& args, SharedOptions& o, void (*help)(),
                                const std::function<int()>& own);

// What a subcommand works on: the dump, its steps and the phase it shows. Not copied: the step
// model points into the profile.
struct Dump {
  Dump() = default;
  Dump(const Dump&) = delete;
  Dump& operator=(const Dump&) = delete;

  fmt::Profile p;
  StepModel sm;
  uint32_t phase = 0;  // select_phase: --phase N, else the main phase
};

// After the options: the one DUMP operand into o.path (with `out_suffix`, the default output
// DUMP+SUFFIX into o.out), then the dump read, its steps modeled and its phase chosen. 0; 2 after a
// usage error; 1 after one line on stderr about the dump (unreadable, no such phase).
int open_dump(const SubcommandArgs& args, SharedOptions& o, const char* out_suffix, Dump& d);

}  // namespace sentinel::view
