#pragma once
// What the bmm and bmm_softmax families share: their shape arguments
// (B, M, K, N), operands (lhs [B * M, K], rhs [B * K, N], out [B * M, N]),
// dtypes, shape check, multiply-accumulate count, compulsory HBM bytes and
// the double-precision batched product their references start from.
#include "kernels/families/bmm.hpp"
#include "kernels/family.hpp"

namespace autotune::kernels {

BmmShape bmm_shape(const Shape& shape);
double bmm_macs(const Shape& shape);
// Sets shape_args, default_shape, dtypes, inputs, outputs, check_shape,
// flops (the products at the tensor engine's peak), hbm_bytes,
// tensor_engine_bound and tolerance.
void set_bmm_operands(FamilySpec& family);
// out[b] = lhs[b] . rhs[b] in double, [B * M, N].
std::vector<double> bmm_products(const Shape& shape, const HostTensors& inputs);

}  // namespace autotune::kernels
