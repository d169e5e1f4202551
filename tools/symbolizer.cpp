#include "symbolizer.h"

#include <cxxabi.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

#include "json.h"

namespace sentinel::view {

namespace {

std::string basename_of(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string demangle(const char* name) {
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status == 0 && d) {
    std::string s(d);
    std::free(d);
    return s;
  }
  std::free(d);
  return name;
}

// The path a module's file is found at: the main program is recorded with an empty path.
std::string module_file(const fmt::Profile& p, const fmt::Module& m) {
  if (!m.path.empty()) return m.path;
  return p.process.executable;
}

}  // namespace

struct Symbolizer::Impl {
  Dwfl* dwfl = nullptr;
  char* debuginfo_path = nullptr;
  Dwfl_Callbacks callbacks{};
  std::set<const fmt::Module*> mismatched;  // build id differs: do not trust the file's symbols

  // Address ranges of a module's compilation units, for objects without .debug_aranges (clang
  // does not emit them by default, and libdw 0.188 then finds no line for any address).
  struct CuRange {
    Dwarf_Addr start, end;  // module addresses (before the load bias)
    Dwarf_Die cu;
  };
  struct CuIndex {
    Dwarf_Addr bias = 0;
    std::vector<CuRange> ranges;  // sorted by start
  };
  std::map<Dwfl_Module*, CuIndex> cu_index;

  const CuIndex& index_for(Dwfl_Module* mod) {
    auto it = cu_index.find(mod);
    if (it != cu_index.end()) return it->second;
    CuIndex idx;
    Dwarf_Die* cu = nullptr;
    Dwarf_Addr bias = 0;
    while ((cu = dwfl_module_nextcu(mod, cu, &bias)) != nullptr) {
      idx.bias = bias;
      Dwarf_Addr base = 0, start = 0, end = 0;
      ptrdiff_t off = 0;
      while ((off = dwarf_ranges(cu, off, &base, &start, &end)) > 0)
        if (end > start) idx.ranges.push_back({start, end, *cu});
    }
    std::sort(idx.ranges.begin(), idx.ranges.end(),
              [](const CuRange& a, const CuRange& b) { return a.start < b.start; });
    return cu_index.emplace(mod, std::move(idx)).first->second;
  }

  // "file:line" of pc, or "" when unknown.
  std::string line_of(Dwfl_Module* mod, Dwarf_Addr pc) {
    if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc)) {
      int lineno = 0;
      const char* src = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr);
      if (src && lineno > 0) return printable(src) + ":" + std::to_string(lineno);
    }
    const CuIndex& idx = index_for(mod);
    const Dwarf_Addr a = pc - idx.bias;
    auto it = std::upper_bound(idx.ranges.begin(), idx.ranges.end(), a,
                               [](Dwarf_Addr v, const CuRange& r) { return v < r.start; });
    // Ranges of different CUs do not overlap; look at the last one starting at or before `a`.
    if (it == idx.ranges.begin()) return "";
    --it;
    if (a >= it->end) return "";
    Dwarf_Die cu = it->cu;
    Dwarf_Line* line = dwarf_getsrc_die(&cu, a);
    int lineno = 0;
    const char* src = line ? dwarf_linesrc(line, nullptr, nullptr) : nullptr;
    if (!src || dwarf_lineno(line, &lineno) != 0 || lineno <= 0) return "";
    return printable(src) + ":" + std::to_string(lineno);
  }

  ~Impl() {
    if (dwfl) dwfl_end(dwfl);
  }
};

Symbolizer::Symbolizer(const fmt::Profile& profile, bool symbolize)
    : profile_(profile), impl_(std::make_unique<Impl>()) {
  if (!symbolize) return;
  Impl& I = *impl_;
  I.callbacks.find_elf = dwfl_build_id_find_elf;
  I.callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
  I.callbacks.section_address = dwfl_offline_section_address;
  I.callbacks.debuginfo_path = &I.debuginfo_path;
  I.dwfl = dwfl_begin(&I.callbacks);
  if (!I.dwfl) {
    problems_.push_back(std::string("libdwfl: ") + dwfl_errmsg(-1));
    return;
  }
  dwfl_report_begin(I.dwfl);
  for (const fmt::Module& m : profile.modules) {
    const std::string file = module_file(profile, m);
    // The vDSO and anonymous mappings have no file to read.
    if (file.empty() || file[0] != '/') continue;
    if (::access(file.c_str(), R_OK) != 0) {
      problems_.push_back(printable(file) + ": " + std::strerror(errno));
      continue;
    }
    // ET_DYN with add_p_vaddr: the module starts at load_bias + p_vaddr, as the loader placed it.
    Dwfl_Module* mod = dwfl_report_elf(I.dwfl, file.c_str(), file.c_str(), -1, m.load_bias, true);
    if (!mod) {
      problems_.push_back(printable(file) + ": " + dwfl_errmsg(-1));
      continue;
    }
    if (!m.build_id.empty()) {
      const unsigned char* bits = nullptr;
      GElf_Addr vaddr = 0;
      int n = dwfl_module_build_id(mod, &bits, &vaddr);
      if (n <= 0 || static_cast<size_t>(n) != m.build_id.size() ||
          std::memcmp(bits, m.build_id.data(), m.build_id.size()) != 0) {
        I.mismatched.insert(&m);
        problems_.push_back(printable(file) +
                            ": build id differs from the recorded one (file changed "
                            "since the run); frames shown as offsets");
      }
    }
  }
  dwfl_report_end(I.dwfl, nullptr, nullptr);
}

Symbolizer::~Symbolizer() = default;

std::string Symbolizer::raw(uint64_t address) const {
  const fmt::Module* m = profile_.module_for(address);
  if (!m) return hex(address);
  std::string name = basename_of(module_file(profile_, *m));
  if (name.empty()) name = "[main]";
  return printable(name) + "+" + hex(address - m->load_bias);
}

const std::string& Symbolizer::frame(uint64_t address) {
  auto it = cache_.find(address);
  if (it != cache_.end()) return it->second;
  // A return address points after the call: look up the call instruction itself.
  return cache_.emplace(address, lookup(address, address ? address - 1 : 0)).first->second;
}

const std::string& Symbolizer::instruction(uint64_t pc) {
  auto it = instruction_cache_.find(pc);
  if (it != instruction_cache_.end()) return it->second;
  return instruction_cache_.emplace(pc, lookup(pc, pc)).first->second;
}

std::string Symbolizer::lookup(uint64_t address, uint64_t pc) {
  std::string out;
  const fmt::Module* m = profile_.module_for(address);
  Dwfl* dwfl = impl_->dwfl;
  Dwfl_Module* mod = (dwfl && m && !impl_->mismatched.count(m)) ? dwfl_addrmodule(dwfl, pc) : nullptr;
  if (mod) {
    GElf_Off off = 0;
    GElf_Sym sym;
    const char* name = dwfl_module_addrinfo(mod, pc, &off, &sym, nullptr, nullptr, nullptr);
    std::string where = impl_->line_of(mod, pc);
    if (name) {
      std::string n = name;
      if (auto at = n.find('@'); at != std::string::npos && at > 0) n.resize(at);  // foo@@GLIBC_2.34
      out = printable(demangle(n.c_str()));
      if (where.empty())
        out += "+" + hex(off + (address - pc)) + " (" + printable(basename_of(module_file(profile_, *m))) + ")";
    }
    if (!where.empty()) out = out.empty() ? raw(address) + " (" + where + ")" : out + " (" + where + ")";
  }
  if (out.empty()) out = raw(address);
  return out;
}

}  // namespace sentinel::view
