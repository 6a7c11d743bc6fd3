#include "core/config_reader.hpp"

#include <doctest/doctest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/registry.hpp"
#include "core/rng.hpp"

using namespace autotune;

TEST_CASE("config reader reads typed keys and rejects unknown ones with file and line") {
  YAML::Node node = YAML::Load("a: 3\nb: hello\nc: {d: 2.5}\ntypo: 1\n");
  ConfigReader reader(node, "goal.yaml");
  CHECK(reader.required<int>("a") == 3);
  CHECK(reader.optional<std::string>("b", "x") == "hello");
  CHECK(reader.optional<int>("missing", 7) == 7);
  auto child = reader.child("c");
  CHECK(child.required<double>("d") == doctest::Approx(2.5));
  child.finish();
  try {
    reader.finish({"a", "b", "c"});
    FAIL("unknown key accepted");
  } catch (const UserError& e) {
    CHECK(std::string(e.what()) == "goal.yaml:4: typo: unknown key; accepted: a, b, c");
  }
}

TEST_CASE("config reader names the key path and the expected type on a wrong type") {
  YAML::Node node = YAML::Load("outer:\n  n: [1, 2]\n");
  ConfigReader reader(node, "f.yaml");
  auto outer = reader.child("outer");
  CHECK_THROWS_WITH_AS(outer.required<int>("n"), "f.yaml:2: outer.n: expected an integer", UserError);
  CHECK_THROWS_WITH_AS(reader.required<int>("absent"), "f.yaml:1: absent: missing required key", UserError);
}

TEST_CASE("config reader refuses infinity and NaN, and quotes a list that is not of the type asked") {
  YAML::Node node = YAML::Load("clock: .inf\nratio: .nan\nbounds: [32, 1e400]\nfine: 2.5\n");
  ConfigReader reader(node, "t.yaml");
  CHECK_THROWS_WITH_AS(reader.required<double>("clock", "a positive number"),
                       "t.yaml:1: clock: '.inf' is not a finite number; accepted: a positive number",
                       UserError);
  CHECK_THROWS_WITH_AS(reader.optional<double>("ratio", 1.0),
                       "t.yaml:2: ratio: '.nan' is not a finite number", UserError);
  CHECK_THROWS_WITH_AS(reader.required<std::vector<std::int64_t>>("bounds", "[lo, hi]"),
                       "t.yaml:3: bounds: a list ([32, 1e400]) is not a list of integers; accepted: [lo, hi]",
                       UserError);
  CHECK(reader.required<double>("fine") == doctest::Approx(2.5));
  YAML::Node seed = YAML::Load("seed: -1\n");
  ConfigReader seeds(seed, "g.yaml");
  CHECK_THROWS_WITH_AS(seeds.required<std::uint64_t>("seed"),
                       "g.yaml:1: seed: '-1' is not a non-negative integer", UserError);
}

TEST_CASE("an error at a key leaves the document as it was") {
  // fail() locates the key's own line; it once did so by assigning the key's node over the mapping's,
  // which yaml-cpp writes into the document: the mapping became the key, and every later read missed.
  YAML::Node node = YAML::Load("a: 1\nb: 2\n");
  ConfigReader reader(node, "d.yaml");
  CHECK_THROWS_WITH_AS(reader.fail("a", "no"), "d.yaml:1: a: no", UserError);
  CHECK(node.IsMap());
  CHECK(reader.required<int>("b") == 2);
}

TEST_CASE("a count is a whole number in its range, whether given, defaulted or required") {
  YAML::Node node = YAML::Load("jobs: 4\nzero: 0\nhuge: 1000000000000\nhalf: 2.5\nword: many\n");
  ConfigReader reader(node, "c.yaml");
  CHECK(reader.optional_count("jobs", 1, 1, 256) == 4);
  CHECK(reader.optional_count("absent", 8, 1, 256) == 8);
  CHECK(reader.maybe_count("absent", 1, 256) == std::nullopt);
  CHECK(reader.required_count("jobs", 1, 4) == 4);
  CHECK_THROWS_WITH_AS(reader.maybe_count("zero", 1, 256),
                       "c.yaml:2: zero: 0 is out of range; accepted: 1 to 256", UserError);
  CHECK_THROWS_WITH_AS(reader.required_count("huge", 1, 1024),
                       "c.yaml:3: huge: 1000000000000 is out of range; accepted: 1 to 1024", UserError);
  CHECK_THROWS_WITH_AS(reader.optional_count("half", 1, 1, 256), doctest::Contains("c.yaml:4: half:"),
                       UserError);
  CHECK_THROWS_WITH_AS(reader.optional_count("word", 1, 1, 256),
                       doctest::Contains("accepted: a whole number from 1 to 256"), UserError);
  CHECK_THROWS_WITH_AS(reader.required_count("absent", 1, 256),
                       doctest::Contains("absent: missing required key"), UserError);
  // A default derived from another setting is checked too.
  CHECK_THROWS_WITH_AS(reader.optional_count("absent", 5000, 1, 4096),
                       doctest::Contains("absent: 5000 is out of range; accepted: 1 to 4096"), UserError);
}

