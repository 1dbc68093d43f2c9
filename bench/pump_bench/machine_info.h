// The machine a report was measured on: hostname, CPU model, GPU and driver.
#pragma once

#include "bench/pump_bench/bench_results.h"
#include "bench/pump_bench/gpu_probe.h"

namespace pump::bench {

MachineInfo describe_machine(const GpuProbe& gpu, bool sim);

}  // namespace pump::bench
