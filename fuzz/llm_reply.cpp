// An LLM endpoint's response body: the chat completion, then the JSON object and the kernel source
// the loop extracts from the model's text.
#include "fuzz_support.hpp"
#include "orchestrator/llm/llm_client.hpp"
#include "orchestrator/llm/llm_source_proposer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace autotune;
  const std::string body = fuzz::text_of(data, size);
  fuzz::expect_user_errors_only([&] {
    const orchestrator::llm::ChatCompletion completion = orchestrator::llm::parse_chat_completion(body);
    // The content as the model's text, or the raw input when the body is no completion.
    const std::string& text = completion.error.empty() ? completion.content : body;
    const auto extracted = orchestrator::llm::extract_json_object(text);
    // The loop copies and dumps what it got (into the decision log): so does this.
    if (extracted.object) {
      const nlohmann::json copy = *extracted.object;
      (void)copy.dump();
    }
    std::string reason;
    (void)orchestrator::llm::extract_kernel_source(text, reason);
  });
  return 0;
}
