/*
 * Extent arithmetic an extractor for a BLAS-like library needs: how many bytes a
 * column-major matrix spans. Header-only (no ABI): C99 and C++.
 */
#ifndef PUMP_EXTENT_MATH_H
#define PUMP_EXTENT_MATH_H

#include <stdint.h>

/* Bytes spanned by a column-major matrix of `rows` x `cols` with leading dimension `ld`
 * (in elements) and `elem` bytes per element: the last column starts at (cols-1)*ld
 * and holds `rows`. 0 for an empty matrix; an `ld` below `rows` (which the libraries
 * reject) counts as `rows`, so the span is never under-reported. */
static inline uint64_t pump_column_major_bytes(int64_t rows, int64_t cols, int64_t ld, uint64_t elem) {
  if (rows <= 0 || cols <= 0 || elem == 0) return 0;
  if (ld < rows) ld = rows;
  return ((uint64_t)(cols - 1) * (uint64_t)ld + (uint64_t)rows) * elem;
}

#endif /* PUMP_EXTENT_MATH_H */
