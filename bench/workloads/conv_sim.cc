#include "bench/workloads/conv_sim.h"

#include "bench/workloads/sim_layout.h"

namespace pump::bench {

namespace {

pump_role_v1_t role_hint(ConvBufferKind kind) {
  switch (kind) {
    case ConvBufferKind::kFilter:
    case ConvBufferKind::kFilterGradient: return PUMP_ROLE_WEIGHT;
    case ConvBufferKind::kWorkspace: return PUMP_ROLE_WORKSPACE;
    default: return PUMP_ROLE_ACTIVATION;
  }
}

}  // namespace

SimWorkload conv_sim_workload(const ConvShape& shape, int iterations) {
  SimWorkload w;
  w.name = "conv";
  w.iterations = iterations;
  SimLayout layout(&w);
  for (const ConvBuffer& b : conv_buffers(shape)) layout.place(b.name, b.bytes, role_hint(b.kind));

  auto use = [&](int buffer, uint32_t access, uint32_t role) {
    const SimAllocation& a = layout.at(static_cast<size_t>(buffer));
    return pump_extent_v1_t{a.address, a.bytes, access, role};
  };
  const int ws = conv_workspace(shape);
  constexpr uint32_t R = PUMP_ACCESS_READ, W = PUMP_ACCESS_WRITE, RW = PUMP_ACCESS_READ_WRITE;
  constexpr uint32_t kAct = PUMP_ROLE_ACTIVATION, kWeight = PUMP_ROLE_WEIGHT, kWork = PUMP_ROLE_WORKSPACE;

  for (const ConvOp& op : conv_step(shape)) {
    SimKernel k;
    k.name = op.name;
    switch (op.kind) {
      case ConvOp::Kind::kForward:
        k.extents = {use(op.x, R, kAct), use(op.filter, R, kWeight), use(ws, RW, kWork), use(op.y, W, kAct)};
        k.compute_seconds = shape.flops() / kFlopsPerSecond;
        break;
      case ConvOp::Kind::kBackwardData:
        k.extents = {use(op.filter, R, kWeight), use(op.y, R, kAct), use(ws, RW, kWork), use(op.x, W, kAct)};
        k.compute_seconds = shape.flops() / kFlopsPerSecond;
        break;
      case ConvOp::Kind::kBackwardFilter:
        k.extents = {use(op.x, R, kAct), use(op.y, R, kAct), use(ws, RW, kWork), use(op.filter, W, kWeight)};
        k.compute_seconds = shape.flops() / kFlopsPerSecond;
        break;
      case ConvOp::Kind::kAddTensor:
        k.extents = {use(op.x, R, kAct), use(op.filter, RW, kAct)};
        k.compute_seconds = 3.0 * static_cast<double>(shape.filter_elements() * 4) / kElementwiseBytesPerSecond;
        break;
    }
    w.iteration.push_back(std::move(k));
  }
  return w;
}

}  // namespace pump::bench
