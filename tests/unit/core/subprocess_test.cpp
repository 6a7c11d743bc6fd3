#include "core/subprocess.hpp"

#include <doctest/doctest.h>
#include <signal.h>

#include <fstream>
#include <thread>

#include "core/error.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using namespace std::chrono_literals;

namespace {

std::vector<std::string> python(const std::string& code) { return {"python3", "-c", code}; }

// True once `pid` no longer runs (gone, or a zombie waiting for its reaper).
bool process_gone(int pid) {
  for (int attempt = 0; attempt < 200; ++attempt) {
    if (::kill(pid, 0) != 0) return true;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
    const auto paren = text.rfind(')');
    if (paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] == 'Z') return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

const char* kEchoPeer = R"(
import json, sys
for line in sys.stdin:
    message = json.loads(line)
    command = message.get("do")
    if command == "crash":
        sys.stderr.write("boom: asked to crash\n"); sys.stderr.flush(); sys.exit(5)
    if command == "segfault":
        import os, signal; os.kill(os.getpid(), signal.SIGSEGV)
    if command == "hang":
        import time; time.sleep(30)
    if command == "garbage":
        print("this is not json", flush=True); continue
    if command == "long":
        import os; os.write(1, (json.dumps({"x": "a" * 5000}) + "\n").encode()); continue
    if command == "overflow":
        print('{"evidence": {"x": 1e999}}', flush=True); continue
    if command == "two-lines":
        # One write(2) of under PIPE_BUF bytes: both lines arrive together.
        import os; os.write(1, (json.dumps({"extra": 1}) + "\n" + json.dumps({"echo": message}) + "\n").encode())
        continue
    print(json.dumps({"echo": message}), flush=True)
sys.stderr.write("peer saw end of input\n")
)";

}  // namespace

TEST_CASE("run_process captures stdout, stderr and a non-zero exit code") {
  auto result = run_process(python("import sys; print('out'); print('err', file=sys.stderr); sys.exit(3)"));
  CHECK(result.outcome == ProcessResult::Outcome::exited);
  CHECK(result.exit_code == 3);
  CHECK_FALSE(result.ok());
  CHECK(result.stdout_text == "out\n");
  CHECK(result.stderr_tail == "err\n");
  CHECK(result.error == "exited with code 3");
  CHECK(result.describe_failure() == "exited with code 3; stderr: err");
}

TEST_CASE("run_process passes argv elements verbatim, without a shell") {
  auto result = run_process(
      {"python3", "-c", "import sys, json; print(json.dumps(sys.argv[1:]))", "a b; echo hi", "$HOME", "*"});
  REQUIRE(result.ok());
  CHECK(nlohmann::json::parse(result.stdout_text) == nlohmann::json({"a b; echo hi", "$HOME", "*"}));
}

TEST_CASE("run_process feeds stdin, honours workdir and extra environment") {
  testing::TempDir dir;
  ProcessOptions options;
  options.stdin_text = std::string(300000, 'x') + "\nend";
  options.workdir = dir.path();
  options.extra_env["AUTOTUNE_TEST_VALUE"] = "forty two";
  auto result =
      run_process(python("import os, sys; data = sys.stdin.read(); "
                         "print(len(data), os.getcwd(), os.environ['AUTOTUNE_TEST_VALUE'], sep='|')"),
                  options);
  REQUIRE(result.ok());
  CHECK(result.stdout_text ==
        std::to_string(300004) + "|" + std::filesystem::canonical(dir.path()).string() + "|forty two\n");
}

TEST_CASE("run_process survives a child that ignores a large stdin") {
  ProcessOptions options;
  options.stdin_text = std::string(1 << 20, 'x');
  auto result = run_process({"true"}, options);
  CHECK(result.ok());
}

TEST_CASE("run_process bounds stdout and keeps only the tail of stderr") {
  ProcessOptions options;
  options.max_stdout_bytes = 1000;
  options.stderr_tail_bytes = 100;
  auto result = run_process(python("import sys\n"
                                   "for i in range(20000): sys.stderr.write('line %d\\n' % i)\n"
                                   "sys.stdout.write('y' * 500000)\n"),
                            options);
  REQUIRE(result.ok());
  CHECK(result.stdout_text == std::string(1000, 'y'));
  CHECK(result.stdout_truncated);
  CHECK(result.stderr_tail.size() == 100);
  CHECK(result.stderr_tail.ends_with("line 19999\n"));
}

