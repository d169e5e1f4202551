// sentinel-run: runs a command under libsentinel.so. It only sets LD_PRELOAD (the library first) and
// SENTINEL_* variables, then execs the command in its own process, so the command's exit status (or
// the signal that killed it) is the launcher's.
//
// Exit status: the command's; 2 usage error; 125 the library cannot be found or used; 126 the
// command cannot be executed; 127 the command was not found.
#include <limits.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/policy_names.h"
#include "sentinel_build_config.h"
#include "shell_quote.h"

#ifndef SENTINEL_RUN_LIBDIR_REL
#define SENTINEL_RUN_LIBDIR_REL ""
#endif

namespace {

constexpr const char* kProg = "sentinel-run";
constexpr const char* kLibName = "libsentinel.so";

int usage_error(const std::string& message) {
  std::cerr << kProg << ": " << message << "\n"
            << "Try '" << kProg << " --help' for more information.\n";
  return 2;
}

// "  --policy POLICY      SENTINEL_POLICY: sentinel | first-touch | ...", the names from the one table,
// wrapped under the option's text column.
std::string policy_help_line() {
  constexpr size_t kWidth = 92;
  const std::string indent(22, ' ');  // each word brings its leading space
  std::string out = "  --policy POLICY      SENTINEL_POLICY:";
  size_t line_start = 0;
  for (uint32_t i = 0; i < sentinel::kPolicyCount; ++i) {
    const std::string word =
        std::string(" ") + sentinel::kPolicyNames[i] + (i + 1 < sentinel::kPolicyCount ? " |" : "");
    if (out.size() - line_start + word.size() > kWidth) {
      out += "\n";
      line_start = out.size();
      out += indent;
    }
    out += word;
  }
  return out + "\n";
}

void print_help() {
  std::cout << "Usage: sentinel-run [OPTIONS] [--] COMMAND [ARGS...]\n"
               "Runs COMMAND with Sentinel preloaded (LD_PRELOAD=libsentinel.so, placed before any\n"
               "existing LD_PRELOAD) and the SENTINEL_* variables set from the options. The profile\n"
               "dump is written when the command exits; read it with sentinel-view.\n"
               "\n"
               "  --mode MODE          SENTINEL_MODE: off | track | profile | run\n"
            << policy_help_line()
            << "  --fast-bytes B       SENTINEL_FAST_BYTES: fast-tier budget: bytes (4G), a share of the\n"
               "                       profiled peak (20%), or auto (90% of the fast node's free memory)\n"
               "  --min-bytes SIZE     SENTINEL_MIN_BYTES: smallest tracked object (e.g. 4096, 64K, 1M)\n"
               "  --dump PATH          SENTINEL_DUMP: dump path template (%p pid, %e executable, %% '%')\n"
               "  --log LEVEL          SENTINEL_LOG: error | warn | info | debug\n"
               "  --set NAME=VALUE     set SENTINEL_NAME=VALUE (NAME with or without the SENTINEL_\n"
               "                       prefix); repeatable, for any runtime variable (docs/config.md)\n"
               "  --lib PATH           the libsentinel.so to preload (default: SENTINEL_LIB, else next to\n"
               "                       this program: ../preload/ in a build tree, the library directory\n"
               "                       when installed)\n"
               "  --dry-run            print the environment changes and the command; run nothing\n"
               "  -h, --help           show this help\n"
               "  --version            show the version\n"
               "\n"
               "Options take their value as the next argument or after '=' (--mode=track). Option\n"
               "parsing stops at '--' or at the first argument that is not an option.\n"
               "Exit status: the command's; 2 usage error; 125 libsentinel.so not found or unusable;\n"
               "126 COMMAND cannot be executed; 127 COMMAND not found.\n"
               "Example: sentinel-run --min-bytes 1M --dump /tmp/%e.%p.prof -- python3 train.py\n";
}

bool readable_file(const std::string& p) {
  return !p.empty() && ::access(p.c_str(), R_OK) == 0;
}

std::string dir_of(const std::string& p) {
  auto slash = p.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : p.substr(0, slash);
}

std::string self_exe_dir() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  buf[n] = '\0';
  return dir_of(buf);
}

