#pragma once
// Kernels that are not compiled into autotune: a C++ source declaring one
// kernel with AUTOTUNE_USER_KERNEL (kernels/external/user_kernel.hpp) is
// compiled with the system C++ compiler into a shared object, and that shared
// object is loaded (dlopen) only in a worker process, `autotune kernel-worker`,
// never in the calling process. A crash, abort or endless loop in user code
// therefore fails one request with its reason (the signal's name, a timeout)
// and the caller goes on. See docs/kernel_sources.md.
//
// Everything here is safe to call from several threads at once. A bad source
// or a bad kernel is data (ok = false / a status with a reason), never an
// exception; only misuse of these functions (e.g. a request without a shared
// object) throws UserError.
//
// Typical use (compile, describe, then measure candidates):
//
//   auto kernel = kernels::external::compile_and_describe("my_kernel.cc");
//   if (!kernel.ok) { report(kernel.error, kernel.compiler_output); return; }
//   kernels::external::WorkerRequest request;
//   request.so_path = kernel.so_path;
//   request.shape = {{"M", 256}, {"N", 512}, {"K", 512}};
//   request.dtype = "bf16";
//   request.params = {{"tile_m", 128}};
//   auto outcome = kernels::external::evaluate_in_worker(request);
//   // outcome.status: ok | invalid | wrong_answer | implausible | failed | timeout
#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/outcome.hpp"
#include "kernels/family.hpp"

namespace autotune::kernels::external {

using Json = nlohmann::json;

// Where a kernel source finds the kernel API: include directories and the
// static libraries (in link order) a shared object links.
struct KernelApi {
  std::vector<std::filesystem::path> include_dirs;
  std::vector<std::filesystem::path> libraries;
  std::string origin;  // "build tree /path/to/build" or "installed /usr/local"
};

// The installed API when this executable runs from an install prefix
// (<prefix>/bin/autotune with <prefix>/include/autotune and <prefix>/lib), else
// the source and build trees it was built from. $AUTOTUNE_KERNEL_API_PREFIX
// names an install prefix explicitly. UserError when neither is usable.
KernelApi locate_kernel_api();
// The API installed under `prefix` (UserError when headers or libraries are missing).
KernelApi installed_kernel_api(const std::filesystem::path& prefix);

struct CompileOptions {
  // Empty: $CXX, else c++, else g++ (found on PATH).
  std::string compiler;
  // Shared objects are cached here, keyed by the hash of the source text,
  // the compiler, the flags and the API (headers' location, libraries' size
  // and time), so compiling the same source again is a cache hit. Empty:
  // $AUTOTUNE_CACHE_DIR/kernels, else $XDG_CACHE_HOME/autotune/kernels, else
  // ~/.cache/autotune/kernels.
  std::filesystem::path cache_dir;
  std::vector<std::string> extra_flags;
  double timeout_s = 300;
  // Untrusted source: the compiler runs in the sandbox (sandbox.hpp), writing
  // only to the cache.
  bool sandboxed = false;
  std::optional<KernelApi> api;  // default: locate_kernel_api()
};

struct CompileResult {
  bool ok = false;
  std::filesystem::path so_path;      // the shared object (in the cache) when ok
  std::filesystem::path source_path;  // the file compiled (a source text is saved in the cache first)
  std::string source_hash;            // the cache key
  std::string kernel_name;            // declared_kernel_name() of the text (also when it does not compile)
  bool cached = false;                // served from the cache, no compiler run
  bool timed_out = false;             // the compiler was killed after options.timeout_s
  std::string error;                  // one line when !ok, e.g. "compilation failed: k.cc:12:3: error: ..."
  std::string compiler_output;        // the compiler's first diagnostic lines (also when ok: warnings)
  std::vector<std::string> command;   // the compiler command as run
  double seconds = 0;
};

// Compiles a kernel source into a shared object. `source_path_or_text` is a
// path to an existing file, or else the source text itself (anything with a
// newline or without such a file). Never throws for a bad source: a compile
// error, a missing compiler or a timeout is ok = false with the reason.
CompileResult compile_kernel_source(const std::string& source_path_or_text,
                                    const CompileOptions& options = {});

// The kernel name a source gives AUTOTUNE_USER_KERNEL(name), read from its
// text (so known also when the source does not compile); "" when there is none.
std::string declared_kernel_name(const std::string& source_text);

// What a loaded kernel declares (reported by the worker).
struct KernelDescriptor {
  std::string name;
  std::string description;
  std::string family;  // the built-in family it matches; empty with an own reference
  std::vector<ParamSpec> params;
  std::vector<std::string> constraints;
  bool own_reference = false;  // `reference` given by the kernel (overriding or without a family)
  // The computation's signature (the family's, or the kernel's own).
  std::vector<std::string> shape_args;
  Shape default_shape;
  std::vector<std::string> dtypes;  // accepted; the first is the default
  std::string verification;         // "function", "variant <name>" or "full shape"

