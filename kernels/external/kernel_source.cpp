#include "kernels/external/kernel_source.hpp"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <regex>
#include <sstream>

#include "core/error.hpp"
#include "core/hash.hpp"
#include "core/json_text.hpp"
#include "core/subprocess.hpp"
#include "kernels/external/sandbox.hpp"

#ifndef AUTOTUNE_KERNEL_API_SOURCE_DIR
#define AUTOTUNE_KERNEL_API_SOURCE_DIR ""
#endif
#ifndef AUTOTUNE_KERNEL_API_BINARY_DIR
#define AUTOTUNE_KERNEL_API_BINARY_DIR ""
#endif

namespace autotune::kernels::external {
namespace fs = std::filesystem;

namespace {

// The libraries a kernel links, in link order (a library before those it uses).
const std::vector<std::string> kApiModules = {"kernels", "sim", "core"};
// System libraries the API libraries use.
const std::vector<std::string> kSystemLibraries = {"-lyaml-cpp", "-pthread"};
constexpr std::size_t kCompilerOutputLines = 20;

std::string env(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? std::string(value) : std::string();
}

fs::path this_executable() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::path() : exe;
}

std::optional<std::string> read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The first `count` lines of `text`.
std::string first_lines(const std::string& text, std::size_t count) {
  std::size_t pos = 0;
  for (std::size_t line = 0; line < count && pos < text.size(); ++line) {
    const std::size_t nl = text.find('\n', pos);
    if (nl == std::string::npos) return text;
    pos = nl + 1;
  }
  return text.substr(0, pos);
}

// The compiler's first line that says "error" (else its first line), for a one-line reason.
std::string first_error_line(const std::string& output) {
  std::istringstream lines(output);
  std::string line, first;
  while (std::getline(lines, line)) {
    if (first.empty() && !line.empty()) first = line;
    if (line.find("error") != std::string::npos) return line;
  }
  return first;
}

std::string find_compiler(const std::string& wanted) {
  std::vector<std::string> candidates;
  if (!wanted.empty())
    candidates.push_back(wanted);
  else {
    if (!env("CXX").empty()) candidates.push_back(env("CXX"));
    candidates.push_back("c++");
    candidates.push_back("g++");
  }
  for (const auto& c : candidates)
    if (auto found = find_executable(c)) return found->string();
  return "";
}

fs::path default_cache_dir() {
  if (!env("AUTOTUNE_CACHE_DIR").empty()) return fs::path(env("AUTOTUNE_CACHE_DIR")) / "kernels";
  if (!env("XDG_CACHE_HOME").empty()) return fs::path(env("XDG_CACHE_HOME")) / "autotune" / "kernels";
  if (!env("HOME").empty()) return fs::path(env("HOME")) / ".cache" / "autotune" / "kernels";
  return fs::temp_directory_path() / "autotune-kernels";
}

// What makes a compiled kernel stale besides its text: the API's location and
// its libraries' size and modification time.
std::string api_identity(const KernelApi& api) {
  std::string out = api.origin;
  for (const auto& dir : api.include_dirs) out += "|" + dir.string();
  for (const auto& lib : api.libraries) {
    std::error_code ec;
    const auto size = fs::file_size(lib, ec);
    const auto time = fs::last_write_time(lib, ec).time_since_epoch().count();
    out += "|" + lib.string() + ":" + std::to_string(size) + ":" + std::to_string(time);
  }
  return out;
}

fs::path unique_temp_name(const fs::path& dir, const std::string& stem, const std::string& extension) {
  static std::atomic<unsigned> counter{0};
  return dir / (stem + ".tmp" + std::to_string(::getpid()) + "_" + std::to_string(counter++) + extension);
}

// The worker's reply: the last stdout line that parses as a JSON object.
std::optional<Json> last_json_object(const std::string& text) {
  std::size_t end = text.size();
  while (end > 0) {
    const std::size_t start = text.rfind('\n', end - 1);
    const std::size_t from = start == std::string::npos ? 0 : start + 1;
    const std::string line = text.substr(from, end - from);
    if (line.find('{') != std::string::npos) {
      try {
        Json value = parse_json(line);
        if (value.is_object()) return value;
      } catch (const Json::exception&) {
      }
    }
    if (start == std::string::npos) break;
    end = start;
  }
  return std::nullopt;
}

struct WorkerCall {
  std::optional<Json> reply;
  ProcessResult process;
};

WorkerCall call_worker(const Json& request, const WorkerOptions& options) {
  const fs::path worker =
      options.worker_executable.empty() ? default_worker_executable() : options.worker_executable;
  ProcessOptions process_options;
  process_options.stdin_text = request.dump() + "\n";
  process_options.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_s * 1000));
  process_options.stderr_tail_bytes = 2048;
  WorkerCall call;
  const std::vector<std::string> command = {worker.string(), "kernel-worker"};
  if (options.sandboxed) {
    SandboxLimits limits;
    limits.cpu_seconds = options.timeout_s + 10;
    call.process = run_sandboxed(command, {}, limits, process_options);
  } else {
    call.process = run_process(command, process_options);
  }
  if (call.process.outcome == ProcessResult::Outcome::exited)
    call.reply = last_json_object(call.process.stdout_text);
  return call;
}

