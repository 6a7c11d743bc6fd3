"""Broken goal files: exit code 2 and one line naming file:line: key: reason, before anything runs."""
import os
import subprocess

from loop_support import BIN, SOURCE, check, query, run, tempdir

CASES = {
    "unknown_key.yaml": (":3: max_iteration:", "unknown key (did you mean max_iterations?)"),
    # A required key misspelt: the misspelling is named, at its line.
    "misspelt_required.yaml": (":3: kernel.family:", "missing required key; unknown key 'familly' (did you mean family?)"),
    "wrong_type.yaml": (":4: budget.evaluations:", "not an integer"),
    "unknown_kernel.yaml": (":3: kernel.family:", "unknown kernel 'convolution'"),
    "unknown_variant.yaml": (":4: start.variant:", "fancy"),
    "unknown_parameter.yaml": (":6: search.space.tile_size:", "unknown parameter 'tile_size'"),
    "value_outside_domain.yaml": (":5: search.space.tile_m:", "48"),
    "infeasible.yaml": ("search.constraints:", "infeasible"),
    "bad_objective.yaml": (":3: objective:", "speed"),
    "unknown_strategy.yaml": (":4: search.strategy:", "hillclimb"),
    "bad_transfer.yaml": (":5: search.transfer:", "'sometimes' is not true or false"),
    "missing_cachefile.yaml": (":4: target.cachefile:", "not found"),
    "bad_dtype.yaml": (":2: kernel.dtype:", "int8"),
    # A shape given in part is never completed from the family's default.
    "partial_shape.yaml": (":4: kernel.shape:", "missing K; the shape arguments of gemm are M, N, K"),
    # fp8 is no typo: a real trn2 dtype the simulator does not model.
    "fp8_dtype.yaml": (":2: kernel.dtype:", "fp8 is supported by trn2 hardware but not modelled by this simulator"),
    # Sizes are checked before a domain is expanded or a constrained space enumerated.
    "huge_range.yaml": (":4: search.space.tile_size:", "at most 1000000 are accepted"),
    "huge_command_range.yaml": (":5: search.space.a:", "at most 1000000 are accepted"),
    "huge_command_space.yaml": (":5: search.constraints:", "visits more than 50000000 combinations"),
    "mixed_list_command.yaml": (":5: search.space.a:", "quote every name, or write {categorical: [...]}"),
    # A repeated key is refused with both of its lines (yaml-cpp alone keeps the first).
    "duplicate_key.yaml": (":5: max_iterations:", "appears twice (first at line 3)"),
    "duplicate_kernel.yaml": (":4: kernel:", "appears twice (first at line 2)"),
    "duplicate_nested.yaml": (":2: kernel.dtype:", "appears twice (first at line 2)"),
    # Inside a list item too (yaml-cpp alone would keep the first role and run the goal).
    "duplicate_in_list.yaml": (":7: skills[0].role:", "appears twice (first at line 6)"),
    # Range checks name the key's own line, not the line of its enclosing mapping.
    "parallel_zero.yaml": (":4: parallel:", "accepted: 1 to 256"),
    "max_iterations_zero.yaml": (":4: max_iterations:", "must be at least 1"),
    "evaluations_zero.yaml": (":5: budget.evaluations:", "must be at least 1"),
    "negative_tolerance.yaml": (":6: verification.tolerance:", "must be positive"),
    # Checked when the goal is read, before a baseline is measured (the options once only when a search began;
    # a bad constraint once left the variant out; a replay goal once ran whatever it named).
    "unknown_strategy_option.yaml": (":5: search.options:", "unknown option 'initial_points'"),
    "strategy_option_out_of_range.yaml": (":6: search.options:", "population = 2; accepted: an integer from 4 to 100000"),
    "unreachable_improvement.yaml": (":4: goal.improvement:", "must be below 1 for the latency objective"),
    "constraint_syntax.yaml": (":4: search.constraints:", "expression ends early"),
    "constraint_unknown_name.yaml": (":4: search.constraints:", "'tile_q' is neither a parameter of exp"),
    "replay_variant.yaml": (":3: variants:", "a recorded space has one, 'recorded'"),
    "replay_start_variant.yaml": (":3: start.variant:", "a recorded space has one, 'recorded'"),
    "replay_role.yaml": (":3: roles.block_size_q:", "unknown parameter 'block_size_q' of the recorded space"),
    "replay_mfu.yaml": (":3: objective:", "a replayed recording holds times, not MFU"),
    "command_variant.yaml": (":3: variants:", "unknown variant 'tiled'; a command target has one, 'command'"),
    # Numbers beyond what the clocks and the simulator hold, and recordings that are not times.
    "infinite_number.yaml": (":4: budget.wall_time_s:", "'.inf' is not a finite number"),
    "huge_timeout.yaml": (":3: timeout_s:", "at most 10000000"),
    "command_huge_timeout.yaml": (":5: target.timeout_s:", "at most 10000000"),
    "plugin_huge_timeout.yaml": (":8: skills[0].timeout_s:", "at most 10000000"),
    "plugin_name_line_break.yaml": (":4: skills[0].name:", "must not hold line breaks"),
    "negative_seed.yaml": (":3: seed:", "'-1' is not a non-negative integer"),
    "start_param_of_parameterless.yaml": (":5: start.params.tile_size:", "accepted: none"),
    "replay_not_a_time.yaml": (":2: target.cachefile:", "negated_score = -0.5 is not a positive time in ms"),
    "replay_missing_field.yaml": (":2: target.cachefile:", "has no 'tiem'"),
    "replay_malformed.yaml": (":2: target.cachefile:", "'tune_params' has no value list for 'b'"),
    # Once accepted without a word: a role for no parameter, a repeated variant or value, a number as a
    # constraint (true everywhere), an MFU above the peak, a second YAML document (dropped).
    "role_of_no_parameter.yaml": (":4: roles.tile_q:", "unknown parameter 'tile_q' of kernel 'gemm'"),
    "duplicate_variant.yaml": (":3: variants:", "variant 'tiled' is listed twice"),
    "duplicate_value.yaml": (":5: search.space.tile_m:", "value 32 is listed twice"),
    "constraint_not_a_condition.yaml": (":4: search.constraints:", "not a condition"),
    "mfu_above_peak.yaml": (":4: goal.mfu_percent:", "must be at most 100"),
    "second_document.yaml": (":4:", "a second YAML document"),
    "quoted_number.yaml": (":5: search.space.tile_m:", "'32' is quoted, so it is a name, not a number"),
    "range_and_pow2.yaml": (":5: search.space.tile_m:", "give one of range, pow2 or categorical"),
    "kernel_source_directory.yaml": (":3: kernel_source:", "is a directory; a C++ source file is expected"),
    "quoted_count.yaml": (":3: max_iterations:", "'3' is quoted, so it is a string, not an integer"),
}


