// The goal reader: a YAML goal file, as `autotune run` reads it before any work.
#include "orchestrator/goal.hpp"

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace autotune;
  const auto path = fuzz::file_with(fuzz::text_of(data, size), "goal.yaml");
  fuzz::expect_user_errors_only([&] {
    const orchestrator::Goal goal = orchestrator::load_goal(path);
    (void)orchestrator::to_yaml(goal);  // what the store keeps
  });
  return 0;
}
