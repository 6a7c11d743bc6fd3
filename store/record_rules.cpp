#include "store/record_rules.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <regex>

#include "core/error.hpp"
#include "store/store.hpp"

namespace autotune::store::detail {
namespace {

bool is_credential_key(std::string key) {
  std::transform(key.begin(), key.end(), key.begin(), [](unsigned char c) { return std::tolower(c); });
  constexpr std::array<std::string_view, 6> kMarkers{"authorization", "api_key", "api-key",
                                                     "apikey",        "secret",  "password"};
  return std::any_of(kMarkers.begin(), kMarkers.end(),
                     [&](std::string_view marker) { return key.find(marker) != std::string::npos; });
}

// Whether process `pid` of this host exists (EPERM: it does, another user's).
bool process_exists(int64_t pid) {
  return pid > 0 && (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM);
}

}  // namespace

const std::string& plain_metric_name(const std::string& metric) {
  const bool plain = !metric.empty() && std::all_of(metric.begin(), metric.end(), [](unsigned char c) {
    return std::isalnum(c) || c == '_';
  });
  if (!plain) {
    throw UserError("ranking metric '" + metric + "' is not a plain name; accepted: letters, digits and '_'");
  }
  return metric;
}

Json redact_credentials(const Json& value) {
  if (value.is_string()) return redact_url_credentials(value.get<std::string>());
  if (value.is_object()) {
    Json out = Json::object();
    for (const auto& [key, item] : value.items()) {
      out[key] = is_credential_key(key) ? Json("<redacted>") : redact_credentials(item);
    }
    return out;
  }
  if (value.is_array()) {
    Json out = Json::array();
    for (const auto& item : value) out.push_back(redact_credentials(item));
    return out;
  }
  return value;
}

std::string or_now(const std::string& timestamp) { return timestamp.empty() ? utc_now() : timestamp; }

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string this_host() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0) return "localhost";
  return name;
}

int64_t this_pid() { return ::getpid(); }

bool lease_holder_dead(const LeaseHolder& holder, double stale_after_s) {
  return holder.heartbeat_age_s > stale_after_s ||
         (holder.host == this_host() && !process_exists(holder.pid));
}

}  // namespace autotune::store::detail

namespace autotune::store {

std::string redact_url_credentials(const std::string& text) {
  static const std::regex user_info(R"(([A-Za-z][A-Za-z0-9+.-]*://)[^/@\s'"]+@)");
  static const std::regex query_secret(
      R"(([?&](?:[A-Za-z0-9_-]*(?:key|token|secret|password|passwd|auth)[A-Za-z0-9_-]*)=)[^&#\s'"]+)",
      std::regex::icase);
  return std::regex_replace(std::regex_replace(text, user_info, "$1<redacted>@"), query_secret,
                            "$1<redacted>");
}

}  // namespace autotune::store
