#include "report/html.hpp"

#include <map>
#include <string_view>

#include "core/error.hpp"

namespace autotune::report {
namespace {

const std::map<std::string_view, std::string_view>& assets() {
  static const std::map<std::string_view, std::string_view> files{
#include "web_assets.inc"
  };
  return files;
}

std::string_view asset(std::string_view name) {
  const auto it = assets().find(name);
  AUTOTUNE_CHECK(it != assets().end(), "web asset " + std::string(name) + " was not embedded");
  return it->second;
}

// Replaces the first `/*@NAME@*/` in `page` with `value`.
void fill(std::string& page, std::string_view name, std::string_view value) {
  const std::string marker = "/*@" + std::string(name) + "@*/";
  const auto at = page.find(marker);
  AUTOTUNE_CHECK(at != std::string::npos, "page template without " + marker);
  page.replace(at, marker.size(), value);
}

// Text inside a <script> element must not close it, and HTML text must not open tags.
std::string script_safe(std::string text) {
  for (std::size_t at = 0; (at = text.find("</", at)) != std::string::npos; at += 3)
    text.replace(at, 2, "<\\/");
  return text;
}

// JSON inside a <script> element: `<` would let `<!--<script>` or `</script>`
// in any stored string change how the HTML parser reads the element (a blank
// page, or script); `>`, `&` and U+2028/2029 are escaped with it so the text
// is inert as HTML and as script. Each occurs only inside strings, where
// \uXXXX reads back as the same character.
std::string json_for_script(const std::string& json) {
  std::string out;
  out.reserve(json.size());
  for (std::size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '<')
      out += "\\u003c";
    else if (c == '>')
      out += "\\u003e";
    else if (c == '&')
      out += "\\u0026";
    else if (c == '\xE2' && i + 2 < json.size() && json[i + 1] == '\x80' &&
             (json[i + 2] == '\xA8' || json[i + 2] == '\xA9')) {
      out += json[i + 2] == '\xA8' ? "\\u2028" : "\\u2029";
      i += 2;
    } else
      out += c;
  }
  return out;
}

std::string html_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

}  // namespace

std::string report_page(const Json& runs, const PageOptions& options) {
  Json data = {{"title", options.title},
               {"subtitle", options.subtitle},
               {"live", options.live},
               {"api", options.api},
               {"runs", runs}};
  if (!options.suite.is_null()) data["suite"] = options.suite;
  std::string page(asset("report.html"));
  // Filled last to first, so no inserted text is searched for a later marker.
  fill(page, "SCRIPT", script_safe(std::string(asset("report.js"))));
  fill(page, "DATA", json_for_script(data.dump(-1, ' ', false, Json::error_handler_t::replace)));
  fill(page, "ECHARTS", script_safe(std::string(asset("echarts.min.js"))));
  fill(page, "STYLE", asset("report.css"));
  fill(page, "TITLE", html_escape(options.title));
  return page;
}

std::string index_page(const std::string& database) {
  std::string page(asset("index.html"));
  fill(page, "STYLE", asset("report.css"));
  const std::string title = html_escape(database);
  fill(page, "TITLE", title);
  fill(page, "TITLE", title);
  return page;
}

}  // namespace autotune::report
