#include "core/log.hpp"

#include <atomic>
#include <cstdio>
#include <iostream>
#include <mutex>
#include <streambuf>

namespace autotune::log {
namespace {
std::atomic<Level> current_level{Level::warn};
std::mutex output_mutex;
constexpr const char* kLevelNames[] = {"debug", "info", "warning", "error", ""};

bool is_control(unsigned char c) { return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f; }

void append_escaped(std::string& out, unsigned char c) {
  static constexpr char kHex[] = "0123456789abcdef";
  out += "\\x";
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

// Wraps a stream's buffer, escaping control characters on their way out.
class EscapingBuffer : public std::streambuf {
 public:
  explicit EscapingBuffer(std::streambuf* target) : target_(target) {}

 protected:
  int_type overflow(int_type ch) override {
    if (traits_type::eq_int_type(ch, traits_type::eof())) return traits_type::not_eof(ch);
    const char c = traits_type::to_char_type(ch);
    const std::streamsize n = xsputn(&c, 1);
    return n == 1 ? ch : traits_type::eof();
  }
  std::streamsize xsputn(const char* data, std::streamsize count) override {
    const std::string safe = terminal_safe(std::string_view(data, static_cast<std::size_t>(count)));
    return target_->sputn(safe.data(), static_cast<std::streamsize>(safe.size())) ==
                   static_cast<std::streamsize>(safe.size())
               ? count
               : 0;
  }
  int sync() override { return target_->pubsync(); }

 private:
  std::streambuf* target_;
};
}  // namespace

std::string terminal_safe(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (is_control(c))
      append_escaped(out, c);
    else
      out += ch;
  }
  return out;
}

void escape_control_characters_in_standard_streams() {
  // Never destroyed: the streams flush through them until the very end of the
  // process (std::ios_base::Init's destructor runs after function statics').
  static auto* const out_buffer = new EscapingBuffer(std::cout.rdbuf());
  static auto* const err_buffer = new EscapingBuffer(std::cerr.rdbuf());
  std::cout.rdbuf(out_buffer);
  std::cerr.rdbuf(err_buffer);
}

void set_level(Level level) { current_level = level; }
Level level() { return current_level; }

void write(Level level, std::string_view message) {
  if (level < current_level.load()) return;
  std::lock_guard lock(output_mutex);
  const std::string safe = terminal_safe(message);
  std::fprintf(stderr, "autotune: %s: %.*s\n", kLevelNames[static_cast<int>(level)],
               static_cast<int>(safe.size()), safe.data());
}

}  // namespace autotune::log
