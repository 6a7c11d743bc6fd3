// Goals: the example goals load and resolve; broken goals fail before
// anything runs, naming file, line and key.
#include "orchestrator/goal.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "kernels/family.hpp"
#include "orchestrator/model_run.hpp"
#include "orchestrator/policy.hpp"
#include "orchestrator/setup.hpp"
#include "orchestrator/suite.hpp"
#include "skills/kernel_generator.hpp"
#include "tests/support/temp_dir.hpp"

using namespace autotune;
using namespace autotune::orchestrator;

namespace {

std::filesystem::path source(const std::string& relative) {
  return std::filesystem::path(AUTOTUNE_SOURCE_DIR) / relative;
}

// The UserError `action` throws ("" when it throws none).
template <class Action>
std::string user_error(Action action) {
  try {
    action();
  } catch (const UserError& e) {
    return e.what();
  }
  return "";
}

std::string error_of(const std::string& relative) {
  return user_error([&] { load_and_prepare(source(relative)); });
}

}  // namespace

TEST_CASE("example goals load, resolve and round-trip their resolved YAML") {
  for (const char* name : {"quickstart", "exp-profiler", "gemm-article", "replay-convolution"}) {
    CAPTURE(name);
    auto prepared = load_and_prepare(source(std::string("configs/goals/") + name + ".yaml"));
    CHECK_FALSE(prepared.setup.catalog.variants.empty());
    CHECK_FALSE(prepared.goal.start_variant.empty());
    CHECK(prepared.setup.catalog.baseline.variant == prepared.goal.start_variant);
    const std::string yaml = to_yaml(prepared.goal);
    CHECK(yaml.find("start:") != std::string::npos);
    // The stored goal is itself a valid goal that resolves to the same thing.
    const auto path = std::filesystem::temp_directory_path() / (std::string("resolved-") + name + ".yaml");
    std::ofstream(path) << yaml;
    auto again = load_and_prepare(path);
    again.goal.file = prepared.goal.file;
    CHECK(to_yaml(again.goal) == yaml);
    std::filesystem::remove(path);
  }
}

TEST_CASE("search.transfer: off unless asked, the resolved YAML names it only when on") {
  const testing::TempDir dir;
  const std::string kernel = "name: t\nkernel: {family: exp, shape: [250, 512], dtype: fp32}\n";
  const Goal plain = load_goal(dir.write("plain.yaml", kernel + "search: {strategy: bayes}\n"));
  CHECK_FALSE(plain.transfer);
  CHECK(to_yaml(plain).find("transfer") == std::string::npos);  // goals stored before the key read the same
  const Goal learning =
      load_goal(dir.write("learning.yaml", kernel + "search: {strategy: bayes, transfer: true}\n"));
  CHECK(learning.transfer);
  const std::string yaml = to_yaml(learning);
  CHECK(yaml.find("transfer: true") != std::string::npos);
  CHECK(load_goal(dir.write("again.yaml", yaml)).transfer);
}

TEST_CASE("a suite's search.options reach every task's goal, and are checked when the suite is read") {
  const testing::TempDir dir;
  const std::string head = "name: s\ntargets: [trn1, trn2]\n";
  const std::string tasks =
      "tasks:\n  - name: act\n    kernel: {family: silu, shape: {rows: 256, cols: 1024}, dtype: fp32}\n";
  const Suite suite = load_suite(
      dir.write("s.yaml", head + "search:\n  strategy: bayes\n  options: {initial: 4, xi: 0.1}\n" + tasks));
  for (const std::string target : {"trn1", "trn2"}) {
    const TaskGoal made = task_goal(suite, suite.tasks.front(), target);
    CHECK(made.goal.strategy == "bayes");
    CHECK(made.goal.strategy_options == Json{{"initial", 4}, {"xi", 0.1}});
  }
  const std::string error = user_error([&] {
    load_suite(dir.write("bad.yaml", head + "search:\n  strategy: bayes\n  options: {initial: 0}\n" + tasks));
  });
  CHECK(error.find("bad.yaml:5: search.options: strategy 'bayes': option out of range") != std::string::npos);
}