TEST_CASE("a misspelt key is named with the key it looks like, required or not") {
  // A required key or section written wrongly: the misspelling is named, at its own line.
  YAML::Node node = YAML::Load("name: x\nmlp:\n  intermediate: 512\n  activation: silu\natention: {}\n");
  ConfigReader reader(node, "m.yaml");
  auto mlp = reader.child("mlp");
  CHECK_THROWS_WITH_AS(
      mlp.required<int>("intermediate_size", "a whole number"),
      "m.yaml:3: mlp.intermediate_size: missing required key; unknown key 'intermediate' (did "
      "you mean intermediate_size?)",
      UserError);
  CHECK_THROWS_WITH_AS(reader.child("attention"),
                       "m.yaml:5: attention: missing required section; unknown key 'atention' (did you mean "
                       "attention?)",
                       UserError);
  // Nothing alike: what is accepted, as before; a key already read is not taken for a misspelling.
  CHECK_THROWS_WITH_AS(mlp.required<int>("heads", "a whole number"),
                       "m.yaml:3: mlp.heads: missing required key; accepted: a whole number", UserError);
  CHECK(mlp.required<std::string>("activation") == "silu");
  CHECK_THROWS_WITH_AS(mlp.required<std::string>("activations"),
                       "m.yaml:3: mlp.activations: missing required key", UserError);
  // An unknown key alike an accepted one says which.
  YAML::Node goal = YAML::Load("max_iteration: 3\n");
  ConfigReader top(goal, "goal.yaml");
  CHECK_THROWS_WITH_AS(
      top.finish({"name", "max_iterations", "budget"}),
      "goal.yaml:1: max_iteration: unknown key (did you mean max_iterations?); accepted: name, "
      "max_iterations, budget",
      UserError);
  CHECK(looks_like_typo_of("intermediate", "intermediate_size"));
  CHECK(looks_like_typo_of("familly", "family"));
  CHECK_FALSE(looks_like_typo_of("seq", "seed"));  // short names: one edit at most... of a third
  CHECK_FALSE(looks_like_typo_of("name", "seed"));
}

