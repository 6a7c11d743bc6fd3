// One line a plugin skill wrote back: parsed as JSON, then checked against the reply envelope.
#include <nlohmann/json.hpp>

#include "fuzz_support.hpp"
#include "skills/plugin/plugin_skill.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace autotune;
  const auto line = nlohmann::json::parse(fuzz::text_of(data, size), nullptr, /*allow_exceptions=*/false);
  if (line.is_discarded()) return 0;  // the client records a malformed reply before this point
  fuzz::expect_user_errors_only([&] {
    const auto reply = skills::PluginSkillClient::read_reply(line);
    (void)reply;
  });
  return 0;
}