TEST_CASE("a model goal's search.strategy and search.options are checked when it is read") {
  const testing::TempDir dir;
  const std::string head = "name: m\nmodel: {file: " + source("configs/models/qwen3-0.6b.yaml").string() +
                           ", layers: 1, seq: 512}\ntarget: trn2\n";
  const ModelGoal goal =
      load_model_goal(dir.write("m.yaml", head + "search: {strategy: bayes, options: {xi: 0.1}}\n"));
  CHECK(goal.strategy_options == Json{{"xi", 0.1}});
  CHECK(user_error([&] {
          load_model_goal(dir.write("s.yaml", head + "search: {strategy: hillclimb}\n"));
        }).find("s.yaml:4: search.strategy: unknown strategy 'hillclimb'") != std::string::npos);
  CHECK(user_error([&] {
          load_model_goal(dir.write("o.yaml", head + "search: {options: {initial: 0}}\n"));
        }).find("o.yaml:4: search.options: strategy 'bayes': option out of range") != std::string::npos);
  // The model section's layers and seq are this file's keys, not `autotune model`'s flags.
  const std::string model_file = source("configs/models/qwen3-0.6b.yaml").string();
  CHECK(user_error([&] {
          load_model_goal(dir.write(
              "l.yaml", "name: m\nmodel:\n  file: " + model_file + "\n  layers: 0\ntarget: trn2\n"));
        }).find("l.yaml:4: model.layers: 0 is out of range; accepted: 1 to 1024") != std::string::npos);
  CHECK(user_error([&] {
          load_model_goal(dir.write("q.yaml", "name: m\nmodel: {file: " + model_file + ", seq: -1}\n"));
        }).find("q.yaml:2: model.seq: -1 is out of range; accepted: 1 to 131072") != std::string::npos);
  // A prompt length the model's kernels cannot take is this file's key too.
  CHECK(user_error([&] {
          load_model_goal(
              dir.write("long.yaml", "name: m\nmodel: {file: " + model_file + ", seq: 100000}\n"));
        }).find("/long.yaml:2: model.seq: 100000 is too large for operator ") != std::string::npos);
  // A model file that is no regular file is said to be so, not to be missing.
  CHECK(user_error([&] {
          load_model_goal(dir.write("null.yaml", "name: m\nmodel: {file: /dev/null, layers: 1, seq: 64}\n"));
        })
            .ends_with("/null.yaml:2: model.file: not a regular file: /dev/null; accepted: a model file "
                       "(configs/models/*.yaml)"));
  // An operator whose baseline cannot run on the target is named with why, before any run exists.
  std::ifstream model_in(model_file);
  std::string wide((std::istreambuf_iterator<char>(model_in)), std::istreambuf_iterator<char>());
  wide.replace(wide.find("hidden_size: 1024"), 17, "hidden_size: 65536");
  const std::string wide_file = dir.write("wide.yaml", wide).string();
  const std::string unfit = user_error([&] {
    load_model_goal(dir.write("w.yaml", "name: m\nmodel: {file: " + wide_file + ", layers: 1, seq: 128}\n"));
  });
  CHECK(
      unfit.find("/w.yaml:2: model: the goal measures the forward against every operator's baseline, and on "
                 "trn2 these do not run: attn_norm, mlp_norm, final_norm (rmsnorm rows=128,cols=65536): SBUF "
                 "overflow: ") != std::string::npos);
  CHECK(unfit.find("; attn_residual, mlp_residual (add rows=128,cols=65536): SBUF overflow: ") !=
        std::string::npos);
  CHECK(unfit.find('\n') == std::string::npos);
  // A goal a model goal does not take is named, not reported as the improvement missing.
  CHECK(user_error([&] {
          load_model_goal(dir.write("g.yaml", head + "goal: {mfu_percent: 50}\n"));
        }).find("g.yaml:4: goal.mfu_percent: unknown key; accepted: improvement") != std::string::npos);
}

