// What the applications' host programs share: the median of timed runs and
// a figure as the tables show it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

namespace apps {

// The median of `runs`; NaN for none.
inline double median(std::vector<double> runs) {
  if (runs.empty()) return NAN;
  std::sort(runs.begin(), runs.end());
  const std::size_t h = runs.size() / 2;
  return runs.size() % 2 == 1 ? runs[h] : (runs[h - 1] + runs[h]) / 2;
}

// `v` printed with `format`, or "-" where it was not measured (NaN).
inline std::string shown(double v, const char* format) {
  if (std::isnan(v)) return "-";
  char text[32];
  std::snprintf(text, sizeof text, format, v);
  return text;
}

}  // namespace apps
