// The calibration target as a test: simulated time is deterministic, so the
// NKI matmul tutorial's four structures (the rows of
// configs/calibration/public.jsonl from that source) must stay within
// 0.8-1.25 of hardware, in the tutorial's order, and the tables that quote
// them must say what the simulator gives.
#include "kernels/calibration.hpp"

#include <doctest/doctest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

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

TEST_CASE("calibration: the NKI matmul tutorial's four steps within 0.8-1.25 of hardware, in order") {
  std::vector<kernels::Measurement> tutorial;
  for (const auto& m :
       kernels::read_measurements(std::string(AUTOTUNE_SOURCE_DIR) + "/configs/calibration/public.jsonl"))
    if (m.source == "NKI matmul tutorial") tutorial.push_back(m);
  const auto rows = kernels::run_calibration(tutorial);
  REQUIRE(rows.size() == 4);
  double previous = 1e300;
  for (const auto& row : rows) {
    CAPTURE(row.measurement.variant);
    CHECK(row.measurement.target == "trn1");
    CHECK(row.measurement.fit);
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
    const std::string& variant = row.measurement.variant;
    CAPTURE(variant);
    const std::string ms = two_decimals(row.simulated_ms), ratio = two_decimals(row.ratio());
    CHECK(kernels_md.find("| " + variant + " | " + ms + " | " + two_decimals(row.measurement.measured_ms) +
                          " | " + ratio + " |") != std::string::npos);
    CHECK(readme.find("| `" + variant + "` | " + ms + " ms") != std::string::npos);
  }
}
