#include "report/server.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <map>
#include <mutex>
#include <regex>
#include <thread>

#include "core/error.hpp"
#include "report/html.hpp"
#include "report/report_data.hpp"

namespace autotune::report {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using tcp = boost::asio::ip::tcp;

HttpResponse json_response(const Json& value) {
  return {200, "application/json", value.dump(-1, ' ', false, Json::error_handler_t::replace)};
}

HttpResponse not_found(const std::string& what) { return {404, "text/plain; charset=utf-8", what + "\n"}; }

std::optional<int64_t> number(const std::string& text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

// Timelines are re-simulated once per trial, then kept.
std::mutex timeline_mutex;
std::map<int64_t, Json> timeline_cache;  // trial id -> its timeline

Json full_report(store::Store& store, int64_t run_id) {
  ReportOptions options;
  options.timelines = false;
  Json doc = run_report(store, run_id, options);
  const store::Run run = *store.run(run_id);
  Json timelines = Json::object();
  for (const char* which : {"baseline", "best"}) {
    if (!doc.contains(which)) continue;
    const int64_t trial_id = doc[which]["trial"].get<int64_t>();
    std::lock_guard lock(timeline_mutex);
    auto it = timeline_cache.find(trial_id);
    if (it == timeline_cache.end())
      it = timeline_cache
               .emplace(trial_id, trial_timeline(run, *store.trial(run_id, trial_id), options.max_bars))
               .first;
    timelines[which] = it->second;
  }
  doc["timelines"] = timelines;
  return doc;
}

}  // namespace

HttpResponse handle_get(store::Store& store, const std::string& target) {
  static const std::regex run_page(R"(^/run/(\d+)/?$)");
  static const std::regex run_api(R"(^/api/run/(\d+)$)");
  static const std::regex trials_api(R"(^/api/run/(\d+)/trials\?after=(\d+)$)");
  std::smatch m;
  try {
    if (target == "/" || target == "/index.html")
      return {200, "text/html; charset=utf-8", index_page(store.location())};
    if (target == "/api/runs") return json_response(runs_index(store));
    if (target == "/favicon.ico") return {204, "image/x-icon", ""};
    if (std::regex_match(target, m, run_page)) {
      const int64_t id = *number(m[1]);
      PageOptions page;
      page.title = "autotune run " + std::to_string(id);
      page.subtitle = store.location();
      page.live = true;
      page.api = "/api/run/" + std::to_string(id);
      return {200, "text/html; charset=utf-8", report_page(Json::array({full_report(store, id)}), page)};
    }
    if (std::regex_match(target, m, run_api)) return json_response(full_report(store, *number(m[1])));
    if (std::regex_match(target, m, trials_api)) {
      ReportOptions options;
      options.after_trial = *number(m[2]);
      options.timelines = false;
      return json_response(run_report(store, *number(m[1]), options));
    }
  } catch (const UserError& error) {
    return not_found(error.what());
  }
  return not_found("no page " + target + " (see / for the runs)");
}

void serve(store::Store& store, const ServeOptions& options,
           const std::function<void(const std::string&)>& ready) {
  boost::asio::io_context io;
  boost::system::error_code error;
  const auto address = boost::asio::ip::make_address(options.address, error);
  if (error) throw UserError("--address " + options.address + " is not an IP address");
  if (options.port < 0 || options.port > 65535)
    throw UserError("--port " + std::to_string(options.port) + " is out of range; accepted: 0 to 65535");
  tcp::acceptor acceptor(io);
  const tcp::endpoint endpoint(address, static_cast<unsigned short>(options.port));
  acceptor.open(endpoint.protocol(), error);
  if (!error) acceptor.set_option(tcp::acceptor::reuse_address(true), error);
  if (!error) acceptor.bind(endpoint, error);
  if (!error) acceptor.listen(boost::asio::socket_base::max_listen_connections, error);
  if (error)
    throw UserError("cannot listen on " + options.address + ":" + std::to_string(options.port) + ": " +
                    error.message() +
                    (error == boost::asio::error::address_in_use ? " (choose another --port)" : ""));
  ready("http://" + options.address + ":" + std::to_string(acceptor.local_endpoint().port()) + "/");

  for (;;) {
    tcp::socket socket(io);
    acceptor.accept(socket, error);
    if (error) continue;
    // One thread per connection; the store serialises their reads.
    std::thread([&store, socket = std::move(socket)]() mutable {
      beast::flat_buffer buffer;
      boost::system::error_code ec;
      for (;;) {
        http::request<http::string_body> request;
        http::read(socket, buffer, request, ec);
        if (ec) break;
        HttpResponse answer;
        if (request.method() != http::verb::get && request.method() != http::verb::head)
          answer = {405, "text/plain; charset=utf-8", "read-only: only GET\n"};
        else
          answer = handle_get(store, std::string(request.target()));
        http::response<http::string_body> response{static_cast<http::status>(answer.status),
                                                   request.version()};
        response.set(http::field::server, "autotune");
        response.set(http::field::content_type, answer.content_type);
        response.set(http::field::cache_control, "no-store");
        response.keep_alive(request.keep_alive());
        response.body() = std::move(answer.body);
        response.prepare_payload();
        http::write(socket, response, ec);
        if (ec || !response.keep_alive()) break;
      }
      socket.shutdown(tcp::socket::shutdown_send, ec);
    }).detach();
  }
}

}  // namespace autotune::report
