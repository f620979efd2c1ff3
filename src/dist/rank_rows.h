// How a data-parallel run shares out a batch: rank r of R takes rows [r*n/R, (r+1)*n/R), so the
// ranks' shares differ by one row at most and together cover the batch in order.
#pragma once

#include <cstdint>

namespace rg {

struct RowRange {
  int64_t first = 0;  // the first row of the batch that is this rank's
  int64_t count = 0;
};

inline RowRange rank_rows(int64_t n, int rank, int ranks) {
  const int64_t begin = n * rank / ranks, end = n * (rank + 1) / ranks;
  return RowRange{begin, end - begin};
}

}  // namespace rg