TEST_CASE("a goal constraint binds the variants that have its parameters and leaves the others whole") {
  const testing::TempDir dir;
  const std::string head =
      "name: c\nkernel: {family: gemm, shape: {M: 2048, N: 2048, K: 2048}, dtype: bf16}\n";
  const auto plain = load_and_prepare(dir.write("plain.yaml", head));
  const auto bound = load_and_prepare(
      dir.write("bound.yaml", head + "search: {constraints: [\"tiles_in_block_m <= 2\"]}\n"));
  const auto& catalog = bound.setup.catalog;
  REQUIRE(catalog.find("tiled") != nullptr);  // it has no tiles_in_block_m: unconstrained, not left out
  CHECK(catalog.variant("tiled").space->size() == plain.setup.catalog.variant("tiled").space->size());
  const auto& blocked = catalog.variant("blocked_mnk");
  CHECK(blocked.space->size() < plain.setup.catalog.variant("blocked_mnk").space->size());
  const std::size_t block = blocked.space->parameter_index("tiles_in_block_m").value();
  for (std::uint64_t i = 0; i < blocked.space->size(); ++i)
    CHECK(search::numeric_value(blocked.space->configuration_at(i)[block]) <= 2);
  // A structural probe carries the best's settings over; blocked_mnk's default block of 16 breaks the goal's
  // constraint, so the probe takes the nearest configuration the space allows: 2, everything else kept.
  const skills::Candidate probe = skills::carry_over(catalog.baseline, catalog.variant("tiled"), blocked);
  CHECK(blocked.space->contains(search::configuration_from_json(*blocked.space, probe.params)));
  CHECK(probe.params["tiles_in_block_m"] == 2);
  CHECK(probe.params["tiles_in_block_k"] == blocked.defaults["tiles_in_block_k"]);
  CHECK(probe.params["tile_n"] == catalog.baseline.params["tile_n"]);
}

TEST_CASE("a goal's values keep the family's order, which decides the neighbours, whatever the list's") {
  const testing::TempDir dir;
  const auto prepared = load_and_prepare(
      dir.write("order.yaml",
                "name: o\nkernel: {family: gemm, shape: {M: 2048, N: 2048, K: 2048}, dtype: bf16}\n"
                "search: {space: {tile_m: [128, 32, 64]}}\n"));
  const auto& tiled = prepared.setup.catalog.variant("tiled");
  const auto* tile_m = tiled.parameter("tile_m");
  REQUIRE(tile_m != nullptr);
  CHECK(tile_m->values() ==
        std::vector<search::ParamValue>{std::int64_t(32), std::int64_t(64), std::int64_t(128)});
}

TEST_CASE("a replay goal's constraints keep the recorded configurations that satisfy them") {
  const testing::TempDir dir;
  const std::string head = "name: r\ntarget: {kind: replay, cachefile: " + std::string(AUTOTUNE_SHARED_DIR) +
                           "/data/tuning/convolution/RTX_3090.json}\n";
  const auto whole = load_and_prepare(dir.write("whole.yaml", head));
  const auto narrowed = load_and_prepare(dir.write(
      "narrowed.yaml", head + "search: {constraints: [\"block_size_x <= 32 && read_only == 1\"]}\n"));
  const auto& all = *whole.setup.catalog.variants.front().space;
  const auto& kept = *narrowed.setup.catalog.variants.front().space;
  std::uint64_t satisfying = 0;
  for (std::uint64_t i = 0; i < all.size(); ++i) {
    const auto c = search::to_json(all, all.configuration_at(i));
    satisfying += c["block_size_x"].get<int>() <= 32 && c["read_only"].get<int>() == 1;
  }
  CHECK(satisfying > 0);
  CHECK(kept.size() == satisfying);
  for (std::uint64_t i = 0; i < kept.size(); ++i) {
    const auto c = search::to_json(kept, kept.configuration_at(i));
    CHECK((c["block_size_x"].get<int>() <= 32 && c["read_only"].get<int>() == 1));
  }
  CHECK(user_error([&] {
          load_and_prepare(
              dir.write("typo.yaml", head + "search: {constraints: [\"block_sizee_x <= 32\"]}\n"));
        }).find("typo.yaml:3: search.constraints: constraint 'block_sizee_x <= 32': unknown identifier") !=
        std::string::npos);
}

