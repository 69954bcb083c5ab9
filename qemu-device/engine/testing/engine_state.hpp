// SPDX-License-Identifier: GPL-2.0-or-later
// A saved engine as the tests damage it (docs/migration.md's stream):
// where a section lies, and the checksum made right again after damage so
// that the loader's field checks, not the checksum, are what is tested.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ohca::test {

struct StateSection {
    size_t at = 0;   // its header: 4-byte tag, 2-byte version, 4-byte length
    size_t body = 0; // its first field
    size_t len = 0;  // its fields' bytes
};

// Section 'tag' of stream 's'; at == s.size() when it has none.
StateSection state_section(const std::vector<uint8_t> &s, const char *tag);
// The CRC-32 at the end of 's' recomputed over the bytes before it.
void reseal_state(std::vector<uint8_t> &s);

} // namespace ohca::test
