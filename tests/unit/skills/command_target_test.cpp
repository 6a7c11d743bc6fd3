#include "skills/targets/command_target.hpp"

#include <doctest/doctest.h>

#include <fstream>

#include "core/error.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using namespace autotune::skills;
using autotune::testing::TempDir;

namespace {

// A stand-in for a user's benchmark: its behaviour is chosen by argv[1].
const char* kBenchProgram = R"(
import json, os, sys, time
mode = sys.argv[1]
if mode == "ok":
    tile = int(sys.argv[2])
    print("compiling kernel ...")
    print(json.dumps({"latency_s": 1.0 / tile, "gflops": tile * 2, "engine": "pe", "profile": {"busy": 0.5}}))
elif mode == "sequence":
    # Each run reports the next latency from argv[2:], using a counter file.
    count = int(open("counter").read()) if os.path.exists("counter") else 0
    open("counter", "w").write(str(count + 1))
    print(json.dumps({"latency_s": float(sys.argv[2 + count]), "iterations": 10 + count}))
elif mode == "fail":
    sys.stderr.write("error: tile 300 does not divide 1024\n")
    sys.exit(2)
elif mode == "sleep":
    time.sleep(30)
elif mode == "garbage":
    print("hello, no metrics here")
elif mode == "invalid":
    print(json.dumps({"valid": False, "error": "tile exceeds SBUF capacity"}))
elif mode == "no-objective":
    print(json.dumps({"gflops": 3}))
elif mode == "latency":
    print('{"latency_s": ' + sys.argv[2] + '}')
elif mode == "print":
    sys.stdout.write(" ".join(sys.argv[2:]) + "\n" if len(sys.argv) > 2 else "")
elif mode == "echo":
    print(json.dumps({"latency_s": 1, "argv": sys.argv[2:], "params": json.loads(os.environ["AUTOTUNE_PARAMS"])}))
)";

skills::CommandTarget target_for(const TempDir& dir, std::vector<std::string> args, int repeats = 1,
                                 double timeout_s = 20) {
  const auto program = dir.python_script("bench.py", kBenchProgram);
  CommandTargetConfig config;
  config.argv = {program.string()};
  config.argv.insert(config.argv.end(), args.begin(), args.end());
  config.repeats = repeats;
  config.timeout_s = timeout_s;
  config.workdir = dir.path();
  return CommandTarget(config);
}

}  // namespace

TEST_CASE("command target measures a candidate from the last JSON line") {
  TempDir dir;
  auto target = target_for(dir, {"ok", "{tile}"});
  auto m = target.evaluate({{"tile", 4}});
  REQUIRE_MESSAGE(m.ok(), m.error);
  CHECK(m.metrics["latency_s"] == doctest::Approx(0.25));
  CHECK(m.metrics["gflops"] == 8);
  CHECK(m.metrics["engine"] == "pe");
  CHECK(m.metrics["profile"]["busy"] == doctest::Approx(0.5));
  CHECK(m.repeats.size() == 1);
  CHECK(m.argv.back() == "4");
  CHECK(to_string(m.status) == "ok");
}

TEST_CASE("command target summarises repeats by their median and keeps every run") {
  TempDir dir;
  auto target = target_for(dir, {"sequence", "3.0", "1.0", "2.0"}, 3);
  auto m = target.evaluate(nlohmann::json::object());
  REQUIRE_MESSAGE(m.ok(), m.error);
  CHECK(m.metrics["latency_s"] == doctest::Approx(2.0));
  CHECK(m.metrics["iterations"] == 11);
  REQUIRE(m.repeats.size() == 3);
  CHECK(m.repeats[0]["latency_s"] == doctest::Approx(3.0));
  CHECK(m.repeats[2]["latency_s"] == doctest::Approx(2.0));
  CHECK(m.repeat_wall_s.size() == 3);

  TempDir even_dir;
  auto even = target_for(even_dir, {"sequence", "4.0", "1.0"}, 2).evaluate(nlohmann::json::object());
  REQUIRE(even.ok());
  CHECK(even.metrics["latency_s"] == doctest::Approx(2.5));
}

