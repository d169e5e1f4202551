// base/parse.h against the one table of inputs (parse_cases.h).
#include <catch2/catch.hpp>
#include <string>

#include "base/config.h"
#include "base/parse.h"
#include "parse_cases.h"

using namespace sentinel;

TEST_CASE("sizes parse with binary units", "[parse]") {
  for (const auto& c : test::kSizeCases) {
    CAPTURE(c.text);
    uint64_t v = 12345;
    CHECK(parse_size(c.text, &v) == c.ok);
    CHECK(v == (c.ok ? c.bytes : 12345));
  }
}

TEST_CASE("durations: whole seconds, minutes or hours, up to a week", "[parse]") {
  struct Case {
    const char* text;
    bool ok;
    uint64_t seconds;
  } cases[] = {{"90", true, 90},
               {"90s", true, 90},
               {"10m", true, 600},
               {"2h", true, 7200},
               {"0", true, 0},
               {"168h", true, 604800},
               {"169h", false, 0},
               {"604801", false, 0},
               {"", false, 0},
               {"s", false, 0},
               {"10M", false, 0},
               {"1.5h", false, 0},
               {"10 m", false, 0},
               {"10ms", false, 0},
               {"-1", false, 0},
               {"1d", false, 0},
               {"99999999999999999999999", false, 0}};
  for (const Case& c : cases) {
    CAPTURE(c.text);
    uint64_t v = 12345;
    CHECK(parse_duration(c.text, &v) == c.ok);
    CHECK(v == (c.ok ? c.seconds : 12345));
  }
}

TEST_CASE("budgets: a size above 0, a share of the peak, or auto where allowed", "[parse]") {
  for (const auto& c : test::kBudgetCases) {
    CAPTURE(c.text);
    BudgetText b;
    REQUIRE(parse_budget(c.text, false, &b) == c.ok);
    if (c.ok) CHECK((!b.is_auto && b.bytes == c.bytes && b.share_ppm == c.share_ppm));
    // With "auto" allowed every other row reads the same.
    BudgetText a;
    bool is_auto = std::string(c.text) == "auto";
    REQUIRE(parse_budget(c.text, true, &a) == (c.ok || is_auto));
    if (is_auto) CHECK((a.is_auto && a.bytes == 0 && a.share_ppm == 0));
  }
}

TEST_CASE("step costs: off, auto, or SLOW,MOVE in ns per KiB", "[parse]") {
  for (const auto& c : test::kStepCostsCases) {
    CAPTURE(c.text);
    StepCostsText t;
    t.slow_ns_per_kib = 7;
    REQUIRE(parse_step_costs(c.text, &t) == c.ok);
    if (c.ok)
      CHECK((static_cast<uint8_t>(t.kind) == c.kind && t.slow_ns_per_kib == c.slow_ns_per_kib &&
             t.move_ns_per_kib == c.move_ns_per_kib));
    else
      CHECK(t.slow_ns_per_kib == 7);  // untouched
  }
}

TEST_CASE("trial clocks: wall, or emulated with seven prices and an absolute path", "[parse]") {
  for (const auto& c : test::kTrialClockCases) {
    CAPTURE(c.text);
    TrialClockText t;
    t.ps_per_count[0] = 7;
    REQUIRE(parse_trial_clock(c.text, &t) == c.ok);
    if (!c.ok) {
      CHECK(t.ps_per_count[0] == 7);  // untouched
      continue;
    }
    CHECK((t.emulated == c.emulated && t.ps_per_count[0] == c.ps_insn && t.ps_per_count[4] == c.ps_read1 &&
           std::string(t.counts_path) == c.path));
  }
  // A path that fills the buffer is refused, one byte less is taken.
  std::string prefix = "emulated:1,2,3,4,5,6,7:/";
  TrialClockText t;
  CHECK(parse_trial_clock((prefix + std::string(sizeof(t.counts_path) - 2, 'x')).c_str(), &t));
  CHECK_FALSE(parse_trial_clock((prefix + std::string(sizeof(t.counts_path) - 1, 'x')).c_str(), &t));
}

TEST_CASE("shares and counts", "[parse]") {
  uint32_t ppm = 0;
  CHECK((parse_share("20%", &ppm) && ppm == 200000));
  CHECK_FALSE(parse_share("20", &ppm));
  uint64_t n = 0;
  CHECK((parse_count("1023", &n) && n == 1023));
  for (const char* bad : {"", "1K", "-1", " 1", "18446744073709551616"}) CHECK_FALSE(parse_count(bad, &n));
  CHECK((parse_count("18446744073709551609", &n) && n == 18446744073709551609ull));
}

TEST_CASE("executable name lists: commas, * and ?", "[parse]") {
  for (const char* ok : {"", "python3", "cc1plus,ld.*,g++-*", "*", "a?c", "x86_64-linux-gnu-g++-12"})
    CHECK(valid_name_list(ok));
  for (const char* bad : {",", "a,", ",a", "a,,b", "a b", "a/b", "a;b"}) CHECK_FALSE(valid_name_list(bad));
  const char* list = "cc1plus,ld.*,g++-*,*-linux-gnu-gcc*,a?c";
  for (const char* yes : {"cc1plus", "ld.gold", "ld.", "g++-12", "x86_64-linux-gnu-gcc-12", "abc"})
    CHECK(name_list_matches(list, yes));
  for (const char* no : {"cc1", "cc1plusx", "ld", "g++", "python3", "ac", "abbc", ""})
    CHECK_FALSE(name_list_matches(list, no));
  for (const char* tool : {"cc1plus", "as", "collect2", "ld", "x86_64-linux-gnu-g++-12", "ninja"})
    CHECK(name_list_matches(kDefaultExclude, tool));
  for (const char* user : {"python3", "python3.11", "torchrun", "bash"})
    CHECK_FALSE(name_list_matches(kDefaultExclude, user));
}
