// sentinel-view filter: a dump with only some of its records, for fixtures (tests/fixtures/
// record_profile.py keeps what a plan is made from). The kept records are copied byte for byte, with
// their checksums; only the END record is new, written by the format's own pieces.
#include <algorithm>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include "base/crc32c.h"
#include "cli.h"
#include "format/record_pieces.h"
#include "json.h"
#include "view.h"

namespace sentinel::view {

namespace {

void print_help() {
  std::cout << "Usage: sentinel-view filter --keep NAME[,NAME...] -o OUT DUMP\n"
               "Writes DUMP to OUT with only the records of the named types (PROCESS, CONFIG, TOPOLOGY,\n"
               "MODULE, SITES, OBJECTS, STATS, MARKS, STEPS, INTERVALS, PROFILE, IDENTITIES, TOUCHES,\n"
               "GROUPS, COUNTERS, PHASE_COUNTERS, TIERING, PLAN, MIGRATIONS, MIGRATION_LOG, PLACEMENT,\n"
               "DETECTION): the file header and those records byte for byte, in file order, then a new\n"
               "END record. DUMP is read and checked in full first; records of unknown type are dropped.\n"
               "\n"
               "  --keep NAMES        the record types to keep (comma-separated)\n"
               "  -o, --output FILE   where to write (- for standard output)\n"
               "  -h, --help          show this help\n";
}

// A byte sink for the format's record pieces.
struct Payload {
  std::vector<uint8_t> bytes;
  void raw(const void* p, size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    bytes.insert(bytes.end(), b, b + n);
  }
  void u64(uint64_t v) {
    uint8_t b[8];
    fmt::store_le(b, v, 8);
    raw(b, 8);
  }
};

// The dump's header and kept records, then END.
std::string filtered(const std::vector<uint8_t>& dump, const std::vector<fmt::RecordExtent>& records,
                     const std::set<uint32_t>& keep) {
  std::string out(dump.begin(), dump.begin() + sizeof(sentinel_file_header));
  uint64_t kept = 0;
  for (const fmt::RecordExtent& r : records) {
    if (!keep.count(r.type)) continue;
    out.append(reinterpret_cast<const char*>(dump.data() + r.offset), r.size);
    ++kept;
  }
  Payload end;
  fmt::put_end(end, kept);
  uint8_t header[sizeof(sentinel_record_header)];
  fmt::encode_record_header(header, SENTINEL_REC_END, crc32c(0, end.bytes.data(), end.bytes.size()), end.bytes.size());
  out.append(reinterpret_cast<const char*>(header), sizeof header);
  out.append(end.bytes.begin(), end.bytes.end());
  return out;
}

}  // namespace

int cmd_filter(int argc, char** argv) {
  SubcommandArgs args("filter", argc, argv);
  std::set<uint32_t> keep;
  std::string out;
  int rc = 0;
  while (args.next_option()) {
    std::string v;
    if (args.output_option(out, rc)) {
      if (rc) return rc;
    } else if (args.is_help()) {
      print_help();
      return finish_output();
    } else if (args.is("--keep")) {
      if (!args.value("--keep", v)) return args.error("--keep needs a list of record types");
      std::stringstream list(v);
      for (std::string name; std::getline(list, name, ',');) {
        auto known = std::find_if(std::begin(fmt::kRecordTypes), std::end(fmt::kRecordTypes),
                                  [&](const fmt::RecordType& r) { return name == r.name; });
        if (known == std::end(fmt::kRecordTypes) || known->type == SENTINEL_REC_END)
          return args.error("--keep: unknown record type '" + name + "'");
        keep.insert(known->type);
      }
    } else {
      return args.unknown_option();
    }
  }
  std::string path;
  if (int rc2 = args.dump(path)) return rc2;
  if (keep.empty()) return args.error("--keep is required");
  if (out.empty()) return args.error("-o FILE is required");
  std::vector<uint8_t> dump;
  std::vector<fmt::RecordExtent> records;
  try {
    dump = fmt::read_file_bytes(path == "-" ? std::string("/dev/stdin") : path);
    records = fmt::record_extents(dump);
  } catch (const fmt::FormatError& e) {
    std::cerr << kProg << ": " << printable(path) << ": " << e.what() << "\n";
    return 1;
  } catch (const std::system_error& e) {
    std::cerr << kProg << ": " << printable(path) << ": " << e.code().message() << "\n";
    return 1;
  }
  OutputFile file;
  if (!file.open(out)) return 1;
  file.stream() << filtered(dump, records, keep);
  return file.close();
}

}  // namespace sentinel::view
