#include "report/server.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/thread_pool.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cctype>
#include <charconv>
#include <map>
#include <mutex>
#include <optional>
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

// Text for a one-line answer: no line breaks, not without end.
std::string one_line(std::string text) {
  for (char& c : text)
    if (c == '\n' || c == '\r') c = ' ';
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  return text;
}

// What the path names does not exist: a 404. Any other failure to answer
// (a stored value the reader cannot use) is a 500.
struct NotFound {
  std::string what;
};

// A run or trial id from the path; digits beyond int64 name no run.
int64_t id_of(store::Store& store, const std::string& what, const std::string& text) {
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size())
    throw NotFound{what + " " + text + " not found in " + store.location()};
  return value;
}

// The id of a run the store holds.
int64_t run_id_of(store::Store& store, const std::string& text) {
  const int64_t id = id_of(store, "run", text);
  if (!store.run(id)) throw NotFound{"run " + text + " not found in " + store.location()};
  return id;
}

// Timelines are re-simulated once per trial, then kept. The key is what a timeline is made of (the
// trial's id, its run's goal, its variant and parameters), not the trial id alone: a process may
// serve more than one store, whose trial ids repeat.
std::mutex timeline_mutex;
std::map<std::string, Json> timeline_cache;

Json full_report(store::Store& store, int64_t run_id) {
  ReportOptions options;
  options.timelines = false;
  Json doc = run_report(store, run_id, options);
  const store::Run run = *store.run(run_id);
  Json timelines = Json::object();
  for (const char* which : {"baseline", "best"}) {
    if (!doc.contains(which)) continue;
    const store::Trial trial = *store.trial(run_id, doc[which]["trial"].get<int64_t>());
    const std::string key =
        std::to_string(trial.id) + '\n' + run.goal_yaml + '\n' + trial.variant + '\n' + trial.params.dump();
    std::lock_guard lock(timeline_mutex);
    auto it = timeline_cache.find(key);
    if (it == timeline_cache.end())
      it = timeline_cache.emplace(key, trial_timeline(run, trial, options.max_bars)).first;
    timelines[which] = it->second;
  }
  doc["timelines"] = timelines;
  return doc;
}

// The value of `name` in a query string ("a=1&b=2"), if it is there.
std::optional<std::string> query_value(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    const auto amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    const auto equals = pair.find('=');
    if (pair.substr(0, equals) == name)
      return std::string(equals == std::string_view::npos ? "" : pair.substr(equals + 1));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

}  // namespace

HttpResponse handle_get(store::Store& store, const std::string& target) {
  static const std::regex run_page(R"(^/run/(\d+)/?$)");
  static const std::regex run_api(R"(^/api/run/(\d+)$)");
  static const std::regex trials_api(R"(^/api/run/(\d+)/trials$)");
  // Routed by path; a query string is read only where a path takes one.
  const auto question = target.find('?');
  const std::string path = target.substr(0, question);
  const std::string_view query =
      question == std::string::npos ? std::string_view() : std::string_view(target).substr(question + 1);
  std::smatch m;
  // A request's failure is its own answer, never the server's end: misuse is
  // a 404 of one line, anything else a 500 of one line.
  try {
    if (path == "/" || path == "/index.html")
      return {200, "text/html; charset=utf-8", index_page(store.location())};
    if (path == "/api/runs") return json_response(runs_index(store));
    if (path == "/favicon.ico") return {204, "image/x-icon", ""};
    if (std::regex_match(path, m, run_page)) {
      const int64_t id = run_id_of(store, m[1]);
      PageOptions page;
      page.title = "autotune run " + std::to_string(id);
      page.subtitle = store.location();
      page.live = true;
      page.api = "/api/run/" + std::to_string(id);
      return {200, "text/html; charset=utf-8", report_page(Json::array({full_report(store, id)}), page)};
    }
    if (std::regex_match(path, m, run_api)) return json_response(full_report(store, run_id_of(store, m[1])));
    if (std::regex_match(path, m, trials_api)) {
      const auto after = query_value(query, "after");
      if (!after || after->empty() ||
          !std::all_of(after->begin(), after->end(), [](unsigned char c) { return std::isdigit(c); }))
        return {400, "text/plain; charset=utf-8",
                "this path needs ?after=T, T a trial id (0 for every trial)\n"};
      const int64_t run_id = run_id_of(store, m[1]);
      ReportOptions options;
      options.after_trial = id_of(store, "trial", *after);
      options.timelines = false;
      return json_response(run_report(store, run_id, options));
    }
  } catch (const NotFound& missing) {
    return not_found(missing.what);
  } catch (const UserError& error) {
    return {500, "text/plain; charset=utf-8", "cannot answer: " + one_line(error.what()) + "\n"};
  } catch (const std::exception& error) {
    return {500, "text/plain; charset=utf-8", "internal error: " + one_line(error.what()) + "\n"};
  }
  return not_found("no page " + path + " (see / for the runs)");
}

