#include "core/subprocess.hpp"

// Why plain POSIX instead of Boost.Process (1.74): we need the child to lead its
// own process group (to kill everything it started on a timeout), default
// signal dispositions and an empty mask in the child, a deadline that covers
// reading two pipes and writing a third without helper threads, and a clean
// answer when a grandchild keeps the pipes open after the child exits. Boost.
// Process v1 offers none of the process-group handling and needs an io_context
// plus its own SIGCHLD machinery for timeouts; posix_spawnp + poll does all of
// it in one short loop. posix_spawnp (glibc uses clone(CLONE_VFORK)) also
// reports an exec failure such as a missing program as an error code, and is
// safe to call from a multi-threaded process, unlike fork() followed by
// arbitrary code.

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/interrupt.hpp"
#include "core/json_text.hpp"
#include "core/log.hpp"

extern char** environ;

namespace autotune {
namespace {

using Clock = std::chrono::steady_clock;

std::string format_seconds(std::chrono::milliseconds duration) {
  std::ostringstream out;
  out << static_cast<double>(duration.count()) / 1000.0 << " s";
  return out.str();
}

// Replaces bytes that are not valid UTF-8 with '?', so that captured output can
// always be put into JSON and the store.
std::string valid_utf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    std::size_t length = lead < 0x80           ? 1
                         : (lead >> 5) == 0x6  ? 2
                         : (lead >> 4) == 0xE  ? 3
                         : (lead >> 3) == 0x1E ? 4
                                               : 0;
    bool valid = length != 0 && i + length <= text.size();
    for (std::size_t k = 1; valid && k < length; ++k) {
      valid = (static_cast<unsigned char>(text[i + k]) & 0xC0) == 0x80;
    }
    if (valid) {
      out.append(text.substr(i, length));
      i += length;
    } else {
      out.push_back('?');
      ++i;
    }
  }
  return out;
}

