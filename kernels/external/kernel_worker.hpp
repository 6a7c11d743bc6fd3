#pragma once
// The worker side of kernel sources: loading a compiled kernel (dlopen) into
// THIS process and serving one request. Only `autotune kernel-worker` calls
// this; everything else goes through kernels/external/kernel_source.hpp, which
// runs the worker as a child process, so that user code never runs in the
// orchestrator.
#include <filesystem>
#include <nlohmann/json.hpp>

#include "kernels/external/kernel_source.hpp"
#include "kernels/external/user_kernel.hpp"
#include "kernels/family.hpp"

namespace autotune::kernels::external {

// A loaded kernel as a family with exactly one variant (named like the
// kernel): the named family's inputs, outputs, reference, FLOPs, bytes and
// tolerances, or the kernel's own.
struct LoadedKernel {
  const UserKernel* user = nullptr;
  FamilySpec family;
  KernelDescriptor descriptor;
};

// Loads the shared object for good (never unloaded: its functions live in the
// returned family). UserError with one line when it cannot be loaded, has no
// entry point, was built for another descriptor ABI, names an unknown family
// or variant, has no trace function, or is unverifiable (no family and no
// reference).
LoadedKernel load_user_kernel(const std::filesystem::path& so_path);

// Serves one request of the worker protocol and returns the reply:
//   {"op": "describe", "so": PATH, "shape": {...}?}
//     -> {"ok": true, "descriptor": {...}, "shape_error": "..."?} | {"ok": false, "error": "..."}
//        (shape_error: the given shape is not one the kernel takes)
//   {"op": "evaluate", "so": PATH, "shape": {...}, "dtype": "bf16", "target": "trn1",
//    "params": {...}, "seed": 0, "verify": true, "tolerance": 0.01?, "trace": PATH?, "text": bool?}
//     -> evaluation_json(...) (status ok | invalid | wrong_answer | implausible) with the
//        kernel's "flops" and "compulsory_bytes" at the shape, plus
//        "report_text" when text is true; {"status": "failed", "error": "..."} when the
//        request or the kernel is unusable.
// Never throws; a crash or hang of the kernel's code ends the process, which
// is the point of running this in a worker.
nlohmann::json serve_worker_request(const nlohmann::json& request);

}  // namespace autotune::kernels::external
