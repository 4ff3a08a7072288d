// The kernel-boundary baselines' halo exchange (horizontal diffusion,
// Jacobi 2D): a grid split into bands of rows, one band per GPU, each GPU's
// block holding its band as rows 1..rows with the halo row from above as
// row 0 and the halo row from below as row rows + 1. The host copies edge
// rows into the neighbours' halo rows between kernels:
// - between the GPUs of this process with cudaMemcpyPeerAsync, ordered by
//   events, so the host never waits inside an iteration;
// - between processes (one per GPU or per node; programs built with MPI):
//   edge rows to the host, through MPI (not CUDA-aware), into the
//   neighbour's halo rows, the host waiting for each exchange as an MPI
//   program does.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>

#include "cuda_support.hpp"
#include "mpi_support.hpp"

namespace apps {

class band_exchange {
 public:
  static constexpr int most_devices = 8, most_channels = 4;

  struct layout {
    int first_device;          // this process's first GPU; the others follow it
    int devices;               // this process's GPUs, 1 to most_devices
    std::size_t row_elements;  // doubles per row
    std::size_t rows;          // rows of each GPU's band
    int channels;              // independent exchanges (a program's streams), 1 to most_channels
    // The MPI_COMM_WORLD processes whose rows lie just above and just below
    // this process's, or -1 at the grid's edge (one process: both -1).
    int process_above = -1;
    int process_below = -1;
  };

  explicit band_exchange(const layout& l);
  ~band_exchange();
  band_exchange(const band_exchange&) = delete;
  band_exchange& operator=(const band_exchange&) = delete;

  bool across_processes() const { return l_.process_above >= 0 || l_.process_below >= 0; }

  // Fills the halo rows of blocks[d] (GPU first_device + d) from the
  // neighbours' edge rows, after the work the streams[d] hold so far; the
  // streams' later work sees them. `above`: the halo rows from above (each
  // band's last row goes down); `below`: those from below. A channel's
  // exchanges between processes carry MPI tags 2 * tag and 2 * tag + 1.
  void exchange(int channel, double* const* blocks, const cudaStream_t* streams, bool above,
                bool below, int tag);

  // The processes start their iterations together (one process: nothing).
  void meet_processes() const;

 private:
  void between_devices(int c, double* const* blocks, const cudaStream_t* streams, bool above,
                       bool below);
  void between_processes(int c, double* const* blocks, const cudaStream_t* streams, bool above,
                         bool below, int tag);

  layout l_;
  // Per channel and GPU: its edge rows computed (the neighbours may push)
  // and its pushes done (the neighbours' next kernels may read them).
  cudaEvent_t computed_[most_channels][most_devices] = {};
  cudaEvent_t pushed_[most_channels][most_devices] = {};
  // Per channel, pinned: the row sent up, the row sent down, the row from
  // above, the row from below.
  double* edges_[most_channels] = {};
};

}  // namespace apps
