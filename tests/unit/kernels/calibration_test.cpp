// The calibration target as a test: simulated time is deterministic, so the
// tutorial's four structures must stay within 0.75-1.25 of hardware, in the
// tutorial's order, and the tables that quote them must say what the
// simulator gives.
#include "kernels/calibration.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

using namespace autotune;

namespace {

std::string read_source_file(const std::string& relative) {
  std::ifstream in(std::string(AUTOTUNE_SOURCE_DIR) + "/" + relative);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string two_decimals(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

}  // namespace

TEST_CASE("calibration: the NKI matmul tutorial's four steps within 0.75-1.25 of hardware, in order") {
  const auto rows = kernels::run_calibration(sim::load_target("trn1"));
  REQUIRE(rows.size() == 4);
  double previous = 1e300;
  for (const auto& row : rows) {
    CAPTURE(row.variant);
    REQUIRE_MESSAGE(row.valid, row.error);
    CHECK(row.ratio() >= kernels::kCalibrationLow);
    CHECK(row.ratio() <= kernels::kCalibrationHigh);
    CHECK(row.simulated_ms < previous);  // the tutorial's order: each step faster than the last
    previous = row.simulated_ms;
  }

  // The documented tables quote these figures.
  const std::string kernels_md = read_source_file("docs/kernels.md");
  const std::string readme = read_source_file("README.md");
  for (const auto& row : rows) {
    CAPTURE(row.variant);
    const std::string ms = two_decimals(row.simulated_ms), ratio = two_decimals(row.ratio());
    CHECK(kernels_md.find("| " + row.variant + " | " + ms + " | " + two_decimals(row.measured_ms) + " | " +
                          ratio + " |") != std::string::npos);
    CHECK(readme.find("| `" + row.variant + "` | " + ms + " ms") != std::string::npos);
  }
}
