#pragma once
// Diagnostics on stderr. stdout is reserved for results (and --json output).
#include <string_view>

namespace autotune::log {

enum class Level { debug = 0, info = 1, warn = 2, error = 3, quiet = 4 };

void set_level(Level level);
Level level();
void write(Level level, std::string_view message);

inline void debug(std::string_view m) { write(Level::debug, m); }
inline void info(std::string_view m) { write(Level::info, m); }
inline void warn(std::string_view m) { write(Level::warn, m); }
inline void error(std::string_view m) { write(Level::error, m); }

}  // namespace autotune::log
