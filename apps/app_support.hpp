// What the applications' host programs share: their command lines, the
// median of timed runs and a figure as the tables show it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace apps {

// A program's command line, read argument by argument. Every mistake ends
// the program with status 2, the reason and the usage line (usage, which
// the program's own checks of its options call too).
class command_line {
 public:
  // `synopsis`: the options as the usage line shows them.
  command_line(const char* program, const char* synopsis, int argc, char** argv)
      : program_(program), synopsis_(synopsis), argc_(argc), argv_(argv) {}

  [[noreturn]] void usage(const std::string& why) const {
    std::fprintf(stderr, "%s: %s\nusage: %s %s\n", program_, why.c_str(), program_, synopsis_);
    std::exit(2);
  }
  // Steps to the next argument; false past the last.
  bool next() { return ++at_ < argc_; }
  // The argument stepped to.
  std::string option() const { return argv_[at_]; }
  // An argument no option took; --help (or -h) asks for the usage line.
  [[noreturn]] void unknown() const {
    if (option() == "--help" || option() == "-h") {
      std::printf("usage: %s %s\n", program_, synopsis_);
      std::exit(0);
    }
    usage("unknown argument '" + option() + "'");
  }
  // The option's value: the argument after it, stepped over.
  std::string value() {
    if (at_ + 1 >= argc_) usage(option() + " needs a value");
    return argv_[++at_];
  }
  // The option's value as a whole number from `low` to `high`.
  long long number(long long low, long long high) {
    const std::string what = option();
    return number(value(), what.c_str(), low, high);
  }
  // `text` as a whole number from `low` to `high`; `what` names it.
  long long number(const std::string& text, const char* what, long long low, long long high) const {
    char* end = nullptr;
    const long long v = std::strtoll(text.c_str(), &end, 10);
    if (end == text.c_str() || *end != '\0' || v < low || v > high)
      usage(std::string(what) + " must be a number from " + std::to_string(low) + " to " +
            std::to_string(high) + ", not '" + text + "'");
    return v;
  }
  // Closes a file the program wrote: where a write failed (a full disk, a
  // file that takes no writes), the program ends with status 1 and says so.
  void close_written(std::FILE* file, const std::string& path) const {
    const bool failed = std::ferror(file) != 0;
    if (std::fclose(file) != 0 || failed) {
      std::fprintf(stderr, "%s: cannot write %s\n", program_, path.c_str());
      std::exit(1);
    }
  }
  // The option's value split at commas: at least one item.
  std::vector<std::string> items() {
    const std::string what = option();
    std::stringstream list(value());
    std::vector<std::string> all;
    for (std::string item; std::getline(list, item, ',');) all.push_back(item);
    if (all.empty()) usage(what + " needs at least one item");
    return all;
  }
  // The option's value as a list of whole numbers from `low` to `high`.
  std::vector<int> numbers(const char* each, int low, int high) {
    std::vector<int> all;
    for (const std::string& item : items()) all.push_back(int(number(item, each, low, high)));
    return all;
  }

 private:
  const char* program_;
  const char* synopsis_;
  int argc_;
  char** argv_;
  int at_ = 0;
};

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
