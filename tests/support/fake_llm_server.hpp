#pragma once
// An OpenAI-compatible chat endpoint for tests: a real HTTP/1.1 server on
// 127.0.0.1 and an ephemeral port, answering each request with whatever the
// test's handler returns (a completion, an HTTP error, garbage, a late reply).
// Every request is recorded, headers included, so a test can check what
// arrived at the server. Header-only (Boost.Beast); one thread per connection,
// one request per connection.
//
//   FakeLlmServer server([](const FakeHttpRequest&) { return FakeLlmServer::reply_with("{\"a\": 1}"); });
//   LlmConfig config{.endpoint = server.endpoint(), .model = "m"};
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

namespace autotune::testing {

struct FakeHttpRequest {
  std::string method;
  std::string target;                          // e.g. "/v1/chat/completions"
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
};

struct FakeHttpResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  std::chrono::milliseconds delay{0};  // wait this long before answering (to provoke client timeouts)
};

class FakeLlmServer {
 public:
  using Handler = std::function<FakeHttpResponse(const FakeHttpRequest&)>;

  explicit FakeLlmServer(Handler handler) : handler_(std::move(handler)), acceptor_(io_) {
    namespace asio = boost::asio;
    const asio::ip::tcp::endpoint local(asio::ip::make_address("127.0.0.1"), 0);
    acceptor_.open(local.protocol());
    acceptor_.set_option(asio::socket_base::reuse_address(true));
    acceptor_.bind(local);
    acceptor_.listen();
    port_ = acceptor_.local_endpoint().port();
    accept_thread_ = std::thread([this] { accept_loop(); });
  }

  ~FakeLlmServer() {
    {
      std::lock_guard lock(mutex_);
      stopping_ = true;
    }
    wake_.notify_all();
    // A blocking accept() is woken by connecting to it.
    try {
      boost::asio::io_context io;
      boost::asio::ip::tcp::socket poke(io);
      poke.connect({boost::asio::ip::make_address("127.0.0.1"), port_});
    } catch (const std::exception&) {
    }
    accept_thread_.join();
    for (auto& t : connection_threads_) t.join();
  }

  FakeLlmServer(const FakeLlmServer&) = delete;
  FakeLlmServer& operator=(const FakeLlmServer&) = delete;

  unsigned short port() const { return port_; }
  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

  std::vector<FakeHttpRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

  // A chat-completion body whose first choice says `content`.
  static std::string completion_body(const std::string& content, int prompt_tokens = 11,
                                     int completion_tokens = 7) {
    nlohmann::json body = {{"id", "chatcmpl-test"},
                           {"object", "chat.completion"},
                           {"model", "fake"},
                           {"choices",
                            {{{"index", 0},
                              {"message", {{"role", "assistant"}, {"content", content}}},
                              {"finish_reason", "stop"}}}},
                           {"usage",
                            {{"prompt_tokens", prompt_tokens},
                             {"completion_tokens", completion_tokens},
                             {"total_tokens", prompt_tokens + completion_tokens}}}};
    return body.dump();
  }
  static FakeHttpResponse reply_with(const std::string& content) { return {200, completion_body(content)}; }

  // A local port with nothing listening on it (bound, then released).
  static unsigned short closed_port() {
    boost::asio::io_context io;
    boost::asio::ip::tcp::acceptor probe(io, {boost::asio::ip::make_address("127.0.0.1"), 0});
    const unsigned short port = probe.local_endpoint().port();
    probe.close();
    return port;
  }

 private:
  void accept_loop() {
    while (true) {
      boost::system::error_code ec;
      boost::asio::ip::tcp::socket socket(io_);
      acceptor_.accept(socket, ec);
      std::lock_guard lock(mutex_);
      if (stopping_) return;
      if (ec) continue;
      connection_threads_.emplace_back([this, s = std::move(socket)]() mutable { serve(std::move(s)); });
    }
  }

  void serve(boost::asio::ip::tcp::socket socket) {
    namespace http = boost::beast::http;
    boost::system::error_code ec;
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> request;
    http::read(socket, buffer, request, ec);
    if (ec) return;

    FakeHttpRequest recorded;
    recorded.method = std::string(request.method_string());
    recorded.target = std::string(request.target());
    recorded.body = request.body();
    for (const auto& field : request) {
      std::string name(field.name_string());
      for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      recorded.headers[name] = std::string(field.value());
    }
    FakeHttpResponse answer;
    {
      std::unique_lock lock(mutex_);
      requests_.push_back(recorded);
      answer = handler_(recorded);
      if (answer.delay.count() > 0 && wake_.wait_for(lock, answer.delay, [this] { return stopping_; }))
        return;
    }

    http::response<http::string_body> response{static_cast<http::status>(answer.status), request.version()};
    response.set(http::field::server, "autotune-fake-llm");
    response.set(http::field::content_type, answer.content_type);
    response.keep_alive(false);
    response.body() = answer.body;
    response.prepare_payload();
    http::write(socket, response, ec);
    socket.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ec);
  }

  Handler handler_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  unsigned short port_ = 0;
  std::thread accept_thread_;
  std::vector<std::thread> connection_threads_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool stopping_ = false;
  std::vector<FakeHttpRequest> requests_;
};

}  // namespace autotune::testing