def main():
    broken = os.path.join(SOURCE, "tests", "data", "goals", "broken")
    with tempdir() as tmp:
        db = os.path.join(tmp, "runs.db")
        for name, (where, reason) in sorted(CASES.items()):
            for command in ("run", "sweep"):
                proc = run([command, os.path.join(broken, name)], db)
                err = proc.stderr.strip()
                check(proc.returncode == 2, f"{command} {name}: exit {proc.returncode}, stderr {err}")
                check(err.startswith("autotune: error: ") and "\n" not in err, f"{name}: not one line: {err!r}")
                check(name in err and where in err and reason in err, f"{name}: expected '{where}' and '{reason}' in {err!r}")
                check(proc.stdout == "", f"{name}: stdout should be empty")
        if os.path.exists(db):
            check(query(db, "SELECT COUNT(*) FROM runs")[0][0] == 0, "a broken goal created a run")
        proc = run(["run", os.path.join(broken, "no_such_goal.yaml")], db)
        check(proc.returncode == 2 and "not found" in proc.stderr, f"missing goal file: {proc.stderr}")
        # A directory as the goal or as the target file: a user error, not an internal one.
        for args in (["run", broken, "--db", db], ["sweep", broken, "--db", db],
                     ["profile", "--kernel", "exp", "--target", broken]):
            proc = subprocess.run([BIN, *args], capture_output=True, text=True, timeout=60)
            err = proc.stderr.strip()
            check(proc.returncode == 2 and "is a directory" in err and "\n" not in err,
                  f"{args}: exit {proc.returncode}, {err!r}")
    print("ok")


if __name__ == "__main__":
    main()
