#pragma once
// Reading JSON text that came from outside (a command's stdout, an LLM reply,
// a plugin's evidence, a recorded file). nlohmann::json parses iteratively,
// but copying, comparing, dumping and destroying a value recurse: a value
// nested 100,000 levels deep (200 KB of brackets) parses, then exhausts the
// stack wherever it goes next. Every reader of such text goes through here.
#include <cstddef>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

namespace autotune {

constexpr std::size_t kMaxJsonDepth = 256;

// The byte offset where `text` first opens its (kMaxJsonDepth+1)-th nested
// array or object (brackets inside strings do not count); nothing when it
// stays within bounds.
std::optional<std::size_t> json_too_deep(std::string_view text);

// nlohmann::json::parse(text), refusing with the same nlohmann::json::
// parse_error a syntax error gets, so that callers' error handling covers
// them: deeper text ("... nested deeper than 256 levels"), a key given twice
// in one object, and a number beyond a double's range.
nlohmann::json parse_json(std::string_view text);

}  // namespace autotune