bool host_allowed(const std::string& host, const std::vector<std::string>& names) {
  if (host.empty()) return true;  // HTTP/1.0 without Host: no browser sends that
  std::string name = host;
  if (name.front() == '[') {
    const auto close = name.find(']');
    if (close == std::string::npos) return false;
    boost::system::error_code ec;
    boost::asio::ip::make_address_v6(name.substr(1, close - 1), ec);
    return !ec;
  }
  if (const auto colon = name.rfind(':'); colon != std::string::npos) name.resize(colon);
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (!name.empty() && name.back() == '.') name.pop_back();
  // An address typed as such cannot be rebound to another one by DNS.
  boost::system::error_code ec;
  boost::asio::ip::make_address_v4(name, ec);
  if (!ec) return true;
  if (name == "localhost" || name.ends_with(".localhost")) return true;
  char own[256] = {};
  if (::gethostname(own, sizeof own - 1) == 0 && name == own) return true;
  return std::find(names.begin(), names.end(), name) != names.end();
}

namespace {

std::string url_of(const boost::asio::ip::address& address, unsigned short port) {
  const std::string text = address.to_string();
  return "http://" + (address.is_v6() ? "[" + text + "]" : text) + ":" + std::to_string(port) + "/";
}

// What the sessions share: the store (it serialises its reads), the handler
// threads, and the connection count.
struct Shared {
  store::Store& store;
  const ServeOptions& options;
  std::vector<std::string> hosts;  // lower case, for host_allowed
  boost::asio::thread_pool& handlers;
  std::atomic<int> connections{0};
};

// One connection: requests read with a deadline (an idle or slow client is
// dropped after options.idle_timeout_s), each answered on a handler thread so
// a slow page never stalls the network thread, answers written in order.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Shared& shared) : stream_(std::move(socket)), shared_(shared) {}
  ~Session() { --shared_.connections; }

  void read() {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(64 * 1024);
    stream_.expires_after(std::chrono::seconds(shared_.options.idle_timeout_s));
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) { self->on_read(ec); });
  }

 private:
  void on_read(beast::error_code ec) {
    if (ec) {
      // A malformed or oversized request gets its status before the
      // connection closes; a client that left or idled out gets nothing.
      if (ec.category() != beast::http::make_error_code(http::error::bad_method).category() ||
          ec == http::error::end_of_stream || ec == http::error::partial_message)
        return close();
      if (ec == http::error::header_limit)
        return reject(http::status::request_header_fields_too_large,
                      "the request line and headers are over 16 KiB\n");
      if (ec == http::error::body_limit)
        return reject(http::status::payload_too_large,
                      "a request body is limited to 64 KiB, and no page takes one\n");
      return reject(http::status::bad_request, "malformed request: " + one_line(ec.message()) + "\n");
    }
    request_ = parser_->release();
    boost::asio::post(shared_.handlers, [self = shared_from_this()] {
      HttpResponse answer = self->answer();
      boost::asio::post(self->stream_.get_executor(),
                        [self, answer = std::move(answer)]() mutable { self->write(std::move(answer)); });
    });
  }

  HttpResponse answer() {
    try {
      // RFC 9112 3.2: an HTTP/1.1 request without a Host, or any with two, is a 400.
      const std::size_t hosts = request_.count(http::field::host);
      if (hosts > 1 || (hosts == 0 && request_.version() >= 11))
        return {400, "text/plain; charset=utf-8",
                hosts > 1 ? "more than one Host header\n" : "an HTTP/1.1 request needs a Host header\n"};
      const std::string host(request_[http::field::host]);
      if (!host_allowed(host, shared_.hosts))
        return {403, "text/plain; charset=utf-8",
                "host '" + one_line(host) +
                    "' is not one this server answers to (DNS rebinding?); name it with --allow-host\n"};
      if (request_.method() != http::verb::get && request_.method() != http::verb::head)
        return {405, "text/plain; charset=utf-8", "read-only: only GET\n"};
      return handle_get(shared_.store, std::string(request_.target()));
    } catch (const std::exception& error) {
      return {500, "text/plain; charset=utf-8", "internal error: " + one_line(error.what()) + "\n"};
    }
  }

  void write(HttpResponse answer) {
    const bool keep_alive = request_.keep_alive();
    const auto status = static_cast<http::status>(answer.status);
    auto fill = [&](auto& response) {
      response.set(http::field::server, "autotune");
      response.set(http::field::content_type, answer.content_type);
      response.set(http::field::cache_control, "no-store");
      if (status == http::status::method_not_allowed) response.set(http::field::allow, "GET, HEAD");
      response.keep_alive(keep_alive);
    };
    stream_.expires_after(std::chrono::seconds(shared_.options.idle_timeout_s));
    // HEAD: the GET's headers (its length included), no body.
    if (request_.method() == http::verb::head) {
      auto response = std::make_shared<http::response<http::empty_body>>(status, request_.version());
      fill(*response);
      response->content_length(answer.body.size());
      http::async_write(stream_, *response,
                        [self = shared_from_this(), response, keep_alive](beast::error_code ec, std::size_t) {
                          self->next(ec, keep_alive);
                        });
      return;
    }
    auto response = std::make_shared<http::response<http::string_body>>(status, request_.version());
    fill(*response);
    response->body() = std::move(answer.body);
    response->prepare_payload();
    http::async_write(stream_, *response,
                      [self = shared_from_this(), response, keep_alive](beast::error_code ec, std::size_t) {
                        self->next(ec, keep_alive);
                      });
  }

  void reject(http::status status, std::string text) {
    auto response = std::make_shared<http::response<http::string_body>>(status, 11);
    response->set(http::field::server, "autotune");
    response->set(http::field::content_type, "text/plain; charset=utf-8");
    response->keep_alive(false);
    response->body() = std::move(text);
    response->prepare_payload();
    stream_.expires_after(std::chrono::seconds(shared_.options.idle_timeout_s));
    http::async_write(
        stream_, *response,
        [self = shared_from_this(), response](beast::error_code, std::size_t) { self->close(); });
  }

  void next(beast::error_code ec, bool keep_alive) {
    if (ec || !keep_alive) return close();
    read();
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  Shared& shared_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> request_;
};

