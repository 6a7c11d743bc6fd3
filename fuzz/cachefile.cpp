// A Kernel Tuner cachefile, as search-bench loads it (the file's objective) and
// as a replay goal's target does (a named field, read as a positive time).
#include "fuzz_support.hpp"
#include "search/recorded_space.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace autotune;
  const auto path = fuzz::file_with(fuzz::text_of(data, size), "cache.json");
  fuzz::expect_user_errors_only([&] { (void)search::RecordedSpace::load(path); });
  fuzz::expect_user_errors_only(
      [&] { (void)search::RecordedSpace::load(path, {.objective = "time", .as_time = true}); });
  return 0;
}
