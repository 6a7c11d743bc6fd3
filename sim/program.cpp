#include "sim/program.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>

#include "core/error.hpp"

namespace autotune::sim {

int dtype_bytes(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp32:
      return 4;
    case Dtype::int32:
      return 4;
    case Dtype::bf16:
      return 2;
    case Dtype::fp16:
      return 2;
  }
  return 4;
}

std::string_view dtype_name(Dtype dtype) {
  switch (dtype) {
    case Dtype::fp32:
      return "fp32";
    case Dtype::bf16:
      return "bf16";
    case Dtype::fp16:
      return "fp16";
    case Dtype::int32:
      return "int32";
  }
  return "?";
}

std::optional<Dtype> parse_dtype(std::string_view name) {
  for (Dtype d : {Dtype::fp32, Dtype::bf16, Dtype::fp16, Dtype::int32})
    if (dtype_name(d) == name) return d;
  return std::nullopt;
}

std::string unmodelled_dtype_reason(std::string_view name) {
  std::string lower(name);
  for (char& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
  const bool fp8 = lower.starts_with("fp8") || lower.starts_with("float8") || lower.starts_with("cfp8") ||
                   lower.find("e4m3") != std::string::npos || lower.find("e5m2") != std::string::npos ||
                   lower.find("e3m4") != std::string::npos;
  if (!fp8) return "";
  // The tensor engine of NeuronCore-v3 (trn2) takes fp8 operands; this model
  // has no fp8 storage, rounding or double-rate matmul (docs/simulator.md).
  return "fp8 is supported by trn2 hardware but not modelled by this simulator";
}

namespace {

float round_to_bf16(float value) {
  if (std::isnan(value)) return value;
  std::uint32_t bits = std::bit_cast<std::uint32_t>(value);
  const std::uint32_t rounding = 0x7FFFu + ((bits >> 16) & 1u);  // round to nearest, ties to even
  bits = (bits + rounding) & 0xFFFF0000u;
  return std::bit_cast<float>(bits);
}

// IEEE binary16: 10 explicit mantissa bits, exponent range [-14, 15],
// subnormals down to 2^-24, overflow to infinity.
float round_to_fp16(float value) {
  if (std::isnan(value) || std::isinf(value) || value == 0.0f) return value;
  const float magnitude = std::fabs(value);
  if (magnitude >= 65520.0f) return std::copysign(INFINITY, value);
  int exponent = 0;
  std::frexp(magnitude, &exponent);  // magnitude = m * 2^exponent, m in [0.5, 1)
  const int unbiased = std::max(exponent - 1, -14);
  const float quantum = std::ldexp(1.0f, unbiased - 10);
  return std::copysign(std::nearbyint(magnitude / quantum) * quantum, value);
}

}  // namespace

float round_to_dtype(float value, Dtype dtype) {
  switch (dtype) {
    case Dtype::fp32:
      return value;
    case Dtype::bf16:
      return round_to_bf16(value);
    case Dtype::fp16:
      return round_to_fp16(value);
    case Dtype::int32:
      return std::nearbyint(value);
  }
  return value;
}

std::string_view memory_space_name(MemorySpace space) {
  switch (space) {
    case MemorySpace::hbm:
      return "hbm";
    case MemorySpace::sbuf:
      return "sbuf";
    case MemorySpace::psum:
      return "psum";
  }
  return "?";
}

std::string_view engine_name(Engine engine) {
  switch (engine) {
    case Engine::tensor:
      return "tensor";
    case Engine::vector:
      return "vector";
    case Engine::scalar:
      return "scalar";
    case Engine::gpsimd:
      return "gpsimd";
    case Engine::dma:
      return "dma";
  }
  return "?";
}

std::string_view opcode_name(Opcode opcode) {
  static constexpr std::string_view kNames[] = {"dma_copy",
                                                "matmul",
                                                "transpose",
                                                "activation",
                                                "tensor_tensor",
                                                "tensor_scalar",
                                                "tensor_reduce",
                                                "tensor_copy",
                                                "reciprocal",
                                                "memset",
                                                "iota",
                                                "affine_select",
                                                "scalar_tensor_tensor",
                                                "tensor_tensor_scan"};
  return kNames[static_cast<int>(opcode)];
}

std::string_view alu_op_name(AluOp op) {
  static constexpr std::string_view kNames[] = {"bypass", "add", "subtract", "multiply",
                                                "divide", "max", "min",      "pow"};
  return kNames[static_cast<int>(op)];
}

double apply_alu(AluOp op, double a, double b) {
  switch (op) {
    case AluOp::bypass:
      return a;
    case AluOp::add:
      return a + b;
    case AluOp::subtract:
      return a - b;
    case AluOp::multiply:
      return a * b;
    case AluOp::divide:
      return a / b;
    case AluOp::max:
      return std::max(a, b);
    case AluOp::min:
      return std::min(a, b);
    case AluOp::pow:
      return std::pow(a, b);
  }
  return a;
}

std::string_view activation_name(ActivationFunction function) {
  static constexpr std::string_view kNames[] = {"identity", "exp",  "tanh",  "relu", "sigmoid",
                                                "square",   "sqrt", "rsqrt", "gelu", "silu"};
  return kNames[static_cast<int>(function)];
}

double apply_activation(ActivationFunction function, double x) {
  switch (function) {
    case ActivationFunction::identity:
      return x;
    case ActivationFunction::exp:
      return std::exp(x);
    case ActivationFunction::tanh:
      return std::tanh(x);
    case ActivationFunction::relu:
      return x > 0 ? x : 0.0;
    case ActivationFunction::sigmoid:
      return 1.0 / (1.0 + std::exp(-x));
    case ActivationFunction::square:
      return x * x;
    case ActivationFunction::sqrt:
      return std::sqrt(x);
    case ActivationFunction::rsqrt:
      return 1.0 / std::sqrt(x);
    case ActivationFunction::gelu:
      return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case ActivationFunction::silu:
      return x / (1.0 + std::exp(-x));
  }
  return x;
}

BufferId Program::add_buffer(Buffer buffer) {
  buffer.first_instruction = static_cast<InstructionId>(instructions_.size());
  buffers_.push_back(std::move(buffer));
  return static_cast<BufferId>(buffers_.size() - 1);
}

void Program::release_buffer(BufferId id) {
  AUTOTUNE_CHECK(id < buffers_.size(), "release of an unknown buffer");
  buffers_[id].end_instruction = static_cast<InstructionId>(instructions_.size());
}

InstructionId Program::append(const Instruction& instruction) {
  if (instructions_.size() >= instruction_limit_) {
    throw ProgramTooLarge(
        "the program exceeds " + std::to_string(instruction_limit_) +
        " instructions (simulating it would take more than about " +
        std::to_string(std::max<std::size_t>(1, instruction_limit_ * kBytesPerInstruction >> 30)) +
        " GB); use larger tiles or a smaller shape");
  }
  instructions_.push_back(instruction);
  return static_cast<InstructionId>(instructions_.size() - 1);
}

std::uint32_t Program::intern_location(const std::source_location& where) {
  const LocationKey key{where.file_name(), where.line()};
  auto [it, inserted] = location_index_.try_emplace(key, static_cast<std::uint32_t>(locations_.size()));
  if (inserted) locations_.push_back({where.file_name(), where.line(), where.function_name()});
  return it->second;
}

}  // namespace autotune::sim