std::string seconds_text(double seconds) {
  char out[32];
  std::snprintf(out, sizeof out, "%g s", seconds);
  return out;
}

// Why a worker gave no usable reply, on one line. `what` is what the worker
// was doing ("the kernel", "loading the kernel ...").
std::string worker_failure(const ProcessResult& process, double timeout_s,
                           const std::string& what = "the kernel") {
  if (process.timed_out())
    return what + " did not finish within " + seconds_text(timeout_s) + " (timeout; its worker was killed)";
  if (process.outcome == ProcessResult::Outcome::signaled)
    return "the kernel crashed: its worker was killed by signal " + signal_name(process.term_signal) +
           (process.stderr_tail.empty() ? "" : "; stderr: " + one_line_tail(process.stderr_tail, 300));
  if (process.outcome == ProcessResult::Outcome::spawn_failed)
    return "cannot start the kernel worker: " + process.error;
  return "the kernel worker gave no reply: " + process.describe_failure(300);
}

}  // namespace

KernelApi installed_kernel_api(const fs::path& prefix) {
  KernelApi api;
  api.origin = "installed " + prefix.string();
  const fs::path include = prefix / "include" / "autotune";
  if (!fs::exists(include / "kernels" / "api" / "kernel.hpp"))
    throw UserError("no kernel API headers under " + include.string() +
                    " (install them with `cmake --install BUILD --prefix " + prefix.string() + "`)");
  api.include_dirs.push_back(include);
  for (const auto& module : kApiModules) {
    const fs::path lib = prefix / "lib" / ("libautotune_" + module + ".a");
    if (!fs::exists(lib)) throw UserError("kernel API library missing: " + lib.string());
    api.libraries.push_back(lib);
  }
  return api;
}

KernelApi locate_kernel_api() {
  if (!env("AUTOTUNE_KERNEL_API_PREFIX").empty())
    return installed_kernel_api(env("AUTOTUNE_KERNEL_API_PREFIX"));
  const fs::path exe = this_executable();
  if (!exe.empty() && exe.parent_path().filename() == "bin") {
    const fs::path prefix = exe.parent_path().parent_path();
    if (fs::exists(prefix / "include" / "autotune" / "kernels" / "api" / "kernel.hpp"))
      return installed_kernel_api(prefix);
  }
  const fs::path source = AUTOTUNE_KERNEL_API_SOURCE_DIR;
  const fs::path binary = AUTOTUNE_KERNEL_API_BINARY_DIR;
  KernelApi api;
  api.origin = "build tree " + binary.string();
  api.include_dirs.push_back(source);
  for (const auto& module : kApiModules)
    api.libraries.push_back(binary / module / ("libautotune_" + module + ".a"));
  bool complete = !source.empty() && fs::exists(source / "kernels" / "api" / "kernel.hpp");
  for (const auto& lib : api.libraries) complete = complete && fs::exists(lib);
  if (!complete)
    throw UserError("the kernel API is neither installed beside this executable nor in the build tree " +
                    binary.string() + "; set AUTOTUNE_KERNEL_API_PREFIX to an install prefix");
  return api;
}

