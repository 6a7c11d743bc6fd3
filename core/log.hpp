#pragma once
// Diagnostics on stderr. stdout is reserved for results (and --json output).
#include <string>
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

// Text from plugins, LLMs and measured programs is untrusted: printed as it
// is, an escape sequence could clear the screen or retitle the terminal, a
// carriage return overwrite a line. This shows every control character but
// newline and tab as \xHH; other bytes (UTF-8 included) pass unchanged.
std::string terminal_safe(std::string_view text);

// Passes everything later written to std::cout and std::cerr through
// terminal_safe (write() applies it itself). JSON output is unaffected: its
// strings hold no raw control characters.
void escape_control_characters_in_standard_streams();

}  // namespace autotune::log
