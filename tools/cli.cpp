#include "cli.h"

#include <cstdlib>

#include "base/parse.h"
#include "phase_select.h"
#include "view.h"

namespace sentinel::view {

bool parse_count(const std::string& s, size_t& out) {
  uint64_t v = 0;
  // The runtime's count syntax (base/parse.h); at most nine digits for an option's value.
  if (s.size() > 9 || s.find('\0') != std::string::npos || !sentinel::parse_count(s.c_str(), &v)) return false;
  out = static_cast<size_t>(v);
  return true;
}

bool SubcommandArgs::next_option() {
  while (++i_ < argc_) {
    arg_ = argv_[i_];
    if (operands_only_ || arg_.empty() || arg_[0] != '-' || arg_ == "-") {
      operands_.push_back(arg_);
    } else if (arg_ == "--") {
      operands_only_ = true;
    } else {
      return true;
    }
  }
  return false;
}

bool SubcommandArgs::value(const std::string& name, std::string& v) {
  if (arg_ == name) {
    if (i_ + 1 >= argc_) return false;
    v = argv_[++i_];
    return true;
  }
  v = arg_.substr(name.size() + 1);
  return true;
}

bool SubcommandArgs::symbol_option(bool& symbols, bool& debuginfod) const {
  if (arg_ == "--no-symbols")
    symbols = false;
  else if (arg_ == "--debuginfod")
    debuginfod = true;
  else
    return false;
  return true;
}

bool SubcommandArgs::output_option(std::string& out, int& rc) {
  if (!(arg_ == "-o" || arg_ == "--output" || arg_.rfind("--output=", 0) == 0 ||
        (arg_.rfind("-o", 0) == 0 && arg_.size() > 2)))
    return false;
  rc = 0;
  if (arg_ == "-o" || arg_ == "--output") {
    if (i_ + 1 >= argc_) {
      rc = error(arg_ + " needs a file name");
      return true;
    }
    out = argv_[++i_];
  } else {
    out = arg_.rfind("--output=", 0) == 0 ? arg_.substr(9) : arg_.substr(2);
  }
  if (out.empty()) rc = error("empty output file name");
  return true;
}

bool SubcommandArgs::phase_option(int64_t& phase, int& rc) {
  if (!is("--phase")) return false;
  rc = 0;
  std::string v;
  if (!value("--phase", v)) {
    rc = error("--phase needs a phase number");
    return true;
  }
  uint64_t n = 0;
  bool digits = !v.empty(), big = false;
  for (char c : v) {
    if (c < '0' || c > '9')
      digits = false;
    else if (!big && (n = n * 10 + static_cast<uint64_t>(c - '0')) > UINT32_MAX)
      big = true;
  }
  if (!digits)
    rc = error("--phase: not a number: '" + v + "'");
  else if (big)
    rc = error("--phase: out of range (phases are 0 to 4294967295): '" + v + "'");
  else
    phase = static_cast<int64_t>(n);
  return true;
}

bool SubcommandArgs::count_option(const std::string& name, size_t& n, int& rc, const char* needs) {
  if (!is(name)) return false;
  rc = 0;
  std::string v;
  if (!value(name, v))
    rc = error(name + " needs " + needs);
  else if (!parse_count(v, n))
    rc = error(name + ": not a number: '" + v + "'");
  return true;
}

int SubcommandArgs::error(const std::string& message) const {
  return usage_error(std::string(command_) + ": " + message);
}

int SubcommandArgs::dump(std::string& path) const {
  if (operands_.empty()) return error("missing DUMP file");
  if (operands_.size() > 1) return error("one DUMP file at a time");
  path = operands_[0];
  return 0;
}

int SubcommandArgs::default_output(const std::string& path, std::string& out, const char* suffix) const {
  if (!out.empty()) return 0;
  if (path == "-") return error("reading standard input needs -o FILE");
  out = path + suffix;
  return 0;
}

std::optional<int> read_options(SubcommandArgs& args, SharedOptions& o, void (*help)(),
                                const std::function<int()>& own) {
  while (args.next_option()) {
    int rc = 0;
    if ((o.takes & SharedOptions::kSymbols) && args.symbol_option(o.symbols, o.debuginfod)) continue;
    if (((o.takes & SharedOptions::kOutput) && args.output_option(o.out, rc)) || args.phase_option(o.phase, rc)) {
      if (rc) return rc;
      continue;
    }
    if (args.is_help()) {
      help();
      return finish_output();
    }
    if ((rc = own())) return rc;
  }
  return std::nullopt;
}

int open_dump(const SubcommandArgs& args, SharedOptions& o, const char* out_suffix, Dump& d) {
  if (int rc = args.dump(o.path)) return rc;
  if (out_suffix)
    if (int rc = args.default_output(o.path, o.out, out_suffix)) return rc;
  // libdw asks debuginfod servers when DEBUGINFOD_URLS is set (Debian sets it in login shells): a
  // command that symbolizes must not hang on the network unless asked to.
  if ((o.takes & SharedOptions::kSymbols) && !o.debuginfod) unsetenv("DEBUGINFOD_URLS");
  auto profile = load_profile(o.path);
  if (!profile) return 1;
  d.p = std::move(*profile);
  d.sm = model_steps(d.p);
  const auto phase = select_phase(d.sm, o.phase, o.path);
  if (!phase) return 1;
  d.phase = *phase;
  return 0;
}

}  // namespace sentinel::view
