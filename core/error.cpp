#include "core/error.hpp"

namespace autotune {

std::string single_line(const std::string& text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += ch;
    }
  }
  return out;
}

void fail_internal_check(const char* condition, const std::string& message, std::source_location where) {
  throw InternalError(std::string("internal error: ") + message + " (" + condition + " failed at " +
                      where.file_name() + ":" + std::to_string(where.line()) + ")");
}

}  // namespace autotune
