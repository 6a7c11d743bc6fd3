// One line a plugin skill wrote back: parsed as JSON, then checked against the reply envelope.
#include <nlohmann/json.hpp>

#include "core/json_text.hpp"
#include "fuzz_support.hpp"
#include "skills/plugin/plugin_skill.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace autotune;
  // As the client reads it (core/subprocess.cpp), depth bounded.
  nlohmann::json line;
  try {
    line = parse_json(fuzz::text_of(data, size));
  } catch (const nlohmann::json::exception&) {
    return 0;  // the client records a malformed reply before this point
  }
  fuzz::expect_user_errors_only([&] {
    const auto reply = skills::PluginSkillClient::read_reply(line);
    (void)reply;
    const nlohmann::json copy = line;  // the evidence is kept with the decision
    (void)copy.dump();
  });
  return 0;
}
