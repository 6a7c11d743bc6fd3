#include "store/record_rules.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <string_view>

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

namespace {

// Hand-written scans, not std::regex: libstdc++'s regex recurses once per
// character of a repeated class and exhausted the stack on a goal with a
// 27 000-character name.

bool is_scheme_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '+' || c == '.' || c == '-';
}
bool is_space(char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; }
bool is_name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; }

// "scheme://USERINFO@" -> "scheme://<redacted>@", the scheme a letter then
// letters, digits, '+', '.' or '-'; USERINFO holds no '/', '@', space or quote.
std::string redact_user_info(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::size_t copied = 0;
  for (std::size_t at = text.find("://"); at != std::string::npos; at = text.find("://", at + 1)) {
    if (at < copied) continue;
    std::size_t start = at;
    bool has_letter = false;
    while (start > copied && is_scheme_char(text[start - 1])) {
      --start;
      has_letter = has_letter || std::isalpha(static_cast<unsigned char>(text[start]));
    }
    if (!has_letter) continue;
    const std::size_t info = at + 3;
    std::size_t end = info;
    while (end < text.size() && text[end] != '/' && text[end] != '@' && !is_space(text[end]) &&
           text[end] != '\'' && text[end] != '"')
      ++end;
    if (end == info || end == text.size() || text[end] != '@') continue;
    out.append(text, copied, info - copied);
    out += "<redacted>";
    copied = end;
    at = end;
  }
  out.append(text, copied, std::string::npos);
  return out;
}

// "?NAME=VALUE" or "&NAME=VALUE" -> "...=<redacted>" where NAME (letters,
// digits, '_' or '-') contains key, token, secret, password, passwd or auth
// in any case; VALUE runs to '&', '#', a space or a quote.
std::string redact_query_secrets(const std::string& text) {
  static constexpr std::array<std::string_view, 6> kWords{"key",      "token",  "secret",
                                                          "password", "passwd", "auth"};
  std::string out;
  out.reserve(text.size());
  std::size_t copied = 0;
  for (std::size_t at = 0; at < text.size(); ++at) {
    if (text[at] != '?' && text[at] != '&') continue;
    std::size_t name_end = at + 1;
    while (name_end < text.size() && is_name_char(text[name_end])) ++name_end;
    if (name_end == text.size() || text[name_end] != '=') continue;
    std::string name = text.substr(at + 1, name_end - at - 1);
    std::transform(name.begin(), name.end(), name.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    if (std::none_of(kWords.begin(), kWords.end(),
                     [&](std::string_view w) { return name.find(w) != std::string::npos; }))
      continue;
    const std::size_t value = name_end + 1;
    std::size_t end = value;
    while (end < text.size() && text[end] != '&' && text[end] != '#' && !is_space(text[end]) &&
           text[end] != '\'' && text[end] != '"')
      ++end;
    if (end == value) continue;
    out.append(text, copied, value - copied);
    out += "<redacted>";
    copied = end;
    at = end - 1;
  }
  out.append(text, copied, std::string::npos);
  return out;
}

}  // namespace

std::string redact_url_credentials(const std::string& text) {
  return redact_query_secrets(redact_user_info(text));
}

}  // namespace autotune::store