TEST_CASE("the GEMM article goal searches its three knobs from the tiled step") {
  auto prepared = load_and_prepare(source("configs/goals/gemm-article.yaml"));
  const auto& tiled = prepared.setup.catalog.variant("tiled");
  CHECK(tiled.parameter("tile_m")->size() == 3);
  CHECK(tiled.parameter("pipeline_depth")->size() == 3);
  CHECK(tiled.parameters_with_role("pipeline_depth") == std::vector<std::string>{"pipeline_depth"});
  CHECK(tiled.parameters_with_role("unroll") == std::vector<std::string>{"unroll_factor"});
  CHECK(prepared.goal.objective == Objective::throughput);
}

TEST_CASE("broken goals fail with file:line: key: reason") {
  struct Case {
    const char* file;
    const char* line_and_key;
    const char* reason;
  };
  const Case cases[] = {
      {"unknown_key.yaml", ":3: max_iteration:", "unknown key"},
      {"wrong_type.yaml", ":4: budget.evaluations:", "not an integer"},
      {"unknown_kernel.yaml", ":3: kernel.family:", "unknown kernel 'convolution'"},
      {"unknown_variant.yaml", ":4: start.variant:", "fancy"},
      {"unknown_parameter.yaml", ":6: search.space.tile_size:", "unknown parameter 'tile_size'"},
      {"value_outside_domain.yaml", ":5: search.space.tile_m:", "48"},
      {"infeasible.yaml", ": search.constraints:", "infeasible"},
      {"bad_objective.yaml", ":3: objective:", "speed"},
      {"unreachable_improvement.yaml", ":4: goal.improvement:", "must be below 1 for the latency objective"},
      // The exp goals start at naive, which has no parameter: the error must not depend on which variant is
      // required (before, the tiled variant was quietly left out).
      // A recording is one variant with its own parameters, and holds times only.
      {"replay_variant.yaml",
       ":3: variants:", "unknown variant 'tiled'; a recorded space has one, 'recorded'"},
      {"replay_start_variant.yaml", ":3: start.variant:", "unknown variant 'tiled'"},
      {"replay_role.yaml",
       ":3: roles.block_size_q:", "unknown parameter 'block_size_q' of the recorded space"},
      {"replay_mfu.yaml", ":3: objective:", "a replayed recording holds times, not MFU"},
      // A replay measures recorded times: a score of another sign or a misspelt field is refused up front.
      {"replay_not_a_time.yaml", "negated_score.json: cache record '1'",
       "negated_score = -0.5 is not a positive time in ms"},
      {"replay_missing_field.yaml", "negated_score.json: cache record '1'", "has no 'tiem'"},
      // A malformed recording is refused at the key that names it (it was an internal error).
      {"replay_malformed.yaml", ":2: target.cachefile:", "'tune_params' has no value list for 'b'"},
      {"command_variant.yaml",
       ":3: variants:", "unknown variant 'tiled'; a command target has one, 'command'"},
      {"constraint_syntax.yaml",
       ":4: search.constraints:", "constraint 'tile_size > ': expression ends early"},
      {"constraint_unknown_name.yaml", ":4: search.constraints:",
       "'tile_q' is neither a parameter of exp (pipeline_depth, tile_size, unroll_factor) nor a constant"},
      {"unknown_strategy.yaml", ":4: search.strategy:", "hillclimb"},
      {"unknown_strategy_option.yaml",
       ":5: search.options:", "strategy 'bayes': unknown option 'initial_points' (accepted: initial,"},
      {"strategy_option_out_of_range.yaml", ":6: search.options:",
       "strategy 'genetic': option out of range: population = 2; accepted: an integer from 4 to 100000"},
      {"bad_transfer.yaml", ":5: search.transfer:", "'sometimes' is not true or false"},
      {"missing_cachefile.yaml", ":4: target.cachefile:", "not found"},
      {"bad_dtype.yaml", ":2: kernel.dtype:", "int8"},
      {"unknown_role.yaml", ":4: roles.tile_size:", "'tyle' is not a role; accepted: tile, unroll"},
      {"partial_shape.yaml", ":4: kernel.shape:", "missing K; the shape arguments of gemm are M, N, K"},
      {"duplicate_in_list.yaml", ":7: skills[0].role:", "the key appears twice (first at line 6)"},
      {"misspelt_required.yaml",
       ":3: kernel.family:", "missing required key; unknown key 'familly' (did you mean family?)"},
      {"start_param_of_parameterless.yaml",
       ":5: start.params.tile_size:", "unknown parameter 'tile_size' of variant 'naive'; accepted: none"},
      {"infinite_number.yaml", ":4: budget.wall_time_s:", "'.inf' is not a finite number"},
      // A name is printed in listings: an escape sequence in it would reach the terminal.
      {"control_in_name.yaml", ":1: name:", "must not hold line breaks or other control characters"},
      {"negative_seed.yaml", ":3: seed:", "'-1' is not a non-negative integer"},
      // A duration beyond the clocks' range expired at once ("timed out after -9.22337e+15 s").
      {"huge_timeout.yaml", ":3: timeout_s:",
       "1e+300 is out of range; accepted: a positive number of seconds, at most 10000000 (about 116 days)"},
      {"command_huge_timeout.yaml", ":5: target.timeout_s:", "1e+300 is out of range"},
      {"plugin_huge_timeout.yaml", ":8: skills[0].timeout_s:", "1e+300 is out of range"},
      {"fp8_dtype.yaml", ":2: kernel.dtype:",
       "'fp8' (fp8 is supported by trn2 hardware but not modelled by this simulator); accepted: bf16, fp32, "
       "fp16"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.file);
    const std::string message = error_of(std::string("tests/data/goals/broken/") + c.file);
    CAPTURE(message);
    CHECK(message.find(c.file) != std::string::npos);
    CHECK(message.find(c.line_and_key) != std::string::npos);
    CHECK(message.find(c.reason) != std::string::npos);
    CHECK(message.find('\n') == std::string::npos);
  }
}

