#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/error.hpp"
#include "search/search_loop.hpp"

using namespace autotune;
using namespace autotune::search;

namespace {

const std::string kData = std::string(AUTOTUNE_SHARED_DIR) + "/data/tuning/";

std::string write_temp(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / name;
  std::ofstream(path) << text;
  return path.string();
}

}  // namespace

TEST_CASE("replay reads a recorded space: keys are the space, failures are failures") {
  const auto target = RecordedSpace::load(kData + "pnpoly/RTX_3090.json");
  CHECK(target.name() == "pnpoly/RTX_3090");
  CHECK(target.space().size() == 4092);
  CHECK(target.valid_values().size() == 3774);
  std::size_t failed = 0;
  for (std::uint64_t i = 0; i < target.space().size(); ++i)
    failed += target.evaluate_index(i).status == Outcome::failed;
  CHECK(failed == 4092 - 3774);
  // The first record of the file: 0,32,1,0 -> 43.5538...
  const Configuration c{std::int64_t{0}, std::int64_t{32}, std::int64_t{1}, std::int64_t{0}};
  const auto result = target.evaluate(c);
  REQUIRE(result.status == Outcome::ok);
  CHECK(result.value == doctest::Approx(43.55386238098144));
  CHECK(target.observe(c)->value == doctest::Approx(43.55386238098144));
  // A value within the domains but absent from the cache is outside the space.
  const auto& domains = target.space().parameters();
  CHECK(domains[1].size() == 31);
}

TEST_CASE("replay: configurations absent from the cache are outside the space") {
  const auto target = RecordedSpace::load(kData + "convolution/RTX_3090.json");
  CHECK(target.space().size() == 6768);
  CHECK(target.space().cartesian_size() > 6768);
  std::size_t outside = 0;
  Rng rng(1);
  const auto& params = target.space().parameters();
  for (int i = 0; i < 200; ++i) {
    Configuration c;
    for (const auto& p : params)
      c.push_back(p.values()[rng.uniform_int(0, static_cast<std::int64_t>(p.size()) - 1)]);
    const auto result = target.evaluate(c);
    if (result.status == Outcome::invalid) {
      ++outside;
      CHECK_FALSE(target.observe(c).has_value());
    }
  }
  CHECK(outside > 0);
  const auto failure = target.evaluate_index(0);
  CHECK((failure.status == Outcome::ok || failure.failure.find("FailedConfig") != std::string::npos));
}

TEST_CASE("related recordings: the same kernel with the same parameters, on another device") {
  const auto rtx_3090 = RecordedSpace::load(kData + "convolution/RTX_3090.json");
  CHECK(rtx_3090.same_kernel_as(RecordedSpace::load(kData + "convolution/RTX_Titan.json")));
  // The HIP convolution shares the kernel's name but has two more parameters.
  CHECK_FALSE(rtx_3090.same_kernel_as(RecordedSpace::load(kData + "convolution_hip/A4000.json")));
  CHECK_FALSE(rtx_3090.same_kernel_as(RecordedSpace::load(kData + "pnpoly/RTX_3090.json")));
}

