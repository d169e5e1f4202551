// The slow-tier guest's emulated time as a clock for the step-time trial (SENTINEL_TRIAL_CLOCK=emulated;
// docs/tiering.md, "The step-time trial"; docs/guest.md, "Counts, the marker and emulated time").
//
// In the TCG guest wall time measures the emulator on a shared host, not the emulated machine: a copy
// the migrator makes on the other vCPU and a slow-node access weigh what the emulator pays for them. The
// guest's slow-tier plugin counts what each vCPU executed (instructions, line misses per node and kind)
// and appends one record of the counts since the previous marker to its counts file whenever a vCPU
// executes its marker, a NOP with a unique encoding, before that instruction completes. A lap executes
// the marker, reads the records since the previous lap from the file, and prices each vCPU's counts:
// the busiest vCPU's time is the lap's, as scripts/guest/emutime.py takes T_emu. The prices come with
// the setting, so that the model stays in one place (emutime.py, which scripts/bench-tiers asks).
//
// Outside the plugin (plain TCG, KVM, real hardware) the marker is an ordinary NOP and no record
// appears: lap() fails and says so. Sequencer thread only; no allocation.
#pragma once
#include <cstddef>
#include <cstdint>

#include "base/parse.h"

namespace sentinel {

class EmuClock {
 public:
  // The runtime's marker tags: kTagBase + (pid & 15), so that two processes timing trials in one guest
  // rarely take each other's records for their own (tests/guest/emu_mark.h's tags are below 0xff00).
  static constexpr uint16_t kTagBase = 0xfe00;
  static constexpr uint32_t kMaxVcpus = 64;
  static constexpr uint32_t kCounts = 8;  // per vCPU: user, kernel instructions; node 0's, node 1's misses

  // Opens the counts file and starts reading at its end. False with *why when it cannot be read.
  bool open(const TrialClockText& clock, int pid, const char** why);
  bool is_open() const { return fd_ >= 0; }
  void close();
  // Marks, then prices the records since the previous lap (since open() for the first): *ns, the busiest
  // vCPU's priced counts. False with *why when the marker's record does not appear or cannot be read.
  bool lap(uint64_t* ns, const char** why);

  // The parts of lap(), apart for the tests: the marker alone, and the records read up to this clock's.
  void mark() const;
  bool read_to_mark(const char** why);
  uint64_t busiest_ns() const;
  uint16_t tag() const { return tag_; }

 private:
  // One complete line (without its newline): summed into counts_ when it is a record; *ours when it is
  // this clock's marker.
  bool add_line(const char* line, size_t len, bool* ours, const char** why);
  int fd_ = -1;
  uint16_t tag_ = kTagBase;
  uint64_t offset_ = 0;  // where the next unread line starts
  uint32_t ps_per_count_[kEmuPrices] = {};
  uint64_t counts_[kMaxVcpus][kCounts] = {};  // since the previous lap
  uint32_t vcpus_ = 0;
  char buf_[32768] = {};
};

}  // namespace sentinel