CompileResult compile_kernel_source(const std::string& source_path_or_text, const CompileOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  CompileResult result;
  auto finish = [&] {
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return result;
  };
  KernelApi api;
  try {
    api = options.api ? *options.api : locate_kernel_api();
  } catch (const UserError& e) {
    result.error = e.what();
    return finish();
  }
  const std::string compiler = find_compiler(options.compiler);
  if (compiler.empty()) {
    result.error = "no C++ compiler found (tried " +
                   (options.compiler.empty() ? "$CXX, c++, g++" : options.compiler) +
                   "); install g++ or set CXX";
    return finish();
  }
  const fs::path cache_dir = options.cache_dir.empty() ? default_cache_dir() : options.cache_dir;
  std::error_code ec;
  fs::create_directories(cache_dir, ec);
  if (ec) {
    result.error = "cannot create the kernel cache directory " + cache_dir.string() + ": " + ec.message();
    return finish();
  }

  // A path to an existing file is compiled where it is (its diagnostics name
  // it, its relative includes work); any other text is saved first.
  std::string text;
  const bool looks_like_path = source_path_or_text.find('\n') == std::string::npos &&
                               source_path_or_text.size() < 4096 &&
                               fs::is_regular_file(source_path_or_text, ec);
  if (looks_like_path) {
    auto content = read_file(source_path_or_text);
    if (!content) {
      result.error = "cannot read kernel source " + source_path_or_text;
      return finish();
    }
    text = *content;
    result.source_path = fs::absolute(source_path_or_text).lexically_normal();
  } else {
    text = source_path_or_text;
  }
  result.kernel_name = declared_kernel_name(text);

  std::vector<std::string> flags = {"-std=c++20", "-O2",   "-fPIC",
                                    "-shared",    "-Wall", "-Wno-unused-parameter"};
  flags.insert(flags.end(), options.extra_flags.begin(), options.extra_flags.end());
  // A sanitized autotune loads kernels built with the same sanitizers.
  for (std::istringstream sanitize{std::string(AUTOTUNE_KERNEL_SANITIZE_FLAGS)}; !sanitize.eof();) {
    std::string flag;
    sanitize >> flag;
    if (!flag.empty()) flags.push_back(flag);
  }
  std::string flags_text;
  for (const auto& f : flags) flags_text += f + " ";
  result.source_hash = stable_hash_hex(text + "\n|" + compiler + "|" + flags_text + "|" + api_identity(api));
  if (!looks_like_path) {
    result.source_path = cache_dir / (result.source_hash + ".cc");
    if (!fs::exists(result.source_path)) {
      const fs::path temp = unique_temp_name(cache_dir, result.source_hash, ".cc");
      std::ofstream(temp, std::ios::binary) << text;
      fs::rename(temp, result.source_path, ec);
    }
  }
  const fs::path so_path = cache_dir / (result.source_hash + ".so");
  if (fs::exists(so_path)) {
    result.ok = true;
    result.cached = true;
    result.so_path = so_path;
    return finish();
  }

  const fs::path temp_so = unique_temp_name(cache_dir, result.source_hash, ".so");
  std::vector<std::string> command = {compiler};
  command.insert(command.end(), flags.begin(), flags.end());
  for (const auto& dir : api.include_dirs) command.push_back("-I" + dir.string());
  command.push_back(result.source_path.string());
  command.push_back("-o");
  command.push_back(temp_so.string());
  // The kernel's own copies of the API bind to themselves, never to whatever
  // the loading process exports; every symbol must resolve at link time.
  command.push_back("-Wl,-Bsymbolic");
  command.push_back("-Wl,--no-undefined");
  for (const auto& lib : api.libraries) command.push_back(lib.string());
  command.insert(command.end(), kSystemLibraries.begin(), kSystemLibraries.end());
  result.command = command;

  ProcessOptions process_options;
  process_options.timeout = std::chrono::milliseconds(static_cast<std::int64_t>(options.timeout_s * 1000));
  process_options.stderr_tail_bytes = 1u << 20;
  // Generated sources: the compiler is as untrusted as what it reads (an
  // include bomb), so it runs in the sandbox with the run's limits.
  ProcessResult process;
  if (options.sandboxed) {
    SandboxLimits limits;
    limits.cpu_seconds = options.timeout_s + 10;
    process = run_sandboxed(command, {cache_dir}, limits, process_options);
  } else {
    process = run_process(command, process_options);
  }
  result.compiler_output = first_lines(process.stderr_tail, kCompilerOutputLines);
  if (!process.ok()) {
    fs::remove(temp_so, ec);
    result.timed_out = process.timed_out();
    if (process.timed_out())
      result.error = "compilation of " + result.source_path.string() + " timed out after " +
                     seconds_text(options.timeout_s);
    else if (process.outcome == ProcessResult::Outcome::exited)
      result.error = "compilation failed: " + first_error_line(process.stderr_tail);
    else
      result.error = "compilation failed: " + process.error;
    return finish();
  }
  fs::rename(temp_so, so_path, ec);  // atomic: a concurrent compile of the same source wins or loses whole
  if (ec) {
    result.error = "cannot store the compiled kernel at " + so_path.string() + ": " + ec.message();
    return finish();
  }
  result.ok = true;
  result.so_path = so_path;
  return finish();
}