TEST_CASE("a key twice in one mapping is refused wherever the mapping is, list items included") {
  const auto dir = std::filesystem::temp_directory_path() / ("autotune_dup_" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto error_of = [&](const std::string& text) {
    const auto file = dir / "d.yaml";
    std::ofstream(file) << text;
    try {
      (void)load_yaml_file(file);
    } catch (const UserError& e) {
      return std::string(e.what()).substr(file.string().size());
    }
    return std::string();
  };
  CHECK(error_of("a: 1\na: 2\n") ==
        ":2: a: the key appears twice (first at line 1); each key may appear once");
  CHECK(error_of("k: {x: 1, x: 2}\n") ==
        ":1: k.x: the key appears twice (first at line 1); each key may appear once");
  CHECK(error_of("skills:\n  - name: a\n  - name: b\n    role: x\n    role: y\n") ==
        ":5: skills[1].role: the key appears twice (first at line 4); each key may appear once");
  CHECK(error_of("m: [[{a: 1}, {b: 1, b: 2}]]\n") ==
        ":1: m[0][1].b: the key appears twice (first at line 1); each key may appear once");
  CHECK(
      error_of("skills:\n  - {name: a, role: x}\n  - {name: b, role: x}\n").empty());  // alike items are fine
  std::filesystem::remove_all(dir);
}

TEST_CASE("registry lists names and rejects unknown names with what is accepted") {
  Registry<int> registry("kernel");
  registry.add("gemm", 1);
  registry.add("exp", 2);
  CHECK(registry.get("gemm") == 1);
  CHECK_THROWS_WITH_AS(registry.get("conv"), "unknown kernel 'conv' (accepted: exp, gemm)", UserError);
}

TEST_CASE("rng forks are deterministic and independent") {
  Rng a(42), b(42);
  CHECK(a.fork("search")() == b.fork("search")());
  CHECK(a.fork("search")() != a.fork("runner")());
  CHECK(a.fork(1)() != a.fork(2)());
}

TEST_CASE("a UserError is one line whatever it quotes: control characters are shown as \\xHH") {
  const autotune::UserError error("goal.yaml:2: YAML syntax error: unknown escape character: \n\x01\x7f end");
  CHECK(std::string(error.what()) ==
        "goal.yaml:2: YAML syntax error: unknown escape character: \\x0a\\x01\\x7f end");
}

TEST_CASE("a quoted number is a string, and an integer too large for its key says so") {
  YAML::Node node = YAML::Load("n: \"3\"\nflag: 'true'\nbig: 99999999999999999999\nname: \"3\"\nx: 4\n");
  ConfigReader reader(node, "q.yaml");
  CHECK_THROWS_WITH_AS(
      reader.required<int>("n"),
      "q.yaml:1: n: '3' is quoted, so it is a string, not an integer; write it without quotes", UserError);
  CHECK_THROWS_WITH_AS(
      reader.required<bool>("flag"),
      "q.yaml:2: flag: 'true' is quoted, so it is a string, not true or false; write it without "
      "quotes",
      UserError);
  CHECK_THROWS_WITH_AS(
      reader.required<int>("big"),
      "q.yaml:3: big: '99999999999999999999' is out of range: this key holds at most 2147483647", UserError);
  CHECK(reader.required<std::string>("name") == "3");
  CHECK(reader.required<int>("x") == 4);
}

TEST_CASE("a second YAML document is refused at its line, and reading stops after two documents") {
  CHECK_THROWS_WITH_AS(load_yaml_text("a: 1\n---\nb: 2\n", "two.yaml"),
                       "two.yaml:3: a second YAML document (after '---'); one document is expected",
                       UserError);
  CHECK(load_yaml_text("a: 1\n---\n", "trailing.yaml")["a"].as<int>() == 1);  // an empty one says nothing
  // yaml-cpp's LoadAll never returns on this input (found by the space fuzzer): its parser reports
  // document after document. Only two are ever asked for.
  const std::string endless = ",spa {x: [1.5, 2.5].5], y: [\"a\", \"b\x01\x13\"]}\n";
  try {
    (void)load_yaml_text(endless, "endless.yaml");
  } catch (const UserError&) {
  }
}

TEST_CASE("a name is neither empty nor holds control characters") {
  ConfigReader empty(YAML::Load("name: ''\n"), "goal.yaml");
  CHECK_THROWS_WITH_AS(empty.name("name"), "goal.yaml:1: name: must not be empty", UserError);
  ConfigReader fallback(YAML::Load("other: 1\n"), "goal.yaml");
  CHECK(fallback.name("name", std::string("goal")) == "goal");
  ConfigReader broken(YAML::Load("name: \"a\\nb\"\n"), "goal.yaml");
  CHECK_THROWS_WITH_AS(broken.name("name"), doctest::Contains("control characters"), UserError);
}

TEST_CASE("a YAML file is a file: a device is refused, a pipe is read, and a huge file is refused") {
  CHECK_THROWS_WITH_AS(load_yaml_file("/dev/zero"),
                       "/dev/zero: is a device or a socket, not a file; a YAML file is expected", UserError);
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const std::string text = "name: piped\n";
  REQUIRE(::write(fds[1], text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  ::close(fds[1]);
  const YAML::Node piped = load_yaml_file("/dev/fd/" + std::to_string(fds[0]));
  ::close(fds[0]);
  CHECK(piped["name"].as<std::string>() == "piped");

  const auto big =
      std::filesystem::temp_directory_path() / ("autotune_big_" + std::to_string(::getpid()) + ".yaml");
  {
    std::ofstream out(big);
    const std::string line = "# " + std::string(1022, 'x') + "\n";
    for (int i = 0; i < 65 * 1024; ++i) out << line;
  }
  CHECK_THROWS_WITH_AS(load_yaml_file(big), doctest::Contains("is larger than 64 MiB"), UserError);
  std::filesystem::remove(big);
}