TEST_CASE("command target gives each repeated metric the order-statistic interval of its median") {
  TempDir dir;
  auto m =
      target_for(dir, {"sequence", "3.0", "1.0", "2.0", "5.0", "4.0"}, 5).evaluate(nlohmann::json::object());
  REQUIRE_MESSAGE(m.ok(), m.error);
  CHECK(m.metrics["latency_s"] == doctest::Approx(3.0));
  const auto& interval = m.metrics["intervals"]["latency_s"];
  CHECK(interval["low"] == doctest::Approx(1.0));  // five runs: the range, 93.75%
  CHECK(interval["high"] == doctest::Approx(5.0));
  CHECK(interval["confidence"] == doctest::Approx(0.9375));
  CHECK(interval["n"] == 5);
  CHECK(m.metrics["intervals"]["iterations"]["low"] == 10);
  // One run: no interval, the metrics as before.
  TempDir one;
  CHECK_FALSE(target_for(one, {"ok", "4"}).evaluate(nlohmann::json::object()).metrics.contains("intervals"));
}

TEST_CASE("command measurement target pools a candidate measured again") {
  TempDir dir;
  const auto program = dir.python_script("bench.py", kBenchProgram);
  skills::CommandTargetConfig config;
  config.argv = {program.string(), "sequence", "1.0", "1.1", "1.2", "3.0", "3.1", "3.2"};
  config.workdir = dir.path();
  config.repeats = 3;
  skills::CommandMeasurementTarget target(config);
  const skills::Measurement first = target.measure({"default", {}}, skills::MeasureOptions{});
  const skills::Measurement again = target.measure({"default", {}}, skills::MeasureOptions{});
  REQUIRE(first.status == Outcome::ok);
  REQUIRE(again.status == Outcome::ok);
  CHECK(first.metrics["latency_s"] == doctest::Approx(1.1));
  const skills::Measurement both = target.combine(first.repeats, again);
  CHECK(both.status == Outcome::ok);
  CHECK(both.repeats.size() == 6);
  CHECK(both.metrics["latency_s"] == doctest::Approx(2.1));  // (1.2 + 3.0) / 2
  // Six runs: ranks 1 and 6 (96.9%); two measurements that disagree give an interval spanning both.
  CHECK(both.metrics["intervals"]["latency_s"]["low"] == doctest::Approx(1.0));
  CHECK(both.metrics["intervals"]["latency_s"]["high"] == doctest::Approx(3.2));
}

TEST_CASE("command target turns a non-zero exit into a failed measurement with the stderr tail") {
  TempDir dir;
  auto m = target_for(dir, {"fail"}).evaluate(nlohmann::json::object());
  CHECK(m.status == Outcome::failed);
  CHECK(m.error == "exited with code 2; stderr: error: tile 300 does not divide 1024");
  CHECK(m.metrics.empty());
}

TEST_CASE("command target times out a run that does not finish") {
  TempDir dir;
  auto m = target_for(dir, {"sleep"}, 3, 0.5).evaluate(nlohmann::json::object());
  CHECK(m.status == Outcome::timeout);
  CHECK(m.error == "run 1 of 3: timed out after 0.5 s");
  CHECK(m.repeats.empty());
}

TEST_CASE("command target rejects output without a JSON object or without the objective") {
  TempDir dir;
  auto garbage = target_for(dir, {"garbage"}).evaluate(nlohmann::json::object());
  CHECK(garbage.status == Outcome::failed);
  CHECK(garbage.error == "printed no JSON object on stdout (last line: 'hello, no metrics here')");
  auto missing = target_for(dir, {"no-objective"}).evaluate(nlohmann::json::object());
  CHECK(missing.status == Outcome::failed);
  CHECK(missing.error == "the output has no objective metric 'latency_s': {\"gflops\":3}");
}

TEST_CASE("command target refuses a zero, negative or non-finite objective as a measurement") {
  TempDir dir;
  for (const std::string value : {"0", "-0.5", "1e999", "NaN"}) {
    auto m = target_for(dir, {"latency", value}).evaluate(nlohmann::json::object());
    CAPTURE(value);
    CHECK(m.status == Outcome::failed);
    CHECK(m.metrics.empty());
  }
  auto zero = target_for(dir, {"latency", "0"}).evaluate(nlohmann::json::object());
  CHECK(zero.error == "the objective metric 'latency_s' is 0; a measurement must be positive");
  CHECK(target_for(dir, {"latency", "2.5e-6"}).evaluate(nlohmann::json::object()).status == Outcome::ok);
}

TEST_CASE("command target records a candidate the program declares invalid") {
  TempDir dir;
  auto m = target_for(dir, {"invalid"}, 3).evaluate(nlohmann::json::object());
  CHECK(m.status == Outcome::invalid);
  CHECK(m.error == "run 1 of 3: tile exceeds SBUF capacity");
  CHECK(m.repeats.size() == 1);
}

