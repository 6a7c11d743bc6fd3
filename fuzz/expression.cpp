// A constraint expression over three parameters and a constant, parsed then evaluated.
#include "search/expression.hpp"

#include <array>

#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace autotune;
  const std::string text = fuzz::text_of(data, size);
  const search::SymbolResolver resolve = [](std::string_view name) -> std::optional<search::Symbol> {
    if (name == "a") return search::Symbol{0};
    if (name == "b") return search::Symbol{1};
    if (name == "c") return search::Symbol{2};
    if (name == "limit") return search::Symbol{std::nullopt, 4096.0};
    return std::nullopt;
  };
  fuzz::expect_user_errors_only([&] {
    const auto expression = search::Expression::parse(text, resolve);
    for (const auto& values : {std::array<double, 3>{1, 2, 3}, std::array<double, 3>{0, -1, 1e300},
                               std::array<double, 3>{64, 128, 0}})
      (void)expression.holds(values);
  });
  return 0;
}
