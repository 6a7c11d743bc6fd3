#include "core/log.hpp"

#include <atomic>
#include <cstdio>
#include <mutex>

namespace autotune::log {
namespace {
std::atomic<Level> current_level{Level::warn};
std::mutex output_mutex;
constexpr const char* kLevelNames[] = {"debug", "info", "warning", "error", ""};
}  // namespace

void set_level(Level level) { current_level = level; }
Level level() { return current_level; }

void write(Level level, std::string_view message) {
  if (level < current_level.load()) return;
  std::lock_guard lock(output_mutex);
  std::fprintf(stderr, "autotune: %s: %.*s\n", kLevelNames[static_cast<int>(level)],
               static_cast<int>(message.size()), message.data());
}

}  // namespace autotune::log
