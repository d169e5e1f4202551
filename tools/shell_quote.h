// Shell-style quoting, so that a printed command line or value can be pasted back into a shell.
#pragma once

#include <string>

namespace sentinel {

inline std::string shell_quote(const std::string& a) {
  if (!a.empty() && a.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789_@%+=:,./-") == std::string::npos)
    return a;
  std::string q = "'";
  for (char c : a) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

}  // namespace sentinel