// Candidate locations, in order. `tried` collects them for the error message.
std::string find_library(std::vector<std::string>& tried) {
  auto consider = [&](const std::string& p) {
    tried.push_back(p);
    return readable_file(p);
  };
  if (const char* env = std::getenv("SENTINEL_LIB"); env && *env) {
    if (consider(env)) return env;
    return "";  // an explicit choice that does not work is an error, not a hint
  }
  std::string dir = self_exe_dir();
  if (!dir.empty()) {
    if (consider(dir + "/../preload/" + kLibName)) return dir + "/../preload/" + kLibName;
    std::string rel = SENTINEL_RUN_LIBDIR_REL;
    if (!rel.empty() && rel[0] != '/' && consider(dir + "/../" + rel + "/" + kLibName))
      return dir + "/../" + rel + "/" + kLibName;
    if (consider(dir + "/../lib/" + kLibName)) return dir + "/../lib/" + kLibName;
  }
  std::string libdir = SENTINEL_LIBDIR;
  if (consider(libdir + "/" + kLibName)) return libdir + "/" + kLibName;
  return "";
}

// The variable a --set NAME names: upper case, SENTINEL_ prefix added when missing.
bool variable_name(std::string name, std::string& out) {
  if (name.empty()) return false;
  for (char& c : name) {
    if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
    if (!((c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')) return false;
  }
  if (name.rfind("SENTINEL_", 0) != 0) name = "SENTINEL_" + name;
  if (name == "SENTINEL_") return false;
  out = name;
  return true;
}

using sentinel::shell_quote;

// LD_PRELOAD with `lib` first and any earlier copy of it removed (separators: ':' and ' ').
std::string preload_value(const std::string& lib, const char* old) {
  std::string out = lib;
  if (!old) return out;
  std::string cur;
  auto flush = [&] {
    if (!cur.empty() && cur != lib) out += ":" + cur;
    cur.clear();
  };
  for (const char* p = old; *p; ++p) {
    if (*p == ':' || *p == ' ')
      flush();
    else
      cur += *p;
  }
  flush();
  return out;
}

// What the options ask for.
struct Launch {
  std::vector<std::pair<std::string, std::string>> vars;  // in the order given; later ones win
  std::string lib;                                        // --lib (empty: find it)
  bool dry_run = false;
  int command = 0;  // index in argv of COMMAND (argc: none)
};

// The variable an option sets directly (--mode: SENTINEL_MODE), nullptr for others.
const char* direct_variable(const std::string& name) {
  static const std::pair<const char*, const char*> kDirect[] = {
      {"--mode", "SENTINEL_MODE"},           {"--policy", "SENTINEL_POLICY"}, {"--fast-bytes", "SENTINEL_FAST_BYTES"},
      {"--min-bytes", "SENTINEL_MIN_BYTES"}, {"--dump", "SENTINEL_DUMP"},     {"--log", "SENTINEL_LOG"},
  };
  const char* target = nullptr;
  for (const auto& [opt, var] : kDirect)
    if (name == opt) target = var;
  return target;
}

// Prints the help or the version: 0, or 1 when writing failed.
int print_and_exit(bool help) {
  if (help)
    print_help();
  else
    std::cout << "sentinel-run " << SENTINEL_VERSION << "\n";
  std::cout.flush();
  return std::cout ? 0 : 1;
}

// A known option NAME with its (non-empty) value: 0, or 2 after a usage error.
int apply_option(const std::string& name, const std::string& value, Launch& l) {
  if (const char* target = direct_variable(name)) {
    l.vars.emplace_back(target, value);
  } else if (name == "--lib") {
    l.lib = value;
  } else {  // --set NAME=VALUE
    auto eq = value.find('=');
    std::string var;
    if (eq == std::string::npos || !variable_name(value.substr(0, eq), var))
      return usage_error(
          "--set: expected NAME=VALUE with NAME made of letters, digits and '_', "
          "got '" +
          value + "'");
    l.vars.emplace_back(var, value.substr(eq + 1));
  }
  return 0;
}

// The options before COMMAND (they stop at '--' or the first argument that is not one). nullopt when
// there is a command to run; else the status to exit with (--help, --version, a usage error).
std::optional<int> parse_options(int argc, char** argv, Launch& l) {
  int i = 1;
  for (; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg == "--") {
      ++i;
      break;
    }
    if (arg.size() < 2 || arg[0] != '-') break;  // the command
    if (arg == "-h" || arg == "--help" || arg == "--version") return print_and_exit(arg != "--version");
    if (arg == "--dry-run") {
      l.dry_run = true;
      continue;
    }
    std::string name = arg, value;
    bool has_value = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
      has_value = true;
    }
    bool known = direct_variable(name) || name == "--set" || name == "--lib";
    if (!known) return usage_error("unknown option '" + name + "'");
    if (!has_value) {
      if (i + 1 >= argc) return usage_error("option '" + name + "' needs a value");
      value = argv[++i];
    }
    if (value.empty()) return usage_error("option '" + name + "' needs a non-empty value");
    if (int rc = apply_option(name, value, l)) return rc;
  }
  if (i >= argc) return usage_error("missing COMMAND to run");
  l.command = i;
  return std::nullopt;
}

// The library to preload: --lib, else the first one found; as a real path. Empty after one line on
// stderr (the launcher exits 125).
std::string resolve_library(std::string lib) {
  std::vector<std::string> tried;
  if (!lib.empty()) {
    tried.push_back(lib);
    if (!readable_file(lib)) {
      std::cerr << kProg << ": --lib " << lib << ": " << std::strerror(errno) << "\n";
      return "";
    }
  } else {
    lib = find_library(tried);
    if (lib.empty()) {
      std::cerr << kProg << ": cannot find " << kLibName << " (tried:";
      for (const auto& t : tried) std::cerr << " " << t;
      std::cerr << "); use --lib PATH or set SENTINEL_LIB\n";
      return "";
    }
  }
  // LD_PRELOAD is resolved in the command's working directory and split at ':' and ' '.
  char real[PATH_MAX];
  if (!::realpath(lib.c_str(), real)) {
    std::cerr << kProg << ": " << lib << ": " << std::strerror(errno) << "\n";
    return "";
  }
  lib = real;
  if (lib.find_first_of(": \t\n") != std::string::npos) {
    std::cerr << kProg << ": " << lib << ": LD_PRELOAD cannot hold a path with ':' or blanks; "
              << "copy or link the library elsewhere\n";
    return "";
  }
  return lib;
}

// --dry-run: the environment changes and the command, shell-quoted.
int print_dry_run(const Launch& l, const std::string& preload, int argc, char** argv) {
  std::cout << "LD_PRELOAD=" << shell_quote(preload) << "\n";
  for (const auto& [k, v] : l.vars) std::cout << k << "=" << shell_quote(v) << "\n";
  std::cout << "exec";
  for (int k = l.command; k < argc; ++k) std::cout << " " << shell_quote(argv[k]);
  std::cout << "\n";
  std::cout.flush();
  return std::cout ? 0 : 1;
}

// Sets LD_PRELOAD and the variables, then execs the command; returns only when that fails.
int exec_command(const Launch& l, const std::string& preload, char** argv) {
  if (::setenv("LD_PRELOAD", preload.c_str(), 1) != 0) {
    std::cerr << kProg << ": setenv LD_PRELOAD: " << std::strerror(errno) << "\n";
    return 125;
  }
  for (const auto& [k, v] : l.vars) {
    if (::setenv(k.c_str(), v.c_str(), 1) != 0) {
      std::cerr << kProg << ": setenv " << k << ": " << std::strerror(errno) << "\n";
      return 125;
    }
  }
  std::cout.flush();
  ::execvp(argv[l.command], argv + l.command);
  int err = errno;
  std::cerr << kProg << ": " << argv[l.command] << ": " << std::strerror(err) << "\n";
  return err == ENOENT || err == ENOTDIR ? 127 : 126;
}

}  // namespace

int main(int argc, char** argv) {
  Launch l;
  if (auto rc = parse_options(argc, argv, l)) return *rc;
  const std::string lib = resolve_library(l.lib);
  if (lib.empty()) return 125;
  const std::string preload = preload_value(lib, std::getenv("LD_PRELOAD"));
  if (l.dry_run) return print_dry_run(l, preload, argc, argv);
  return exec_command(l, preload, argv);
}
