// Minimal JSON output for sentinel-view: correct string escaping (control characters, quotes,
// backslashes; bytes that are not valid UTF-8 become U+FFFD), integers, nesting by hand.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>

namespace sentinel::view {

// Appends s as a JSON string literal (with the quotes).
void json_string(std::ostream& os, std::string_view s);
std::string json_quote(std::string_view s);
// Appends a number, or null when there is none.
void json_optional(std::ostream& os, std::optional<double> v);

// Makes text safe to print on a terminal: control bytes become \xNN, invalid UTF-8 too.
std::string printable(std::string_view s);

}  // namespace sentinel::view