TEST_CASE("every family's goal takes its shape whole or not at all") {
  const testing::TempDir dir;
  for (const auto& name : kernels::family_registry().names()) {
    CAPTURE(name);
    const kernels::FamilySpec& family = kernels::family_registry().get(name);
    std::string whole, partial;
    for (std::size_t i = 0; i < family.shape_args.size(); ++i) {
      const std::string item =
          family.shape_args[i] + ": " + std::to_string(family.default_shape.at(family.shape_args[i]));
      whole += (i ? ", " : "") + item;
      if (i + 1 < family.shape_args.size()) partial += (i ? ", " : "") + item;
    }
    const Goal given =
        load_goal(dir.write("whole.yaml", "kernel: {family: " + name + ", shape: {" + whole + "}}\n"));
    CHECK_FALSE(given.default_shape);
    CHECK(given.shape == family.default_shape);
    const Goal bare = load_goal(dir.write("bare.yaml", "kernel: {family: " + name + "}\n"));
    CHECK(bare.default_shape);
    CHECK(bare.shape == family.default_shape);
    CHECK(kernel_text(bare).find("(the kernel's default: the goal gives no kernel.shape)") !=
          std::string::npos);
    const std::string error = user_error([&] {
      load_goal(dir.write("partial.yaml", "kernel:\n  family: " + name + "\n  shape: {" + partial + "}\n"));
    });
    CHECK(error.find("partial.yaml:3: kernel.shape: missing " + family.shape_args.back() + ";") !=
          std::string::npos);
  }
}

namespace {

// A goal file with a kernel source beside it (load_goal only checks that the source exists).
std::filesystem::path source_goal(const testing::TempDir& dir, const std::string& text) {
  dir.write("k.cc", "// not compiled by load_goal\n");
  return dir.write("goal.yaml", text);
}

std::string resolve_error(Goal& goal, const KernelSignature& signature) {
  return user_error([&] { resolve_kernel_shape(goal, signature); });
}

}  // namespace

