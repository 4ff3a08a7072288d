// The level-set baseline of the triangular solve (papers/001 §6.4): the
// rows grouped by level (a row's level is one more than its dependencies'
// highest), one kernel launch per level on the current GPU, a thread per row.
#pragma once

#include <vector>

#include "matrix.hpp"

namespace spts {

// Seconds for one solve (after one not timed); `x` gets the solution.
double run_baseline(const csr& m, const std::vector<double>& b, int threads,
                    std::vector<double>& x);

}  // namespace spts