TEST_CASE("a missing or malformed cachefile is one clear error") {
  CHECK_THROWS_WITH_AS(RecordedSpace::load("/nonexistent/cache.json"),
                       doctest::Contains("cachefile not found"), UserError);
  CHECK_THROWS_WITH_AS(RecordedSpace::load(write_temp("bad1.json", "{not json")),
                       doctest::Contains("invalid JSON"), UserError);
  CHECK_THROWS_WITH_AS(
      RecordedSpace::load(
          write_temp("bad2.json", "{\"tune_params_keys\": [\"a\"], \"tune_params\": {}, \"cache\": {}}")),
      doctest::Contains("no value list for 'a'"), UserError);
  CHECK_THROWS_WITH_AS(
      RecordedSpace::load(write_temp("bad3.json",
                                     "{\"tune_params_keys\": [\"a\"], \"tune_params\": {\"a\": [1, 2]}, "
                                     "\"cache\": {\"3\": {\"a\": 3, \"time\": 1.0}}}")),
      doctest::Contains("a = 3 is not in tune_params"), UserError);
  CHECK_THROWS_WITH_AS(RecordedSpace::load(write_temp("bad4.json",
                                                      "{\"tune_params_keys\": [\"a\"], \"tune_params\": "
                                                      "{\"a\": [1]}, \"cache\": {\"1\": {\"a\": 1, "
                                                      "\"time\": 1e999}}}")),
                       doctest::Contains("invalid JSON"), UserError);
  // A time of zero or less is refused; a negated score (another objective) may be negative.
  const std::string one_record = "{\"tune_params_keys\": [\"a\"], \"tune_params\": {\"a\": [1]}, ";
  CHECK_THROWS_WITH_AS(RecordedSpace::load(write_temp(
                           "bad5.json", one_record + "\"cache\": {\"1\": {\"a\": 1, \"time\": -1.0}}}")),
                       doctest::Contains("cache record '1': time = -1.0 is not a positive time"), UserError);
  CHECK(RecordedSpace::load(write_temp("score.json", one_record + "\"objective\": \"negated_score\", "
                                                                  "\"cache\": {\"1\": {\"a\": 1, "
                                                                  "\"negated_score\": -0.5}}}"))
            .valid_values() == std::vector<double>{-0.5});
  // Two records of one configuration, a parameter named twice, an objective that names no field.
  CHECK_THROWS_WITH_AS(RecordedSpace::load(write_temp(
                           "bad6.json", one_record + "\"cache\": {\"1\": {\"a\": 1, \"time\": 1.0}, "
                                                     "\"one\": {\"a\": 1, \"time\": 2.0}}}")),
                       doctest::Contains("cache records '1' and 'one' hold the same configuration"),
                       UserError);
  CHECK_THROWS_WITH_AS(
      RecordedSpace::load(write_temp("bad7.json",
                                     "{\"tune_params_keys\": [\"a\", \"a\"], \"tune_params\": "
                                     "{\"a\": [1]}, \"cache\": {\"1\": {\"a\": 1, \"time\": 1.0}}}")),
      doctest::Contains("'tune_params_keys' names 'a' twice"), UserError);
  CHECK_THROWS_WITH_AS(RecordedSpace::load(write_temp(
                           "bad8.json", one_record + "\"objective\": 5, "
                                                     "\"cache\": {\"1\": {\"a\": 1, \"time\": 1.0}}}")),
                       doctest::Contains("'objective' must name a field"), UserError);
  const auto ok = RecordedSpace::load(
      write_temp("ok.json",
                 "{\"tune_params_keys\": [\"a\", \"s\"], \"tune_params\": {\"a\": [1, 2], \"s\": [\"x\"]}, "
                 "\"cache\": {\"1,x\": {\"a\": 1, \"s\": \"x\", \"time\": 2.5}, "
                 "\"2,x\": {\"a\": 2, \"s\": \"x\", \"time\": \"RuntimeFailedConfig\"}}}"));
  CHECK(ok.space().size() == 2);
  CHECK(ok.valid_values() == std::vector<double>{2.5});
  CHECK(ok.evaluate({std::int64_t{2}, std::string("x")}).failure == "RuntimeFailedConfig");
}

TEST_CASE("a recording read as times: the objective chosen, every number a positive time, the runs kept") {
  const std::string text =
      "{\"tune_params_keys\": [\"a\"], \"tune_params\": {\"a\": [1, 2, 3]}, \"objective\": "
      "\"negated_score\", "
      "\"cache\": {\"1\": {\"a\": 1, \"negated_score\": -0.5, \"time\": 2.0, \"times\": [1.9, 2.1, 2.0]}, "
      "\"2\": {\"a\": 2, \"negated_score\": -0.25, \"time\": 3.0}, "
      "\"3\": {\"a\": 3, \"negated_score\": \"InvalidConfig\", \"time\": \"InvalidConfig\"}}}";
  // The file's objective, a score of either sign, unless the reader asks for times.
  CHECK(RecordedSpace::parse(text, "score.json").valid_values() == std::vector<double>{-0.5, -0.25});
  CHECK_THROWS_WITH_AS(
      RecordedSpace::parse(text, "score.json", {.as_time = true}),
      doctest::Contains("score.json: cache record '1': negated_score = -0.5 is not a positive time"),
      UserError);
  CHECK_THROWS_WITH_AS(RecordedSpace::parse(text, "score.json", {.objective = "tiem"}),
                       doctest::Contains("score.json: cache record '1' has no 'tiem'"), UserError);
  const auto times = RecordedSpace::parse(text, "score.json", {.objective = "time", .as_time = true});
  CHECK(times.objective() == "time");
  CHECK(times.valid_values() == std::vector<double>{2.0, 3.0});
  const auto first = times.evaluate({std::int64_t{1}});
  CHECK(first.value == 2.0);
  CHECK(first.runs == std::vector<double>{1.9, 2.1, 2.0});
  CHECK(times.evaluate({std::int64_t{2}}).runs.empty());
  CHECK(times.evaluate({std::int64_t{3}}).failure == "InvalidConfig");
}

