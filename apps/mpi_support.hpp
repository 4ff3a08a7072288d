// What the applications' baselines across processes share: MPI's errors
// and the end of a job whose processes wait for each other. Programs built
// with MPI define APPS_WITH_MPI.
#pragma once

#if APPS_WITH_MPI
#include <mpi.h>
#endif

#include <cstddef>
#include <cstdio>
#include <exception>
#include <stdexcept>
#include <string>

namespace apps {

// Whether a baseline can span processes (the program has MPI).
#if APPS_WITH_MPI
inline constexpr bool with_mpi = true;
#else
inline constexpr bool with_mpi = false;
#endif

#if APPS_WITH_MPI
// Throws std::runtime_error naming `what` and MPI's reason.
inline void check_mpi(int status, const char* what) {
  if (status == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(status, text, &length);
  throw std::runtime_error(std::string("baseline: ") + what + ": " +
                           std::string(text, std::size_t(length)));
}
#endif

// Ends a job that spans processes after `e` in this one (the others would
// wait in MPI for data that never comes): prints "program: what" and calls
// MPI_Abort. Without MPI there is no such job: rethrows.
[[noreturn]] inline void abort_processes(const char* program, const std::exception& e) {
#if APPS_WITH_MPI
  std::fprintf(stderr, "%s: %s\n", program, e.what());
  MPI_Abort(MPI_COMM_WORLD, 1);
#endif
  (void)program, (void)e;
  throw;
}

}  // namespace apps
