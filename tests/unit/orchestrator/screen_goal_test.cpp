// A goal's `screen:`: read, resolved and written back; every misuse is one
// line naming the file, the line and the key, before anything runs.
#include <doctest/doctest.h>

#include <filesystem>

#include "core/error.hpp"
#include "orchestrator/goal.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using namespace autotune::orchestrator;

namespace {

const std::string kStandin = std::string(AUTOTUNE_SOURCE_DIR) + "/bench/targets/trn2-standin.yaml";

std::string sim_goal(const std::string& screen, const std::string& target = kStandin) {
  return "name: g\n"
         "kernel: {family: gemm, shape: {M: 256, N: 512, K: 512}, dtype: bf16}\n"
         "target: " +
         target +
         "\n"
         "search: {strategy: bayes, batch_size: 3}\n" +
         screen;
}

std::string command_goal(const std::string& screen) {
  return "name: c\n"
         "target: {kind: command, argv: [python3, bench.py, \"{tile_m}\"]}\n"
         "search:\n"
         "  space: {tile_m: [32, 64, 128], pipeline_depth: [1, 2]}\n" +
         screen;
}

std::string error_of(const std::string& text) {
  const testing::TempDir dir;
  dir.write("bench.py", "print('{}')\n");
  const auto path = dir.write("goal.yaml", text);
  try {
    load_goal(path);
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

Goal loaded(const testing::TempDir& dir, const std::string& text) {
  dir.write("bench.py", "print('{}')\n");
  return load_goal(dir.write("goal.yaml", text));
}

}  // namespace

TEST_CASE("a screen in front of a stand-in device: defaults, resolved, written back") {
  const testing::TempDir dir;
  const Goal goal = loaded(dir, sim_goal("screen: {target: trn2}\n"));
  REQUIRE(goal.screen);
  CHECK(goal.screen->target == "trn2");
  CHECK(goal.screen->keep == 3);      // the batch size
  CHECK(goal.screen->propose == 96);  // 32 x keep
  CHECK(goal.screen->correction == "refit");
  CHECK(goal.screen->family == "gemm");
  CHECK(goal.screen->shape == goal.shape);
  const std::string yaml = to_yaml(goal);
  CHECK(yaml.find("screen:") != std::string::npos);
  const Goal again = loaded(dir, yaml);
  REQUIRE(again.screen);
  CHECK(again.screen->keep == 3);
  CHECK(again.screen->propose == 96);
  CHECK(to_yaml(again) == yaml);
  CHECK_FALSE(loaded(dir, sim_goal("")).screen);
}

TEST_CASE("a command target's screen names the kernel the device runs") {
  const testing::TempDir dir;
  const Goal goal = loaded(
      dir, command_goal("screen:\n  target: trn2\n  keep: 2\n  propose: 10\n  correction: ratio\n"
                        "  kernel: {family: gemm, variant: hoisted, shape: {M: 256, N: 512, K: 512}}\n"));
  REQUIRE(goal.screen);
  CHECK(goal.screen->variant == "hoisted");
  CHECK(goal.screen->dtype == "bf16");  // the family's first
  CHECK(goal.screen->shape.at("N") == 512);
  CHECK(goal.screen->correction == "ratio");
  const Goal again = loaded(dir, to_yaml(goal));
  REQUIRE(again.screen);
  CHECK(again.screen->variant == "hoisted");
  CHECK(again.screen->shape == goal.screen->shape);
}

TEST_CASE("bad screen keys are one line naming the file, the line and the key") {
  auto check = [](const std::string& text, const std::string& where, const std::string& what) {
    const std::string error = error_of(text);
    CAPTURE(error);
    CHECK(error.find("goal.yaml:" + where) != std::string::npos);
    CHECK(error.find(what) != std::string::npos);
    CHECK(error.find('\n') == std::string::npos);
  };
  check(sim_goal("screen: {target: trn2, kep: 2}\n"), "5: screen", "kep");
  check(sim_goal("screen:\n  target: trn2\n  keep: 0\n"), "7: screen.keep", "accepted: 1 to 4096");
  // 32 x keep, the default proposals, overflowed an int and read as 64.
  check(sim_goal("screen:\n  target: trn2\n  keep: 100000000\n"), "7: screen.keep", "accepted: 1 to 4096");
  check(sim_goal("screen:\n  target: trn2\n  propose: 2000000000\n"), "7: screen.propose", "at most 1000000");
  check(sim_goal("screen:\n  target: trn2\n  keep: 4\n  propose: 4\n"), "8: screen.propose",
        "more than keep");
  check(sim_goal("screen:\n  target: trn2\n  correction: magic\n"), "7: screen.correction",
        "refit, ratio or none");
  check(sim_goal("screen:\n  target: trn9\n"), "6: screen.target", "trn9");
  check(sim_goal("screen: {keep: 2}\n"), "5: screen.target", "missing required key");
  check(sim_goal("screen: [trn2]\n"), "5: screen", "expected a mapping");
  check(sim_goal("screen:\n  target: trn2\n", "trn2"), "6: screen.target", "same machine");
  check(sim_goal("screen:\n  target: trn2\n  kernel: {family: gemm}\n"), "7: screen.kernel",
        "only for a command target");
  check(command_goal("screen: {target: trn2, keep: 1}\n"), "5: screen.kernel", "missing required key");
  check(command_goal("screen:\n  target: trn2\n  kernel: {family: gemm, variant: blocked}\n"),
        "7: screen.kernel.variant", "unknown variant 'blocked'");
  check(command_goal("screen:\n  target: trn2\n  kernel: {family: add, variant: tiled}\n"),
        "7: screen.kernel.variant", "'tile_m' is not a parameter of add/tiled");
  const std::string cachefile = std::string(AUTOTUNE_SHARED_DIR) + "/data/tuning/convolution/RTX_3090.json";
  if (std::filesystem::exists(cachefile))
    check("name: r\ntarget: {kind: replay, cachefile: " + cachefile + "}\nscreen: {target: trn2}\n",
          "3: screen", "cannot be simulated");
}
