// The fitted constants as data: the registry reads and writes the values of
// the target files, write_fitted_target keeps every comment and key while
// replacing values in place, and the content hash tells targets apart by
// their figures, not their comments.
#include "sim/target_constants.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.hpp"

using namespace autotune;
namespace fs = std::filesystem;

namespace {

fs::path target_file(const std::string& name) {
  return fs::path(AUTOTUNE_SOURCE_DIR) / "configs" / "targets" / (name + ".yaml");
}

std::string read(const fs::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

fs::path scratch(const std::string& name) {
  const fs::path dir =
      fs::temp_directory_path() / ("autotune_target_constants_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  return dir / name;
}

}  // namespace

TEST_CASE("fitted constants: each names a key of the target files, reads its value and stays in its bounds") {
  for (const std::string name : {"trn1", "trn2"}) {
    const sim::TargetSpec target = sim::load_target_file(target_file(name));
    const std::string text = read(target_file(name));
    for (const auto& c : sim::fitted_constants()) {
      CAPTURE(name);
      CAPTURE(c.name);
      if (!c.applies_to(target)) {
        // A mechanism the target lacks (trn1 has no descriptor generators): no key, not fitted.
        CHECK(sim::fitted_values(target).count(std::string(c.name)) == 0);
        continue;
      }
      const std::string key(c.key);
      const std::string leaf = key.substr(key.rfind('.') + 1);
      CHECK(text.find(leaf + ":") != std::string::npos);
      CHECK(c.low < c.high);
      CHECK(c.get(target) >= c.low);
      CHECK(c.get(target) <= c.high);
      sim::TargetSpec changed = target;
      c.set(changed, c.get(target) * 1.5 + 1);
      CHECK(c.get(changed) == doctest::Approx(c.get(target) * 1.5 + 1));
    }
  }
  CHECK(sim::find_fitted_constant("dma.fixed_cost_us") == sim::find_fitted_constant("dma_fixed_cost"));
  CHECK_THROWS_AS(sim::fitted_constant("matmul_min_cycles"), UserError);
}

TEST_CASE("write_fitted_target: values replaced in place, every other line kept, the result loads") {
  const fs::path source = target_file("trn2");
  const fs::path out = scratch("fitted-trn2.yaml");
  const std::map<std::string, double> values = {
      {"dma_fixed_cost", 2.08}, {"access_startup", 36}, {"launch_overhead", 18.25}};
  sim::write_fitted_target(source, values, out, "fitted on 3 rows of my-measurements.jsonl\nsecond line");

  const sim::TargetSpec original = sim::load_target_file(source);
  const sim::TargetSpec fitted = sim::load_target_file(out);
  CHECK(fitted.dma_fixed_cost_s == doctest::Approx(2.08e-6));
  CHECK(fitted.access_startup_cycles == doctest::Approx(36));
  CHECK(fitted.launch_overhead_s == doctest::Approx(18.25e-6));
  CHECK(fitted.cross_engine_dependency_cycles == original.cross_engine_dependency_cycles);
  CHECK(fitted.dma_efficiency_half_bytes == original.dma_efficiency_half_bytes);
  CHECK(fitted.name == original.name);

  // The header, then the source's lines: the same lines, the three values changed.
  const auto before = lines_of(read(source));
  const auto after = lines_of(read(out));
  REQUIRE(after.size() > before.size());
  CHECK(after[0] == "# fitted on 3 rows of my-measurements.jsonl");
  CHECK(after[1] == "# second line");
  const std::size_t offset = after.size() - before.size();
  for (std::size_t i = 0; i < offset; ++i) CHECK(after[i].starts_with("#"));
  int changed = 0;
  for (std::size_t i = 0; i < before.size(); ++i) {
    if (before[i] == after[offset + i]) continue;
    ++changed;
    CAPTURE(before[i]);
    CAPTURE(after[offset + i]);
    // Only the value changed: the key before it and the comment after it are kept.
    CHECK(before[i].substr(0, before[i].find(':')) ==
          after[offset + i].substr(0, after[offset + i].find(':')));
    if (before[i].find('#') != std::string::npos)
      CHECK(before[i].substr(before[i].find('#')) == after[offset + i].substr(after[offset + i].find('#')));
  }
  CHECK(changed == 3);
  CHECK(read(out).find("fixed_cost_us: 2.08") != std::string::npos);

  // Misuse: an unknown constant, an unreadable source.
  CHECK_THROWS_AS(sim::write_fitted_target(source, {{"clock", 1}}, out, ""), UserError);
  CHECK_THROWS_AS(sim::write_fitted_target(scratch("missing.yaml"), values, out, ""), UserError);
  fs::remove_all(out.parent_path());
}

TEST_CASE("target_content_hash: one constant changed changes it, comments do not") {
  const fs::path source = target_file("trn1");
  const sim::TargetSpec original = sim::load_target_file(source);
  const std::string hash = sim::target_content_hash(original);
  CHECK(hash.size() == 16);
  CHECK(sim::target_content_hash(sim::load_target_file(source)) == hash);

  // The same figures with a comment added and one without: the same hash.
  const fs::path recommented = scratch("recommented.yaml");
  {
    std::ofstream out(recommented);
    out << "# a comment\n" << read(source);
  }
  CHECK(sim::target_content_hash(sim::load_target_file(recommented)) == hash);

  const fs::path fitted = scratch("fitted.yaml");
  sim::write_fitted_target(source, {{"dma_efficiency_half_bytes", 1300}}, fitted, "test");
  CHECK(sim::target_content_hash(sim::load_target_file(fitted)) != hash);

  // In memory too: a target changed by set_fitted_values is another target.
  sim::TargetSpec changed = original;
  sim::set_fitted_values(changed, {{"cross_engine_dependency", 101}});
  CHECK(sim::target_content_hash(changed) != hash);
  CHECK(sim::target_content_hash(sim::load_target_file(target_file("trn2"))) != hash);
  fs::remove_all(fitted.parent_path());
}

TEST_CASE("fitted constants: docs/calibration.md lists each with its key, unit and bounds") {
  const std::string docs = read(fs::path(AUTOTUNE_SOURCE_DIR) / "docs" / "calibration.md");
  for (const auto& c : sim::fitted_constants()) {
    CAPTURE(c.name);
    char bounds[64];
    std::snprintf(bounds, sizeof bounds, "%g-%g", c.low, c.high);
    CHECK(docs.find("| `" + std::string(c.name) + "` | `" + std::string(c.key) + "` | " +
                    std::string(c.unit) + " | " + bounds + " |") != std::string::npos);
  }
}