// Accepts until the process ends. Beyond options.max_connections a client gets
// a 503 at once; an accept error (no descriptors left: EMFILE, ENFILE, ENOBUFS)
// waits before the next try instead of spinning, while idle connections time out.
class Listener {
 public:
  Listener(boost::asio::io_context& io, tcp::acceptor& acceptor, Shared& shared)
      : io_(io), acceptor_(acceptor), shared_(shared), pause_(io) {}

  void accept() {
    acceptor_.async_accept(boost::asio::make_strand(io_), [this](beast::error_code ec, tcp::socket socket) {
      if (ec) {
        pause_.expires_after(std::chrono::milliseconds(250));
        pause_.async_wait([this](beast::error_code) { accept(); });
        return;
      }
      if (shared_.connections.load() >= shared_.options.max_connections) {
        refuse(socket);
      } else {
        ++shared_.connections;
        std::make_shared<Session>(std::move(socket), shared_)->read();
      }
      accept();
    });
  }

 private:
  static void refuse(tcp::socket& socket) {
    static const std::string busy =
        "HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: "
        "29\r\nRetry-After: 5\r\nConnection: close\r\n\r\ntoo many connections; retry\n";
    beast::error_code ec;
    socket.non_blocking(true, ec);
    socket.send(boost::asio::buffer(busy), 0, ec);
    socket.shutdown(tcp::socket::shutdown_send, ec);
    socket.close(ec);
  }

  boost::asio::io_context& io_;
  tcp::acceptor& acceptor_;
  Shared& shared_;
  boost::asio::steady_timer pause_;
};

}  // namespace

void serve(store::Store& store, const ServeOptions& options,
           const std::function<void(const std::string&)>& ready,
           const std::function<void(const std::string&)>& warn) {
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
  const unsigned short port = acceptor.local_endpoint().port();
  if (!address.is_loopback())
    warn("serving " + options.address + " port " + std::to_string(port) +
         " beyond this machine: the dashboard has no authentication, so anyone who reaches the port reads "
         "every run of the database; put it behind a reverse proxy with authentication (docs/report.md)");
  ready(url_of(address, port));

  boost::asio::thread_pool handlers(4);
  Shared shared{store, options, {}, handlers};
  for (std::string name : options.allowed_hosts) {
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    shared.hosts.push_back(name);
  }
  Listener listener(io, acceptor, shared);
  listener.accept();
  io.run();
}

}  // namespace autotune::report