TEST_CASE("command target substitutes placeholders into single argv elements, never through a shell") {
  TempDir dir;
  auto target =
      target_for(dir, {"echo", "--label={label}; echo pwned", "{tile}x{unroll}", "{{literal}}", "$HOME"});
  CHECK(target.placeholders() == std::vector<std::string>{"label", "tile", "unroll"});
  nlohmann::json params = {{"label", "a b"}, {"tile", 128}, {"unroll", 2.5}};
  auto m = target.evaluate(params);
  REQUIRE_MESSAGE(m.ok(), m.error);
  CHECK(m.metrics["argv"] == nlohmann::json({"--label=a b; echo pwned", "128x2.5", "{literal}", "$HOME"}));
  CHECK(m.metrics["params"] == params);

  auto missing = target.evaluate({{"tile", 1}});
  CHECK(missing.status == Outcome::failed);
  CHECK(missing.error == "argv uses {label} but the candidate has no parameter 'label'");
  CHECK_THROWS_AS(target_for(dir, {"{not closed"}), UserError);
  CHECK_THROWS_AS(target_for(dir, {"{1abc}"}), UserError);
}

TEST_CASE("command target config is read strictly from a goal's target mapping") {
  TempDir dir;
  dir.python_script("bench.py", kBenchProgram);
  std::filesystem::create_directories(dir.path() / "work");
  const std::vector<std::string> params = {"tile", "unroll"};
  auto parse = [&](const std::string& yaml, const std::vector<std::string>* names) {
    ConfigReader goal(YAML::Load(yaml), "goal.yaml");
    auto target = goal.child("target");
    return skills::parse_command_target(target, dir.path(), names);
  };

  auto config = parse(
      "target:\n  kind: command\n  argv: [./bench.py, ok, '{tile}']\n  repeats: 3\n  timeout_s: 5\n"
      "  metrics: [gflops]\n",
      &params);
  CHECK(config.argv == std::vector<std::string>{"./bench.py", "ok", "{tile}"});
  CHECK(config.repeats == 3);
  CHECK(config.objective == "latency_s");
  CHECK(config.metrics == std::vector<std::string>{"gflops"});
  CHECK(config.workdir == dir.path());
  auto m = skills::CommandTarget(config).evaluate(
      {{"tile", 2}, {"unroll", 1}});  // ./bench.py resolved in the goal's folder
  REQUIRE_MESSAGE(m.ok(), m.error);
  CHECK(m.metrics["latency_s"] == doctest::Approx(0.5));

  CHECK(parse("target: {kind: command, argv: [python3], workdir: work}\n", nullptr).workdir ==
        dir.path() / "work");
  CHECK_THROWS_WITH_AS(parse("target: {kind: command, argv: [python3], repeat: 3}\n", nullptr),
                       "goal.yaml:1: target.repeat: unknown key (did you mean repeats?); accepted: kind, "
                       "argv, timeout_s, repeats, confidence, remeasure_beyond, objective, metrics, workdir",
                       UserError);
  CHECK_THROWS_WITH_AS(
      parse("target: {kind: command, argv: [python3, '{tyle}']}\n", &params),
      "goal.yaml:1: target.argv: placeholder {tyle} names no parameter; parameters: tile, unroll", UserError);
  CHECK_THROWS_WITH_AS(parse("target: {kind: command, argv: [autotune-no-such-program]}\n", nullptr),
                       "goal.yaml:1: target.argv: program 'autotune-no-such-program' is not found on PATH",
                       UserError);
  // A bare name is looked up on PATH only, as a shell does; one naming a file of the workdir gets the hint.
  CHECK_THROWS_WITH_AS(
      parse("target: {kind: command, argv: [bench.py, ok, '{tile}']}\n", &params),
      "goal.yaml:1: target.argv: program 'bench.py' is not found on PATH (a name without '/' "
      "is looked up there, as a shell does); for the file in the goal file's folder, write "
      "'./bench.py'",
      UserError);
  {
    std::ofstream(dir.path() / "plain.sh") << "echo hi\n";  // not executable
    CHECK_THROWS_WITH_AS(parse("target: {kind: command, argv: [./plain.sh]}\n", nullptr),
                         ("goal.yaml:1: target.argv: program './plain.sh' is not executable: " +
                          (dir.path() / "plain.sh").lexically_normal().string() +
                          " (a relative path is taken from the goal file's folder); make it executable "
                          "(chmod +x) or put its interpreter before it in the argv")
                             .c_str(),
                         UserError);
  }
  // A relative program path: the absolute path tried, and what it was taken relative to.
  CHECK_THROWS_WITH_AS(parse("target: {kind: command, argv: [./gone.py]}\n", nullptr),
                       ("goal.yaml:1: target.argv: program './gone.py' is not an executable file: " +
                        (dir.path() / "gone.py").lexically_normal().string() +
                        " (a relative path is taken from the goal file's folder)")
                           .c_str(),
                       UserError);
  CHECK_THROWS_WITH_AS(parse("target: {kind: command, argv: [../gone.py], workdir: work}\n", nullptr),
                       ("goal.yaml:1: target.argv: program '../gone.py' is not an executable file: " +
                        (dir.path() / "gone.py").lexically_normal().string() +
                        " (a relative path is taken from target.workdir)")
                           .c_str(),
                       UserError);
  {
    // A goal named from its own folder has an empty folder: the path is still absolute.
    ConfigReader goal(YAML::Load("target: {kind: command, argv: [./gone.py]}\n"), "goal.yaml");
    auto target = goal.child("target");
    const std::string cwd = std::filesystem::current_path().string();
    CHECK_THROWS_WITH_AS(skills::parse_command_target(target, "", nullptr),
                         ("goal.yaml:1: target.argv: program './gone.py' is not an executable file: " + cwd +
                          "/gone.py (a relative path is taken from the goal file's folder)")
                             .c_str(),
                         UserError);
  }
  CHECK_THROWS_AS(parse("target: {kind: command, argv: [python3], repeats: 0}\n", nullptr), UserError);
  CHECK(parse("target: {kind: command, argv: [python3], confidence: 0.9, remeasure_beyond: 2}\n", nullptr)
            .remeasure_beyond == 2);
  CHECK_THROWS_WITH_AS(
      parse("target: {kind: command, argv: [python3], confidence: 95}\n", nullptr),
      "goal.yaml:1: target.confidence: must be a probability between 0 and 1 (exclusive), e.g. 0.95",
      UserError);
  CHECK_THROWS_AS(parse("target: {kind: command, argv: [python3], remeasure_beyond: -1}\n", nullptr),
                  UserError);
  CHECK_THROWS_AS(parse("target: {kind: command, argv: [python3], workdir: nowhere}\n", nullptr), UserError);
  CHECK_THROWS_AS(parse("target: {kind: command, argv: []}\n", nullptr), UserError);
}

