#include "grma/error.hpp"

#include <sstream>

#include "error_text.hpp"
#include "grma/types.hpp"

namespace grma {

const char* call_name(call c) {
  switch (c) {
    case call::none: return "log";
    case call::runtime: return "runtime";
    case call::alloc: return "alloc";
    case call::free: return "free";
    case call::window_create: return "window_create";
    case call::window_free: return "window_free";
    case call::put_notify: return "put_notify";
    case call::get_notify: return "get_notify";
    case call::put_signal: return "put_signal";
    case call::test_notifications: return "test_notifications";
    case call::wait_notifications: return "wait_notifications";
    case call::wait_signal: return "wait_signal";
    case call::barrier: return "barrier";
    case call::rank_assert: return "GRMA_ASSERT";
    case call::comm_query: return "rank/size";
    case call::alloc_shared: return "alloc_shared";
    case call::free_shared: return "free_shared";
    case call::alloc_symmetric: return "alloc_symmetric";
    case call::free_symmetric: return "free_symmetric";
    case call::ptr: return "ptr";
    case call::put: return "put";
    case call::get: return "get";
    case call::put_nbi: return "put_nbi";
    case call::get_nbi: return "get_nbi";
    case call::iput: return "iput";
    case call::iget: return "iget";
    case call::p: return "p";
    case call::g: return "g";
    case call::quiet: return "quiet";
    case call::fence: return "fence";
    case call::ctx_create: return "ctx_create";
    case call::ctx_destroy: return "ctx_destroy";
    case call::atomic_fetch: return "atomic_fetch";
    case call::atomic_set: return "atomic_set";
    case call::atomic_swap: return "atomic_swap";
    case call::atomic_compare_swap: return "atomic_compare_swap";
    case call::atomic_fetch_add: return "atomic_fetch_add";
    case call::atomic_add: return "atomic_add";
    case call::atomic_fetch_inc: return "atomic_fetch_inc";
    case call::atomic_inc: return "atomic_inc";
    case call::atomic_fetch_and: return "atomic_fetch_and";
    case call::atomic_and: return "atomic_and";
    case call::atomic_fetch_or: return "atomic_fetch_or";
    case call::atomic_or: return "atomic_or";
    case call::atomic_fetch_xor: return "atomic_fetch_xor";
    case call::atomic_xor: return "atomic_xor";
    case call::wait_until: return "wait_until";
    case call::wait_until_all: return "wait_until_all";
    case call::wait_until_any: return "wait_until_any";
    case call::wait_until_some: return "wait_until_some";
    case call::test: return "test";
    case call::test_all: return "test_all";
    case call::test_any: return "test_any";
    case call::test_some: return "test_some";
    case call::team_split_strided: return "team_split_strided";
    case call::team_split_2d: return "team_split_2d";
    case call::team_destroy: return "team_destroy";
    case call::broadcast: return "broadcast";
    case call::fcollect: return "fcollect";
    case call::alltoall: return "alltoall";
    case call::reduce: return "reduce";
    case call::allreduce: return "allreduce";
    case call::reduce_scatter: return "reduce_scatter";
    case call::put_signal_nbi:
      return "put_signal_nbi";
    case call::collect:
      return "collect";
    case call::alltoalls:
      return "alltoalls";
    case call::wait_until_all_vector:
      return "wait_until_all_vector";
    case call::wait_until_any_vector:
      return "wait_until_any_vector";
    case call::wait_until_some_vector:
      return "wait_until_some_vector";
    case call::test_all_vector:
      return "test_all_vector";
    case call::test_any_vector:
      return "test_any_vector";
    case call::test_some_vector:
      return "test_some_vector";
    case call::host_source:
      return "host_source";
    case call::wait_some_notifications:
      return "wait_some_notifications";
    case call::test_some_notifications:
      return "test_some_notifications";
    case call::put_value_notify: return "put_value_notify";
    case call::team_query: return "team_rank/team_size/team_translate";
    case call::gaspi_proc_init:
      return "gaspi_proc_init";
    case call::gaspi_proc_term:
      return "gaspi_proc_term";
    case call::gaspi_segment_create:
      return "gaspi_segment_create";
    case call::gaspi_segment_delete:
      return "gaspi_segment_delete";
    case call::gaspi_segment_query:
      return "gaspi_segment_ptr/size/num/list";
    case call::gaspi_write:
      return "gaspi_write";
    case call::gaspi_read:
      return "gaspi_read";
    case call::gaspi_write_list:
      return "gaspi_write_list";
    case call::gaspi_read_list:
      return "gaspi_read_list";
    case call::gaspi_notify:
      return "gaspi_notify";
    case call::gaspi_write_notify:
      return "gaspi_write_notify";
    case call::gaspi_write_list_notify:
      return "gaspi_write_list_notify";
    case call::gaspi_read_notify:
      return "gaspi_read_notify";
    case call::gaspi_read_list_notify:
      return "gaspi_read_list_notify";
    case call::gaspi_notify_waitsome:
      return "gaspi_notify_waitsome";
    case call::gaspi_notify_reset:
      return "gaspi_notify_reset";
    case call::gaspi_wait:
      return "gaspi_wait";
    case call::gaspi_queue_query:
      return "gaspi_queue_size/size_max/num";
    case call::gaspi_atomic_fetch_add:
      return "gaspi_atomic_fetch_add";
    case call::gaspi_atomic_compare_swap:
      return "gaspi_atomic_compare_swap";
    case call::gaspi_group_create:
      return "gaspi_group_create";
    case call::gaspi_group_add:
      return "gaspi_group_add";
    case call::gaspi_group_commit:
      return "gaspi_group_commit";
    case call::gaspi_group_delete:
      return "gaspi_group_delete";
    case call::gaspi_group_query:
      return "gaspi_group_size/ranks";
    case call::gaspi_barrier:
      return "gaspi_barrier";
    case call::gaspi_allreduce:
      return "gaspi_allreduce";
    case call::gaspi_allreduce_user:
      return "gaspi_allreduce_user";
    case call::gaspi_passive_send:
      return "gaspi_passive_send";
    case call::gaspi_passive_receive:
      return "gaspi_passive_receive";
    case call::gaspi_state_vec_get:
      return "gaspi_state_vec_get";
    case call::gaspi_proc_query:
      return "gaspi_proc_rank/num";
    case call::count_: break;
  }
  return "unknown call";
}

const char* comm_name(std::uint32_t comm_id) {
  if (comm_id == world.id) return "world";
  if (comm_id == device.id) return "device";
  return "unknown";
}

namespace {

// Offsets and sizes travel as int64 in the record; they are unsigned.
std::uint64_t u(std::int64_t value) { return static_cast<std::uint64_t>(value); }

// A team collective's size and root as its team check carries them, with
// its other arguments (`more`, team_collective_begin): a reduction's
// operation and element type (detail::reduction_kind), a strided split's
// stride, alltoalls' strides (detail::strides_more). A split's root is its
// start.
std::string collective_arguments(call where, std::uint64_t size, std::uint64_t more,
                                 std::uint64_t root) {
  std::ostringstream s;
  if (where == call::team_split_strided) {
    // The stride as given (a team of one takes any), in 56 bits.
    s << "size " << size << ", start " << root << " and stride " << (std::int64_t(more << 8) >> 8);
    return s.str();
  }
  if (where == call::team_split_2d) {  // its size: the xrange
    s << "xrange " << size;
    return s.str();
  }
  s << "size " << size;
  if (where == call::alltoalls) {
    s << ", dest stride " << (more & 0xfffffffu) << " and source stride " << (more >> 28);
    return s.str();
  }
  if ((more & 0x80u) != 0) {
    static const char* ops[] = {"sum", "prod", "min", "max", "bit_and", "bit_or", "bit_xor", "?"};
    s << ", " << ops[more & 7u] << " of " << (1u << ((more >> 5) & 3u)) << "-byte "
      << ((more & 0x10u) != 0  ? "floating point"
          : (more & 0x8u) != 0 ? "signed integers"
                               : "unsigned integers");
  }
  s << " and root " << root;
  return s.str();
}

}  // namespace

std::string bytes_text(std::uint64_t n) {
  return std::to_string(n) + (n == 1 ? " byte" : " bytes");
}

std::string describe_values(const error_record& r) {
  const auto* v = r.values;
  std::ostringstream s;
  switch (static_cast<errc>(r.code)) {
    case errc::none: s << "no error"; break;
    case errc::rank_out_of_range:
      s << "rank " << v[0] << " is out of range: communicator " << comm_name(std::uint32_t(v[2]))
        << " has " << v[1] << " ranks";
      if (v[3] > 0) s << ", and host sources " << v[1] << " to " << v[1] + v[3] - 1;
      break;
    case errc::range_outside_window:
      if (r.text[0] != '\0') s << r.text << " ";  // whose offset: a signal's
      s << "offset " << u(v[0]) << " + size " << u(v[1]) << " exceeds the " << bytes_text(u(v[2]))
        << " that rank " << v[3] << " registered with window " << v[4];
      break;
    case errc::negative_tag: s << "tag " << v[0] << " is negative (tags are >= 0)"; break;
    case errc::invalid_count: {
      // The calls for some name their count `most`.
      const auto where = static_cast<call>(r.where);
      const bool most =
          where == call::wait_some_notifications || where == call::test_some_notifications;
      s << (most ? "most " : "count ") << v[0] << " is less than 1";
      break;
    }
    case errc::count_exceeds_match_capacity:
      s << "count " << v[0] << " exceeds the " << v[1]
        << " unmatched notifications a rank can hold (GRMA_MATCH_CAPACITY)";
      break;
    case errc::window_not_created:
      // window_free leaves window_none (slot 0, generation 0) in the handle.
      if (v[0] == 0 && v[1] == 0)
        s << "the handle is grma::window_none: its window was freed by window_free (or the "
             "handle was never set by window_create)";
      else
        s << "window " << v[0] << " (generation " << v[1] << ") was never created";
      break;
    case errc::window_freed:
      s << "window " << v[0] << " (generation " << v[1] << ") is used after window_free";
      break;
    case errc::window_memory_not_managed:
      s << "memory at 0x" << std::hex << u(v[0]) << std::dec << " (" << bytes_text(u(v[1]))
        << ") is not grma memory: register memory from alloc or userdata";
      break;
    case errc::window_table_full:
      s << "all " << v[0] << " window slots are in use (GRMA_MAX_WINDOWS)";
      break;
    case errc::heap_exhausted:
      s << "cannot allocate " << bytes_text(u(v[0])) << ": the heap of " << bytes_text(u(v[1]))
        << " has " << bytes_text(u(v[2])) << " free, the largest free block is "
        << bytes_text(u(v[3])) << " (GRMA_HEAP_SIZE)";
      break;
    case errc::invalid_free:
      s << "pointer 0x" << std::hex << u(v[0]) << std::dec
        << " was not returned by alloc, or was freed already";
      break;
    case errc::double_free:
      s << "pointer 0x" << std::hex << u(v[0]) << std::dec << " was freed already (double free)";
      break;
    case errc::null_buffer:
      if (r.text[0] != '\0')  // an output argument, named (GASPI's queries)
        s << "the output " << r.text << " is null";
      else
        s << "buffer is null but size is " << u(v[0]);
      break;
    case errc::collective_mismatch:
      s << "collective mismatch on communicator " << comm_name(std::uint32_t(v[0])) << ": rank "
        << v[1] << " called " << call_name(static_cast<call>(v[2])) << " (collective #" << v[3]
        << ")";
      break;
    case errc::invalid_comm: s << "communicator " << v[0] << " does not exist"; break;
    case errc::signal_misaligned:
      s << "signal offset " << u(v[0]) << " is not 8-byte aligned in the heap";
      break;
    case errc::invalid_enum: s << "invalid signal_op or cmp value " << v[0]; break;
    case errc::assertion_failed: s << "assertion failed: " << r.text; break;
    case errc::aborted:
      s << "stopped because the job was aborted";
      if (v[0] >= 0) s << " (rank " << v[0] << " failed)";
      break;
    case errc::timeout: s << "watchdog timeout"; break;
    case errc::invalid_config:
    case errc::backend_unavailable:
    case errc::device_error:
    case errc::process_failed: s << r.text; break;
    case errc::request_refused: {
      // engine_operations::check: v0 < 0 is a host thread's operation.
      const std::string from = v[0] < 0 ? "the host of process " + std::to_string(-1 - v[0])
                                        : "rank " + std::to_string(v[0]) + " (another node)";
      if (static_cast<refusal>(v[1]) == refusal::untaken) {  // not a refusal: it was written
        s << "the target's ranks returned before they took the notification of a request from "
          << from << " (its data is in place)";
        break;
      }
      s << "refused a request from " << from << ": ";
      switch (static_cast<refusal>(v[1])) {
        case refusal::outside_range:
          s << "offset " << u(v[2]) << " + size " << u(v[3]) << " exceeds the "
            << bytes_text(u(v[4])) << " registered with window " << v[5];
          break;
        case refusal::no_window: s << "window " << v[5] << " is not a live world window here"; break;
        case refusal::wrong_process:
          s << "the origin or the target is not in the process it names (window " << v[5] << ")";
          break;
        case refusal::signal_misaligned:
          // The origin checked the offset: it is the window's start that
          // leaves the word unaligned.
          s << "the signal word at offset " << u(v[2]) << " of window " << v[5]
            << " is not 8-byte aligned in the target's memory";
          break;
        case refusal::atomic_misaligned:
          s << "the atomic's " << u(v[3]) << "-byte word at offset " << u(v[2]) << " of window "
            << v[5] << " is not aligned to its size in the target's memory";
          break;
        case refusal::signal_outside_range:
          s << "signal offset " << u(v[2]) << " + 8 exceeds the " << bytes_text(u(v[4]))
            << " registered with window " << v[5];
          break;
        case refusal::outside_slice:
          s << "offset " << u(v[2]) << " + size " << u(v[3]) << " exceeds the target's " << u(v[4])
            << "-byte slice of the symmetric heap";
          break;
        case refusal::not_for_hosts:
          s << "a host issues puts (plain, notified or signalled), gets (plain or notified) and "
               "atomics on a window, and no other operation";
          break;
        case refusal::bad_atomic:
          s << "an atomic of " << bytes_text(u(v[3])) << " at offset " << u(v[2])
            << " of the symmetric heap (a word of 4 or 8 bytes, aligned, and a known operation)";
          break;
        case refusal::untaken:
          break;  // above
      }
      s << "; nothing was written";
      break;
    }
    case errc::shared_size_mismatch:
      s << "every rank of the device must ask for the same size: this rank asked for "
        << bytes_text(u(v[0])) << ", device rank 0 for " << u(v[2]) << " (device rank " << v[1]
        << " differs)";
      break;
    case errc::shared_pointer_mismatch:
      s << "every rank of the device must free the same block: device rank " << v[1]
        << " passed another pointer than device rank 0 (this rank passed 0x" << std::hex << u(v[0])
        << std::dec << ")";
      break;
    case errc::not_symmetric:
      s << "address 0x" << std::hex << u(v[0]) << std::dec << " (" << bytes_text(u(v[1]))
        << ") is not in this rank's symmetric heap slice of " << bytes_text(u(v[2]))
        << ": use memory from alloc_symmetric";
      break;
    case errc::symmetric_mismatch:
      s << "every rank must pass the same arguments: world rank " << v[2]
        << " passed others than world rank 0 (this rank passed ";
      if (static_cast<call>(r.where) != call::free_symmetric)  // alloc_symmetric, or a layer's
        s << bytes_text(u(v[0])) << " at alignment " << u(v[1]) << ")";
      else if (u(v[0]) == ~std::uint64_t{0})
        s << "null)";
      else
        s << "0x" << std::hex << u(v[3]) << std::dec << ", offset " << u(v[0]) << " of its slice)";
      break;
    case errc::symmetric_exhausted:
      s << "cannot allocate " << u(v[0]) << " symmetric bytes: ";
      if (v[3] >= v[4])
        s << "all " << v[4] << " symmetric blocks are in use";
      else
        s << "each rank's slice of " << bytes_text(u(v[1]))
          << " has no free block that large (largest " << bytes_text(u(v[2]))
          << "; GRMA_SYMMETRIC_SIZE)";
      break;
    case errc::invalid_alignment:
      s << "alignment " << u(v[0]) << " is not a power of two of at most 4096";
      break;
    case errc::word_misaligned:
      if (v[2] == 1)  // a segment's offset (GASPI), not an address
        s << "the " << v[1] << "-byte word at segment offset " << u(v[0])
          << " is not aligned to its size";
      else if (v[2] == 2)  // an offset in the target's range of a window
        s << "the " << v[1] << "-byte value at offset " << u(v[0]) << " of the range rank " << v[3]
          << " registered with window " << v[4]
          << " is not aligned to its size (its offset and the range's start must both be)";
      else
        s << "the " << v[1] << "-byte word at 0x" << std::hex << u(v[0]) << std::dec
          << " is not aligned to its size";
      break;
    case errc::context_invalid:
      s << "context " << v[0] << " (generation " << v[1]
        << ") is not a live context of this rank (used after ctx_destroy, or never created)";
      break;
    case errc::invalid_stride:
      s << "dest stride " << v[0] << ", source stride " << v[1]
        << ": strides count elements and are never negative";
      if (static_cast<call>(r.where) == call::alltoalls) s << " (alltoalls': at least 1)";
      break;
    case errc::buffer_not_shared:
      s << "buffer 0x" << std::hex << u(v[0]) << std::dec
        << " is one thread's own memory; the rank's threads write and read it, so it must be"
           " memory they share (from alloc, a window, userdata, or __shared__)";
      break;
    case errc::context_table_full:
      s << "all " << v[0] << " contexts of the rank are in use (ctx_destroy frees one)";
      break;
    case errc::team_not_member:
      s << "this rank is not a member of the team (slot " << v[0] << ", " << v[1] << " members)";
      break;
    case errc::team_invalid:
      if (u(v[0]) == team_none.slot)
        s << "team_none (shmem's team_invalid: what a split gives the ranks outside the team it "
             "makes) is no team to call on";
      else
        s << "team " << v[0] << " (generation " << v[1]
          << ") is not a live team (used after team_destroy, or never created)";
      break;
    case errc::team_split_invalid:
      if (static_cast<call>(r.where) == call::team_split_2d)
        s << "xrange " << v[2] << " is less than 1 (a row of the parent team of " << v[3]
          << " has xrange members)";
      else
        s << "start " << v[0] << ", stride " << v[1] << " and size " << v[2]
          << " do not name members of a parent team of " << v[3]
          << " (start >= 0, size >= 1, start + (size - 1) * stride < parent size, and stride >= 1 "
             "where size > 1)";
      break;
    case errc::team_table_full:
      s << "no team slot is free on every node of the parent team's members (a node has " << v[0]
        << "; team_destroy frees one)";
      break;
    case errc::team_collective_mismatch: {
      // Sizes are the low 32 bits of the call's size (of a free's offset).
      const auto other = static_cast<call>(u(v[1]) & 0xffu);
      const auto mine_call = static_cast<call>(r.where);
      const std::uint64_t mine = u(v[4]) & 0xffffffffu;
      const std::uint64_t other_root = u(v[3]) & 0xffffu, my_root = (u(v[3]) >> 16) & 0xffffu;
      const std::uint64_t other_more = u(v[1]) >> 8, my_more = u(v[0]) >> 8;
      s << "every member of team " << (u(v[0]) & 0xffu)
        << " must make the same collective call: member " << (u(v[4]) >> 32) << " called "
        << call_name(other);
      if (other == call::alloc_symmetric)
        s << " for " << bytes_text(u(v[2])) << " at alignment " << other_root << ", this rank for "
          << bytes_text(mine) << " at alignment " << my_root;
      else if (other == call::free_symmetric)
        s << " on offset " << u(v[2]) << ", this rank on offset " << mine << " (4294967295: null)";
      else if (other == call::barrier) {
        // Nothing was handed: a barrier, team_destroy, or a later step of another call.
        s << " or another call that hands nothing (team_destroy, a later step of a collective), "
             "this rank "
          << call_name(mine_call);
        if (mine_call == call::alloc_symmetric)
          s << " for " << bytes_text(mine) << " at alignment " << my_root;
        else if (mine_call == call::free_symmetric)
          s << " on offset " << mine << " (4294967295: null)";
        else
          s << " with " << collective_arguments(mine_call, mine, my_more, my_root);
      } else
        s << " with " << collective_arguments(other, u(v[2]), other_more, other_root)
          << ", this rank with " << collective_arguments(mine_call, mine, my_more, my_root);
      break;
    }
    case errc::invalid_reduce_op:
      s << "invalid reduce_op " << v[0] << (v[1] != 0 ? " for a floating-point type (bitwise ops take integers)" : "");
      break;
    case errc::symmetric_not_owner:
      s << "the symmetric block at 0x" << std::hex << u(v[0]) << std::dec
        << " was allocated over another team (or over world): free it over the team that allocated it";
      break;
    case errc::team_holds_blocks:
      s << "team " << v[0] << " still holds " << v[1]
        << " symmetric blocks: free_symmetric them over the team before team_destroy";
      break;
    case errc::not_initialized:
      if (v[0] == 1)
        s << "the GASPI layer is initialized already on this rank (proc_term ends it first)";
      else
        s << "the GASPI layer is not initialized on this rank (proc_init first)";
      break;
    case errc::segment_unknown:
      s << "segment " << v[0] << " does not exist on this rank (segment_create makes ids 0 to "
        << v[1] - 1 << ")";
      break;
    case errc::segment_exists:
      s << "segment " << v[0] << " exists already (segment_delete first)";
      break;
    case errc::segment_range:
      s << "offset " << u(v[0]) << " + size " << u(v[1]) << " exceeds the " << bytes_text(u(v[2]))
        << " of segment " << v[3] << " (rank " << v[4] << "'s copy)";
      break;
    case errc::notification_range:
      s << "notification ids " << v[0] << " to " << v[0] + v[1] - 1 << " are not all in 0 to "
        << v[2] - 1 << " of segment " << v[3];
      break;
    case errc::notification_zero:
      s << "notification " << v[0] << " with value 0 (a notification's value is not 0)";
      break;
    case errc::argument_range:
      s << r.text << " ";
      if (v[3] != 0)  // sizes, unsigned
        s << u(v[0]) << " is outside " << u(v[1]) << " to " << u(v[2]);
      else
        s << v[0] << " is outside " << v[1] << " to " << v[2];
      break;
    case errc::argument_refused:
      s << r.text << ": " << v[0];
      break;
    case errc::group_state: {
      static const char* const stages[] = {"does not exist", "is not committed",
                                           "is being committed (call group_commit again)",
                                           "is committed already"};
      s << "group " << v[0] << " " << (v[1] >= 0 && v[1] < 4 ? stages[v[1]] : "is unknown");
      break;
    }
    case errc::group_mismatch:
      s << "group " << v[0] << " has other members here than at rank " << v[1]
        << " (every member adds the same ranks)";
      break;
    case errc::collective_pending:
      s << "group " << v[0] << " has a " << call_name(call(v[1]))
        << " that returned timeout: call it again, with the same arguments, first";
      break;
    case errc::passive_message_size:
      s << "the passive message of " << bytes_text(u(v[0])) << " from rank " << v[2]
        << " does not fit the " << bytes_text(u(v[1])) << " passive_receive was given";
      break;
    case errc::rank_exception:
      s << "the rank's program threw: " << r.text;
      break;
    case errc::no_host_source:
      s << "process " << v[0] << " has no host source: ";
      if (v[1] == 0)
        s << "the job was launched without launch_options::host_access";
      else
        s << "the job's host threads are those of processes 0 to " << v[1] - 1;
      break;
    case errc::count_: s << "unknown error"; break;
  }
  return s.str();
}

std::string describe(const error_record& r) {
  std::ostringstream s;
  s << "grma: ";
  if (r.rank >= 0) s << "rank " << r.rank << ": ";
  const auto where = static_cast<call>(r.where);
  if (where != call::none && where != call::runtime) s << call_name(where) << ": ";
  s << describe_values(r);
  return s.str();
}

error::error(const error_record& record)
    : std::runtime_error(describe(record)),
      code_(static_cast<errc>(record.code)),
      rank_(record.rank),
      where_(static_cast<call>(record.where)) {}

}  // namespace grma
