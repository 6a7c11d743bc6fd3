// The values of `profile --shape` and `--param`: a shape for the GEMM family, then NAME=VALUE lines
// resolved against its blocked variant.
#include <map>
#include <sstream>

#include "fuzz_support.hpp"
#include "kernels/evaluate.hpp"
#include "kernels/family.hpp"
#include "sim/program.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace autotune;
  const std::string text = fuzz::text_of(data, size);
  const auto newline = text.find('\n');
  const std::string shape = text.substr(0, newline);
  const auto& family = kernels::family_registry().get("gemm");
  fuzz::expect_user_errors_only([&] { (void)kernels::parse_shape(family, shape); });
  (void)sim::parse_dtype(shape);
  if (newline == std::string::npos) return 0;
  std::map<std::string, std::string> given;
  std::istringstream lines(text.substr(newline + 1));
  for (std::string line; std::getline(lines, line);) {
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    given[line.substr(0, eq)] = line.substr(eq + 1);
  }
  fuzz::expect_user_errors_only([&] { (void)kernels::resolve_params(family.variant("blocked_mnk"), given); });
  return 0;
}