class FileDescriptor {
 public:
  FileDescriptor() = default;
  explicit FileDescriptor(int fd) : fd_(fd) {}
  FileDescriptor(FileDescriptor&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
  FileDescriptor& operator=(FileDescriptor&& other) noexcept {
    if (this != &other) {
      reset();
      fd_ = std::exchange(other.fd_, -1);
    }
    return *this;
  }
  ~FileDescriptor() { reset(); }
  void reset() {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
  int get() const { return fd_; }
  bool open() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

// poll() takes an int of milliseconds; long timeouts are waited for in slices.
int poll_timeout_ms(std::chrono::milliseconds wait) {
  return static_cast<int>(std::clamp<long long>(wait.count(), 0, 60'000));
}

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

// Writing to a pipe whose reader is gone raises SIGPIPE, which would end this
// process. The signal is blocked in the calling thread while the guard lives
// and a SIGPIPE raised meanwhile is consumed, so EPIPE is seen as an error code
// instead; the process-wide disposition is left alone.
class SigpipeGuard {
 public:
  SigpipeGuard() {
    sigemptyset(&sigpipe_);
    sigaddset(&sigpipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &sigpipe_, &previous_);
  }
  ~SigpipeGuard() {
    if (!was_pending_) {
      timespec zero{};
      while (sigtimedwait(&sigpipe_, nullptr, &zero) > 0) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &previous_, nullptr);
  }
  SigpipeGuard(const SigpipeGuard&) = delete;
  SigpipeGuard& operator=(const SigpipeGuard&) = delete;

 private:
  sigset_t sigpipe_{};
  sigset_t previous_{};
  bool was_pending_ = false;
};

// Appends to `tail` and keeps at most about `limit` bytes of it (trimmed
// exactly by finish_tail).
void append_tail(std::string& tail, const char* data, std::size_t size, std::size_t limit) {
  tail.append(data, size);
  const std::size_t slack = std::max<std::size_t>(limit, 4096);
  if (tail.size() > limit + slack) tail.erase(0, tail.size() - limit);
}

void finish_tail(std::string& tail, std::size_t limit) {
  if (tail.size() > limit) tail.erase(0, tail.size() - limit);
  tail = valid_utf8(tail);
}

// A started child with the parent's ends of its three pipes.
class SpawnedChild {
 public:
  pid_t pid = -1;
  FileDescriptor in, out, err;
  FileDescriptor pidfd;  // readable once the child exits; absent on old kernels
  bool reaped = false;
  int wait_status = 0;

  SpawnedChild() = default;
  SpawnedChild(const SpawnedChild&) = delete;
  SpawnedChild& operator=(const SpawnedChild&) = delete;
  ~SpawnedChild() {
    if (pid > 0) kill_group(std::chrono::milliseconds(0));
  }

  // Returns the reason on failure, "" on success.
  std::string spawn(const std::vector<std::string>& argv, const std::filesystem::path& workdir,
                    const std::map<std::string, std::string>& extra_env,
                    const std::vector<std::filesystem::path>& inherited_files = {}) {
    if (!workdir.empty()) {
      std::error_code ec;
      if (!std::filesystem::is_directory(workdir, ec)) {
        return "cannot start '" + argv[0] + "': working directory '" + workdir.string() + "' does not exist";
      }
    }
    int in_pipe[2], out_pipe[2], err_pipe[2];
    if (::pipe2(in_pipe, O_CLOEXEC) != 0) return std::string("cannot create a pipe: ") + std::strerror(errno);
    FileDescriptor in_read(in_pipe[0]), in_write(in_pipe[1]);
    if (::pipe2(out_pipe, O_CLOEXEC) != 0)
      return std::string("cannot create a pipe: ") + std::strerror(errno);
    FileDescriptor out_read(out_pipe[0]), out_write(out_pipe[1]);
    if (::pipe2(err_pipe, O_CLOEXEC) != 0)
      return std::string("cannot create a pipe: ") + std::strerror(errno);
    FileDescriptor err_read(err_pipe[0]), err_write(err_pipe[1]);

    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, in_read.get(), STDIN_FILENO);
    posix_spawn_file_actions_adddup2(&actions, out_write.get(), STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&actions, err_write.get(), STDERR_FILENO);
    for (std::size_t i = 0; i < inherited_files.size(); ++i)
      posix_spawn_file_actions_addopen(&actions, 3 + static_cast<int>(i), inherited_files[i].c_str(),
                                       O_RDONLY, 0);
    if (!workdir.empty()) posix_spawn_file_actions_addchdir_np(&actions, workdir.c_str());

    posix_spawnattr_t attributes;
    posix_spawnattr_init(&attributes);
    posix_spawnattr_setflags(&attributes,
                             POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    posix_spawnattr_setpgroup(&attributes, 0);
    sigset_t empty_mask;
    sigemptyset(&empty_mask);
    posix_spawnattr_setsigmask(&attributes, &empty_mask);
    sigset_t defaults;
    sigemptyset(&defaults);
    for (int s : {SIGPIPE, SIGINT, SIGTERM, SIGQUIT, SIGHUP, SIGUSR1, SIGUSR2, SIGALRM, SIGCHLD}) {
      sigaddset(&defaults, s);
    }
    posix_spawnattr_setsigdefault(&attributes, &defaults);

    std::vector<std::string> environment;
    for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry) {
      std::string_view text(*entry);
      const std::string name(text.substr(0, text.find('=')));
      if (extra_env.count(name) == 0) environment.emplace_back(text);
    }
    for (const auto& [name, value] : extra_env) environment.push_back(name + "=" + value);

    std::vector<char*> argv_pointers, env_pointers;
    for (const auto& a : argv) argv_pointers.push_back(const_cast<char*>(a.c_str()));
    argv_pointers.push_back(nullptr);
    for (auto& e : environment) env_pointers.push_back(e.data());
    env_pointers.push_back(nullptr);

    const int rc = ::posix_spawnp(&pid, argv[0].c_str(), &actions, &attributes, argv_pointers.data(),
                                  env_pointers.data());
    posix_spawn_file_actions_destroy(&actions);
    posix_spawnattr_destroy(&attributes);
    if (rc != 0) {
      pid = -1;
      return "cannot start '" + argv[0] + "': " + std::strerror(rc);
    }
    interrupt::track_child(pid);
    in = std::move(in_write);
    out = std::move(out_read);
    err = std::move(err_read);
    set_nonblocking(in.get());
    set_nonblocking(out.get());
    set_nonblocking(err.get());
#ifdef SYS_pidfd_open
    const long fd = ::syscall(SYS_pidfd_open, pid, 0);
    if (fd >= 0) pidfd = FileDescriptor(static_cast<int>(fd));
#endif
    return "";
  }

  bool try_reap() {
    if (reaped || pid <= 0) return reaped;
    int status = 0;
    pid_t r;
    do {
      r = ::waitpid(pid, &status, WNOHANG);
    } while (r < 0 && errno == EINTR);
    if (r == pid || (r < 0 && errno == ECHILD)) {
      reaped = true;
      wait_status = r == pid ? status : 0;
      interrupt::untrack_child(pid);
    }
    return reaped;
  }

  // Waits until the child exits or `until`; meanwhile `drain` (which must read
  // the pipes, closing them at end of file) is called when they are readable,
  // so a child blocked on a full pipe can finish. Without a drain only the
  // exit is watched.
  bool wait_exit(Clock::time_point until) {
    return wait_exit(
        until, [] {}, false);
  }
  template <class Drain>
  bool wait_exit(Clock::time_point until, Drain&& drain, bool watch_pipes = true) {
    while (!try_reap()) {
      const auto now = Clock::now();
      if (now >= until) return false;
      pollfd fds[3];
      int count = 0;
      if (pidfd.open()) fds[count++] = {pidfd.get(), POLLIN, 0};
      if (watch_pipes && out.open()) fds[count++] = {out.get(), POLLIN, 0};
      if (watch_pipes && err.open()) fds[count++] = {err.get(), POLLIN, 0};
      auto wait =
          std::chrono::duration_cast<std::chrono::milliseconds>(until - now) + std::chrono::milliseconds(1);
      if (!pidfd.open()) wait = std::min(wait, std::chrono::milliseconds(5));
      ::poll(fds, count, poll_timeout_ms(wait));
      drain();
    }
    return true;
  }

  // SIGTERM to the group, `grace` for the child to exit, then SIGKILL to the
  // group (which also removes stragglers that outlived the child) and reap.
  void kill_group(std::chrono::milliseconds grace) {
    if (pid <= 0) return;
    if (!reaped && grace.count() > 0) {
      ::kill(-pid, SIGTERM);
      wait_exit(Clock::now() + grace);
    }
    ::kill(-pid, SIGKILL);
    if (!reaped) {
      int status = 0;
      pid_t r;
      do {
        r = ::waitpid(pid, &status, 0);
      } while (r < 0 && errno == EINTR);
      reaped = true;
      wait_status = r == pid ? status : 0;
    }
    interrupt::untrack_child(pid);
    pid = -1;
  }

  std::string exit_description() const {
    if (WIFEXITED(wait_status)) return "exited with code " + std::to_string(WEXITSTATUS(wait_status));
    if (WIFSIGNALED(wait_status)) return "killed by signal " + signal_name(WTERMSIG(wait_status));
    return "ended";
  }
};

// Reads everything available from `fd` into `sink`; closes it at end of file
// or on an error. Returns false once closed.
template <class Sink>
bool read_available(FileDescriptor& fd, Sink&& sink) {
  if (!fd.open()) return false;
  char buffer[65536];
  while (true) {
    const ssize_t n = ::read(fd.get(), buffer, sizeof buffer);
    if (n > 0) {
      sink(buffer, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
    fd.reset();
    return false;
  }
}

}  // namespace

std::optional<std::filesystem::path> find_executable(const std::string& program,
                                                     const std::filesystem::path& workdir) {
  auto runnable = [](const std::filesystem::path& path) {
    std::error_code ec;
    return ::access(path.c_str(), X_OK) == 0 && !std::filesystem::is_directory(path, ec);
  };
  if (program.empty()) return std::nullopt;
  if (program.find('/') != std::string::npos) {
    std::filesystem::path path(program);
    if (path.is_relative() && !workdir.empty()) path = workdir / path;
    if (runnable(path)) return path;
    return std::nullopt;
  }
  const char* search = std::getenv("PATH");
  std::string_view directories = search != nullptr ? search : "/usr/local/bin:/usr/bin:/bin";
  while (true) {
    const auto colon = directories.find(':');
    const std::string directory(directories.substr(0, colon));
    const auto candidate = std::filesystem::path(directory.empty() ? "." : directory) / program;
    if (runnable(candidate)) return candidate;
    if (colon == std::string_view::npos) return std::nullopt;
    directories.remove_prefix(colon + 1);
  }
}

std::string missing_executable_reason(const std::string& program, const std::filesystem::path& workdir,
                                      const std::string& workdir_is) {
  std::error_code error;
  if (program.find('/') == std::string::npos) {
    // As a shell does, a bare name is only looked up on PATH; the likely
    // meaning of one that names a file in the working directory is said.
    const std::filesystem::path here = workdir.empty() ? std::filesystem::path(program) : workdir / program;
    if (std::filesystem::is_regular_file(here, error))
      return "program '" + program +
             "' is not found on PATH (a name without '/' is looked up there, as a "
             "shell does); for the file in " +
             workdir_is + ", write './" + program + "'";
    return "program '" + program + "' is not found on PATH";
  }
  std::filesystem::path tried(program);
  if (tried.is_relative()) tried = workdir / tried;
  std::error_code no_absolute;
  const std::filesystem::path absolute = std::filesystem::absolute(tried, no_absolute);
  const std::string shown = (no_absolute ? tried : absolute).lexically_normal().string();
  const std::string where = std::filesystem::path(program).is_relative()
                                ? " (a relative path is taken from " + workdir_is + ")"
                                : "";
  if (std::filesystem::is_regular_file(tried, error))
    return "program '" + program + "' is not executable: " + shown + where +
           "; make it executable (chmod +x) or put its interpreter before it in the argv";
  return "program '" + program + "' is not an executable file: " + shown + where;
}

std::string signal_name(int signal_number) {
  if (const char* abbreviation = ::sigabbrev_np(signal_number)) return std::string("SIG") + abbreviation;
  return "signal " + std::to_string(signal_number);
}

std::string one_line_tail(const std::string& text, std::size_t max_chars) {
  std::string line;
  bool pending_break = false;
  for (char c : text) {
    if (c == '\n' || c == '\r') {
      pending_break = !line.empty();
      continue;
    }
    if (pending_break) line += " | ";
    pending_break = false;
    line += (static_cast<unsigned char>(c) < 0x20 && c != '\t') ? ' ' : c;
  }
  while (!line.empty() && (line.back() == ' ' || line.back() == '\t')) line.pop_back();
  if (line.size() > max_chars) {
    std::size_t cut = line.size() - max_chars;
    while (cut < line.size() && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) ++cut;
    line = "..." + line.substr(cut);
  }
  return valid_utf8(line);
}

std::string ProcessResult::describe_failure(std::size_t max_stderr_chars) const {
  std::string text = error.empty() ? std::string("succeeded") : error;
  const std::string tail = one_line_tail(stderr_tail, max_stderr_chars);
  if (!tail.empty()) text += "; stderr: " + tail;
  return text;
}

ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options) {
  if (argv.empty() || argv[0].empty()) throw UserError("cannot run a command with an empty argv");
  ProcessResult result;
  const auto start = Clock::now();
  SpawnedChild child;
  if (std::string reason = child.spawn(argv, options.workdir, options.extra_env, options.inherited_files);
      !reason.empty()) {
    result.outcome = ProcessResult::Outcome::spawn_failed;
    result.error = reason;
    return result;
  }

  SigpipeGuard sigpipe_guard;
  const std::string stdin_text = options.stdin_text.value_or("");
  std::size_t written = 0;
  if (stdin_text.empty()) child.in.reset();

  auto keep_stdout = [&](const char* data, std::size_t size) {
    if (options.keep_stdout_tail) {
      result.stdout_truncated =
          result.stdout_truncated || result.stdout_text.size() + size > options.max_stdout_bytes;
      append_tail(result.stdout_text, data, size, options.max_stdout_bytes);
      return;
    }
    const std::size_t room =
        options.max_stdout_bytes - std::min(options.max_stdout_bytes, result.stdout_text.size());
    result.stdout_text.append(data, std::min(room, size));
    if (size > room) result.stdout_truncated = true;
  };
  auto keep_stderr = [&](const char* data, std::size_t size) {
    append_tail(result.stderr_tail, data, size, options.stderr_tail_bytes);
  };
  auto drain = [&] {
    read_available(child.out, keep_stdout);
    read_available(child.err, keep_stderr);
  };

  // After the child exits its pipes normally reach end of file at once; if
  // something it started still holds them, we give it this long, then kill it.
  constexpr auto kStragglerDrain = std::chrono::milliseconds(200);
  const auto deadline = start + options.timeout;
  std::optional<Clock::time_point> exited_at;
  bool timed_out = false;
  while (true) {
    if (!exited_at && child.try_reap()) exited_at = Clock::now();
    if (exited_at && !child.out.open() && !child.err.open()) break;
    const auto now = Clock::now();
    if (!exited_at && now >= deadline) {
      timed_out = true;
      child.kill_group(options.kill_grace);
      drain();
      break;
    }
    if (exited_at && now >= *exited_at + kStragglerDrain) {
      child.kill_group(std::chrono::milliseconds(0));
      drain();
      break;
    }

    pollfd fds[4];
    int count = 0;
    if (child.in.open()) fds[count++] = {child.in.get(), POLLOUT, 0};
    if (child.out.open()) fds[count++] = {child.out.get(), POLLIN, 0};
    if (child.err.open()) fds[count++] = {child.err.get(), POLLIN, 0};
    if (!exited_at && child.pidfd.open()) fds[count++] = {child.pidfd.get(), POLLIN, 0};
    const auto until = exited_at ? *exited_at + kStragglerDrain : deadline;
    auto wait =
        std::chrono::duration_cast<std::chrono::milliseconds>(until - now) + std::chrono::milliseconds(1);
    if (!exited_at && !child.pidfd.open()) wait = std::min(wait, std::chrono::milliseconds(10));
    const int ready = ::poll(fds, count, poll_timeout_ms(wait));
    if (ready < 0 && errno != EINTR) {
      AUTOTUNE_CHECK(false, std::string("poll failed: ") + std::strerror(errno));
    }

    if (child.in.open()) {
      while (written < stdin_text.size()) {
        const ssize_t n = ::write(child.in.get(), stdin_text.data() + written, stdin_text.size() - written);
        if (n > 0) {
          written += static_cast<std::size_t>(n);
        } else if (n < 0 && errno == EINTR) {
          continue;
        } else {
          if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) child.in.reset();  // reader gone: EPIPE
          break;
        }
      }
      if (written >= stdin_text.size()) child.in.reset();
    }
    drain();
  }
  child.in.reset();
  child.out.reset();
  child.err.reset();

  result.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  result.stdout_text = valid_utf8(result.stdout_text);
  finish_tail(result.stderr_tail, options.stderr_tail_bytes);
  if (options.keep_stdout_tail && result.stdout_text.size() > options.max_stdout_bytes)
    result.stdout_text.erase(0, result.stdout_text.size() - options.max_stdout_bytes);
  if (timed_out) {
    result.outcome = ProcessResult::Outcome::timed_out;
    result.error = "timed out after " + format_seconds(options.timeout);
  } else if (WIFSIGNALED(child.wait_status)) {
    result.outcome = ProcessResult::Outcome::signaled;
    result.term_signal = WTERMSIG(child.wait_status);
    result.error = child.exit_description();
  } else {
    result.outcome = ProcessResult::Outcome::exited;
    result.exit_code = WIFEXITED(child.wait_status) ? WEXITSTATUS(child.wait_status) : -1;
    if (result.exit_code != 0) result.error = child.exit_description();
  }
  return result;
}

// ---------------------------------------------------------------------------
// JsonLinesProcess

struct JsonLinesProcess::Child {
  SpawnedChild process;
  std::string stdout_buffer;
  std::string stderr_tail;
  std::size_t stderr_limit = 4096;

  void drain() {
    read_available(process.out,
                   [&](const char* data, std::size_t size) { stdout_buffer.append(data, size); });
    read_available(process.err, [&](const char* data, std::size_t size) {
      append_tail(stderr_tail, data, size, stderr_limit);
    });
  }
  std::string tail() {
    std::string copy = stderr_tail;
    finish_tail(copy, stderr_limit);
    return copy;
  }
};

JsonLinesProcess::JsonLinesProcess(std::vector<std::string> argv, JsonLinesOptions options)
    : argv_(std::move(argv)), options_(std::move(options)) {
  if (argv_.empty() || argv_[0].empty()) throw UserError("cannot run a command with an empty argv");
}

JsonLinesProcess::~JsonLinesProcess() { stop(); }

bool JsonLinesProcess::start(std::string* error) {
  std::lock_guard lock(mutex_);
  last_failure_kind_ = JsonLinesFailure::none;
  return ensure_started(error);
}

bool JsonLinesProcess::ensure_started(std::string* error) {
  if (child_ && !child_->process.try_reap()) return true;
  if (child_) {
    // It ended while idle, between requests.
    child_->drain();
    fail_child(JsonLinesFailure::ended, child_->process.exit_description() + " while idle");
  }
  if (dead_) {
    last_failure_kind_ = JsonLinesFailure::gave_up;
    if (error)
      *error = "not restarted after " + std::to_string(starts_) + " start(s); last failure: " + last_failure_;
    return false;
  }
  auto child = std::make_unique<Child>();
  child->stderr_limit = options_.stderr_tail_bytes;
  ++starts_;
  if (std::string reason = child->process.spawn(argv_, options_.workdir, options_.extra_env);
      !reason.empty()) {
    // A command that cannot be started will not start on a retry either.
    dead_ = true;
    last_failure_ = reason;
    last_failure_kind_ = JsonLinesFailure::cannot_start;
    if (error) *error = reason;
    return false;
  }
  child_ = std::move(child);
  return true;
}

void JsonLinesProcess::fail_child(JsonLinesFailure kind, const std::string& reason) {
  last_failure_kind_ = kind;
  std::string tail;
  if (child_) {
    child_->process.kill_group(options_.kill_grace);
    child_->drain();
    last_stderr_tail_ = child_->tail();
    tail = one_line_tail(last_stderr_tail_, 600);
    child_.reset();
  }
  last_failure_ = reason + (tail.empty() ? "" : "; stderr: " + tail);
  if (starts_ >= 1 + options_.max_restarts) dead_ = true;
}

std::optional<nlohmann::json> JsonLinesProcess::request(const nlohmann::json& message,
                                                        std::chrono::milliseconds timeout,
                                                        std::string* error) {
  std::lock_guard lock(mutex_);
  last_failure_kind_ = JsonLinesFailure::none;
  auto fail = [&](JsonLinesFailure kind, const std::string& reason) -> std::optional<nlohmann::json> {
    fail_child(kind, reason);
    if (error) *error = last_failure_;
    return std::nullopt;
  };
  std::string line;
  try {
    line = message.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } catch (const nlohmann::json::exception& e) {
    last_failure_kind_ = JsonLinesFailure::bad_request;
    if (error) *error = std::string("request cannot be written as JSON: ") + e.what();
    return std::nullopt;
  }
  if (!ensure_started(error)) return std::nullopt;

  Child& child = *child_;
  child.drain();
  if (!child.stdout_buffer.empty()) {
    log::warn((options_.name.empty() ? "'" + argv_[0] + "'" : options_.name) +
              " printed output nobody asked for, discarded: " + one_line_tail(child.stdout_buffer, 200));
    child.stdout_buffer.clear();
  }

  const auto deadline = Clock::now() + timeout;
  // Set once the peer itself has exited. Its stdout normally closes with it; if
  // a process it started still holds the pipe, that process is given
  // kStragglerDrain to finish a reply, then the peer is reported as ended
  // rather than left to the request's timeout.
  std::optional<Clock::time_point> exited_at;
  constexpr auto kStragglerDrain = std::chrono::milliseconds(200);
  auto wait_readable = [&](bool want_write) {
    pollfd fds[4];
    int count = 0;
    if (want_write && child.process.in.open()) fds[count++] = {child.process.in.get(), POLLOUT, 0};
    if (child.process.out.open()) fds[count++] = {child.process.out.get(), POLLIN, 0};
    if (child.process.err.open()) fds[count++] = {child.process.err.get(), POLLIN, 0};
    if (!exited_at && child.process.pidfd.open()) fds[count++] = {child.process.pidfd.get(), POLLIN, 0};
    const auto until = exited_at ? std::min(deadline, *exited_at + kStragglerDrain) : deadline;
    auto wait = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now()) +
                std::chrono::milliseconds(1);
    if (!exited_at && !child.process.pidfd.open()) wait = std::min(wait, std::chrono::milliseconds(10));
    ::poll(fds, count, poll_timeout_ms(wait));
  };
  auto ended_reason = [&](const std::string& what) {
    // Give an exiting child a moment so the reason can name its exit status.
    child.process.wait_exit(Clock::now() + options_.kill_grace, [&] { child.drain(); });
    return (child.process.reaped ? child.process.exit_description() : std::string("closed its stdout")) +
           " " + what;
  };

  {
    SigpipeGuard sigpipe_guard;
    std::size_t written = 0;
    while (written < line.size()) {
      if (!child.process.in.open())
        return fail(JsonLinesFailure::ended, ended_reason("before reading the request"));
      const ssize_t n = ::write(child.process.in.get(), line.data() + written, line.size() - written);
      if (n > 0) {
        written += static_cast<std::size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
        child.process.in.reset();
        return fail(JsonLinesFailure::ended, ended_reason("before reading the request"));
      }
      if (Clock::now() >= deadline) {
        return fail(JsonLinesFailure::timed_out, "timed out after " + format_seconds(timeout) +
                                                     " writing the request (it does not read stdin)");
      }
      wait_readable(true);
      child.drain();
    }
  }

  while (true) {
    const auto newline = child.stdout_buffer.find('\n');
    // The limit holds however the line arrived: in pieces, or whole in one read.
    const std::size_t line_bytes = newline == std::string::npos ? child.stdout_buffer.size() : newline;
    if (line_bytes > options_.max_line_bytes) {
      return fail(JsonLinesFailure::malformed,
                  "replied with a line longer than " + std::to_string(options_.max_line_bytes) + " bytes");
    }
    if (newline != std::string::npos) {
      std::string reply = child.stdout_buffer.substr(0, newline);
      child.stdout_buffer.erase(0, newline + 1);
      if (reply.find_first_not_of(" \t\r") == std::string::npos) continue;  // blank lines are not replies
      try {
        return parse_json(reply);
      } catch (const nlohmann::json::exception&) {
        return fail(JsonLinesFailure::malformed,
                    "replied with a line that is not JSON: '" + one_line_tail(reply, 200) + "'");
      }
    }
    if (!child.process.out.open()) return fail(JsonLinesFailure::ended, ended_reason("before replying"));
    if (!exited_at && child.process.try_reap()) exited_at = Clock::now();
    if (exited_at && Clock::now() >= *exited_at + kStragglerDrain) {
      return fail(
          JsonLinesFailure::ended,
          child.process.exit_description() + " before replying; a process it started still holds its stdout");
    }
    if (Clock::now() >= deadline) {
      return fail(JsonLinesFailure::timed_out,
                  "timed out after " + format_seconds(timeout) + " waiting for a reply");
    }
    wait_readable(false);
    child.drain();
  }
}

void JsonLinesProcess::stop() {
  std::lock_guard lock(mutex_);
  if (!child_) return;
  child_->process.in.reset();  // end of input: a well-behaved peer exits now
  child_->process.wait_exit(Clock::now() + options_.shutdown_grace, [&] { child_->drain(); });
  child_->process.kill_group(options_.kill_grace);
  child_->drain();
  last_stderr_tail_ = child_->tail();
  child_.reset();
}

JsonLinesFailure JsonLinesProcess::last_failure() const {
  std::lock_guard lock(mutex_);
  return last_failure_kind_;
}

bool JsonLinesProcess::running() const {
  std::lock_guard lock(mutex_);
  return child_ && !child_->process.try_reap();
}

bool JsonLinesProcess::dead() const {
  std::lock_guard lock(mutex_);
  return dead_;
}

int JsonLinesProcess::starts() const {
  std::lock_guard lock(mutex_);
  return starts_;
}

std::string JsonLinesProcess::stderr_tail() const {
  std::lock_guard lock(mutex_);
  return child_ ? child_->tail() : last_stderr_tail_;
}

}  // namespace autotune
