#include "core/json_text.hpp"

#include <algorithm>
#include <string>
#include <unordered_set>
#include <vector>

namespace autotune {

std::optional<std::size_t> json_too_deep(std::string_view text) {
  std::size_t depth = 0;
  bool in_string = false;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\')
        ++i;  // the escaped character cannot end the string
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > kMaxJsonDepth) return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return std::nullopt;
}

namespace {

using Json = nlohmann::json;

// The keys of one object being read: searched in order while it is small,
// hashed once it is not (a cachefile's cache holds thousands).
class ObjectKeys {
 public:
  bool insert(const std::string& key) {
    if (!many_.empty()) return many_.insert(key).second;
    if (std::find(few_.begin(), few_.end(), key) != few_.end()) return false;
    few_.push_back(key);
    if (few_.size() > 32) {
      many_.insert(std::make_move_iterator(few_.begin()), std::make_move_iterator(few_.end()));
      few_.clear();
    }
    return true;
  }

 private:
  std::vector<std::string> few_;
  std::unordered_set<std::string> many_;
};

// nlohmann's own DOM builder, refusing a key given twice in one object where
// it would keep the last value without a word. (Its callback parser could do
// the same at about 15 times the cost on a 16 MB cachefile; this is about 10%.)
class DomRefusingRepeatedKeys : public nlohmann::detail::json_sax_dom_parser<Json> {
 public:
  using Base = nlohmann::detail::json_sax_dom_parser<Json>;
  using Base::Base;

  bool start_object(std::size_t size) {
    open_.emplace_back();
    return Base::start_object(size);
  }
  bool end_object() {
    open_.pop_back();
    return Base::end_object();
  }
  bool key(string_t& key) {
    if (!open_.back().insert(key))
      throw Json::parse_error::create(101, 0, "the key \"" + key + "\" is given twice in one object",
                                      static_cast<const Json*>(nullptr));
    return Base::key(key);
  }

 private:
  std::vector<ObjectKeys> open_;
};

}  // namespace

nlohmann::json parse_json(std::string_view text) {
  if (const auto at = json_too_deep(text))
    throw Json::parse_error::create(
        101, *at + 1, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (arrays and objects)",
        static_cast<const Json*>(nullptr));
  Json result;
  DomRefusingRepeatedKeys builder(result);
  try {
    Json::sax_parse(text, &builder);
  } catch (const Json::out_of_range& e) {
    // A number beyond a double's range: as malformed as a syntax error.
    const std::string what = e.what();  // "[json.exception.out_of_range.406] number overflow ..."
    const auto bracket = what.find("] ");
    throw Json::parse_error::create(101, 0, bracket == std::string::npos ? what : what.substr(bracket + 2),
                                    static_cast<const Json*>(nullptr));
  }
  return result;
}

}  // namespace autotune
