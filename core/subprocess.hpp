#pragma once
// Running external programs: one-shot commands (run_process) and long-lived
// JSON-lines peers (JsonLinesProcess).
//
// Contracts shared by both:
//  - A program is an argv, never a shell command line. argv[0] is looked up on
//    the PATH of this process when it contains no '/'; a relative argv[0] with a
//    '/' is resolved against `workdir` when one is given.
//  - Each child leads its own process group, so a timeout or a shutdown kills
//    the child together with everything it started (SIGTERM, then SIGKILL after
//    a grace period).
//  - The child starts with default signal dispositions and an empty signal mask,
//    whatever this process has set up for itself.
//  - Failures of the child (cannot start, non-zero exit, signal, timeout,
//    garbage output) are values with a one-line reason; nothing here throws for
//    them. An empty argv is misuse (UserError).
#include <chrono>
#include <cstddef>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace autotune {

struct ProcessOptions {
  std::optional<std::string> stdin_text;         // written then closed; no value: stdin is empty
  std::filesystem::path workdir;                 // empty: this process's working directory
  std::map<std::string, std::string> extra_env;  // added to (or overriding) this process's environment
  // Opened read-only in the child as descriptors 3, 4, ... before it starts
  // (e.g. a seccomp program for bubblewrap's --seccomp 3).
  std::vector<std::filesystem::path> inherited_files;
  std::chrono::milliseconds timeout{std::chrono::seconds(60)};
  std::size_t max_stdout_bytes = 16u << 20;   // stdout beyond this is read and dropped
  bool keep_stdout_tail = false;              // drop the start instead: the last bytes are the result
  std::size_t stderr_tail_bytes = 4096;       // only the last bytes of stderr are kept
  std::chrono::milliseconds kill_grace{200};  // between SIGTERM and SIGKILL
};

struct ProcessResult {
  enum class Outcome {
    exited,        // exit_code is valid (0 or not)
    signaled,      // term_signal is valid
    timed_out,     // killed by us after `timeout`
    spawn_failed,  // could not be started; `error` says why
  };
  Outcome outcome = Outcome::spawn_failed;
  int exit_code = -1;
  int term_signal = 0;
  std::string stdout_text;
  bool stdout_truncated = false;
  std::string stderr_tail;  // the last stderr_tail_bytes of stderr
  double wall_s = 0.0;
  std::string error;  // one line when !ok(): "exited with code 3", "killed by signal SIGSEGV", ...

  bool ok() const { return outcome == Outcome::exited && exit_code == 0; }
  bool timed_out() const { return outcome == Outcome::timed_out; }
  // `error` followed by the last line(s) of stderr, on one line, for messages.
  std::string describe_failure(std::size_t max_stderr_chars = 600) const;
};