TEST_CASE("a kernel_source goal without kernel.family takes its shape and dtype from the declaration") {
  const testing::TempDir dir;
  KernelSignature signature;
  signature.kernel = "mine";
  signature.shape_args = {"height", "width"};
  signature.default_shape = {{"height", 128}, {"width", 1024}};
  signature.dtypes = {"fp32", "bf16"};
  signature.check_shape = [](const std::map<std::string, std::int64_t>& s) {
    return s.at("width") % 128 == 0 ? std::string() : std::string("width must be a multiple of 128");
  };

  // No kernel section: the declared defaults, said to be.
  Goal bare = load_goal(source_goal(dir, "kernel_source: k.cc\n"));
  CHECK(bare.family.empty());
  resolve_kernel_shape(bare, signature);
  CHECK(bare.shape == signature.default_shape);
  CHECK(bare.default_shape);
  CHECK(kernel_text(bare) ==
        "mine, shape height=128,width=1024 (the kernel's default: the goal gives no "
        "kernel.shape), fp32");
  CHECK(bare.dtype == "fp32");
  CHECK(to_yaml(bare).find("family") == std::string::npos);

  // A mapping, a list in declaration order, a dtype.
  Goal mapped = load_goal(
      source_goal(dir, "kernel: {shape: {width: 256, height: 64}, dtype: bf16}\nkernel_source: k.cc\n"));
  resolve_kernel_shape(mapped, signature);
  CHECK(mapped.shape == std::map<std::string, std::int64_t>{{"height", 64}, {"width", 256}});
  CHECK_FALSE(mapped.default_shape);
  CHECK(kernel_text(mapped) == "mine, shape height=64,width=256, bf16");
  CHECK(mapped.dtype == "bf16");
  Goal listed = load_goal(source_goal(dir, "kernel: {shape: [64, 512]}\nkernel_source: k.cc\n"));
  resolve_kernel_shape(listed, signature);
  CHECK(listed.shape == std::map<std::string, std::int64_t>{{"height", 64}, {"width", 512}});
  // A mapping in part is never completed from the defaults.
  Goal partial = load_goal(source_goal(dir, "kernel:\n  shape: {width: 256}\nkernel_source: k.cc\n"));
  CHECK(resolve_error(partial, signature)
            .find("goal.yaml:2: kernel.shape: missing height; the shape arguments of mine are height, width "
                  "(give all of them, or none for the default height=128,width=1024)") != std::string::npos);

  // Against the declaration: file:line: key.
  Goal unknown = load_goal(source_goal(dir, "name: x\nkernel: {shape: {rows: 3}}\nkernel_source: k.cc\n"));
  CHECK(resolve_error(unknown, signature)
            .find("goal.yaml:2: kernel.shape.rows: unknown key; accepted: height, width") !=
        std::string::npos);
  Goal rejected = load_goal(source_goal(dir, "kernel: {shape: [64, 100]}\nkernel_source: k.cc\n"));
  CHECK(resolve_error(rejected, signature).find(":1: kernel.shape: width must be a multiple of 128") !=
        std::string::npos);
  Goal short_list = load_goal(source_goal(dir, "kernel: {shape: [64]}\nkernel_source: k.cc\n"));
  CHECK(resolve_error(short_list, signature).find("kernel.shape: expected 2 values [height, width]") !=
        std::string::npos);
  Goal dtype = load_goal(source_goal(dir, "kernel:\n  dtype: fp16\nkernel_source: k.cc\n"));
  CHECK(resolve_error(dtype, signature)
            .find(":2: kernel.dtype: kernel 'mine' does not take dtype 'fp16'; accepted: "
                  "fp32, bf16") != std::string::npos);

  // Its form is checked when the goal is read, before anything is compiled.
  auto load_error = [&](const std::string& text) {
    return user_error([&] { load_goal(source_goal(dir, text)); });
  };
  CHECK(load_error("kernel: {shape: {width: wide}}\nkernel_source: k.cc\n")
            .find("kernel.shape.width: 'wide' is not "
                  "an integer") != std::string::npos);
  CHECK(load_error("kernel: {shape: 3}\nkernel_source: k.cc\n").find("kernel.shape: expected a list") !=
        std::string::npos);
  CHECK(load_error("kernel: {shape: {width: 256}, tile: 3}\nkernel_source: k.cc\n")
            .find("kernel.tile: unknown key") != std::string::npos);
  CHECK(load_error("kernel: {shape: {width: 256}}\n").find(":1: kernel.family: missing required key") !=
        std::string::npos);
}