TEST_CASE("run_process can keep the tail of a flood of stdout, bounded") {
  ProcessOptions options;
  options.max_stdout_bytes = 1000;
  options.keep_stdout_tail = true;
  auto result = run_process(python("import sys\n"
                                   "for i in range(200): sys.stdout.write('x' * 10000 + '\\n')\n"
                                   "print('{\"latency_s\": 1}')\n"),
                            options);
  REQUIRE(result.ok());
  CHECK(result.stdout_truncated);
  CHECK(result.stdout_text.size() == 1000);
  CHECK(result.stdout_text.ends_with("{\"latency_s\": 1}\n"));
}

TEST_CASE("run_process reports a crash by its signal name") {
  auto segfault = run_process(python("import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"));
  CHECK(segfault.outcome == ProcessResult::Outcome::signaled);
  CHECK(segfault.term_signal == SIGSEGV);
  CHECK(segfault.error == "killed by signal SIGSEGV");
  auto abort = run_process(python("import os; os.abort()"));
  CHECK(abort.error == "killed by signal SIGABRT");
}

TEST_CASE("run_process reports a program that cannot be started") {
  auto result = run_process({"autotune-no-such-program"});
  CHECK(result.outcome == ProcessResult::Outcome::spawn_failed);
  CHECK(result.error == "cannot start 'autotune-no-such-program': No such file or directory");
  ProcessOptions in_missing_dir;
  in_missing_dir.workdir = "/nonexistent/autotune";
  auto bad_dir = run_process({"true"}, in_missing_dir);
  CHECK(bad_dir.outcome == ProcessResult::Outcome::spawn_failed);
  CHECK(bad_dir.error.find("working directory '/nonexistent/autotune' does not exist") != std::string::npos);
  CHECK_THROWS_AS(run_process({}), UserError);
}

TEST_CASE("run_process kills the whole process group on a timeout") {
  ProcessOptions options;
  options.timeout = 1500ms;
  auto result = run_process(python("import subprocess, sys, time\n"
                                   "child = subprocess.Popen(['sleep', '30'])\n"
                                   "print(child.pid, flush=True)\n"
                                   "sys.stderr.write('working\\n'); sys.stderr.flush()\n"
                                   "time.sleep(30)\n"),
                            options);
  CHECK(result.timed_out());
  CHECK(result.error == "timed out after 1.5 s");
  // On a heavily loaded machine the interpreter may not get as far as starting
  // the grandchild within the timeout; then there is nothing left to check.
  if (!result.stdout_text.empty()) {
    CHECK(result.stderr_tail == "working\n");
    CHECK(process_gone(std::stoi(result.stdout_text)));
  }
}

TEST_CASE("run_process does not hang on a child that closes stdout and keeps running") {
  ProcessOptions options;
  options.timeout = 300ms;
  auto result = run_process(python("import os, time; os.close(1); os.close(2); time.sleep(30)"), options);
  CHECK(result.timed_out());
}

TEST_CASE("run_process returns when the child exits while a grandchild holds its pipes") {
  ProcessOptions options;
  options.timeout = 20s;  // must not be reached
  auto result = run_process(python("import subprocess\n"
                                   "child = subprocess.Popen(['sleep', '30'])\n"
                                   "print(child.pid)\n"),
                            options);
  CHECK(result.ok());
  REQUIRE_FALSE(result.stdout_text.empty());
  CHECK(process_gone(std::stoi(result.stdout_text)));
}

TEST_CASE("one_line_tail joins lines and keeps the end") {
  CHECK(one_line_tail("first\nsecond\n\nthird\n", 100) == "first | second | third");
  CHECK(one_line_tail("abcdefghij", 4) == "...ghij");
  CHECK(signal_name(SIGKILL) == "SIGKILL");
}

TEST_CASE("JsonLinesProcess answers one line per request") {
  JsonLinesProcess peer(python(kEchoPeer));
  std::string error;
  REQUIRE(peer.start(&error));
  for (int i = 0; i < 3; ++i) {
    auto reply = peer.request({{"n", i}}, 20s, &error);
    REQUIRE_MESSAGE(reply, error);
    CHECK((*reply)["echo"]["n"] == i);
  }
  CHECK(peer.starts() == 1);
  peer.stop();
  CHECK_FALSE(peer.running());
  CHECK(peer.stderr_tail() == "peer saw end of input\n");  // stdin was closed, the peer exited on its own
}

TEST_CASE("JsonLinesProcess turns a crash into an error and restarts on the next request") {
  JsonLinesProcess peer(python(kEchoPeer));
  std::string error;
  CHECK_FALSE(peer.request({{"do", "crash"}}, 20s, &error));
  CHECK(error == "exited with code 5 before replying; stderr: boom: asked to crash");
  CHECK(peer.last_failure() == JsonLinesFailure::ended);
  CHECK_FALSE(peer.request({{"do", "segfault"}}, 20s, &error));
  CHECK(error == "killed by signal SIGSEGV before replying");
  auto reply = peer.request({{"n", 1}}, 20s, &error);
  REQUIRE_MESSAGE(reply, error);
  CHECK((*reply)["echo"]["n"] == 1);
  CHECK(peer.last_failure() == JsonLinesFailure::none);
  CHECK(peer.starts() == 3);
}