Json KernelDescriptor::to_json() const {
  Json params_json = Json::array();
  for (const auto& p : params)
    params_json.push_back({{"name", p.name},
                           {"description", p.description},
                           {"values", p.values},
                           {"default", p.default_value},
                           {"role", role_name(p.role)}});
  return {{"name", name},
          {"description", description},
          {"family", family},
          {"params", params_json},
          {"constraints", constraints},
          {"own_reference", own_reference},
          {"shape_args", shape_args},
          {"default_shape", default_shape},
          {"dtypes", dtypes},
          {"verification", verification}};
}

KernelDescriptor KernelDescriptor::from_json(const Json& json) {
  KernelDescriptor d;
  d.name = json.at("name").get<std::string>();
  d.description = json.value("description", "");
  d.family = json.value("family", "");
  for (const auto& p : json.at("params"))
    d.params.push_back(ParamSpec{p.at("name").get<std::string>(), p.value("description", ""),
                                 p.at("values").get<std::vector<std::int64_t>>(),
                                 p.at("default").get<std::int64_t>(),
                                 parse_role(p.value("role", "")).value_or(ParamRole::none)});
  d.constraints = json.value("constraints", std::vector<std::string>{});
  d.own_reference = json.value("own_reference", false);
  d.shape_args = json.at("shape_args").get<std::vector<std::string>>();
  d.default_shape = json.at("default_shape").get<Shape>();
  d.dtypes = json.at("dtypes").get<std::vector<std::string>>();
  d.verification = json.value("verification", "");
  return d;
}

fs::path default_worker_executable() {
  if (!env("AUTOTUNE_WORKER_BIN").empty()) return env("AUTOTUNE_WORKER_BIN");
  const fs::path exe = this_executable();
  if (exe.filename() == "autotune") return exe;
  for (const fs::path& candidate :
       {exe.parent_path() / "autotune", exe.parent_path().parent_path() / "autotune"})
    if (fs::is_regular_file(candidate)) return candidate;
  return "autotune";  // looked up on PATH
}

DescribeResult describe_in_worker(const fs::path& so_path, const WorkerOptions& options,
                                  const std::optional<Shape>& shape) {
  DescribeResult result;
  Json request = {{"op", "describe"}, {"so", so_path.string()}};
  if (shape) request["shape"] = *shape;
  const WorkerCall call = call_worker(request, options);
  if (!call.reply) {
    result.timed_out = call.process.timed_out();
    result.error =
        worker_failure(call.process, options.timeout_s,
                       "loading the kernel (its static initializers and AUTOTUNE_USER_KERNEL body)");
    return result;
  }
  if (!call.reply->value("ok", false)) {
    result.error = call.reply->value("error", "the kernel worker rejected the kernel");
    return result;
  }
  try {
    result.descriptor = KernelDescriptor::from_json(call.reply->at("descriptor"));
    result.shape_error = call.reply->value("shape_error", "");
    result.ok = true;
  } catch (const Json::exception& e) {
    result.error = std::string("the kernel worker's descriptor is malformed: ") + e.what();
  }
  return result;
}