TEST_CASE("parameter roles are the family's declarations, which the goal's roles override") {
  testing::TempDir dir;
  const auto file = dir.write("goal.yaml",
                              "name: roles\n"
                              "kernel: {family: exp, shape: {rows: 256, cols: 1024}, dtype: fp32}\n"
                              "variants: [tiled]\n"
                              "start: {variant: tiled}\n");
  const auto declared = load_and_prepare(file).setup.catalog.variant("tiled").roles;
  // exp's unroll_factor is described as "row tiles folded into one DMA": a
  // reading of the description would call it a tile.
  CHECK(declared.at("tile_size") == "tile");
  CHECK(declared.at("pipeline_depth") == "pipeline_depth");
  CHECK(declared.at("unroll_factor") == "unroll");

  dir.write("goal.yaml",
            "name: roles\n"
            "kernel: {family: exp, shape: {rows: 256, cols: 1024}, dtype: fp32}\n"
            "variants: [tiled]\n"
            "start: {variant: tiled}\n"
            "roles: {unroll_factor: none, tile_size: block}\n");
  const auto overridden = load_and_prepare(file).setup.catalog.variant("tiled").roles;
  CHECK(overridden.at("tile_size") == "block");
  CHECK(overridden.at("unroll_factor").empty());
  CHECK(overridden.at("pipeline_depth") == "pipeline_depth");
}

TEST_CASE("every built-in parameter's role has a name the goal reader accepts") {
  for (const auto& [name, family] : kernels::family_registry().entries())
    for (const auto& variant : family.variants)
      for (const auto& parameter : variant.params) {
        CAPTURE(name + "." + variant.name + "." + parameter.name);
        const auto parsed = kernels::parse_role(kernels::role_name(parameter.role));
        REQUIRE(parsed);
        CHECK(*parsed == parameter.role);
      }
}

TEST_CASE("rule policy: a stop finding stops, otherwise the first idea gets a share of the budget") {
  RulePolicy policy;
  PolicyState state;
  state.iteration = 1;
  state.max_iterations = 5;
  state.budget_evaluations = 50;
  state.evaluations = 10;
  state.batch_size = 2;
  skills::Idea idea;
  idea.id = "raise:b";
  idea.kind = "raise";
  state.ideas = {idea};
  auto choice = policy.decide(state);
  CHECK_FALSE(choice.result.stop);
  CHECK(choice.result.budget == 16);  // 2 x 40/5
  state.analysis.findings.push_back({"at_roofline", "1.05x", {}, "stop", {}, 0});
  choice = policy.decide(state);
  CHECK(choice.result.stop);
  CHECK(choice.result.stop_reason.find("at_roofline") == 0);
  state.analysis.findings.clear();
  state.ideas.clear();
  CHECK(policy.decide(state).result.stop);
}

TEST_CASE("variants that leave out the baseline a goal without a start starts from are refused at variants") {
  const testing::TempDir dir;
  const std::string error = user_error([&] {
    load_and_prepare(
        dir.write("v.yaml",
                  "name: v\nkernel: {family: gemm, shape: {M: 256, N: 512, K: 256}, dtype: bf16}\n"
                  "variants: [hoisted, blocked_mn]\n"));
  });
  const std::string& baseline = kernels::family_registry().get("gemm").baseline_variant;
  CHECK(error.ends_with("/v.yaml:3: variants: the run starts from the family's baseline '" + baseline +
                        "', which is not among these variants; accepted: variants that include " + baseline +
                        ", or a start: {variant: V} with V one of hoisted, blocked_mn"));
  // With a start among them, the same variants are fine.
  CHECK_NOTHROW(load_and_prepare(
      dir.write("s.yaml",
                "name: s\nkernel: {family: gemm, shape: {M: 256, N: 512, K: 256}, dtype: bf16}\n"
                "variants: [hoisted, blocked_mn]\nstart: {variant: hoisted}\n")));
}