TEST_CASE("command measurement target maps a measurement for the Benchmark Runner") {
  TempDir dir;
  const auto program = dir.python_script("bench.py", kBenchProgram);
  skills::CommandTargetConfig config;
  config.argv = {program.string(), "ok", "{tile}"};
  config.workdir = dir.path();
  config.objective = "gflops";
  config.timeout_s = 20;
  skills::CommandMeasurementTarget target(config);
  CHECK(target.kind() == "command");
  CHECK(target.cache_identity().starts_with("command:"));

  skills::Measurement m = target.measure({"default", {{"tile", 8}}}, skills::MeasureOptions{});
  REQUIRE_MESSAGE(m.status == Outcome::ok, m.error);
  // Ranked by the objective: latency_s is gflops' value, the program's own latency_s is kept aside.
  CHECK(m.metrics["latency_s"] == 16);
  CHECK(m.metrics["objective"] == "gflops");
  CHECK(m.metrics[kProgramLatencyMetric] == doctest::Approx(0.125));
  CHECK(m.profile["busy"] == doctest::Approx(0.5));
  CHECK_FALSE(m.metrics.contains("profile"));
  CHECK(m.repeats.size() == 1);

  // Its own time limit: every run's timeout, the goal's timeout_s cannot cut it short.
  REQUIRE(target.own_time_limit());
  CHECK(target.own_time_limit()->seconds == 20);
  CHECK(target.own_time_limit()->setting == "target.timeout_s 20 s");
  skills::CommandTargetConfig on_device = config;
  on_device.timeout_s = 900;
  on_device.repeats = 5;
  const auto limit = skills::candidate_time_limit(skills::CommandMeasurementTarget(on_device), 120);
  CHECK(limit.seconds == 4500);
  CHECK(skills::timeout_error(limit) ==
        "exceeded the per-candidate timeout of 4500 s (target.timeout_s 900 s x target.repeats 5)");

  // Editing the benchmark program changes the cache identity.
  const std::string before = target.cache_identity();
  dir.python_script("bench.py", std::string(kBenchProgram) + "\n# edited\n");
  CHECK(skills::CommandMeasurementTarget(config).cache_identity() != before);

  config.argv = {program.string(), "sleep"};
  skills::MeasureOptions short_deadline;
  short_deadline.deadline_s = 0.5;
  skills::Measurement late =
      skills::CommandMeasurementTarget(config).measure({"default", {}}, short_deadline);
  CHECK(late.status == Outcome::timeout);
  CHECK(late.error == "timed out after 0.5 s");
}