namespace autotune::sim {

namespace {

// FNV-1a over the bytes of each value fed in.
class ContentHasher {
 public:
  template <class T>
  void add(const T& value) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* bytes = reinterpret_cast<const unsigned char*>(&value);
    for (std::size_t i = 0; i < sizeof(T); ++i) hash_ = (hash_ ^ bytes[i]) * 0x100000001b3ULL;
  }
  void add(const std::string& text) {
    add(text.size());
    for (unsigned char c : text) hash_ = (hash_ ^ c) * 0x100000001b3ULL;
  }
  void add(const View& v) {
    add(v.buffer), add(v.row_begin), add(v.row_end), add(v.col_begin), add(v.col_end), add(v.fold);
  }
  void add(const ScalarOperand& s) {
    add(s.immediate);
    add(s.per_partition.has_value());
    if (s.per_partition) add(*s.per_partition);
  }
  std::uint64_t value() const { return hash_; }

 private:
  std::uint64_t hash_ = 0xcbf29ce484222325ULL;
};

}  // namespace

std::uint64_t Program::content_hash() const { return hash(/*with_layout=*/true); }

std::uint64_t Program::layout_free_hash() const { return hash(/*with_layout=*/false); }

std::uint64_t Program::hash(bool with_layout) const {
  ContentHasher h;
  h.add(buffers_.size());
  for (const Buffer& b : buffers_) {
    h.add(b.space), h.add(b.dtype), h.add(b.role), h.add(b.first_instruction), h.add(b.end_instruction);
    if (with_layout || b.space == MemorySpace::hbm) h.add(b.rows), h.add(b.cols);  // HBM: a tensor's shape
    if (with_layout) h.add(b.partition_offset), h.add(b.byte_offset);
  }
  h.add(instructions_.size());
  for (const Instruction& i : instructions_) {
    h.add(i.opcode), h.add(i.engine), h.add(i.dst), h.add(i.src_count);
    for (std::uint8_t k = 0; k < i.src_count && k < 2; ++k) h.add(i.src[k]);
    h.add(i.alu0), h.add(i.alu1), h.add(i.operand0), h.add(i.operand1), h.add(i.function);
    h.add(i.scale), h.add(i.immediate), h.add(i.partition_step), h.add(i.col_step);
    h.add(i.accumulate), h.add(i.transpose), h.add(i.accumulate_dst.has_value());
    if (i.accumulate_dst) h.add(*i.accumulate_dst);
    h.add(i.accumulate_op);
    // Only a tiled matmul adds its tile: untiled programs hash as before.
    if (!i.pe_tile.whole())
      h.add(i.pe_tile.row_start), h.add(i.pe_tile.row_size), h.add(i.pe_tile.col_start),
          h.add(i.pe_tile.col_size);
  }
  h.add(trace_errors_.size());
  for (const auto& e : trace_errors_) h.add(e.rule), h.add(e.message);
  return h.value();
}

}  // namespace autotune::sim