  Json to_json() const;
  static KernelDescriptor from_json(const Json& json);  // throws nlohmann::json::exception when malformed
};

struct WorkerOptions {
  // The autotune executable run as `kernel-worker`. Empty: default_worker_executable().
  std::filesystem::path worker_executable;
  double timeout_s = 60;  // per request; the worker's process group is killed after it
  // Untrusted kernel: the worker runs in the sandbox (sandbox.hpp).
  bool sandboxed = false;
};

// $AUTOTUNE_WORKER_BIN when set, else this process's executable when it is
// autotune, else an `autotune` beside it or in its parent directory (the
// build tree's layout for test binaries).
std::filesystem::path default_worker_executable();

struct DescribeResult {
  bool ok = false;
  KernelDescriptor descriptor;
  std::string error;  // one line when !ok (no entry point, ABI mismatch, unverifiable, crashed: SIGSEGV, ...)
  bool timed_out = false;  // loading the kernel did not finish within the worker's timeout
  // With a shape to check: why the kernel does not take it (an unknown
  // argument, or its shape check's reason); "" when it does.
  std::string shape_error;
};

// Loads the shared object in a worker and reads its descriptor. Loading runs
// the kernel's code (static initializers, the AUTOTUNE_USER_KERNEL body), so
// it is bounded by options.timeout_s like any request. With `shape`, the
// worker also checks that the kernel takes it (arguments missing from it
// take the kernel's defaults).
DescribeResult describe_in_worker(const std::filesystem::path& so_path, const WorkerOptions& options = {},
                                  const std::optional<Shape>& shape = std::nullopt);

struct SourceKernel {
  bool ok = false;
  bool compiled = false;   // false: the compiler rejected the source (or could not run)
  bool timed_out = false;  // compiling or loading did not finish in time
  std::filesystem::path so_path;
  std::filesystem::path source_path;
  std::string source_hash;
  // The descriptor's name when described, else the name the text declares
  // (declared_kernel_name), else "".
  std::string kernel_name;
  bool cached = false;
  KernelDescriptor descriptor;
  std::string error;            // one line when !ok
  std::string compiler_output;  // the compiler's first lines, when compilation failed (or warned)
};

// compile_kernel_source then describe_in_worker: a kernel ready to be measured.
SourceKernel compile_and_describe(const std::string& source_path_or_text, const CompileOptions& compile = {},
                                  const WorkerOptions& worker = {});

// Why a kernel that is not ok cannot be measured, as a failed trial records
// it: its one-line error, then (when it did not compile) the compiler's
// message, cut to its last `max_chars` characters (at a line start) when
// longer.
std::string failure_report(const SourceKernel& kernel, std::size_t max_chars = 4000);

struct WorkerRequest {
  std::filesystem::path so_path;
  Shape shape;        // missing arguments take the default shape
  std::string dtype;  // empty: the kernel's first dtype
  std::string target = "trn1";
  ParamValues params;  // missing parameters take their defaults
  std::uint64_t seed = 0;
  bool verify = true;
  std::optional<double> tolerance;   // overrides the family's for the dtype
  std::filesystem::path trace_path;  // when set, the worker writes a Perfetto trace there
  bool report_text = false;          // the reply also carries "report_text" (what `profile` prints)

  Json to_json() const;
};

struct WorkerOutcome {
  // ok | invalid | wrong_answer | implausible (from the evaluation pipeline,
  // kernels/evaluate.hpp) | failed (the kernel crashed, the worker could not
  // load it, or the request was rejected) | timeout.
  Outcome status = Outcome::failed;
  std::string error;  // one line when status != ok
  // The worker's reply when it replied: the evaluation as `autotune profile
  // --json` prints it (kernel, variant, shape, dtype, params, status,
  // latency_s, roofline_bound_s, summary, verification, hot_lines, ...).
  Json result;
  double wall_s = 0;

  bool ok() const { return status == Outcome::ok; }
};

// Traces, simulates and verifies one configuration of a compiled kernel in a
// fresh worker process, exactly as a built-in variant is evaluated.
WorkerOutcome evaluate_in_worker(const WorkerRequest& request, const WorkerOptions& options = {});

}  // namespace autotune::kernels::external