// Runs argv to completion (or until its timeout) and captures its output.
// Never hangs: a child that closes stdout but keeps running is waited for only
// until the timeout; a child that exits while something it started still holds
// its stdout/stderr open has those stragglers killed after a short drain; a
// child flooding stderr is drained continuously. Thread-safe (each call owns
// its child).
ProcessResult run_process(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Where argv[0] would be found when run with `workdir`: a name without '/' is
// searched on PATH, a relative path is taken relative to `workdir`. nullopt when
// there is no executable file there. For checking a configuration before a run.
std::optional<std::filesystem::path> find_executable(const std::string& program,
                                                     const std::filesystem::path& workdir = {});
// Why find_executable found nothing, for a one-line configuration error:
// "program 'x' is not found on PATH" (suggesting './x' when `workdir` holds a
// file x), or for a path "program './x.py' is not an executable file:
// /abs/dir/x.py (a relative path is taken from <workdir_is>)", naming the
// absolute path tried even when `workdir` is empty (the current directory),
// and saying so when the file is there but not executable. `workdir_is` says
// what `workdir` is to the user, e.g. "the goal file's folder".
std::string missing_executable_reason(const std::string& program, const std::filesystem::path& workdir,
                                      const std::string& workdir_is);

// "SIGSEGV", "SIGKILL", ... ("signal 42" when the number has no name).
std::string signal_name(int signal_number);

// Collapses text to one line (newlines become " | ") and keeps its last
// `max_chars` characters, for embedding a stderr tail in a one-line reason.
std::string one_line_tail(const std::string& text, std::size_t max_chars);

struct JsonLinesOptions {
  // How warnings name the process ("plugin 'tiles'"); empty: its program, quoted.
  std::string name;
  std::filesystem::path workdir;
  std::map<std::string, std::string> extra_env;
  // How many times a failed process is started again. After a failure (crash,
  // timeout, malformed line) the process is killed; the next request starts a
  // fresh one while restarts remain, and afterwards every request fails at once
  // with the reason of the last failure (the process is "dead").
  int max_restarts = 2;
  std::size_t max_line_bytes = 16u << 20;
  std::size_t stderr_tail_bytes = 4096;
  std::chrono::milliseconds kill_grace{200};
  // At shutdown stdin is closed and the process gets this long to exit on its
  // own before its process group is killed.
  std::chrono::milliseconds shutdown_grace{500};
};

// Why the last request() of a JsonLinesProcess failed.
enum class JsonLinesFailure {
  none,
  cannot_start,  // the program could not be started (the process is then dead)
  ended,         // exited, crashed or closed its pipes before replying
  timed_out,     // no complete reply line within the timeout
  malformed,     // the reply line is not JSON, or too long
  gave_up,       // restarts are spent: the process is dead
  bad_request,   // the message could not be serialized (the process is untouched)
};

// A long-lived child that answers one JSON line on stdout for each JSON line
// written to its stdin (the plugin protocol, docs/plugins.md).
//
// request() never throws for anything the child does and never blocks past its
// timeout. Calls on one object are serialized by an internal mutex, so the
// intended use is one object per caller (a worker that wants parallel requests
// starts its own process). Output the child prints beyond its one reply line
// is discarded with a warning if it has arrived by the next request (there is
// no request id to match replies; a late extra line is taken as the next reply).
class JsonLinesProcess {
 public:
  JsonLinesProcess(std::vector<std::string> argv, JsonLinesOptions options = {});
  ~JsonLinesProcess();  // closes stdin, waits shutdown_grace, then kills the group
  JsonLinesProcess(const JsonLinesProcess&) = delete;
  JsonLinesProcess& operator=(const JsonLinesProcess&) = delete;

  // Starts the process now (otherwise the first request does). Returns false
  // with the reason in *error when it cannot be started.
  bool start(std::string* error = nullptr);

  // Writes `message` as one line and reads one JSON value back. On failure
  // returns nullopt and sets *error to one line, e.g. "timed out after 1.5 s
  // waiting for a reply", "exited with code 1 before replying; stderr: ...",
  // "replied with a line that is not JSON: ...".
  std::optional<nlohmann::json> request(const nlohmann::json& message, std::chrono::milliseconds timeout,
                                        std::string* error = nullptr);

  // Closes stdin and waits for the exit (as the destructor does). Idempotent.
  void stop();

  JsonLinesFailure last_failure() const;  // of the latest request() or start()
  bool running() const;
  bool dead() const;                // no restarts left after a failure
  int starts() const;               // how many times the process was started
  std::string stderr_tail() const;  // of the current or last process

 private:
  struct Child;
  bool ensure_started(std::string* error);
  void fail_child(JsonLinesFailure kind, const std::string& reason);

  std::vector<std::string> argv_;
  JsonLinesOptions options_;
  mutable std::mutex mutex_;
  std::unique_ptr<Child> child_;
  int starts_ = 0;
  bool dead_ = false;
  std::string last_failure_;
  JsonLinesFailure last_failure_kind_ = JsonLinesFailure::none;
  std::string last_stderr_tail_;
};

}  // namespace autotune
