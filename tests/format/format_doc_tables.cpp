// The field tables of docs/format.md, generated from the format's table (src/format/dump_layout.h).
//
//   format-doc-tables DOC            checks that every generated table in DOC is what the table says
//   format-doc-tables --update DOC   rewrites them in place
//   format-doc-tables --print        prints them all
//
// In DOC each table sits between "<!-- layout NAME -->" and "<!-- end layout -->" (NAME: a struct of
// the table, or "sizes"); the text around them is the document's own. A check fails when a table
// differs, when a struct of the table has no place in DOC, or when DOC names one the table lacks.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "format/dump_layout.h"

namespace {

using sentinel::fmt::Absent;
using sentinel::fmt::Field;
using sentinel::fmt::kAllLayouts;
using sentinel::fmt::LayoutInfo;

const std::string kBegin = "<!-- layout ";
const std::string kEnd = "<!-- end layout -->";

std::string version(uint8_t minor) {
  return std::to_string(SENTINEL_FORMAT_MAJOR) + "." + std::to_string(minor);
}

std::string declaration(const Field& f) {
  std::string s = "`" + std::string(sentinel::fmt::type_name(f.type)) + " " + f.name;
  if (f.count != 1) s += "[" + std::to_string(f.count) + "]";
  return s + "`";
}

// The field's meaning, and for a field older entries lack, what a reader stores instead.
std::string meaning(const Field& f) {
  std::string s = f.doc;
  if (f.reserved) return s;
  switch (f.absent) {
    case Absent::never:
      break;
    case Absent::zero:
      s += "; older entries lack it: read as 0";
      break;
    case Absent::no_ordinal:
      s += "; older entries lack it: read as `NO_ORDINAL`";
      break;
    case Absent::derived:
      s += std::string("; older entries lack it: read as ") + f.absent_doc;
      break;
  }
  return s;
}

std::string field_table(const LayoutInfo& l) {
  std::ostringstream os;
  os << "| offset | field | since | meaning |\n|---|---|---|---|\n";
  for (const Field& f : l.fields)
    os << "| " << f.offset << " | " << declaration(f) << " | " << version(f.minor) << " | " << meaning(f) << " |\n";
  return os.str();
}

std::string sizes_table() {
  std::ostringstream os;
  os << "| struct | stored in | smallest accepted | written by " << version(SENTINEL_FORMAT_MINOR) << " |\n"
     << "|---|---|---|---|\n";
  for (const LayoutInfo* l : kAllLayouts)
    os << "| `" << l->name << "` | " << l->stored << " | " << l->min_size << " | " << l->size << " |\n";
  return os.str();
}

std::map<std::string, std::string> all_tables() {
  std::map<std::string, std::string> t;
  for (const LayoutInfo* l : kAllLayouts) t[l->name] = field_table(*l);
  t["sizes"] = sizes_table();
  return t;
}

// A '|' in a meaning would split its cell; the table's one-line texts must not hold one.
bool texts_fit_tables() {
  bool ok = true;
  for (const LayoutInfo* l : kAllLayouts)
    for (const Field& f : l->fields)
      if (std::string(f.doc).find('|') != std::string::npos ||
          (f.absent_doc && std::string(f.absent_doc).find('|') != std::string::npos)) {
        std::cerr << "format-doc-tables: " << l->name << "." << f.name << ": '|' in its text\n";
        ok = false;
      }
  return ok;
}

// Replaces each generated table of `doc` with the table's current text. Returns false (after saying
// why) when the document and the table do not name the same tables.
bool regenerate(const std::string& doc, std::string& out, std::vector<std::string>& changed) {
  const auto tables = all_tables();
  std::set<std::string> seen;
  size_t pos = 0;
  while (true) {
    size_t b = doc.find(kBegin, pos);
    if (b == std::string::npos) break;
    size_t name_end = doc.find(" -->", b);
    size_t body = doc.find('\n', b);
    size_t e = doc.find(kEnd, b);
    if (name_end == std::string::npos || body == std::string::npos || e == std::string::npos || e < body) {
      std::cerr << "format-doc-tables: unterminated table marker at byte " << b << "\n";
      return false;
    }
    const std::string name = doc.substr(b + kBegin.size(), name_end - b - kBegin.size());
    auto it = tables.find(name);
    if (it == tables.end()) {
      std::cerr << "format-doc-tables: the document has a table '" << name << "' that the format's table lacks\n";
      return false;
    }
    if (!seen.insert(name).second) {
      std::cerr << "format-doc-tables: table '" << name << "' appears twice\n";
      return false;
    }
    out += doc.substr(pos, body + 1 - pos);
    if (doc.substr(body + 1, e - body - 1) != it->second) changed.push_back(name);
    out += it->second;
    pos = e;
  }
  out += doc.substr(pos);
  bool ok = true;
  for (const auto& [name, text] : tables)
    if (!seen.count(name)) {
      std::cerr << "format-doc-tables: the document has no place for table '" << name << "' (" << kBegin << name
                << " -->)\n";
      ok = false;
    }
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.size() == 1 && args[0] == "--print") {
    for (const auto& [name, text] : all_tables()) std::cout << kBegin << name << " -->\n" << text << kEnd << "\n\n";
    return texts_fit_tables() ? 0 : 1;
  }
  const bool update = !args.empty() && args[0] == "--update";
  if (args.size() != (update ? 2u : 1u)) {
    std::cerr << "usage: format-doc-tables [--update] DOC | --print\n";
    return 2;
  }
  const std::string path = args.back();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::perror(path.c_str());
    return 1;
  }
  std::stringstream buf;
  buf << in.rdbuf();
  std::string out;
  std::vector<std::string> changed;
  if (!texts_fit_tables() || !regenerate(buf.str(), out, changed)) return 1;
  if (update) {
    std::ofstream o(path, std::ios::binary | std::ios::trunc);
    o << out;
    if (!o.flush()) {
      std::perror(path.c_str());
      return 1;
    }
    for (const auto& name : changed) std::cout << path << ": table " << name << " updated\n";
    return 0;
  }
  for (const auto& name : changed)
    std::cerr << path << ": table " << name << " differs from src/format/dump_layout.h (update: "
              << "format-doc-tables --update " << path << ")\n";
  return changed.empty() ? 0 : 1;
}
