// A simulated target's result-cache identity holds its target file's content
// hash (sim/target_constants.hpp): a recalibrated target never reuses results
// cached under another one.
#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "sim/target.hpp"
#include "sim/target_constants.hpp"
#include "skills/targets/sim_target.hpp"

using namespace autotune;

TEST_CASE("sim target: two target files differing in one constant get different cache keys") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("autotune_cache_identity_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  const std::string source = std::string(AUTOTUNE_SOURCE_DIR) + "/configs/targets/trn1.yaml";
  const std::string copy = (dir / "copy.yaml").string(), recalibrated = (dir / "recalibrated.yaml").string();
  sim::write_fitted_target(source, {}, copy, "an unchanged copy");
  sim::write_fitted_target(source, {{"dma_fixed_cost", 1.4}}, recalibrated, "one constant changed");
  auto identity = [](const std::string& target) {
    return skills::SimTarget({"gemm", {{"M", 256}, {"N", 512}, {"K", 512}}, "bf16", target}).cache_identity();
  };
  const std::string a = identity(copy), b = identity(recalibrated);
  CHECK(a != b);
  CHECK(a.find(sim::target_content_hash(sim::load_target_file(copy))) != std::string::npos);
  CHECK(b.find(sim::target_content_hash(sim::load_target_file(recalibrated))) != std::string::npos);
  // The copy has trn1's figures: the same hash (the key still differs by the name it was given).
  CHECK(sim::target_content_hash(sim::load_target_file(copy)) ==
        sim::target_content_hash(sim::load_target("trn1")));
  std::filesystem::remove_all(dir);
}
