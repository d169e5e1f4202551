// Shared pieces of sentinel-view's subcommands.
#pragma once

#include <optional>
#include <string>

#include "format_reader.h"

namespace sentinel::view {

inline constexpr const char* kProg = "sentinel-view";

// Prints "sentinel-view: MESSAGE" and a hint to stderr; the caller returns 2.
int usage_error(const std::string& message);

// Reads a dump; on failure prints exactly one line "sentinel-view: FILE: ..." to stderr and
// returns nullopt (the caller exits 1).
std::optional<fmt::Profile> load_profile(const std::string& path);

// Flushes stdout; returns 1 (after a message) when writing failed, else 0.
int finish_output();

// Subcommands: argv[0] is the subcommand name.
int cmd_summary(int argc, char** argv);

}  // namespace sentinel::view