TEST_CASE("JsonLinesProcess times out a hanging peer and reports a malformed line") {
  JsonLinesProcess peer(python(kEchoPeer));
  std::string error;
  CHECK_FALSE(peer.request({{"do", "hang"}}, 300ms, &error));
  CHECK(error == "timed out after 0.3 s waiting for a reply");
  CHECK(peer.last_failure() == JsonLinesFailure::timed_out);
  CHECK_FALSE(peer.request({{"do", "garbage"}}, 20s, &error));
  CHECK(error == "replied with a line that is not JSON: 'this is not json'");
  CHECK(peer.last_failure() == JsonLinesFailure::malformed);
  auto reply = peer.request({{"n", 2}}, 20s, &error);
  REQUIRE_MESSAGE(reply, error);
  CHECK((*reply)["echo"]["n"] == 2);
}

TEST_CASE("JsonLinesProcess reports a peer that exits while a process it started holds its stdout") {
  // The peer starts a sleeper that inherits its stdout, then exits without a
  // reply: that is an ended peer, not one that is slow to answer.
  JsonLinesProcess peer(
      python("import subprocess, sys\n"
             "sys.stdin.readline()\n"
             "subprocess.Popen(['sleep', '30'])\n"
             "sys.exit(3)\n"));
  std::string error;
  CHECK_FALSE(peer.request({{"n", 1}}, 20s, &error));
  CHECK(error == "exited with code 3 before replying; a process it started still holds its stdout");
  CHECK(peer.last_failure() == JsonLinesFailure::ended);
}

TEST_CASE("JsonLinesProcess reports a number beyond a double's range as a malformed line") {
  JsonLinesProcess peer(python(kEchoPeer));
  std::string error;
  CHECK_FALSE(peer.request({{"do", "overflow"}}, 20s, &error));
  CHECK(error == "replied with a line that is not JSON: '{\"evidence\": {\"x\": 1e999}}'");
  CHECK(peer.last_failure() == JsonLinesFailure::malformed);
  auto reply = peer.request({{"n", 3}}, 20s, &error);
  REQUIRE_MESSAGE(reply, error);
  CHECK((*reply)["echo"]["n"] == 3);
}

TEST_CASE("JsonLinesProcess refuses a line over its limit even when it arrives in one read") {
  JsonLinesOptions options;
  options.max_line_bytes = 1000;
  JsonLinesProcess peer(python(kEchoPeer), options);
  std::string error;
  CHECK_FALSE(peer.request({{"do", "long"}}, 20s, &error));
  CHECK(error == "replied with a line longer than 1000 bytes");
  CHECK(peer.last_failure() == JsonLinesFailure::malformed);
}

TEST_CASE("JsonLinesProcess gives up after its restarts are spent") {
  JsonLinesOptions options;
  options.max_restarts = 1;
  JsonLinesProcess peer(python(kEchoPeer), options);
  std::string error;
  CHECK_FALSE(peer.request({{"do", "crash"}}, 20s, &error));
  CHECK_FALSE(peer.dead());
  CHECK_FALSE(peer.request({{"do", "crash"}}, 20s, &error));
  CHECK(peer.dead());
  CHECK_FALSE(peer.request({{"n", 1}}, 20s, &error));
  CHECK(error ==
        "not restarted after 2 start(s); last failure: exited with code 5 before replying; stderr: boom: "
        "asked to crash");
  CHECK(peer.last_failure() == JsonLinesFailure::gave_up);
  CHECK(peer.starts() == 2);
}

TEST_CASE("JsonLinesProcess discards unrequested lines and reports a missing program") {
  JsonLinesProcess peer(python(kEchoPeer));
  std::string error;
  auto first = peer.request({{"do", "two-lines"}}, 20s, &error);
  REQUIRE_MESSAGE(first, error);
  CHECK((*first)["extra"] == 1);  // the first line is the reply; the second is left over
  auto second = peer.request({{"n", 3}}, 20s, &error);
  REQUIRE_MESSAGE(second, error);
  CHECK((*second)["echo"]["n"] == 3);

  JsonLinesProcess missing({"autotune-no-such-program"});
  CHECK_FALSE(missing.request({{"n", 1}}, 1s, &error));
  CHECK(error == "cannot start 'autotune-no-such-program': No such file or directory");
  CHECK(missing.dead());
  CHECK(missing.last_failure() == JsonLinesFailure::cannot_start);
}