TEST_CASE("command measurement target ranks by the objective, never by a latency_s the program printed") {
  // Two candidates, gflops the objective (minimised): the one with the lower
  // gflops must rank first whatever latency_s the program printed, and a
  // negative latency_s beside a valid objective is no ranked value at all.
  TempDir dir;
  const auto program = dir.python_script("bench.py", kBenchProgram);
  skills::CommandTargetConfig config;
  config.workdir = dir.path();
  config.objective = "gflops";
  config.repeats = 2;
  config.argv = {program.string(), "print", R"({{"gflops": {g}, "latency_s": {l}}})"};
  skills::CommandMeasurementTarget target(config);
  auto rank = [&](double gflops, double latency) {
    skills::Measurement m = target.measure({"default", {{"g", gflops}, {"l", latency}}}, {});
    REQUIRE_MESSAGE(m.status == Outcome::ok, m.error);
    return m;
  };
  const skills::Measurement low = rank(2, 5.0), high = rank(8, -1.0);
  CHECK(low.metrics["latency_s"] == 2);
  CHECK(high.metrics["latency_s"] == 8);
  CHECK(low.metrics["latency_s"].get<double>() < high.metrics["latency_s"].get<double>());
  CHECK(high.metrics[kProgramLatencyMetric] == doctest::Approx(-1.0));
  // The intervals follow: latency_s's is the objective's, the program's is renamed.
  CHECK(low.metrics["intervals"]["latency_s"] == low.metrics["intervals"]["gflops"]);
  CHECK(low.metrics["intervals"][kProgramLatencyMetric]["low"] == doctest::Approx(5.0));
  // Pooled measurements keep the same mapping.
  const skills::Measurement both = target.combine(low.repeats, low);
  CHECK(both.metrics["latency_s"] == doctest::Approx(2.0));
  CHECK(both.metrics[kProgramLatencyMetric] == doctest::Approx(5.0));
}

// `text` as an argv element that reaches the program unchanged (braces doubled).
std::string literal(const std::string& text) {
  std::string out;
  for (char c : text) out += (c == '{' || c == '}') ? std::string(2, c) : std::string(1, c);
  return out;
}

TEST_CASE("command target says what is wrong with output it cannot take") {
  TempDir dir;
  auto error_of = [&](std::vector<std::string> args) {
    for (auto& arg : args) arg = literal(arg);
    auto m = target_for(dir, std::move(args)).evaluate(nlohmann::json::object());
    CHECK(m.status == Outcome::failed);
    CHECK(m.metrics.empty());
    return m.error;
  };
  // Exit 0 with nothing on stdout.
  CHECK(error_of({"print"}) == "printed no JSON object on stdout (stdout is empty)");
  // Numbers JSON has no form for: not "no JSON object", and not an earlier object instead.
  CHECK(error_of({"print", R"({"latency_s": 1e400})"}) ==
        R"(printed a JSON object whose number 1e400 is not a finite number: '{"latency_s": 1e400}')");
  CHECK(
      error_of({"print", R"({"latency_s": NaN, "note": "NaN inside a string is text"})"}) ==
      R"(printed a JSON object whose number NaN is not a finite number: '{"latency_s": NaN, "note": "NaN inside a string is text"}')");
  CHECK(error_of({"print", R"({"latency_s": -Infinity})"})
            .starts_with("printed a JSON object whose number -Infinity is not a finite number"));
  // `valid` must be a boolean: the string "false" is neither valid nor invalid.
  CHECK(error_of({"print", R"({"valid": "false", "latency_s": 1})"}) ==
        R"(the output's 'valid' is "false", not true or false (a JSON boolean, unquoted))");
  // The tool's own metric names are not taken from the program.
  CHECK(error_of({"print", R"({"latency_s": 1, "intervals": {"latency_s": {"low": 0, "high": 9}}})"}) ==
        "the output holds 'intervals', a metric name autotune sets itself in a trial; print it under "
        "another name");
  CHECK(error_of({"print", R"({"latency_s": 1, "objective": "mine"})"})
            .starts_with("the output holds 'objective'"));
  // Finite JSON numbers, and valid: true, are measurements.
  CHECK(target_for(dir, {"print", literal(R"({"latency_s": 1e-300, "valid": true})")})
            .evaluate(nlohmann::json::object())
            .ok());
}