TEST_CASE("scoring follows the README definitions") {
  // 10 values 10..1 (worst first): f_opt = 1, median 5.5.
  std::vector<double> values;
  for (int v = 1; v <= 10; ++v) values.push_back(v);
  const SpaceScoring scoring(values);
  CHECK(scoring.optimum() == 1);
  CHECK(scoring.median() == 5.5);
  // p = 0.95: threshold 1 + 4.5 * 0.05 = 1.225 -> i = 9 (value 1): ceil(9 / 2) = 5.
  CHECK(scoring.budget(0.95) == 5);
  // f_rand(1) = w_round(11/2)= w_6 = 4 (round half away from zero -> 6).
  CHECK(scoring.random_expected_best(1) == 4);
  const std::vector<Trace> perfect{{1.0}, {1.0}, {1.0}};
  const auto score = scoring.score(perfect);
  CHECK(score.score == doctest::Approx(1.0));
  CHECK(score.median_fraction_of_optimum == 1.0);
  const std::vector<Trace> failing{{std::nullopt, std::nullopt}};
  CHECK(scoring.median_best(failing, 2) == 10);  // nothing valid yet: the worst value
}

TEST_CASE("P(M) is defined at every evaluation count, and the score is its mean over the window") {
  std::vector<double> values;
  for (int v = 1; v <= 10; ++v) values.push_back(v);
  const SpaceScoring scoring(values);
  // f_rand(1) = 4, f_rand(3) = w_round(33/4) = w_8 = 2; the traces' median best is 3 after one
  // evaluation and 1 (the optimum) from the third on.
  const std::vector<Trace> traces{{3.0, 5.0, 1.0}, {3.0, 2.0, 1.0}, {6.0, 9.0, 1.0}};
  CHECK(scoring.performance(traces, 1) == doctest::Approx((3.0 - 4.0) / (1.0 - 4.0)));
  CHECK(scoring.performance(traces, 3) == doctest::Approx(1.0));
  CHECK(scoring.performance(traces, 40) == doctest::Approx(1.0));  // past the traces: their last best
  const auto score = scoring.score(traces);
  double sum = 0;
  for (std::size_t m = score.low_budget; m <= score.high_budget; ++m) sum += scoring.performance(traces, m);
  CHECK(score.score == doctest::Approx(sum / static_cast<double>(score.high_budget - score.low_budget + 1)));
}

TEST_CASE("the score's bootstrap standard error: none when every repeat agrees, some when they differ") {
  std::vector<double> values;
  for (int v = 1; v <= 100; ++v) values.push_back(v);
  const SpaceScoring scoring(values);
  const std::vector<Trace> alike{{1.0, 2.0}, {1.0, 2.0}, {1.0, 2.0}, {1.0, 2.0}};
  CHECK(scoring.bootstrap_standard_error(alike) == doctest::Approx(0.0));
  const std::vector<Trace> differing{{1.0}, {90.0}, {2.0}, {80.0}, {1.0}, {70.0}};
  const double spread = scoring.bootstrap_standard_error(differing);
  CHECK(spread > 0.05);
  CHECK(spread == scoring.bootstrap_standard_error(differing));  // seeded
  CHECK(scoring.bootstrap_standard_error({{1.0}}) == 0);         // one repeat: no spread to resample
}
