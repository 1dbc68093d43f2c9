#!/usr/bin/env python3
"""Checks the PUMP_STATS report of tests/gpu/static_cudart_probe run under libpump.so
(static_cudart_check.sh). The program's static CUDA runtime reaches pump only through
the driver hooks, so they must have done what the runtime hooks do for a shared runtime:
its four cudaMalloc calls (1 MiB x; 64 KiB A, B, C) became managed memory; its kernel
launch named x's block; its copies were seen with their exact bytes (whichever driver
copy call the runtime uses); the cublasSgemm was extracted. Usage: <stats.json>"""
import json
import sys

VECTOR_BYTES = 1 << 20
MATRIX_BYTES = 128 * 128 * 4


def main():
    report = json.load(open(sys.argv[1]))
    hooks = report["hooks"]
    for name, h in sorted(hooks.items()):
        print(f"  {name}: calls {h['calls']}, with extents {h['calls_with_extents']}, "
              f"known {h['bytes_known']} B, unknown {h['bytes_unknown']} B")
    alloc = report["allocations"]
    print(f"  allocations: {alloc}")
    failures = []
    if alloc["managed_allocations"] < 4:
        failures.append(f"{alloc['managed_allocations']} managed allocations, expected the program's 4")
    if hooks.get("cuMemAlloc_v2", {}).get("calls", 0) < 4:
        failures.append("the runtime's cudaMalloc did not reach pump's cuMemAlloc_v2")
    launches = {n: h for n, h in hooks.items() if n.startswith("cuLaunch") and h["calls_with_extents"] > 0}
    if not any(h["bytes_known"] >= VECTOR_BYTES for h in launches.values()):
        failures.append(f"no driver launch hook named the 1 MiB vector's block: {sorted(launches)}")
    copies = {n: h for n, h in hooks.items() if n.startswith("cuMemcpy") and h["calls_with_extents"] > 0}
    # In: x, A, B; out: x, C. Each copy's device side is known memory, exactly its bytes.
    expected_known = 2 * VECTOR_BYTES + 3 * MATRIX_BYTES
    known = sum(h["bytes_known"] for h in copies.values())
    if known != expected_known:
        failures.append(f"the copies' device sides came to {known} known bytes, expected {expected_known} "
                        f"({sorted(copies)})")
    if hooks.get("cublasSgemm_v2", {}).get("calls_with_extents", 0) != 1:
        failures.append("cublasSgemm_v2 was not extracted")
    if not report["devices"]:
        failures.append("no device engine was created")
    for f in failures:
        print("FAIL:", f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
