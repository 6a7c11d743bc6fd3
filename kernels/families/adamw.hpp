#pragma once
// adamw: one AdamW step over [M, N] parameters, NKIBench's adamw task (t = 1,
// lr = 0.001, betas (0.9, 0.999), eps 1e-8, weight decay 0.01):
//   theta_t = theta - 1e-5 * theta
//   m_t     = 0.9 * m + 0.1 * g
//   v_t     = 0.999 * v + 0.001 * g * g
//   out     = theta_t - 0.01 * m_t / (sqrt(1000 * v_t) + 1e-8)
// Four inputs (theta, g, m, v), one output (the new theta), as NKIBench's
// reference takes and returns them. Rows map to partitions.
#include "kernels/api/kernel.hpp"
#include "kernels/api/tiling.hpp"

namespace autotune::kernels {

struct AdamwShape {
  int M = 0, N = 0;
};

// NKIBench's starting kernel: per row tile, each input loaded in [128, 1024]
// chunks, then per [128, 512] half-chunk the formula one operation per
// instruction (fifteen: the scalar products and sums on the vector engine,
// the sqrt on the scalar engine, a reciprocal), each into its own tile; the
// chunk stored. Single buffers: nothing overlaps.
struct AdamwNaiveParams {};

// Row tiles of [128, unroll_factor * tile_size] streamed through rotating
// buffers, the formula refactored into seven wide instructions per tile:
//   gs  = 0.001 * g * g                       (scalar: square(sqrt(0.001) g); or one vector op)
//   vt  = 0.999 * v + gs                      (vector, scalar_tensor_tensor)
//   d   = sqrt(1e9 * vt) = 1000 sqrt(1000 vt) (scalar)
//   r   = (d + 1e-5) ^ -1 = 0.001 / (sqrt(1000 vt) + 1e-8)   (tensor_scalar)
//   mt  = 9 m + g = 10 m_t                    (vector, scalar_tensor_tensor)
//   u   = mt * r = 0.01 m_t / (sqrt(1000 vt) + 1e-8)         (tensor_tensor)
//   out = (1 - 1e-5) theta - u                (vector, scalar_tensor_tensor; or
//                                              the scaling on scalar, the subtract on GpSimd)
// The placement knobs move these between the vector, scalar and GpSimd
// engines within what each instruction may run on (nki.isa:
// scalar_tensor_tensor on the vector engine, tensor_tensor on vector or
// GpSimd, tensor_scalar on any of the three, activation on scalar).
struct AdamwFusedParams {
  int tile_size = 1024;    // columns per tile, DMA and instruction
  int pipeline_depth = 2;  // rotating buffers per input and output stream, in steps
  int unroll_factor = 1;   // consecutive rows per partition in a tile (row tiles folded into one)
  int square_engine = 0;   // gs: 0 scalar (activation square), 1 vector (one scalar_tensor_tensor)
  int recip_engine = 0;    // r: 0 vector, 1 scalar, 2 GpSimd
  int update_engine = 0;   // u: 0 vector, 1 GpSimd, 2 alternating tile by tile
  int final_engine = 0;    // out: 0 one vector scalar_tensor_tensor; 1 scale on scalar, subtract on GpSimd
};

template <Dtype D>
void adamw_naive(Kernel& kernel, const AdamwShape& shape, const AdamwNaiveParams&) {
  Tensor theta = kernel.input("theta", shape.M, shape.N, D);
  Tensor g = kernel.input("g", shape.M, shape.N, D);
  Tensor m = kernel.input("m", shape.M, shape.N, D);
  Tensor v = kernel.input("v", shape.M, shape.N, D);
  Tensor out = kernel.output("out", shape.M, shape.N, D);
  const int P = kernel.limits().partitions;
  constexpr int kChunk = 1024, kHalf = 512;
  TilePool theta_tiles = kernel.sbuf_pool("theta_local", 1, P, kChunk, D);
  TilePool m_tiles = kernel.sbuf_pool("m_local", 1, P, kChunk, D);
  TilePool v_tiles = kernel.sbuf_pool("v_local", 1, P, kChunk, D);
  TilePool g_tiles = kernel.sbuf_pool("g_local", 1, P, kChunk, D);
  TilePool out_tiles = kernel.sbuf_pool("out_local", 1, P, kChunk, D);
  // One tile per intermediate, as the starting kernel names them (v12 ... v25).
  TilePool temps = kernel.sbuf_pool("temp", 14, P, kHalf, Dtype::fp32);
  for (TileSpan r : tiles(shape.M, P)) {
    for (TileSpan c : tiles(shape.N, kChunk)) {
      auto load = [&](TilePool& pool, const Tensor& source) {
        Tensor t = pool.next().slice(0, r.size, 0, c.size);
        kernel.dma_copy(t, source.slice(r.begin, r.end(), c.begin, c.end()));
        return t;
      };
      const Tensor th = load(theta_tiles, theta), mt = load(m_tiles, m), vt = load(v_tiles, v),
                   gt = load(g_tiles, g);
      const Tensor ot = out_tiles.next().slice(0, r.size, 0, c.size);
      for (TileSpan h : tiles(c.size, kHalf)) {
        auto part = [&](const Tensor& t) { return t.slice(0, r.size, h.begin, h.end()); };
        Tensor t[14];
        for (Tensor& x : t) x = temps.next().slice(0, r.size, 0, h.size);
        kernel.tensor_scalar(t[0], part(th), AluOp::multiply, 1e-5f);             // 1e-5 * theta
        kernel.tensor_tensor(t[1], part(th), t[0], AluOp::subtract);              // theta_t
        kernel.tensor_scalar(t[2], part(mt), AluOp::multiply, 0.9f);              // 0.9 * m
        kernel.tensor_scalar(t[3], part(gt), AluOp::multiply, 0.1f);              // 0.1 * g
        kernel.tensor_tensor(t[4], t[2], t[3], AluOp::add);                       // m_t
        kernel.tensor_scalar(t[5], t[4], AluOp::multiply, 0.01f);                 // 0.01 * m_t
        kernel.tensor_scalar(t[6], part(vt), AluOp::multiply, 0.999f);            // 0.999 * v
        kernel.tensor_scalar(t[7], part(gt), AluOp::multiply, 0.001f);            // 0.001 * g
        kernel.tensor_tensor(t[8], t[7], part(gt), AluOp::multiply);              // 0.001 * g * g
        kernel.tensor_tensor(t[9], t[6], t[8], AluOp::add);                       // v_t
        kernel.activation(t[10], t[9], ActivationFunction::sqrt, 0.0f, 1000.0f);  // sqrt(v_t * 1000)
        kernel.tensor_scalar(t[11], t[10], AluOp::add, 1e-8f);                    // + eps
        kernel.reciprocal(t[12], t[11]);
        kernel.tensor_tensor(t[13], t[5], t[12], AluOp::multiply);  // the update
        kernel.tensor_tensor(part(ot), t[1], t[13], AluOp::subtract);
      }
      kernel.dma_copy(out.slice(r.begin, r.end(), c.begin, c.end()), ot);
    }
  }
}

template <Dtype D>
void adamw_fused(Kernel& kernel, const AdamwShape& shape, const AdamwFusedParams& p) {
  Tensor theta = kernel.input("theta", shape.M, shape.N, D);
  Tensor g = kernel.input("g", shape.M, shape.N, D);
  Tensor m = kernel.input("m", shape.M, shape.N, D);
  Tensor v = kernel.input("v", shape.M, shape.N, D);
  Tensor out = kernel.output("out", shape.M, shape.N, D);
  const int P = kernel.limits().partitions;
  const int width = p.unroll_factor * p.tile_size;
  TilePool theta_tiles = kernel.sbuf_pool("theta_tile", p.pipeline_depth, P, width, D);
  TilePool g_tiles = kernel.sbuf_pool("g_tile", p.pipeline_depth, P, width, D);
  TilePool m_tiles = kernel.sbuf_pool("m_tile", p.pipeline_depth, P, width, D);
  TilePool v_tiles = kernel.sbuf_pool("v_tile", p.pipeline_depth, P, width, D);
  TilePool out_tiles = kernel.sbuf_pool("out_tile", p.pipeline_depth, P, width, D);
  // The second moment's chain (gs, vt, d, r) and the first moment's (mt, u)
  // each work in place in one fp32 tile; the scaled theta needs a third only
  // when it is made on the scalar engine.
  TilePool second = kernel.sbuf_pool("second_moment", 2, P, width, Dtype::fp32);
  TilePool first = kernel.sbuf_pool("first_moment", 2, P, width, Dtype::fp32);
  TilePool scaled = kernel.sbuf_pool("theta_scaled", p.final_engine == 1 ? 2 : 1, P,
                                     p.final_engine == 1 ? width : 1, Dtype::fp32);
  const Engine recip_engine = p.recip_engine == 1   ? Engine::scalar
                              : p.recip_engine == 2 ? Engine::gpsimd
                                                    : Engine::vector;
  int step = 0;
  for (const FoldedRows& rows : folded_row_groups(shape.M, P, p.unroll_factor)) {
    for (TileSpan c : tiles(shape.N, p.tile_size)) {
      const int cols = c.size * rows.fold;
      auto load = [&](TilePool& pool, const Tensor& source) {
        Tensor t = pool.next().slice(0, rows.partitions, 0, cols);
        kernel.dma_copy(t, folded_block(source, rows, c));
        return t;
      };
      // g and v first: the longest dependency chain starts from them.
      const Tensor gt = load(g_tiles, g), vt = load(v_tiles, v), mt = load(m_tiles, m),
                   tht = load(theta_tiles, theta);
      const Tensor s = second.next().slice(0, rows.partitions, 0, cols);
      const Tensor f = first.next().slice(0, rows.partitions, 0, cols);
      if (p.square_engine == 0)
        kernel.activation(s, gt, ActivationFunction::square, 0.0f, 0.0316227766f);  // sqrt(0.001) g, squared
      else
        kernel.scalar_tensor_tensor(s, gt, AluOp::multiply, 0.001f, AluOp::multiply, gt);
      kernel.scalar_tensor_tensor(s, vt, AluOp::multiply, 0.999f, AluOp::add, s);  // v_t
      kernel.activation(s, s, ActivationFunction::sqrt, 0.0f, 1e9f);               // 1000 sqrt(1000 v_t)
      kernel.tensor_scalar(s, s, AluOp::add, 1e-5f, AluOp::pow, -1.0f, recip_engine);
      kernel.scalar_tensor_tensor(f, mt, AluOp::multiply, 9.0f, AluOp::add, gt);  // 10 m_t
      kernel.tensor_tensor(f, f, s, AluOp::multiply, alternating_vector_engine(p.update_engine, step++));
      const Tensor ot = out_tiles.next().slice(0, rows.partitions, 0, cols);
      if (p.final_engine == 0) {
        kernel.scalar_tensor_tensor(ot, tht, AluOp::multiply, 1.0f - 1e-5f, AluOp::subtract, f);
      } else {
        const Tensor ts = scaled.next().slice(0, rows.partitions, 0, cols);
        kernel.activation(ts, tht, ActivationFunction::identity, 0.0f, 1.0f - 1e-5f);
        kernel.tensor_tensor(ot, ts, f, AluOp::subtract, Engine::gpsimd);
      }
      kernel.dma_copy(folded_block(out, rows, c), ot);
    }
  }
}

}  // namespace autotune::kernels
