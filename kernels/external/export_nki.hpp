#pragma once
// The NKI kernel `autotune export --nki` writes for one tuned configuration:
// Python for the Neuron SDK (`@nki.jit`, nl/nisa calls) with the variant's
// tiles, loops and rotating buffers, the trial's parameters as constants, and
// a header with the run, the measured figures and a usage example. The
// bodies are kernels/external/nki/*.py, written alongside the C++ templates
// they mirror; tests run them under a numpy stand-in of the nki modules.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/external/export_source.hpp"
#include "kernels/family.hpp"

namespace autotune::kernels::external {

// "family/variant" pairs that have an NKI template, for messages and tests.
std::vector<std::string> nki_exportable_variants();

// The Python source. `sbuf_bytes_per_partition` is the target's, for
// variants whose structure depends on what fits (attention naive). UserError
// when the variant has no NKI template or a parameter has no value.
std::string export_nki(const FamilySpec& family, const VariantSpec& variant, const Shape& shape, Dtype dtype,
                       const ParamValues& params, const std::string& kernel_name,
                       const ExportProvenance& provenance, std::int64_t sbuf_bytes_per_partition);

}  // namespace autotune::kernels::external
