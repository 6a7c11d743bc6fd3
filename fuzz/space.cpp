// A search space and its constraints, as a goal's `search:` section or a space file holds them.
#include <yaml-cpp/yaml.h>

#include "core/config_reader.hpp"
#include "fuzz_support.hpp"
#include "search/space_yaml.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace autotune;
  const auto path = fuzz::file_with(fuzz::text_of(data, size), "space.yaml");
  fuzz::expect_user_errors_only([&] {
    const search::SearchSpace space = search::load_space_file(path.string(), {{"sbuf_bytes", 196608.0}});
    if (space.size() > 0 && space.size() < 100000) (void)space.size();
  });
  return 0;
}
