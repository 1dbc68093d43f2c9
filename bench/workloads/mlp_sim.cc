#include "bench/workloads/mlp_sim.h"

#include "bench/workloads/sim_layout.h"
#include "pump/extent_math.h"

namespace pump::bench {

namespace {

pump_role_v1_t role_hint(MlpBufferKind kind) {
  return kind == MlpBufferKind::kWeight || kind == MlpBufferKind::kGradient ? PUMP_ROLE_WEIGHT : PUMP_ROLE_ACTIVATION;
}

// What the cublas extractor computes for one operand (see cublas_extractor.cc).
uint64_t gemm_operand_bytes(bool transposed, int rows, int cols, int ld) {
  return transposed ? pump_column_major_bytes(cols, rows, ld, 4) : pump_column_major_bytes(rows, cols, ld, 4);
}

}  // namespace

SimWorkload mlp_sim_workload(const MlpShape& shape, int iterations) {
  SimWorkload w;
  w.name = "mlp";
  w.iterations = iterations;
  SimLayout layout(&w);
  for (const MlpBuffer& b : mlp_buffers(shape)) layout.place(b.name, b.elements * 4, role_hint(b.kind));

  auto extent = [&](int buffer, uint64_t bytes, uint32_t access) {
    return pump_extent_v1_t{layout.at(static_cast<size_t>(buffer)).address, bytes, access, PUMP_ROLE_UNKNOWN};
  };
  auto whole = [&](int buffer) {
    return extent(buffer, layout.at(static_cast<size_t>(buffer)).bytes, PUMP_ACCESS_READ_WRITE);
  };

  for (const MlpOp& op : mlp_step(shape)) {
    SimKernel k;
    k.name = op.name;
    if (op.kind == MlpOp::Kind::kGemm) {
      const MlpGemm& g = op.gemm;
      k.extents = {extent(g.a, gemm_operand_bytes(g.transa, g.m, g.k, g.lda), PUMP_ACCESS_READ),
                   extent(g.b, gemm_operand_bytes(g.transb, g.k, g.n, g.ldb), PUMP_ACCESS_READ),
                   extent(g.c, pump_column_major_bytes(g.m, g.n, g.ldc, 4), PUMP_ACCESS_READ_WRITE)};
      k.compute_seconds = 2.0 * g.m * g.n * static_cast<double>(g.k) / kFlopsPerSecond;
    } else {
      uint64_t bytes = 0;
      for (int buffer : {op.x, op.y}) {
        if (buffer < 0) continue;
        k.extents.push_back(whole(buffer));
        bytes += op.elements * 4;
      }
      if (op.kind != MlpOp::Kind::kRelu) bytes += op.elements * 4;  // the in-place operand is written back too
      else bytes *= 2;
      k.compute_seconds = static_cast<double>(bytes) / kElementwiseBytesPerSecond;
    }
    w.iteration.push_back(std::move(k));
  }
  return w;
}

}  // namespace pump::bench
