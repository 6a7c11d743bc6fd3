#include "core/error.hpp"

namespace autotune {

void fail_internal_check(const char* condition, const std::string& message, std::source_location where) {
  throw InternalError(std::string("internal error: ") + message + " (" + condition + " failed at " +
                      where.file_name() + ":" + std::to_string(where.line()) + ")");
}

}  // namespace autotune
