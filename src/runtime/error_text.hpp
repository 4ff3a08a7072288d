// What went wrong, with its values: describe() without "grma: rank R: CALL:".
// A host operation's failure names its own call and target in front of it
// (host_port::fail_operation), not the target's rank as the record's.
#pragma once

#include <cstdint>
#include <string>

#include "grma/error.hpp"

namespace grma {

std::string describe_values(const error_record& record);

// A count of bytes in a message: "1 byte", "64 bytes".
std::string bytes_text(std::uint64_t n);

}  // namespace grma