SourceKernel compile_and_describe(const std::string& source_path_or_text, const CompileOptions& compile,
                                  const WorkerOptions& worker) {
  SourceKernel kernel;
  const CompileResult compiled = compile_kernel_source(source_path_or_text, compile);
  kernel.so_path = compiled.so_path;
  kernel.source_path = compiled.source_path;
  kernel.source_hash = compiled.source_hash;
  kernel.kernel_name = compiled.kernel_name;
  kernel.cached = compiled.cached;
  kernel.compiler_output = compiled.compiler_output;
  kernel.compiled = compiled.ok;
  if (!compiled.ok) {
    kernel.error = compiled.error;
    kernel.timed_out = compiled.timed_out;
    return kernel;
  }
  const DescribeResult described = describe_in_worker(compiled.so_path, worker);
  if (!described.ok) {
    kernel.error = described.error;
    kernel.timed_out = described.timed_out;
    return kernel;
  }
  kernel.descriptor = described.descriptor;
  kernel.kernel_name = described.descriptor.name;
  kernel.ok = true;
  return kernel;
}

std::string declared_kernel_name(const std::string& text) {
  static const std::regex declaration(R"(AUTOTUNE_USER_KERNEL\s*\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*\))");
  for (std::sregex_iterator it(text.begin(), text.end(), declaration), end; it != end; ++it) {
    // Not the macro's own definition (a header pasted into the source), nor a line comment.
    const auto at = static_cast<std::size_t>(it->position(0));
    const auto newline = at == 0 ? std::string::npos : text.rfind('\n', at - 1);
    const std::size_t line_start = newline == std::string::npos ? 0 : newline + 1;
    const std::string before = text.substr(line_start, at - line_start);
    if (before.find("#define") != std::string::npos || before.find("//") != std::string::npos) continue;
    return (*it)[1].str();
  }
  return "";
}

std::string failure_report(const SourceKernel& kernel, std::size_t max_chars) {
  std::string output = kernel.compiled ? std::string() : kernel.compiler_output;  // not a loader's warnings
  while (!output.empty() && (output.back() == '\n' || output.back() == ' ')) output.pop_back();
  if (output.empty()) return kernel.error;
  if (output.size() > max_chars) {
    std::size_t cut = output.size() - max_chars;
    const std::size_t line = output.find('\n', cut);
    cut = line == std::string::npos ? cut : line + 1;
    output = "...\n" + output.substr(cut);
  }
  return kernel.error + "\n" + output;
}

Json WorkerRequest::to_json() const {
  Json j = {{"op", "evaluate"}, {"so", so_path.string()}, {"shape", shape}, {"dtype", dtype},
            {"target", target}, {"params", params},       {"seed", seed},   {"verify", verify}};
  if (tolerance) j["tolerance"] = *tolerance;
  if (!trace_path.empty()) j["trace"] = trace_path.string();
  if (report_text) j["text"] = true;
  return j;
}

WorkerOutcome evaluate_in_worker(const WorkerRequest& request, const WorkerOptions& options) {
  if (request.so_path.empty()) throw UserError("evaluate_in_worker: the request names no shared object");
  WorkerOutcome outcome;
  const auto start = std::chrono::steady_clock::now();
  const WorkerCall call = call_worker(request.to_json(), options);
  outcome.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!call.reply) {
    outcome.status = call.process.timed_out() ? Outcome::timeout : Outcome::failed;
    outcome.error = worker_failure(call.process, options.timeout_s);
    return outcome;
  }
  outcome.result = *call.reply;
  const std::string status = call.reply->value("status", "failed");
  outcome.status = outcome_named(status).value_or(Outcome::failed);
  outcome.error = call.reply->value("error", "");
  if (outcome.status != Outcome::ok && outcome.error.empty())
    outcome.error = "the kernel worker reported " + status;
  return outcome;
}

}  // namespace autotune::kernels::external
