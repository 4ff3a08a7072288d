// Errors. A rank that detects a bad argument fills an error_record (plain data,
// so a GPU rank can write it into host-visible memory); the host turns the
// record into a grma::error whose message names the rank, the call and the
// values. On the CPU backend the rank throws that error directly.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

#include "grma/config.hpp"

namespace grma {

// The API call an error or a blocked rank is in.
enum class call : std::int32_t {
  none = 0,
  runtime,
  alloc,
  free,
  window_create,
  window_free,
  put_notify,
  get_notify,
  put_signal,
  test_notifications,
  wait_notifications,
  wait_signal,
  barrier,
  rank_assert,
  comm_query,
  alloc_shared,
  free_shared,
  alloc_symmetric,
  free_symmetric,
  ptr,
  put,
  get,
  put_nbi,
  get_nbi,
  iput,
  iget,
  p,
  g,
  quiet,
  fence,
  ctx_create,
  ctx_destroy,
  atomic_fetch,
  atomic_set,
  atomic_swap,
  atomic_compare_swap,
  atomic_fetch_add,
  atomic_add,
  atomic_fetch_inc,
  atomic_inc,
  atomic_fetch_and,
  atomic_and,
  atomic_fetch_or,
  atomic_or,
  atomic_fetch_xor,
  atomic_xor,
  wait_until,
  wait_until_all,
  wait_until_any,
  wait_until_some,
  test,
  test_all,
  test_any,
  test_some,
  team_split_strided,
  team_split_2d,
  team_destroy,
  team_query,
  broadcast,
  fcollect,
  alltoall,
  reduce,
  allreduce,
  reduce_scatter,
  put_signal_nbi,
  collect,
  alltoalls,
  wait_until_all_vector,
  wait_until_any_vector,
  wait_until_some_vector,
  test_all_vector,
  test_any_vector,
  test_some_vector,
  host_source,
  wait_some_notifications,
  test_some_notifications,
  put_value_notify,
  // The GASPI layer's (grma/gaspi.hpp).
  gaspi_proc_init,
  gaspi_proc_term,
  gaspi_segment_create,
  gaspi_segment_delete,
  gaspi_segment_query,
  gaspi_write,
  gaspi_read,
  gaspi_write_list,
  gaspi_read_list,
  gaspi_notify,
  gaspi_write_notify,
  gaspi_write_list_notify,
  gaspi_read_notify,
  gaspi_read_list_notify,
  gaspi_notify_waitsome,
  gaspi_notify_reset,
  gaspi_wait,
  gaspi_queue_query,
  gaspi_atomic_fetch_add,
  gaspi_atomic_compare_swap,
  gaspi_group_create,
  gaspi_group_add,
  gaspi_group_commit,
  gaspi_group_delete,
  gaspi_group_query,
  gaspi_barrier,
  gaspi_allreduce,
  gaspi_allreduce_user,
  gaspi_passive_send,
  gaspi_passive_receive,
  gaspi_state_vec_get,
  gaspi_proc_query,
  count_  // number of calls, keep last
};

enum class errc : std::int32_t {
  none = 0,
  rank_out_of_range,     // v0 rank, v1 communicator size, v2 communicator, v3 host sources after it
  range_outside_window,  // v0 offset, v1 size, v2 registered bytes, v3 target, v4 window slot;
                         // text "signal" where the offset is a signal word's
  negative_tag,          // v0 tag
  invalid_count,         // v0 count (`most` for the calls for some)
  count_exceeds_match_capacity,  // v0 count, v1 capacity
  window_not_created,            // v0 slot, v1 generation
  window_freed,                  // v0 slot, v1 generation of handle
  window_memory_not_managed,     // v0 base address, v1 size
  window_table_full,             // v0 table size
  heap_exhausted,                // v0 request, v1 heap size, v2 free bytes, v3 largest free block
  invalid_free,                  // v0 address
  double_free,                   // v0 address
  null_buffer,                   // v0 size; or text: the output argument that is null
  collective_mismatch,  // v0 communicator, v1 other rank (world's), v2 other call, v3 epoch
  invalid_comm,         // v0 communicator id
  signal_misaligned,    // v0 offset
  invalid_enum,         // v0 value (signal_op or cmp)
  assertion_failed,     // text "file:line: expression"
  aborted,              // v0 rank whose failure stopped the job
  timeout,              // the watchdog's report is in the message
  invalid_config,       // host side; message built on the host
  backend_unavailable,  // host side
  device_error,         // host side: a CUDA call failed
  process_failed,       // host side: another process of the job exited or hung
  request_refused,      // v0 origin, v1 refusal, v2 offset, v3 size, v4 registered bytes, v5 window
                        // slot
  shared_size_mismatch,     // v0 bytes, v1 first device rank that differs from rank 0, v2 rank 0's
                            // bytes (low 40 bits)
  shared_pointer_mismatch,  // v0 this rank's pointer, v1 first device rank that differs from rank 0
  not_symmetric,            // v0 address, v1 size, v2 bytes of each rank's symmetric slice
  symmetric_mismatch,   // v0, v1 this rank's arguments, v2 first world rank whose differ from rank
                        // 0's, v3 the address a free was given (a world block on one node;
                        // across nodes the members' check reports team_collective_mismatch)
  symmetric_exhausted,  // v0 request, v1 slice bytes, v2 largest free block, v3 blocks, v4 block
                        // limit
  invalid_alignment,    // v0 alignment
  word_misaligned,      // v0 address, v1 word size; where v2 is 1, v0 a segment offset;
                        // where 2, an offset in rank v3's range of window v4
  context_invalid,      // v0 slot, v1 generation
  context_table_full,   // v0 contexts a rank may have
  team_not_member,      // v0 team slot, v1 team size
  team_invalid,         // v0 slot, v1 generation
  team_split_invalid,   // v0 start, v1 stride, v2 size, v3 parent size
  team_table_full,      // v0 team slots
  team_collective_mismatch,  // v0 team slot | this rank's other arguments << 8 (0: none; a
                             // reduction's op and type, a split's stride, alltoalls' strides), v1
                             // the member before's call | its other arguments << 8, v2 its size,
                             // v3 its root | this rank's << 16, v4 that member << 32 | this
                             // rank's size
  invalid_reduce_op,         // v0 op, v1 1 for a floating-point type
  symmetric_not_owner,       // v0 address
  team_holds_blocks,         // v0 team slot, v1 live symmetric blocks
  invalid_stride,            // v0 dest stride, v1 source stride (signed)
  buffer_not_shared,         // v0 address (one GPU thread's own memory)
  // The GASPI layer's (grma/gaspi.hpp).
  not_initialized,       // v0 1 where proc_init was called twice
  segment_unknown,       // v0 segment id, v1 segments a rank may have
  segment_exists,        // v0 segment id
  segment_range,         // v0 offset, v1 size, v2 segment bytes, v3 segment id, v4 rank
  notification_range,    // v0 first id, v1 ids, v2 ids of each segment, v3 segment id
  notification_zero,     // v0 notification id
  argument_range,        // v0 value, v1 lowest, v2 highest, v3 1 for sizes (unsigned); text: the
                         // argument
  argument_refused,      // v0 value; text: why
  group_state,           // v0 group, v1 its stage (0 none, 1 built, 2 committing, 3 committed)
  group_mismatch,        // v0 group, v1 the member whose members differ
  collective_pending,    // v0 group, v1 the call under way
  passive_message_size,  // v0 message bytes, v1 receive bytes, v2 sender
  no_host_source,        // v0 process, v1 the job's host sources
  rank_exception,        // a CPU rank's program threw; text: what() (the other ranks' and
                         // processes' record of it: the rank's own process rethrows it)
  count_                 // keep last
};

// Why a target's network engine refused a request from another node
// (errc::request_refused); nothing of such a request is written.
enum class refusal : std::int32_t {
  outside_range = 0,  // offset + size exceed the target's registered range
  no_window,          // the window is not alive on the target's node, or not a world window
  wrong_process,      // the origin or the target is not where the request claims
  signal_misaligned,  // the signal word is not 8-byte aligned
  outside_slice,      // offset + size exceed the target's symmetric heap slice (v5 unused)
  bad_atomic,         // an atomic of another size than 4 or 8 bytes, misaligned, or of no known op
  not_for_hosts,      // an operation a host does not issue (a collective, one on no window)
  signal_outside_range,  // the signal word is not in the target's registered range
  atomic_misaligned,     // a window's atomic word is not aligned to its size in the target's memory
  untaken,               // not a refusal: the target's ranks returned while its notification
                         // was held behind their full queue (its data is in place); where the
                         // job failed, the request fails with errc::aborted instead
};

// Bytes of an error record's text, its terminating zero included: room for
// an assertion's "dir/file.cpp:line: expression" with a realistic expression.
inline constexpr std::uint32_t error_text_bytes = 256;

// What a rank records when it fails. Shared with device code: fixed size, no
// pointers, 8-byte aligned fields only.
struct error_record {
  std::int32_t code;   // errc
  std::int32_t rank;   // world rank that failed (-1: host)
  std::int32_t where;  // call
  std::int32_t pad;
  std::int64_t values[6];
  char text[error_text_bytes];
};
static_assert(sizeof(error_record) == 320, "error_record is shared with the GPU; keep its layout");

const char* call_name(call c);
const char* comm_name(std::uint32_t comm_id);

// The one error type of grma.
class error : public std::runtime_error {
 public:
  error(errc code, int rank, call where, const std::string& message)
      : std::runtime_error(message), code_(code), rank_(rank), where_(where) {}
  explicit error(const error_record& record);

  errc code() const noexcept { return code_; }
  int rank() const noexcept { return rank_; }  // -1 when the host found it
  call where() const noexcept { return where_; }

 private:
  errc code_;
  int rank_;
  call where_;
};

// The text of an error record, "grma: rank R: CALL: what went wrong, with values".
std::string describe(const error_record& record);

}  // namespace grma
