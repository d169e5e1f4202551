#include "base/parse.h"

#include <cstddef>

namespace sentinel {

bool parse_count(const char* text, uint64_t* out) {
  if (!*text) return false;
  uint64_t v = 0;
  for (const char* p = text; *p; ++p) {
    if (*p < '0' || *p > '9') return false;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(*p - '0');
  }
  *out = v;
  return true;
}

bool parse_duration(const char* text, uint64_t* seconds) {
  char digits[24] = {};
  size_t n = 0;
  while (text[n] >= '0' && text[n] <= '9') {
    if (n + 1 >= sizeof(digits)) return false;
    digits[n] = text[n];
    ++n;
  }
  uint64_t v = 0, unit = 1;
  if (!n || !parse_count(digits, &v)) return false;
  const char* rest = text + n;
  if (*rest) {
    if (rest[1]) return false;
    unit = *rest == 's' ? 1 : *rest == 'm' ? 60 : *rest == 'h' ? 3600 : 0;
    if (!unit) return false;
  }
  if (v > kMaxDurationSeconds / unit) return false;
  *seconds = v * unit;
  return true;
}

bool parse_size(const char* text, uint64_t* out) {
  const char* p = text;
  uint64_t v = 0;
  bool digits = false;
  for (; *p >= '0' && *p <= '9'; ++p) {
    digits = true;
    if (v > (UINT64_MAX - 9) / 10) return false;
    v = v * 10 + static_cast<uint64_t>(*p - '0');
  }
  if (!digits) return false;
  unsigned shift = 0;
  switch (*p) {
    case 'k':
    case 'K':
      shift = 10;
      break;
    case 'm':
    case 'M':
      shift = 20;
      break;
    case 'g':
    case 'G':
      shift = 30;
      break;
    case 't':
    case 'T':
      shift = 40;
      break;
    default:
      break;
  }
  if (shift) ++p;
  if (shift && (*p == 'i' || *p == 'I')) ++p;
  if (*p == 'b' || *p == 'B') ++p;
  if (*p) return false;
  if (shift && v > (UINT64_MAX >> shift)) return false;
  *out = v << shift;
  return true;
}

bool parse_share(const char* text, uint32_t* ppm) {
  uint64_t whole = 0, frac = 0, scale = 1;
  const char* p = text;
  bool digits = false;
  for (; *p >= '0' && *p <= '9'; ++p, digits = true) {
    whole = whole * 10 + static_cast<uint64_t>(*p - '0');
    if (whole > 100) return false;
  }
  if (!digits) return false;  // ".5%": a share starts with a digit
  if (*p == '.') {
    bool decimals = false;
    for (++p; *p >= '0' && *p <= '9' && scale < 10000; ++p, decimals = true) {
      frac = frac * 10 + static_cast<uint64_t>(*p - '0');
      scale *= 10;
    }
    if (!decimals) return false;  // "20.%"
  }
  if (p[0] != '%' || p[1]) return false;
  uint64_t v = whole * 10000 + frac * 10000 / scale;  // ppm
  if (v == 0 || v > 1000000) return false;
  *ppm = static_cast<uint32_t>(v);
  return true;
}

bool parse_budget(const char* text, bool allow_auto, BudgetText* out) {
  BudgetText b;
  bool share = false;
  for (const char* p = text; *p; ++p) share |= *p == '%';
  if (allow_auto && text[0] == 'a' && text[1] == 'u' && text[2] == 't' && text[3] == 'o' && !text[4]) {
    b.is_auto = true;
  } else if (share) {
    if (!parse_share(text, &b.share_ppm)) return false;
  } else if (!parse_size(text, &b.bytes) || b.bytes == 0) {
    return false;
  }
  *out = b;
  return true;
}

namespace {

// A whole number within [0, max], from [p, end).
bool parse_bounded(const char* p, const char* end, uint32_t max, uint32_t* out) {
  char digits[16];
  const size_t len = static_cast<size_t>(end - p);
  if (len == 0 || len >= sizeof(digits)) return false;
  for (size_t i = 0; i < len; ++i) digits[i] = p[i];
  digits[len] = '\0';
  uint64_t n = 0;
  if (!parse_count(digits, &n) || n > max) return false;
  *out = static_cast<uint32_t>(n);
  return true;
}

}  // namespace

bool parse_step_costs(const char* text, StepCostsText* out) {
  StepCostsText c;
  const char* comma = nullptr;
  const char* end = text;
  for (; *end; ++end)
    if (*end == ',' && !comma) comma = end;
  if (end - text == 3 && text[0] == 'o' && text[1] == 'f' && text[2] == 'f') {
    c.kind = StepCostsKind::off;
  } else if (end - text == 4 && text[0] == 'a' && text[1] == 'u' && text[2] == 't' && text[3] == 'o') {
    c.kind = StepCostsKind::automatic;
  } else if (!comma || !parse_bounded(text, comma, kMaxStepCostNsPerKib, &c.slow_ns_per_kib) ||
             !parse_bounded(comma + 1, end, kMaxStepCostNsPerKib, &c.move_ns_per_kib)) {
    return false;
  } else {
    c.kind = StepCostsKind::fixed;
  }
  *out = c;
  return true;
}

bool parse_trial_clock(const char* text, TrialClockText* out) {
  TrialClockText c;
  const char* wall = "wall";
  const char* emulated = "emulated:";
  size_t i = 0;
  while (wall[i] && text[i] == wall[i]) ++i;
  if (!wall[i] && !text[i]) {
    *out = c;
    return true;
  }
  for (i = 0; emulated[i]; ++i)
    if (text[i] != emulated[i]) return false;
  const char* p = text + i;
  for (uint32_t k = 0; k < kEmuPrices; ++k) {
    const char* end = p;
    while (*end >= '0' && *end <= '9') ++end;
    if (*end != (k + 1 < kEmuPrices ? ',' : ':') || !parse_bounded(p, end, kMaxPicosPerCount, &c.ps_per_count[k]))
      return false;
    p = end + 1;
  }
  bool priced = false;
  for (uint32_t v : c.ps_per_count) priced |= v != 0;
  size_t len = 0;
  while (p[len]) ++len;
  if (!priced || p[0] != '/' || len >= sizeof(c.counts_path)) return false;
  for (size_t j = 0; j <= len; ++j) c.counts_path[j] = p[j];
  c.emulated = true;
  *out = c;
  return true;
}

namespace {

bool pattern_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '+' || c == '-' || c == '*' || c == '?';
}

// Glob match of the pattern [p, pend) against the whole of name: * any run, ? one character.
bool glob(const char* p, const char* pend, const char* name) {
  const char* star = nullptr;
  const char* resume = nullptr;
  while (*name) {
    if (p < pend && (*p == '?' || *p == *name)) {
      ++p, ++name;
    } else if (p < pend && *p == '*') {
      star = p++;
      resume = name;
    } else if (star) {
      p = star + 1;
      name = ++resume;
    } else {
      return false;
    }
  }
  while (p < pend && *p == '*') ++p;
  return p == pend;
}

}  // namespace

bool valid_name_list(const char* list) {
  if (!*list) return true;
  size_t run = 0;
  for (const char* p = list;; ++p) {
    if (*p == ',' || !*p) {
      if (run == 0) return false;  // an empty pattern: ",," or a trailing comma
      run = 0;
      if (!*p) return true;
    } else if (!pattern_char(*p)) {
      return false;
    } else {
      ++run;
    }
  }
}

bool name_list_matches(const char* list, const char* name) {
  for (const char* p = list; *p;) {
    const char* end = p;
    while (*end && *end != ',') ++end;
    if (end > p && glob(p, end, name)) return true;
    p = *end ? end + 1 : end;
  }
  return false;
}

}  // namespace sentinel
