// Offline symbolization of recorded return addresses with elfutils' libdwfl: every MODULE of the
// dump is reported with its recorded load bias, so the files on disk are read, never the (long gone)
// process. Frames come out as "function (file:line)", "function+0xOFF (module)", "module+0xOFF" or
// "0xADDR", from the most to the least information available.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "format/format_reader.h"

namespace sentinel::view {

class Symbolizer {
 public:
  // With symbolize == false every frame is printed as its module+offset (no files are opened).
  Symbolizer(const fmt::Profile& profile, bool symbolize);
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;

  // One return address, innermost frames included: named by the call instruction before it.
  const std::string& frame(uint64_t return_address);
  // The instruction at pc itself: a crash's first frame, the faulting instruction, which may be the first
  // of its function (where pc - 1 would name the one before).
  const std::string& instruction(uint64_t pc);

  // Module files that could not be opened or whose build id differs from the recorded one.
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  struct Impl;
  const fmt::Profile& profile_;
  std::unique_ptr<Impl> impl_;
  std::unordered_map<uint64_t, std::string> cache_, instruction_cache_;
  std::vector<std::string> problems_;
  std::string raw(uint64_t address) const;
  // `address` as printed (module+offset where unnamed), named by the code at `pc`.
  std::string lookup(uint64_t address, uint64_t pc);
};

}  // namespace sentinel::view
