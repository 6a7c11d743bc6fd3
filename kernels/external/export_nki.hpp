#pragma once
// The NKI kernel `autotune export --nki` writes for one tuned configuration:
// Python for the Neuron SDK (`@nki.jit`, nl/nisa calls) with the variant's
// tiles, loops and rotating buffers, the trial's parameters as constants, and
// a header with the run, the measured figures and a usage example. The
// bodies are kernels/external/nki/*.py for the current NKI (0.6, Neuron SDK
// 2.32: `import nki`, destination-first `nisa` calls) and
// kernels/external/nki_legacy/*.py for the `neuronxcc.nki` namespace of SDKs
// before 2.27, written alongside the C++ templates they mirror; tests run
// them under numpy stand-ins of the nki modules that check every call
// against the documented API (tests/support/nki_standin).
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/external/export_source.hpp"
#include "kernels/family.hpp"

namespace autotune::kernels::external {

// Which NKI the kernel is written for.
enum class NkiVersion {
  current,  // NKI 0.6 (Neuron SDK 2.32): `import nki`, nisa calls take their destination
  legacy,   // `neuronxcc.nki` (NKI 0.1, SDKs before 2.27): instructions return their tiles
};

// "current" / "0.6" and "legacy" / "0.1"; UserError naming the accepted values otherwise.
NkiVersion parse_nki_version(const std::string& text);

// "family/variant" pairs that have an NKI template, for messages and tests.
std::vector<std::string> nki_exportable_variants();

// The Python source. `sbuf_bytes_per_partition` is the target's, for
// variants whose structure depends on what fits (attention naive). UserError
// when the variant has no NKI template, a parameter has no value, the
// trial transposes by DMA data the current NKI's dma_transpose does not take
// (it transposes 2-byte data only), or it places an instruction where NKI 0.6
// cannot (adamw's reciprocal on GpSimd, or on trn1's scalar engine).
std::string export_nki(const FamilySpec& family, const VariantSpec& variant, const Shape& shape, Dtype dtype,
                       const ParamValues& params, const std::string& kernel_name,
                       const ExportProvenance& provenance, std::int64_t sbuf_bytes_per_partition,
                       NkiVersion version = NkiVersion::current);

}  // namespace autotune::kernels::external
