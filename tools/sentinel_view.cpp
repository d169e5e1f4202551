// sentinel-view: reads Sentinel profile dumps. Subcommands are dispatched from one table; each parses
// its own options. Exit status: 0 ok, 1 unreadable or invalid dump (one line on stderr), 2 usage error.
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <system_error>

#include "sentinel_build_config.h"
#include "view.h"

namespace sentinel::view {

namespace {

struct Command {
  const char* name;
  int (*run)(int argc, char** argv);
  const char* help;
};

const Command kCommands[] = {
    {"summary", cmd_summary,
     "process, objects, peak live bytes, lifetimes, sizes, top allocation sites, steps,\n"
     "            the profile (identities, groups), runtime counters"},
    {"heatmap", cmd_heatmap, "groups (or identities) x intervals: bytes touched, in the terminal"},
    {"report", cmd_report, "one self-contained HTML page with plots and tables (-o FILE.html)"},
    {"trace", cmd_trace, "Chrome trace-event JSON for Perfetto / chrome://tracing (-o FILE.json)"},
    {"plan", cmd_plan, "the planner's schedule for the profiled phase: node per interval, moves"},
    {"whatif", cmd_whatif, "every policy's modeled step time at budgets of 10-100% of the peak"},
    {"records", cmd_records, "every record decoded, by the format's field names, as JSON (for scripts)"},
    {"filter", cmd_filter, "a copy of the dump with only some record types (--keep, -o FILE)"},
};

void print_help() {
  std::cout << "Usage: sentinel-view COMMAND [OPTIONS] DUMP\n"
               "Reads a Sentinel profile dump (written by libsentinel.so when a process exits).\n"
               "\n"
               "Commands:\n";
  for (const Command& c : kCommands) {
    std::string name = c.name;
    name.resize(10, ' ');
    std::cout << "  " << name << c.help << "\n";
  }
  std::cout << "\n"
               "Options:\n"
               "  -h, --help     show this help (COMMAND --help: the command's options)\n"
               "  --version      show the version\n"
               "\n"
               "Exit status: 0 success, 1 the dump cannot be read or is invalid, 2 usage error.\n"
               "Examples: sentinel-view summary sentinel-python3.12345.prof\n"
               "          sentinel-view report sentinel-python3.12345.prof -o report.html\n";
}

}  // namespace

int usage_error(const std::string& message) {
  std::cerr << kProg << ": " << message << "\n"
            << "Try '" << kProg << " --help' for more information.\n";
  return 2;
}

std::optional<fmt::Profile> load_profile(const std::string& path) {
  try {
    return fmt::read_profile(path == "-" ? std::string("/dev/stdin") : path);
  } catch (const fmt::FormatError& e) {
    std::cerr << kProg << ": " << path << ": " << e.what() << "\n";
  } catch (const std::system_error& e) {
    std::cerr << kProg << ": " << path << ": " << e.code().message() << "\n";
  } catch (const std::bad_alloc&) {
    std::cerr << kProg << ": " << path << ": out of memory reading the dump\n";
  }
  return std::nullopt;
}

int finish_output() {
  std::cout.flush();
  if (!std::cout || std::fflush(stdout) != 0) {
    std::cerr << kProg << ": error writing output: " << std::strerror(errno ? errno : EIO) << "\n";
    return 1;
  }
  return 0;
}

bool OutputFile::open(const std::string& path) {
  path_ = path;
  if (path == "-") return true;
  file_.open(path, std::ios::out | std::ios::trunc | std::ios::binary);
  if (!file_) {
    std::cerr << kProg << ": " << path << ": " << std::strerror(errno ? errno : EIO) << "\n";
    return false;
  }
  return true;
}

int OutputFile::close() {
  if (path_ == "-") return finish_output();
  file_.flush();
  bool ok = static_cast<bool>(file_);
  file_.close();
  if (!ok || file_.fail()) {
    std::cerr << kProg << ": " << path_ << ": error writing: " << std::strerror(errno ? errno : EIO) << "\n";
    return 1;
  }
  return 0;
}

}  // namespace sentinel::view

int main(int argc, char** argv) {
  using namespace sentinel::view;
  if (argc < 2)
    return usage_error("missing command (one of: summary, heatmap, report, trace, plan, whatif, records, filter)");
  std::string first = argv[1];
  if (first == "-h" || first == "--help" || first == "help") {
    if (first == "help" && argc > 2) {
      for (const Command& c : kCommands) {
        if (c.name == std::string(argv[2])) {
          char* args[] = {argv[2], const_cast<char*>("--help"), nullptr};
          return c.run(2, args);
        }
      }
      return usage_error(std::string("unknown command '") + argv[2] + "'");
    }
    print_help();
    return finish_output();
  }
  if (first == "--version") {
    std::cout << "sentinel-view " << SENTINEL_VERSION << " (dump format " << SENTINEL_FORMAT_MAJOR << "."
              << SENTINEL_FORMAT_MINOR << ")\n";
    return finish_output();
  }
  if (!first.empty() && first[0] == '-') return usage_error("unknown option '" + first + "'");
  for (const Command& c : kCommands)
    if (first == c.name) return c.run(argc - 1, argv + 1);
  return usage_error("unknown command '" + first + "'");
}
